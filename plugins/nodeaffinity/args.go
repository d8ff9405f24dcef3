// This file turns NodeAffinity's pluginConfig into checked settings:
// kube-scheduler's v1 NodeAffinityArgs, validated as kube-scheduler does.

package nodeaffinity

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// DecodeArgs decodes NodeAffinity's args (nil means none) and validates them.
// kube-scheduler's v1 defaulting has nothing to fill in for NodeAffinityArgs:
// no addedAffinity means no scheduler-enforced affinity. Unknown fields are
// errors.
func DecodeArgs(raw *runtime.RawExtension) (*configv1.NodeAffinityArgs, error) {
	return framework.DecodePluginArgs(raw, nil, func(args *configv1.NodeAffinityArgs) error {
		return ValidateArgs(nil, args)
	})
}

// ValidateArgs checks args as kube-scheduler does: the required node selector
// and the preferred terms of addedAffinity must parse (valid label keys and
// values, known operators, exactly one value for a matchFields In/NotIn).
// Each error names its field under path, such as
// "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key".
// Like kube-scheduler, errors in preferred terms are named by the term's
// index without ".preference"
// ("addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].values").
func ValidateArgs(path *field.Path, args *configv1.NodeAffinityArgs) error {
	if args.AddedAffinity == nil {
		return nil
	}
	var errs []error
	if ns := args.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution; ns != nil {
		p := path.Child("addedAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
		if _, err := nodeaffinity.NewNodeSelector(ns, field.WithPath(p)); err != nil {
			errs = append(errs, err)
		}
	}
	if terms := args.AddedAffinity.PreferredDuringSchedulingIgnoredDuringExecution; len(terms) != 0 {
		p := path.Child("addedAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
		if _, err := nodeaffinity.NewPreferredSchedulingTerms(terms, field.WithPath(p)); err != nil {
			errs = append(errs, err)
		}
	}
	return utilerrors.Flatten(utilerrors.NewAggregate(errs))
}
