// This file turns InterPodAffinity's pluginConfig into checked settings:
// kube-scheduler's v1 InterPodAffinityArgs, defaulted and validated as
// kube-scheduler does.

package interpodaffinity

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/framework"
)

// The range hardPodAffinityWeight must lie in, bounds included.
const (
	minHardPodAffinityWeight int32 = 0
	maxHardPodAffinityWeight int32 = 100
)

// DecodeArgs decodes InterPodAffinity's args (nil means none), applies
// kube-scheduler's defaults and validates them. Unknown fields are errors.
func DecodeArgs(raw *runtime.RawExtension) (*configv1.InterPodAffinityArgs, error) {
	return framework.DecodePluginArgs(raw, SetDefaultArgs, ValidateArgs)
}

// SetDefaultArgs fills in what kube-scheduler's v1 defaulting fills in: a
// hardPodAffinityWeight of 1 when none is given.
// ignorePreferredTermsOfExistingPods is a plain bool and stays false unless
// set.
func SetDefaultArgs(args *configv1.InterPodAffinityArgs) {
	if args.HardPodAffinityWeight == nil {
		args.HardPodAffinityWeight = ptr.To[int32](1)
	}
}

// ValidateArgs checks defaulted args as kube-scheduler does:
// hardPodAffinityWeight must be within [0, 100].
func ValidateArgs(args *configv1.InterPodAffinityArgs) error {
	var errs field.ErrorList
	p := field.NewPath("hardPodAffinityWeight")
	if args.HardPodAffinityWeight == nil {
		errs = append(errs, field.Required(p, "must be set"))
	} else if w := *args.HardPodAffinityWeight; w < minHardPodAffinityWeight || w > maxHardPodAffinityWeight {
		errs = append(errs,
			field.Invalid(p, w, fmt.Sprintf("not in valid range [%d, %d]", minHardPodAffinityWeight, maxHardPodAffinityWeight)))
	}
	return errs.ToAggregate()
}
