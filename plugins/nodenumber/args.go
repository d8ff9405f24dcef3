// This file defines NodeNumber's pluginConfig args, the smallest args type
// there is: one flag, to show that pluginConfig reaches a plugin.

package nodenumber

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// NodeNumberArgs configures NodeNumber.
type NodeNumberArgs struct {
	metav1.TypeMeta `json:",inline"`

	// Reverse flips scoring: nodes whose number does NOT match the pod's get
	// the high score.
	Reverse bool `json:"reverse"`
}

var _ runtime.Object = &NodeNumberArgs{}

// DeepCopyObject implements runtime.Object, so the args can also be handed
// over as a typed object.
func (a *NodeNumberArgs) DeepCopyObject() runtime.Object {
	c := *a
	return &c
}
