// Configurations for stories: written as YAML, as a reader would write a
// file for --config, or as one profile with exactly the plugins chosen.

package scenario

import (
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/scheduler"
)

// ConfigYAML returns, as a Scenario's Config, a configuration given as
// YAML, as a reader would write it in a file for --config, without its
// apiVersion and kind.
func ConfigYAML(doc string) func() (*configv1.KubeSchedulerConfiguration, error) {
	return func() (*configv1.KubeSchedulerConfiguration, error) {
		return scheduler.DecodeConfig([]byte("apiVersion: kubescheduler.config.k8s.io/v1\n" +
			"kind: KubeSchedulerConfiguration\n" + doc))
	}
}

// ProfilesYAML is ConfigYAML of a configuration given as the YAML of its
// profiles list.
func ProfilesYAML(profiles string) func() (*configv1.KubeSchedulerConfiguration, error) {
	return ConfigYAML("profiles:\n" + profiles)
}

// OnlyPlugins returns a profile's plugins with every default disabled ("*"
// in multiPoint), for the caller to enable exactly the ones it wants.
func OnlyPlugins() *configv1.Plugins {
	return &configv1.Plugins{MultiPoint: configv1.PluginSet{Disabled: []configv1.Plugin{{Name: "*"}}}}
}

// ProfileConfig returns the configuration of one default-scheduler profile
// with plugins p, defaulted and validated.
func ProfileConfig(p *configv1.Plugins) (*configv1.KubeSchedulerConfiguration, error) {
	cfg := &configv1.KubeSchedulerConfiguration{Profiles: []configv1.KubeSchedulerProfile{{Plugins: p}}}
	cfg.APIVersion, cfg.Kind = configv1.SchemeGroupVersion.String(), "KubeSchedulerConfiguration"
	scheduler.SetDefaults(cfg)
	return cfg, scheduler.Validate(cfg)
}
