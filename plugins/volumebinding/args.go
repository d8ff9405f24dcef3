// This file turns VolumeBinding's pluginConfig into checked settings:
// kube-scheduler's v1 VolumeBindingArgs, defaulted and validated as
// kube-scheduler v1.37 does with StorageCapacityScoring on, so that a bad
// configuration refuses to start.

package volumebinding

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/framework"
)

const (
	// defaultBindTimeoutSeconds is how long PreBind waits for the PV
	// controller when the configuration says nothing.
	defaultBindTimeoutSeconds int64 = 600
	// maxUtilization is the right end of the shape's utilization axis (%).
	maxUtilization = 100
	// maxCustomPriorityScore is the highest score a shape point may have;
	// scores are scaled by MaxNodeScore / maxCustomPriorityScore (×10).
	maxCustomPriorityScore = 10
)

// DecodeArgs decodes VolumeBinding's args (nil means none), applies
// kube-scheduler's defaults and validates them. Unknown fields are errors.
func DecodeArgs(raw *runtime.RawExtension) (*configv1.VolumeBindingArgs, error) {
	return framework.DecodePluginArgs(raw, SetDefaultArgs, ValidateArgs)
}

// SetDefaultArgs fills in what kube-scheduler's v1 defaulting fills in: a
// bindTimeoutSeconds of 600 and, since StorageCapacityScoring is on, the
// shape [{0, 10}, {100, 0}] (emptier storage scores higher) when the shape
// is empty.
func SetDefaultArgs(args *configv1.VolumeBindingArgs) {
	if args.BindTimeoutSeconds == nil {
		args.BindTimeoutSeconds = ptr.To(defaultBindTimeoutSeconds)
	}
	if len(args.Shape) == 0 {
		args.Shape = []configv1.UtilizationShapePoint{
			{Utilization: 0, Score: maxCustomPriorityScore},
			{Utilization: maxUtilization, Score: 0},
		}
	}
}

// ValidateArgs checks defaulted args as kube-scheduler does with
// StorageCapacityScoring on, each error naming its field: bindTimeoutSeconds
// must not be negative (0 is allowed: PreBind then fails at once unless
// nothing needs binding), and the shape must be valid (validateShape).
func ValidateArgs(args *configv1.VolumeBindingArgs) error {
	var errs field.ErrorList
	p := field.NewPath("bindTimeoutSeconds")
	if args.BindTimeoutSeconds == nil {
		errs = append(errs, field.Required(p, "must be set"))
	} else if *args.BindTimeoutSeconds < 0 {
		errs = append(errs, field.Invalid(p, *args.BindTimeoutSeconds,
			"invalid BindTimeoutSeconds, should not be a negative value"))
	}
	errs = append(errs, validateShape(args.Shape, field.NewPath("shape"))...)
	return errs.ToAggregate()
}

// validateShape checks a scoring shape as kube-scheduler does: at least one
// point; utilizations strictly increasing (only the first offence is
// reported); each utilization in [0, 100] and each score in [0, 10].
func validateShape(shape []configv1.UtilizationShapePoint, path *field.Path) field.ErrorList {
	if len(shape) == 0 {
		return field.ErrorList{field.Required(path, "at least one point must be specified")}
	}
	var errs field.ErrorList
	for i := 1; i < len(shape); i++ {
		if shape[i-1].Utilization >= shape[i].Utilization {
			errs = append(errs, field.Invalid(path.Index(i).Child("utilization"), shape[i].Utilization,
				"values must be sorted in increasing order"))
			break
		}
	}
	for i, pt := range shape {
		if pt.Utilization < 0 || pt.Utilization > maxUtilization {
			errs = append(errs, field.Invalid(path.Index(i).Child("utilization"), pt.Utilization,
				fmt.Sprintf("not in valid range [0, %d]", maxUtilization)))
		}
		if pt.Score < 0 || pt.Score > maxCustomPriorityScore {
			errs = append(errs, field.Invalid(path.Index(i).Child("score"), pt.Score,
				fmt.Sprintf("not in valid range [0, %d]", maxCustomPriorityScore)))
		}
	}
	return errs
}
