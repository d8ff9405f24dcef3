package scheduler

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/noderesources"
)

// validateExtenders checks the extenders list as kube-scheduler does: a
// prioritizing extender needs a positive weight, managed resources must be
// extended resource names (example.com/gpu), each managed by one extender,
// and at most one extender may bind.
func validateExtenders(path *field.Path, extenders []configv1.Extender) field.ErrorList {
	var errs field.ErrorList
	binders := 0
	managed := sets.New[string]()
	for i, e := range extenders {
		p := path.Index(i)
		if e.PrioritizeVerb != "" && e.Weight <= 0 {
			errs = append(errs, field.Invalid(p.Child("weight"), e.Weight, "must have a positive weight applied to it"))
		}
		if e.BindVerb != "" {
			binders++
		}
		for j, r := range e.ManagedResources {
			rp := p.Child("managedResources").Index(j).Child("name")
			errs = append(errs, validateExtendedResourceName(rp, r.Name)...)
			if managed.Has(r.Name) {
				errs = append(errs, field.Invalid(rp, r.Name, "duplicate extender managed resource name"))
			}
			managed.Insert(r.Name)
		}
	}
	if binders > 1 {
		errs = append(errs, field.Invalid(path, fmt.Sprintf("found %d extenders implementing bind", binders),
			"only one extender can implement bind"))
	}
	return errs
}

func validateExtendedResourceName(path *field.Path, name string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	if len(errs) == 0 && !framework.IsExtendedResourceName(v1.ResourceName(name)) {
		errs = append(errs, field.Invalid(path, name, "is an invalid extended resource name"))
	}
	return errs
}

// buildExtenders turns the configuration's extenders into clients, the
// ignorable ones last (so that a required extender always has its say
// first), and collects the managed resources the scheduler must ignore.
func buildExtenders(cfgs []configv1.Extender) ([]framework.Extender, []string, error) {
	var required, ignorable []framework.Extender
	var ignored []string
	for i := range cfgs {
		e, err := minisched.NewHTTPExtender(&cfgs[i])
		if err != nil {
			return nil, nil, fmt.Errorf("extenders[%d]: %w", i, err)
		}
		if e.IsIgnorable() {
			ignorable = append(ignorable, e)
		} else {
			required = append(required, e)
		}
		for _, r := range cfgs[i].ManagedResources {
			if r.IgnoredByScheduler {
				ignored = append(ignored, r.Name)
			}
		}
	}
	return append(required, ignorable...), ignored, nil
}

// withIgnoredResources returns a copy of profile whose NodeResourcesFit
// args ignore the given resources: an extender that manages them with
// ignoredByScheduler accounts for them itself, and nodes need not list
// them. As in kube-scheduler, the list replaces the args' own.
func withIgnoredResources(profile *configv1.KubeSchedulerProfile, ignored []string) (*configv1.KubeSchedulerProfile, error) {
	if len(ignored) == 0 {
		return profile, nil
	}
	p := profile.DeepCopy()
	var raw *runtime.RawExtension
	idx := -1
	for i := range p.PluginConfig {
		if p.PluginConfig[i].Name == noderesources.Name {
			raw, idx = &p.PluginConfig[i].Args, i
		}
	}
	args, err := noderesources.DecodeArgs(raw)
	if err != nil {
		return nil, fmt.Errorf("pluginConfig[%d]: %w", idx, err)
	}
	args.IgnoredResources = ignored
	pc := configv1.PluginConfig{Name: noderesources.Name, Args: runtime.RawExtension{Object: args}}
	if idx >= 0 {
		p.PluginConfig[idx] = pc
	} else {
		p.PluginConfig = append(p.PluginConfig, pc)
	}
	return p, nil
}
