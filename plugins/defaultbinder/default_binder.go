// Package defaultbinder is the Bind plugin that records the scheduling
// decision in the apiserver by creating the pod's Binding subresource, as
// kube-scheduler's DefaultBinder does.
package defaultbinder

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/podstatus"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "DefaultBinder"

// DefaultBinder binds pods with the profile's client.
type DefaultBinder struct {
	handle framework.Handle
}

var _ framework.BindPlugin = &DefaultBinder{}

// New returns the plugin. It takes no args; any pluginConfig is ignored, as
// kube-scheduler does for plugins without args.
func New(_ context.Context, _ *runtime.RawExtension, h framework.Handle) (framework.Plugin, error) {
	return &DefaultBinder{handle: h}, nil
}

// Name returns Name.
func (b *DefaultBinder) Name() string { return Name }

// Bind creates pods/binding for the pod, targeting nodeName. The pod's UID
// goes along, so the apiserver refuses to bind a pod that was deleted and
// recreated under the same name meanwhile. A Retriable error (500, 503, a
// refused connection) is retried, at most four tries in all, as
// kube-scheduler's util.BindPod does; any other error, or the last, is
// returned as Error.
func (b *DefaultBinder) Bind(ctx context.Context, _ *framework.CycleState, pod *v1.Pod,
	nodeName string) *framework.Status {
	klog.FromContext(ctx).V(4).Info("Attempting to bind pod to node",
		"pod", klog.KObj(pod), "node", klog.KRef("", nodeName))
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	err := podstatus.WithRetries(podstatus.Retriable, func() error {
		return b.handle.ClientSet().CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{})
	})
	if err != nil {
		return framework.AsStatus(err)
	}
	return nil
}
