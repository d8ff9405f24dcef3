// This file builds a real framework.Framework from a handful of plugins, so
// plugin tests run extension points the way the scheduler does.
package plugintesting

import (
	"context"

	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// ProfileName is the schedulerName of the profiles NewFramework builds.
const ProfileName = "test-scheduler"

// NewFramework builds the runtime of one profile named ProfileName from
// registry, with plugins enabled as given and pluginConfig as their args.
// The profile must still name exactly one QueueSort and at least one Bind
// plugin, as NewFramework requires.
func NewFramework(ctx context.Context, registry framework.Registry, plugins *configv1.Plugins, pluginConfig []configv1.PluginConfig, opts ...framework.Option) (*framework.Framework, error) {
	name := ProfileName
	profile := &configv1.KubeSchedulerProfile{
		SchedulerName: &name,
		Plugins:       plugins,
		PluginConfig:  pluginConfig,
	}
	return framework.NewFramework(ctx, registry, profile, opts...)
}

// Enable returns a PluginSet enabling the named plugins, in order.
func Enable(names ...string) configv1.PluginSet {
	set := configv1.PluginSet{}
	for _, n := range names {
		set.Enabled = append(set.Enabled, configv1.Plugin{Name: n})
	}
	return set
}
