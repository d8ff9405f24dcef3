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
// kube-scheduler's default. Its MostAllocated and RequestedToCapacityRatio
// are not implemented yet, and configuring them is an error.
var supportedScoringStrategies = []configv1.ScoringStrategyType{configv1.LeastAllocated}

// defaultResources are the resources scoring weighs when none are given:
// cpu and memory, equally.
func defaultResources() []configv1.ResourceSpec {
	return []configv1.ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}}
}

// DecodeArgs decodes NodeResourcesFit's args (nil means none), applies
// kube-scheduler's defaults and validates them. Unknown fields are errors.
func DecodeArgs(raw *runtime.RawExtension) (*configv1.NodeResourcesFitArgs, error) {
	args := &configv1.NodeResourcesFitArgs{}
	if err := framework.DecodeArgs(raw, args); err != nil {
		return nil, fmt.Errorf("decoding NodeResourcesFitArgs: %w", err)
	}
	// A typed args object is shared with the configuration: default a copy.
	args = args.DeepCopy()
	SetDefaultArgs(args)
	if err := ValidateArgs(args); err != nil {
		return nil, err
	}
	return args, nil
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
// supports, with resource weights in (0, 100].
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
		if s.RequestedToCapacityRatio != nil {
			errs = append(errs, field.Forbidden(strategyPath.Child("requestedToCapacityRatio"), "must be nil when type is not RequestedToCapacityRatio"))
		}
	}
	return errs.ToAggregate()
}

func isSupported(t configv1.ScoringStrategyType) bool {
	for _, s := range supportedScoringStrategies {
		if s == t {
			return true
		}
	}
	return false
}
