// This file defines Dynamic's pluginConfig args, the same as
// crane-scheduler's DynamicArgs, and checks them.

package dynamic

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minisched/minisched/minisched/framework"
)

// DynamicArgs configures Dynamic.
type DynamicArgs struct {
	metav1.TypeMeta `json:",inline"`

	// PolicyConfigPath names the DynamicSchedulerPolicy file. Required:
	// crane-scheduler falls back to /etc/kubernetes/dynamic-scheduler-policy.yaml,
	// but a path nobody wrote down is a surprise when the file is missing.
	PolicyConfigPath string `json:"policyConfigPath"`
}

var _ runtime.Object = &DynamicArgs{}

// DeepCopyObject implements runtime.Object, so the args can also be handed
// over as a typed object.
func (a *DynamicArgs) DeepCopyObject() runtime.Object {
	c := *a
	return &c
}

// DecodeArgs decodes the args strictly (an unknown field is an error) and
// validates them.
func DecodeArgs(raw *runtime.RawExtension) (*DynamicArgs, error) {
	args := &DynamicArgs{}
	if err := framework.DecodeArgs(raw, args); err != nil {
		return nil, err
	}
	if err := ValidateArgs(args); err != nil {
		return nil, err
	}
	return args, nil
}

// ValidateArgs checks that policyConfigPath is set; the error names the
// field: "policyConfigPath: Required value".
func ValidateArgs(args *DynamicArgs) error {
	if args.PolicyConfigPath == "" {
		return field.ErrorList{field.Required(field.NewPath("policyConfigPath"),
			"the path of a DynamicSchedulerPolicy file")}.ToAggregate()
	}
	return nil
}
