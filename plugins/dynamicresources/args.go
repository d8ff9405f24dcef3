// This file turns DynamicResources' pluginConfig into checked settings:
// kube-scheduler's v1 DynamicResourcesArgs, defaulted and validated as
// kube-scheduler v1.37 does with its default gates (DRASchedulerFilterTimeout
// and DRADeviceBindingConditions on).

package dynamicresources

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// decodeArgs decodes the args (nil means none), defaults them
// (filterTimeout 10s, bindingTimeout 600s: configv1's defaults) and
// validates them. Unknown fields are errors.
func decodeArgs(raw *runtime.RawExtension) (*configv1.DynamicResourcesArgs, error) {
	return framework.DecodePluginArgs(raw, setDefaultArgs, func(args *configv1.DynamicResourcesArgs) error {
		return validateArgs(field.NewPath("args"), args).ToAggregate()
	})
}

// setDefaultArgs fills in configv1's defaults for the timeouts not given.
func setDefaultArgs(args *configv1.DynamicResourcesArgs) {
	if args.FilterTimeout == nil {
		args.FilterTimeout = &metav1.Duration{Duration: configv1.DynamicResourcesFilterTimeoutDefault}
	}
	if args.BindingTimeout == nil {
		args.BindingTimeout = &metav1.Duration{Duration: configv1.DynamicResourcesBindingTimeoutDefault}
	}
}

// validateArgs checks DynamicResourcesArgs as kube-scheduler v1.37.1 does
// with its default gates: filterTimeout ≥ 0 (0 turns it off),
// bindingTimeout ≥ 1s.
func validateArgs(path *field.Path, args *configv1.DynamicResourcesArgs) field.ErrorList {
	var errs field.ErrorList
	if args.FilterTimeout != nil && args.FilterTimeout.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("filterTimeout"), args.FilterTimeout.Duration.String(),
			"must be zero or positive"))
	}
	if args.BindingTimeout != nil && args.BindingTimeout.Duration < time.Second {
		errs = append(errs, field.Invalid(path.Child("bindingTimeout"), args.BindingTimeout.Duration.String(),
			"must be at least 1s"))
	}
	return errs
}
