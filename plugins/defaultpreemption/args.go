// This file turns DefaultPreemption's pluginConfig into checked settings:
// kube-scheduler's v1 DefaultPreemptionArgs, defaulted and validated as
// kube-scheduler v1.37 does.

package defaultpreemption

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/framework"
)

// Defaults of DefaultPreemptionArgs, as in kube-scheduler.
const (
	DefaultMinCandidateNodesPercentage = 10
	DefaultMinCandidateNodesAbsolute   = 100
)

// DecodeArgs decodes DefaultPreemption's args (nil means none), applies
// kube-scheduler's defaults and validates them. Unknown fields are errors.
func DecodeArgs(raw *runtime.RawExtension) (*configv1.DefaultPreemptionArgs, error) {
	return framework.DecodePluginArgs(raw, SetDefaultArgs, ValidateArgs)
}

// SetDefaultArgs fills in what kube-scheduler's v1 defaulting fills in:
// minCandidateNodesPercentage 10 and minCandidateNodesAbsolute 100 when
// they are not given.
func SetDefaultArgs(args *configv1.DefaultPreemptionArgs) {
	if args.MinCandidateNodesPercentage == nil {
		args.MinCandidateNodesPercentage = ptr.To[int32](DefaultMinCandidateNodesPercentage)
	}
	if args.MinCandidateNodesAbsolute == nil {
		args.MinCandidateNodesAbsolute = ptr.To[int32](DefaultMinCandidateNodesAbsolute)
	}
}

// ValidateArgs checks defaulted args as kube-scheduler does:
// minCandidateNodesPercentage in [0, 100], minCandidateNodesAbsolute at
// least 0, and not both zero.
func ValidateArgs(args *configv1.DefaultPreemptionArgs) error {
	var errs field.ErrorList
	pct, abs := *args.MinCandidateNodesPercentage, *args.MinCandidateNodesAbsolute
	pctPath, absPath := field.NewPath("minCandidateNodesPercentage"), field.NewPath("minCandidateNodesAbsolute")
	if pct < 0 || pct > 100 {
		errs = append(errs, field.Invalid(pctPath, pct, "not in valid range [0, 100]"))
	}
	if abs < 0 {
		errs = append(errs, field.Invalid(absPath, abs, "not in valid range [0, inf)"))
	}
	if pct == 0 && abs == 0 {
		errs = append(errs,
			field.Invalid(pctPath, pct, "cannot be zero at the same time as minCandidateNodesAbsolute"),
			field.Invalid(absPath, abs, "cannot be zero at the same time as minCandidateNodesPercentage"))
	}
	return errs.ToAggregate()
}
