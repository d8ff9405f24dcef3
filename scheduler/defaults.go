package scheduler

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/framework"
)

// DefaultPlugins is the default profile: kube-scheduler v1.37's default
// plugins, in its order and with its weights, enabled through multiPoint so
// each takes part at every extension point it implements. Left out, because
// minisched does not have them yet: VolumeRestrictions, NodeVolumeLimits,
// VolumeBinding and VolumeZone (after NodeResourcesFit upstream), and
// DynamicResources.
func DefaultPlugins() *configv1.Plugins {
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
			{Name: "PodTopologySpread", Weight: ptr.To[int32](2)},
			{Name: "InterPodAffinity", Weight: ptr.To[int32](2)},
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

// unsupportedPlugins are kube-scheduler plugins minisched does not implement
// yet. Enabling one is an error; disabling one is accepted, so that a
// configuration written for kube-scheduler (say, with VolumeBinding
// disabled) works unchanged.
var unsupportedPlugins = map[string]string{
	"VolumeBinding":      "volume plugins are not supported yet",
	"VolumeRestrictions": "volume plugins are not supported yet",
	"VolumeZone":         "volume plugins are not supported yet",
	"NodeVolumeLimits":   "volume plugins are not supported yet",
	"DynamicResources":   "dynamic resource allocation is not supported yet",
}

// validateSupported rejects enabling a plugin minisched does not have yet.
func validateSupported(path *field.Path, p *configv1.Plugins) field.ErrorList {
	var errs field.ErrorList
	for _, ps := range framework.PluginSets(p) {
		for j, pl := range ps.Set.Enabled {
			if why, ok := unsupportedPlugins[pl.Name]; ok {
				errs = append(errs, field.Invalid(path.Child(ps.Field, "enabled").Index(j).Child("name"), pl.Name,
					fmt.Sprintf("minisched does not implement %s: %s (supported: see README); disable it instead",
						pl.Name, why)))
			}
		}
	}
	return errs
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
