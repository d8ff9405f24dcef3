// This file turns NodeResourcesBalancedAllocation's pluginConfig into checked
// settings: kube-scheduler's v1 NodeResourcesBalancedAllocationArgs,
// defaulted and validated as kube-scheduler does.

package noderesources

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// DecodeBalancedAllocationArgs decodes NodeResourcesBalancedAllocation's args
// (nil means none), applies kube-scheduler's defaults and validates them.
// Unknown fields are errors.
func DecodeBalancedAllocationArgs(raw *runtime.RawExtension) (*configv1.NodeResourcesBalancedAllocationArgs, error) {
	return framework.DecodePluginArgs(raw, SetDefaultBalancedAllocationArgs, ValidateBalancedAllocationArgs)
}

// SetDefaultBalancedAllocationArgs fills in what kube-scheduler's v1
// defaulting fills in: cpu and memory when no resources are given, and
// weight 1 for a resource without one.
func SetDefaultBalancedAllocationArgs(args *configv1.NodeResourcesBalancedAllocationArgs) {
	if len(args.Resources) == 0 {
		args.Resources = defaultResources()
		return
	}
	for i := range args.Resources {
		if args.Resources[i].Weight == 0 {
			args.Resources[i].Weight = 1
		}
	}
}

// ValidateBalancedAllocationArgs checks defaulted args as kube-scheduler
// does, with each error naming its field: no resource may be named twice,
// and every weight must be 1 (the formula does not weigh resources).
func ValidateBalancedAllocationArgs(args *configv1.NodeResourcesBalancedAllocationArgs) error {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, r := range args.Resources {
		p := field.NewPath("resources").Index(i)
		if seen.Has(r.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), r.Name))
		} else {
			seen.Insert(r.Name)
		}
		if r.Weight != 1 {
			errs = append(errs, field.Invalid(p.Child("weight"), r.Weight, "must be 1"))
		}
	}
	return errs.ToAggregate()
}
