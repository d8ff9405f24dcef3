// This file turns NodeResourcesFit's pluginConfig into checked settings:
// kube-scheduler's v1 NodeResourcesFitArgs, defaulted and validated as
// kube-scheduler does.

package noderesources

import (
	"fmt"
	"strings"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// supportedScoringStrategies are the scoring strategies minisched accepts:
// all of kube-scheduler's, in its (sorted) order.
var supportedScoringStrategies = []configv1.ScoringStrategyType{
	configv1.LeastAllocated, configv1.MostAllocated, configv1.RequestedToCapacityRatio,
}

// defaultResources are the resources scoring weighs when none are given:
// cpu and memory, equally.
func defaultResources() []configv1.ResourceSpec {
	return []configv1.ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}}
}

// DecodeArgs decodes NodeResourcesFit's args (nil means none), applies
// kube-scheduler's defaults and validates them. Unknown fields are errors.
func DecodeArgs(raw *runtime.RawExtension) (*configv1.NodeResourcesFitArgs, error) {
	return framework.DecodePluginArgs(raw, SetDefaultArgs, ValidateArgs)
}

// SetDefaultArgs fills in what kube-scheduler's v1 defaulting fills in: a
// LeastAllocated strategy when none is given, cpu and memory when the
// strategy names no resources, and weight 1 for a resource without one.
func SetDefaultArgs(args *configv1.NodeResourcesFitArgs) {
	if args.ScoringStrategy == nil {
		args.ScoringStrategy = &configv1.ScoringStrategy{Type: configv1.LeastAllocated}
	}
	if len(args.ScoringStrategy.Resources) == 0 {
		args.ScoringStrategy.Resources = defaultResources()
	}
	for i := range args.ScoringStrategy.Resources {
		if args.ScoringStrategy.Resources[i].Weight == 0 {
			args.ScoringStrategy.Resources[i].Weight = 1
		}
	}
}

// ValidateArgs checks defaulted args as kube-scheduler does, with each error
// naming its field: ignored resources and groups must be valid label names
// (groups without '/'), and the scoring strategy must be one minisched
// supports, with resource weights in (0, 100]; RequestedToCapacityRatio, and
// only it, needs a shape (see validateShape).
func ValidateArgs(args *configv1.NodeResourcesFitArgs) error {
	var errs field.ErrorList
	for i, res := range args.IgnoredResources {
		errs = append(errs, metav1validation.ValidateLabelName(res, field.NewPath("ignoredResources").Index(i))...)
	}
	for i, group := range args.IgnoredResourceGroups {
		p := field.NewPath("ignoredResourceGroups").Index(i)
		if strings.Contains(group, "/") {
			errs = append(errs, field.Invalid(p, group, "resource group name can't contain '/'"))
		}
		errs = append(errs, metav1validation.ValidateLabelName(group, p)...)
	}

	strategyPath := field.NewPath("scoringStrategy")
	if s := args.ScoringStrategy; s == nil {
		errs = append(errs, field.Required(strategyPath, "ScoringStrategy field is required"))
	} else {
		if !isSupported(s.Type) {
			errs = append(errs, field.NotSupported(strategyPath.Child("type"), s.Type, supportedScoringStrategies))
		}
		for i, r := range s.Resources {
			if r.Weight <= 0 || r.Weight > 100 {
				errs = append(errs, field.Invalid(strategyPath.Child("resources").Index(i).Child("weight"), r.Weight,
					fmt.Sprintf("resource weight of %v not in valid range (0, 100]", r.Name)))
			}
		}
		ratioPath := strategyPath.Child("requestedToCapacityRatio")
		switch {
		case s.Type == configv1.RequestedToCapacityRatio && s.RequestedToCapacityRatio == nil:
			errs = append(errs, field.Required(ratioPath, "must be specified when type is RequestedToCapacityRatio"))
		case s.Type == configv1.RequestedToCapacityRatio:
			errs = append(errs, validateShape(s.RequestedToCapacityRatio.Shape, ratioPath.Child("shape"))...)
		case s.RequestedToCapacityRatio != nil:
			errs = append(errs, field.Forbidden(ratioPath, "must be nil when type is not RequestedToCapacityRatio"))
		}
	}
	return errs.ToAggregate()
}

// validateShape checks a RequestedToCapacityRatio shape as kube-scheduler
// does: at least one point; utilizations strictly increasing (only the first
// offence is reported); each utilization in [0, 100] and each score in
// [0, 10].
func validateShape(shape []configv1.UtilizationShapePoint, path *field.Path) field.ErrorList {
	if len(shape) == 0 {
		return field.ErrorList{field.Required(path, "at least one point must be specified")}
	}
	var errs field.ErrorList
	for i := 1; i < len(shape); i++ {
		if shape[i-1].Utilization >= shape[i].Utilization {
			errs = append(errs,
				field.Invalid(path.Index(i).Child("utilization"), shape[i].Utilization,
					"values must be sorted in increasing order"))
			break
		}
	}
	for i, p := range shape {
		if p.Utilization < 0 || p.Utilization > maxUtilization {
			errs = append(errs,
				field.Invalid(path.Index(i).Child("utilization"), p.Utilization,
					fmt.Sprintf("not in valid range [0, %d]", maxUtilization)))
		}
		if p.Score < 0 || p.Score > maxCustomPriorityScore {
			errs = append(errs,
				field.Invalid(path.Index(i).Child("score"), p.Score,
					fmt.Sprintf("not in valid range [0, %d]", maxCustomPriorityScore)))
		}
	}
	return errs
}

func isSupported(t configv1.ScoringStrategyType) bool {
	for _, s := range supportedScoringStrategies {
		if s == t {
			return true
		}
	}
	return false
}
