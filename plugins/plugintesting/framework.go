// This file builds a real framework.Framework from a handful of plugins, so
// plugin tests run extension points the way the scheduler does.

package plugintesting

import (
	"context"

	v1 "k8s.io/api/core/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// ProfileName is the schedulerName of the profiles NewFramework builds.
const ProfileName = "test-scheduler"

// NewFramework builds the runtime of one profile named ProfileName from
// registry, with plugins enabled as given and pluginConfig as their args.
// The profile must still name exactly one QueueSort and at least one Bind
// plugin, as NewFramework requires.
func NewFramework(ctx context.Context, registry framework.Registry, plugins *configv1.Plugins,
	pluginConfig []configv1.PluginConfig, opts ...framework.Option) (*framework.Framework, error) {
	name := ProfileName
	profile := &configv1.KubeSchedulerProfile{
		SchedulerName: &name,
		Plugins:       plugins,
		PluginConfig:  pluginConfig,
	}
	return framework.NewFramework(ctx, registry, profile, opts...)
}

// RunFilter runs schedFramework's Filter plugins on each node in turn, as the
// scheduler's search does in parallel, and returns the feasible nodes in
// node order. Rejected nodes are recorded in diagnosis; an Error from a
// plugin stops it.
func RunFilter(ctx context.Context, schedFramework *framework.Framework, state *framework.CycleState, pod *v1.Pod,
	diagnosis *framework.Diagnosis, nodes []*framework.NodeInfo) ([]*framework.NodeInfo, error) {
	var feasible []*framework.NodeInfo
	for _, ni := range nodes {
		status := schedFramework.RunFilterPlugins(ctx, state, pod, ni)
		switch {
		case status.IsSuccess():
			feasible = append(feasible, ni)
		case status.Code() == framework.Error:
			return nil, status.AsError()
		default:
			diagnosis.NodeToStatus.Set(ni.Node().Name, status)
			diagnosis.AddPluginStatus(status)
		}
	}
	return feasible, nil
}

// Enable returns a PluginSet enabling the named plugins, in order.
func Enable(names ...string) configv1.PluginSet {
	set := configv1.PluginSet{}
	for _, n := range names {
		set.Enabled = append(set.Enabled, configv1.Plugin{Name: n})
	}
	return set
}

// MakeNodeInfo returns a NodeInfo for node holding pods.
func MakeNodeInfo(node *v1.Node, pods ...*v1.Pod) *framework.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(node)
	return ni
}
