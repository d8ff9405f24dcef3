// Package podstatus writes a pod's status the way kube-scheduler does: set a
// condition without moving its transition time needlessly, and send only the
// difference as a strategic merge patch of the status subresource. The
// scheduler (PodScheduled and status.nominatedNodeName, after a failure and
// when a binding will take a while) and the preemption plugin (its victims'
// DisruptionTarget) use it.
package podstatus

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// Retriable reports whether a failed write of the scheduler is sent again
// at once: an apiserver error (500), one unavailable (503), or a refused
// connection (kube-scheduler's util.Retriable). The DefaultBinder's bind
// retries these.
func Retriable(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || utilnet.IsConnectionRefused(err)
}

// RetriableWithConflict is Retriable or a conflict (409): a status patch is
// sent again after either (kube-scheduler's util.RetriableWithConflict).
func RetriableWithConflict(err error) bool { return Retriable(err) || apierrors.IsConflict(err) }

// WithRetries calls write, and again after a Retriable error (or any
// error retriable says to retry) on client-go's retry.DefaultBackoff: at
// most four tries, 10 ms then five times longer each time, as
// kube-scheduler's BindPod and PatchPodStatus do.
func WithRetries(retriable func(error) bool, write func() error) error {
	return retry.OnError(retry.DefaultBackoff, retriable, write)
}

// Update patches the pod's status with cond (if not nil) and
// nominatedNodeName (if not nil; "" clears it), unless the pod already
// carries exactly that (kube-scheduler's updatePod does the same).
func Update(ctx context.Context, client kubernetes.Interface, pod *v1.Pod, cond *v1.PodCondition,
	nominatedNodeName *string) error {
	newStatus := pod.Status.DeepCopy()
	nnnChanged := nominatedNodeName != nil && pod.Status.NominatedNodeName != *nominatedNodeName
	condChanged := cond != nil && SetCondition(newStatus, cond)
	if !condChanged && !nnnChanged {
		return nil
	}
	if nnnChanged {
		newStatus.NominatedNodeName = *nominatedNodeName
	}
	logger := klog.FromContext(ctx).V(3)
	if cond != nil {
		logger = logger.WithValues("conditionType", cond.Type, "conditionStatus", cond.Status,
			"conditionReason", cond.Reason)
	}
	logger.Info("Updating pod condition and nominated node name", "nominatedNodeName", newStatus.NominatedNodeName)
	return Patch(ctx, client, pod, newStatus)
}

// Patch sends the difference between pod's status and newStatus as a
// strategic merge patch of the status subresource, again after a conflict
// or a Retriable error (RetriableWithConflict, WithRetries).
func Patch(ctx context.Context, client kubernetes.Interface, pod *v1.Pod, newStatus *v1.PodStatus) error {
	oldData, err := json.Marshal(v1.Pod{Status: pod.Status})
	if err != nil {
		return err
	}
	newData, err := json.Marshal(v1.Pod{Status: *newStatus})
	if err != nil {
		return err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, &v1.Pod{})
	if err != nil {
		return fmt.Errorf("creating status patch for pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return WithRetries(RetriableWithConflict, func() error {
		_, err := client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
			metav1.PatchOptions{}, "status")
		return err
	})
}

// Condition returns the condition of type t in status, nil if it has none.
// The pointer is into status: copy the condition before changing it.
func Condition(status *v1.PodStatus, t v1.PodConditionType) *v1.PodCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			return &status.Conditions[i]
		}
	}
	return nil
}

// SetCondition sets cond in status and reports whether anything changed.
// The transition time moves only when the condition's status changes.
func SetCondition(status *v1.PodStatus, cond *v1.PodCondition) bool {
	now := metav1.Now()
	for i := range status.Conditions {
		old := &status.Conditions[i]
		if old.Type != cond.Type {
			continue
		}
		if old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message &&
			old.ObservedGeneration == cond.ObservedGeneration {
			return false
		}
		c := *cond
		c.LastTransitionTime = old.LastTransitionTime
		if old.Status != cond.Status || c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = now
		}
		c.LastProbeTime = old.LastProbeTime
		*old = c
		return true
	}
	c := *cond
	c.LastTransitionTime = now
	status.Conditions = append(status.Conditions, c)
	return true
}
