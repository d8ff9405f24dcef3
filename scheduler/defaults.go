package scheduler

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/framework"
)

// DefaultPlugins is the default profile under kube-scheduler's default
// feature gates: DefaultPluginsFor(features.Gates{}).
func DefaultPlugins() *configv1.Plugins { return DefaultPluginsFor(features.Gates{}) }

// DefaultPluginsFor is the default profile under gates: kube-scheduler
// v1.37's default plugins, all 20, in its order and with its weights,
// enabled through multiPoint so each takes part at every extension point
// it implements; with GenericWorkload, GangScheduling follows them, and
// with TopologyAwareWorkloadScheduling too, TopologyPlacementGenerator and
// PodGroupPodsCount (weight 1), as kube-scheduler's feature-gate
// defaulting appends them. (NodeResourcesFit's multiPoint entry makes it a
// PlacementScore plugin too, with its weight, 1.)
func DefaultPluginsFor(gates features.Gates) *configv1.Plugins {
	plugins := defaultPlugins()
	if gates.GenericWorkload {
		plugins.MultiPoint.Enabled = append(plugins.MultiPoint.Enabled, configv1.Plugin{Name: "GangScheduling"})
	}
	if gates.TopologyAwareWorkloadScheduling {
		plugins.MultiPoint.Enabled = append(plugins.MultiPoint.Enabled,
			configv1.Plugin{Name: "TopologyPlacementGenerator"},
			configv1.Plugin{Name: "PodGroupPodsCount", Weight: ptr.To[int32](1)})
	}
	return plugins
}

// defaultPlugins is the default profile with no gate off its default.
func defaultPlugins() *configv1.Plugins {
	return &configv1.Plugins{
		MultiPoint: configv1.PluginSet{Enabled: []configv1.Plugin{
			{Name: "SchedulingGates"},
			{Name: "PrioritySort"},
			{Name: "NodeName"},
			{Name: "NodeUnschedulable"},
			{Name: "TaintToleration", Weight: ptr.To[int32](3)},
			{Name: "NodeAffinity", Weight: ptr.To[int32](2)},
			{Name: "NodePorts"},
			{Name: "NodeResourcesFit", Weight: ptr.To[int32](1)},
			{Name: "VolumeRestrictions"},
			{Name: "NodeVolumeLimits"},
			// No weight upstream either: multiPoint's 0 becomes 1.
			{Name: "VolumeBinding"},
			{Name: "VolumeZone"},
			{Name: "PodTopologySpread", Weight: ptr.To[int32](2)},
			{Name: "InterPodAffinity", Weight: ptr.To[int32](2)},
			// Before DefaultPreemption, as upstream puts it: freeing an idle
			// claim is better than evicting a pod. It scores only pods whose
			// claims list firstAvailable alternatives.
			{Name: "DynamicResources", Weight: ptr.To[int32](2)},
			{Name: "DefaultPreemption"},
			{Name: "NodeResourcesBalancedAllocation", Weight: ptr.To[int32](1)},
			{Name: "ImageLocality", Weight: ptr.To[int32](1)},
			{Name: "DefaultBinder"},
			// GA and locked on in v1.37, appended by kube-scheduler's
			// feature-gate defaulting.
			{Name: "NodeDeclaredFeatures"},
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
	d, o := framework.PluginSets(defaults), framework.PluginSets(out)
	for i := range o {
		*o[i].Set = mergePluginSet(*d[i].Set, *o[i].Set)
	}
	return out
}

// mergePluginSet merges one extension point's PluginSet with the rules of
// mergePlugins.
func mergePluginSet(defaults, custom configv1.PluginSet) configv1.PluginSet {
	disabled := sets.New[string]()
	var disabledList []configv1.Plugin
	for _, p := range append(slices.Clone(custom.Disabled), defaults.Disabled...) {
		disabled.Insert(p.Name)
		disabledList = append(disabledList, configv1.Plugin{Name: p.Name})
	}
	customIndex := map[string]int{}
	for i, p := range custom.Enabled {
		customIndex[p.Name] = i
	}
	replaced := sets.New[int]()
	var enabled []configv1.Plugin
	if !disabled.Has("*") {
		for _, p := range defaults.Enabled {
			if disabled.Has(p.Name) {
				continue
			}
			if i, ok := customIndex[p.Name]; ok {
				p = custom.Enabled[i]
				replaced.Insert(i)
			}
			enabled = append(enabled, p)
		}
	}
	for i, p := range custom.Enabled {
		if !replaced.Has(i) {
			enabled = append(enabled, p)
		}
	}
	return configv1.PluginSet{Enabled: enabled, Disabled: disabledList}
}
