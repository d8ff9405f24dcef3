// This file turns PodTopologySpread's pluginConfig into checked settings:
// kube-scheduler's v1 PodTopologySpreadArgs, defaulted and validated as
// kube-scheduler v1.37 does.

package podtopologyspread

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// DecodeArgs decodes PodTopologySpread's args (nil means none), applies
// kube-scheduler's defaults and validates them. Unknown fields are errors.
func DecodeArgs(raw *runtime.RawExtension) (*configv1.PodTopologySpreadArgs, error) {
	return framework.DecodePluginArgs(raw, SetDefaultArgs, ValidateArgs)
}

// SetDefaultArgs fills in what kube-scheduler's v1 defaulting fills in: the
// System defaulting type when none is given. The default constraints are left
// as they are; with System they must be empty (ValidateArgs checks that).
func SetDefaultArgs(args *configv1.PodTopologySpreadArgs) {
	if args.DefaultingType == "" {
		args.DefaultingType = configv1.SystemDefaulting
	}
}

// ValidateArgs checks defaulted args as kube-scheduler does, each error
// naming its field:
//   - defaultingType is System or List, and System comes with no
//     defaultConstraints;
//   - every default constraint has maxSkew > 0, a valid topologyKey, a
//     whenUnsatisfiable of DoNotSchedule or ScheduleAnyway, no labelSelector
//     (it is deduced per pod), and no earlier constraint with the same
//     topologyKey and whenUnsatisfiable.
func ValidateArgs(args *configv1.PodTopologySpreadArgs) error {
	var errs field.ErrorList
	if err := validateDefaultingType(field.NewPath("defaultingType"), args.DefaultingType,
		args.DefaultConstraints); err != nil {
		errs = append(errs, err)
	}
	listPath := field.NewPath("defaultConstraints")
	for i := range args.DefaultConstraints {
		c := &args.DefaultConstraints[i]
		p := listPath.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, "not in valid range (0, inf)"))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
		} else {
			errs = append(errs, metav1validation.ValidateLabelName(c.TopologyKey, p.Child("topologyKey"))...)
		}
		if err := validateWhenUnsatisfiable(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable); err != nil {
			errs = append(errs, err)
		}
		if c.LabelSelector != nil {
			errs = append(errs,
				field.Forbidden(p.Child("labelSelector"), "constraint must not define a selector, as they deduced for each pod"))
		}
		for j := range args.DefaultConstraints[:i] {
			other := &args.DefaultConstraints[j]
			if other.TopologyKey == c.TopologyKey && other.WhenUnsatisfiable == c.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(p, fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
	}
	return errs.ToAggregate()
}

// validateDefaultingType accepts System (only without explicit constraints)
// and List.
func validateDefaultingType(p *field.Path, t configv1.PodTopologySpreadConstraintsDefaulting,
	constraints []v1.TopologySpreadConstraint) *field.Error {
	if t != configv1.SystemDefaulting && t != configv1.ListDefaulting {
		return field.NotSupported(p, t, []string{string(configv1.SystemDefaulting), string(configv1.ListDefaulting)})
	}
	if t == configv1.SystemDefaulting && len(constraints) > 0 {
		return field.Invalid(p, t, "when .defaultConstraints are not empty")
	}
	return nil
}

// validateWhenUnsatisfiable accepts DoNotSchedule and ScheduleAnyway.
func validateWhenUnsatisfiable(p *field.Path, action v1.UnsatisfiableConstraintAction) *field.Error {
	switch action {
	case "":
		return field.Required(p, "can not be empty")
	case v1.DoNotSchedule, v1.ScheduleAnyway:
		return nil
	}
	// Listed sorted, as kube-scheduler lists them.
	return field.NotSupported(p, action, []string{string(v1.DoNotSchedule), string(v1.ScheduleAnyway)})
}
