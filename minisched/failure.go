package minisched

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// noteLengthLimit is the longest event note the events API accepts.
const noteLengthLimit = 1024

// handleBindingCycleError undoes a failed binding cycle: Unreserve, forget
// the assumed pod (which frees its place, so pods waiting for room are
// moved), then requeue it through the failure handler.
func (s *Scheduler) handleBindingCycleError(ctx context.Context, state *framework.CycleState,
	fwk *framework.Framework, podInfo *framework.QueuedPodInfo, node string, status *framework.Status) {
	logger := klog.FromContext(ctx)
	assumed := podInfo.Pod
	fwk.RunReservePluginsUnreserve(ctx, state, assumed, node)
	if err := s.Cache.ForgetPod(logger, assumed); err != nil {
		logger.Error(err, "Scheduler cache ForgetPod failed")
	} else if status.IsRejected() {
		// Forgetting is like deleting an assigned pod, but the pod itself was
		// rejected: move the others only, after it is back in the queue, so
		// this event is not counted as one that happened during its cycle.
		defer s.Queue.MoveAllToActiveOrBackoffQueue(logger, framework.AssignedPodDelete, assumed, nil, func(p *v1.Pod) bool {
			return p.UID != assumed.UID
		})
	} else {
		s.Queue.MoveAllToActiveOrBackoffQueue(logger, framework.AssignedPodDelete, assumed, nil, nil)
	}
	s.handleSchedulingFailure(ctx, fwk, podInfo, status)
}

// handleSchedulingFailure requeues a pod that could not be scheduled, which
// ends its in-flight period in the queue, then records a FailedScheduling
// event and sets PodScheduled=False with the reason.
//
// The pod is back in the queue before the API calls, and from then on it is
// the queue's: it may be popped again while the event and the patch are
// still on their way, so nothing here reads podInfo after requeueing it.
//
// A pod that no longer exists, or that got bound meanwhile, is not requeued:
// that is what keeps a failed bind of a deleted pod from retrying forever.
func (s *Scheduler) handleSchedulingFailure(ctx context.Context, fwk *framework.Framework,
	podInfo *framework.QueuedPodInfo, status *framework.Status) {
	logger := klog.FromContext(ctx)

	reason, result := v1.PodReasonSchedulerError, SchedulerError
	if status.IsRejected() {
		reason, result = v1.PodReasonUnschedulable, Unschedulable
	}
	pod, attempts := podInfo.Pod, podInfo.Attempts
	errMsg := status.Message()
	// Only this attempt's verdict counts: an error after an earlier rejection
	// (or gate) must back off, not wait for events for those plugins.
	podInfo.ClearRejectorPlugins()
	var fitErr *framework.FitError
	switch err := status.AsError(); {
	case errors.Is(err, ErrNoNodesAvailable):
		logger.Error(err, "No nodes available to schedule pod")
	case errors.As(err, &fitErr):
		// The rejecting plugins decide which events may help this pod.
		podInfo.UnschedulablePlugins = fitErr.Diagnosis.UnschedulablePlugins.Clone()
		podInfo.PendingPlugins = fitErr.Diagnosis.PendingPlugins.Clone()
		logger.V(2).Info("Unable to schedule pod; no fit; waiting", "err", errMsg)
	default:
		logger.Error(err, "Error scheduling pod; retrying")
	}

	cached, err := s.podLister.Pods(pod.Namespace).Get(pod.Name)
	switch {
	case err != nil:
		logger.Info("Pod doesn't exist in informer cache; not requeueing", "err", err)
		s.Queue.Done(pod.UID)
	case cached.UID != pod.UID:
		logger.Info("Pod was replaced by a new one with the same name; not requeueing the old one")
		s.Queue.Done(pod.UID)
	case cached.Spec.NodeName != "":
		logger.Info("Pod has been assigned to node; not requeueing", "node", cached.Spec.NodeName)
		s.Queue.Done(pod.UID)
	default:
		// Requeue the informer's latest version: the pod may have changed
		// while we were trying it. The queue ends its in-flight period.
		podInfo.PodInfo = framework.NewPodInfo(cached.DeepCopy())
		if err := s.Queue.AddUnschedulableIfNotPresent(logger, podInfo); err != nil {
			logger.Error(err, "Requeueing pod failed")
		}
	}

	note := truncateMessage(errMsg)
	fwk.EventRecorder().Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", note)
	cond := &v1.PodCondition{
		Type:               v1.PodScheduled,
		Status:             v1.ConditionFalse,
		ObservedGeneration: pod.Generation,
		Reason:             reason,
		Message:            errMsg,
	}
	if err := updatePodCondition(ctx, s.client, pod, cond); err != nil {
		logger.Error(err, "Error updating pod condition")
	}
	a := Attempt{
		Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Profile: fwk.ProfileName(),
		Result: result, Message: errMsg, Attempts: attempts, Time: time.Now(),
	}
	if fitErr != nil {
		a.Rejections = s.explain(nil, &fitErr.Diagnosis).rejections
	}
	s.observe(a)
}

// truncateMessage shortens a message to fit an event note.
func truncateMessage(msg string) string {
	if len(msg) <= noteLengthLimit {
		return msg
	}
	const suffix = " ..."
	return msg[:noteLengthLimit-len(suffix)] + suffix
}

// updatePodCondition patches the pod's status with cond, unless the pod
// already carries exactly that condition.
func updatePodCondition(ctx context.Context, client kubernetes.Interface, pod *v1.Pod, cond *v1.PodCondition) error {
	oldStatus := pod.Status.DeepCopy()
	newStatus := pod.Status.DeepCopy()
	if !setPodCondition(newStatus, cond) {
		return nil
	}
	klog.FromContext(ctx).V(3).Info("Updating pod condition",
		"conditionType", cond.Type, "conditionStatus", cond.Status, "conditionReason", cond.Reason)
	oldData, err := json.Marshal(v1.Pod{Status: *oldStatus})
	if err != nil {
		return err
	}
	newData, err := json.Marshal(v1.Pod{Status: *newStatus})
	if err != nil {
		return err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, &v1.Pod{})
	if err != nil {
		return fmt.Errorf("creating status patch for pod %s: %w", framework.PodKey(pod), err)
	}
	_, err = client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{}, "status")
	return err
}

// setPodCondition sets cond in status and reports whether anything changed.
// The transition time moves only when the condition's status changes.
func setPodCondition(status *v1.PodStatus, cond *v1.PodCondition) bool {
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
