package scheduler

import (
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/plugins/defaultbinder"
	"github.com/minisched/minisched/plugins/nodename"
	"github.com/minisched/minisched/plugins/noderesources"
	"github.com/minisched/minisched/plugins/nodeunschedulable"
	"github.com/minisched/minisched/plugins/prioritysort"
)

// DefaultPlugins is the default profile's plugin set, enabled through
// multiPoint as kube-scheduler does: each plugin takes part at every
// extension point it implements, in this order.
func DefaultPlugins() *configv1.Plugins {
	return &configv1.Plugins{
		MultiPoint: configv1.PluginSet{Enabled: []configv1.Plugin{
			{Name: prioritysort.Name},
			{Name: nodeunschedulable.Name},
			{Name: nodename.Name},
			{Name: noderesources.Name, Weight: ptr.To[int32](1)},
			{Name: defaultbinder.Name},
		}},
	}
}

// mergePlugins merges a profile's plugins into the defaults with
// kube-scheduler's rules, per extension point (multiPoint included):
//
//   - defaults stay in their order unless disabled by name or by "*";
//   - a user's enabled plugin that is also a default replaces it in place
//     (so re-enabling a default overrides its weight);
//   - the user's other enabled plugins follow, in their order;
//   - the disabled lists (the user's and the defaults') are kept so the
//     framework's multiPoint expansion can honour them.
func mergePlugins(defaults, custom *configv1.Plugins) *configv1.Plugins {
	if custom == nil {
		return defaults
	}
	out := custom.DeepCopy()
	d, o := pluginSets(defaults), pluginSets(out)
	for name, set := range o {
		*set = mergePluginSet(*d[name], *set)
	}
	return out
}

func mergePluginSet(defaults, custom configv1.PluginSet) configv1.PluginSet {
	disabled := map[string]bool{}
	var disabledList []configv1.Plugin
	for _, p := range append(append([]configv1.Plugin(nil), custom.Disabled...), defaults.Disabled...) {
		disabled[p.Name] = true
		disabledList = append(disabledList, configv1.Plugin{Name: p.Name})
	}
	customIndex := map[string]int{}
	for i, p := range custom.Enabled {
		customIndex[p.Name] = i
	}
	replaced := map[int]bool{}
	var enabled []configv1.Plugin
	if !disabled["*"] {
		for _, p := range defaults.Enabled {
			if disabled[p.Name] {
				continue
			}
			if i, ok := customIndex[p.Name]; ok {
				p = custom.Enabled[i]
				replaced[i] = true
			}
			enabled = append(enabled, p)
		}
	}
	for i, p := range custom.Enabled {
		if !replaced[i] {
			enabled = append(enabled, p)
		}
	}
	return configv1.PluginSet{Enabled: enabled, Disabled: disabledList}
}
