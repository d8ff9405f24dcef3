// This file defines StatefulSetOrdinal's pluginConfig args and checks them.

package statefulsetordinal

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minisched/minisched/minisched/framework"
)

// StatefulSetOrdinalArgs configures StatefulSetOrdinal. Both fields are
// required.
type StatefulSetOrdinalArgs struct {
	metav1.TypeMeta `json:",inline"`

	// PodLabels are label keys; a pod must carry at least one of them to be
	// placed by ordinal (it says the pod belongs to a workload that wants
	// this, e.g. strimzi.io/kind).
	PodLabels []string `json:"podLabels"`
	// NodeOrdinalLabel is the node label whose value is the ordinal of the
	// one pod that may run there.
	NodeOrdinalLabel string `json:"nodeOrdinalLabel"`
}

var _ runtime.Object = &StatefulSetOrdinalArgs{}

// DeepCopyObject implements runtime.Object, so the args can also be handed
// over as a typed object.
func (a *StatefulSetOrdinalArgs) DeepCopyObject() runtime.Object {
	c := *a
	c.PodLabels = append([]string(nil), a.PodLabels...)
	return &c
}

// DecodeArgs decodes the args strictly (an unknown field is an error) and
// validates them.
func DecodeArgs(raw *runtime.RawExtension) (*StatefulSetOrdinalArgs, error) {
	args := &StatefulSetOrdinalArgs{}
	if err := framework.DecodeArgs(raw, args); err != nil {
		return nil, err
	}
	if err := ValidateArgs(args); err != nil {
		return nil, err
	}
	return args, nil
}

// ValidateArgs checks that both fields are set and are valid label keys;
// errors name the field, e.g. "podLabels: Required value".
func ValidateArgs(args *StatefulSetOrdinalArgs) error {
	var errs field.ErrorList
	podLabels := field.NewPath("podLabels")
	if len(args.PodLabels) == 0 {
		errs = append(errs, field.Required(podLabels, "at least one pod label key"))
	}
	for i, key := range args.PodLabels {
		errs = append(errs, metav1validation.ValidateLabelName(key, podLabels.Index(i))...)
	}
	nodeLabel := field.NewPath("nodeOrdinalLabel")
	if args.NodeOrdinalLabel == "" {
		errs = append(errs, field.Required(nodeLabel, "the node label holding the ordinal"))
	} else {
		errs = append(errs, metav1validation.ValidateLabelName(args.NodeOrdinalLabel, nodeLabel)...)
	}
	return errs.ToAggregate()
}
