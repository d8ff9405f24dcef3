// What happens to a pod that could not be scheduled or bound: it is put
// back in the queue, its nomination recorded, and a FailedScheduling event
// and the PodScheduled=False condition tell why (chapters 7 and 8).

package minisched

import (
	"context"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/minisched/metrics"
	"github.com/minisched/minisched/podstatus"
)

// noteLengthLimit is the longest event note the events API accepts.
const noteLengthLimit = 1024

// handleBindingCycleError undoes a failed binding cycle: Unreserve, forget
// the assumed pod (which frees its place, so pods waiting for room are
// moved), then requeue it through the failure handler. rec is the attempt's
// record (nil: not recorded).
func (s *Scheduler) handleBindingCycleError(ctx context.Context, state *framework.CycleState,
	schedFramework *framework.Framework, podInfo *framework.QueuedPodInfo, node string, status *framework.Status,
	start time.Time, rec *attempt.Record) {
	logger := klog.FromContext(ctx)
	assumed := podInfo.Pod
	schedFramework.RunReservePluginsUnreserve(ctx, state, assumed, node)
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
	s.handleSchedulingFailure(ctx, schedFramework, podInfo, status, clearNominatedNode, start, rec)
}

// handleSchedulingFailure requeues a pod that could not be scheduled, which
// ends its in-flight period in the queue, records the nomination
// nominatingInfo asks for (preemption's node, none, or with nil the pod's
// own), then records a FailedScheduling event and sets PodScheduled=False
// with the reason, and status.nominatedNodeName if nominatingInfo changes
// it, in one patch.
//
// The pod is back in the queue before the API calls, and from then on it is
// the queue's: it may be popped again while the event and the patch are
// still on their way, so nothing here reads podInfo after requeueing it.
//
// A pod that no longer exists, was replaced under its name, or got bound
// meanwhile is not requeued (Done ends its in-flight period instead): that
// is what keeps a failed bind of a deleted pod from retrying forever.
// start is when the attempt began, for the attempt metrics (when the pod
// was popped; for a pod-group member, now less its own algorithm's time,
// memberResult.schedulingStart); rec is the attempt's record (nil: not
// recorded), which gets the outcome here.
func (s *Scheduler) handleSchedulingFailure(ctx context.Context, schedFramework *framework.Framework,
	podInfo *framework.QueuedPodInfo, status *framework.Status, nominatingInfo *framework.NominatingInfo,
	start time.Time, rec *attempt.Record) {
	logger := klog.FromContext(ctx)

	reason, result, metricResult := v1.PodReasonSchedulerError, attempt.SchedulerError, metrics.ErrorResult
	if status.IsRejected() {
		reason, result, metricResult = v1.PodReasonUnschedulable, attempt.Unschedulable, metrics.UnschedulableResult
	}
	s.metrics.Attempt(metricResult, schedFramework.ProfileName(), time.Since(start))
	pod := podInfo.Pod
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
	case errors.Is(err, errPodGroupUnschedulable):
		// Its group failed (schedule_one_podgroup.go): the group backs off
		// as a whole, whatever this member's rejecting plugins were.
		logger.V(2).Info("Unable to schedule pod belonging to a pod group; waiting", "err", errMsg)
	default:
		logger.Error(err, "Error scheduling pod; retrying")
	}

	nominated := podInfo.PodInfo
	cached, err := s.podLister.Pods(pod.Namespace).Get(pod.Name)
	requeued := false
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
		pod, nominated, requeued = podInfo.Pod, podInfo.PodInfo, true
		if err := s.Queue.AddUnschedulablePodIfNotPresent(logger, podInfo); err != nil {
			logger.Error(err, "Requeueing pod failed")
		}
	}
	// Record the nomination before the patch, so the next cycle already
	// holds the node for this pod (the nominator ignores pods that are gone
	// or bound).
	s.Queue.AddNominatedPod(logger, nominated, nominatingInfo)

	note := truncateMessage(errMsg)
	schedFramework.EventRecorder().Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", note)
	cond := &v1.PodCondition{
		Type:               v1.PodScheduled,
		Status:             v1.ConditionFalse,
		ObservedGeneration: pod.Generation,
		Reason:             reason,
		Message:            errMsg,
	}
	if err := podstatus.Update(ctx, s.client, pod, cond, nominatedNodeName(nominatingInfo)); err != nil {
		logger.Error(err, "Error updating pod condition")
	}
	if rec != nil && !requeued {
		// A pod gone or bound meanwhile keeps the record it has: this
		// attempt's is only observed.
		setOutcome(rec, result, "", errMsg)
		s.observe(pod, rec)
		return
	}
	// The attempt's record (record.go) gets the outcome the event told.
	s.recordOutcome(pod, rec, result, "", errMsg)
}

// nominatedNodeName is the nominated node nominatingInfo sets ("" clears
// it), nil if it keeps the pod's.
func nominatedNodeName(nominatingInfo *framework.NominatingInfo) *string {
	if nominatingInfo.Mode() != framework.ModeOverride {
		return nil
	}
	return &nominatingInfo.NominatedNodeName
}

// truncateMessage shortens a message to fit an event note.
func truncateMessage(msg string) string { return truncate(msg, noteLengthLimit) }

// truncate shortens msg to at most limit bytes, ending it with " ..." when
// it cut something.
func truncate(msg string, limit int) string {
	if len(msg) <= limit {
		return msg
	}
	const suffix = " ..."
	return msg[:limit-len(suffix)] + suffix
}
