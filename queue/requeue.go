// This file puts pods back and moves them on: after a failed attempt
// (AddUnschedulableIfNotPresent) and when a cluster event may have helped
// the unschedulable ones (MoveAllToActiveOrBackoffQueue and its callers).

package queue

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// AddUnschedulableIfNotPresent puts back a popped pod whose attempt failed.
// The scheduler has set pInfo's UnschedulablePlugins and PendingPlugins from
// the attempt (both empty if it failed with an error). A failed pod takes
// these steps, in order:
//
//  1. Refused: a pod the queue already holds in a sub-queue, or a pod whose
//     schedulerName has no profile, is an error.
//  2. Dropped: a pod deleted during its attempt is not put back. A pod
//     updated during its attempt is put back as its newest object.
//  3. Stamped: its timestamp is set to now; its backoff counts from here.
//  4. Gated: PreEnqueue runs again. A pod it gates goes among the
//     unschedulable pods and waits for an event the gating plugin
//     registered; steps 5 and 6 are skipped.
//  5. Judged (strategyAfterAttempt): a pod that failed with an error is
//     retried after backoff. A rejected pod is offered every event recorded
//     while it was in flight: an event a Pending plugin says answers it
//     retries it immediately, one a rejecting plugin says may help retries
//     it after backoff, and with no such event it waits.
//  6. Placed: after backoff means backoffQ while the backoff lasts and
//     activeQ once it is over; immediately means activeQ; waiting means the
//     unschedulable pods, until an event one of its rejecting plugins
//     registered (or the five-minute leftover flush).
//
// Whatever the outcome, it ends the pod's in-flight period, under the same
// lock: once the pod is back, a Pop may take it again at once, and that new
// attempt's in-flight record must not be ended by the old one (see Done).
func (p *PriorityQueue) AddUnschedulableIfNotPresent(logger klog.Logger, pInfo *framework.QueuedPodInfo) error {
	p.lock.Lock()
	defer p.lock.Unlock()
	pod := pInfo.Pod
	// Deferred calls run last in, first out: the in-flight period ends
	// before the lock is released.
	defer p.inFlight.done(pod.UID)
	// 1. Refused.
	if loc := p.locate(pod.UID); loc != NotQueued && loc != InFlight {
		return fmt.Errorf("pod %v is already present in %s", klog.KObj(pod), loc)
	}
	if _, ok := p.profiles[pod.Spec.SchedulerName]; !ok {
		return fmt.Errorf("pod %v names scheduler %q, which has no profile", klog.KObj(pod), pod.Spec.SchedulerName)
	}
	// 2. Dropped, or refreshed.
	var events []inFlightEvent
	if rec := p.inFlight.get(pod.UID); rec != nil {
		if rec.deleted {
			logger.V(4).Info("Pod was deleted during its attempt; not requeuing it", "pod", klog.KObj(pod))
			return nil
		}
		if rec.updated {
			pInfo.PodInfo = framework.NewPodInfo(rec.pod)
		}
		events = p.inFlight.eventsFor(pod.UID)
	}
	// 3. Stamped.
	pInfo.Timestamp = p.clock.Now()
	// 4. Gated.
	if !p.admit(logger, pInfo) {
		p.unschedulablePods.add(pInfo)
		return nil
	}
	// 5. Judged.
	strategy := p.strategyAfterAttempt(logger, pInfo, events)
	// 6. Placed. PreEnqueue has just run, so activeQ takes the pod directly.
	dest := p.destination(pInfo, strategy)
	logger.V(4).Info("Pod requeued after a failed attempt", "pod", klog.KObj(pInfo.Pod), "strategy", strategy,
		"queue", dest, "unschedulablePlugins", pInfo.UnschedulablePlugins, "pendingPlugins", pInfo.PendingPlugins,
		"eventsDuringAttempt", len(events))
	switch dest {
	case UnschedulablePods:
		p.unschedulablePods.add(pInfo)
	case BackoffQ:
		p.backoffQ.AddOrUpdate(pInfo)
	case ActiveQ:
		p.activeQ.AddOrUpdate(pInfo)
		p.cond.Broadcast()
	}
	return nil
}

// MoveAllToActiveOrBackoffQueue offers event (with its old and new objects)
// to every unschedulable pod that passes preCheck (nil passes all): pods
// whose rejecting plugins say it may help move to backoffQ or activeQ (gated
// ones re-run PreEnqueue first); the others stay. The event is also logged
// for the pods in flight.
func (p *PriorityQueue) MoveAllToActiveOrBackoffQueue(logger klog.Logger, event framework.ClusterEvent, oldObj,
	newObj interface{}, preCheck func(*v1.Pod) bool) {
	p.lock.Lock()
	defer p.lock.Unlock()
	p.inFlight.record(event, oldObj, newObj)
	var candidates []*framework.QueuedPodInfo
	for _, pInfo := range p.unschedulablePods.pods {
		if preCheck == nil || preCheck(pInfo.Pod) {
			candidates = append(candidates, pInfo)
		}
	}
	p.movePods(logger, candidates, event, oldObj, newObj)
}

// AssignedPodAdded reacts to a pod being bound or appearing bound: pods that
// some plugin rejected for lack of such a pod (affinity, say) may now fit.
func (p *PriorityQueue) AssignedPodAdded(logger klog.Logger, pod *v1.Pod) {
	p.MoveAllToActiveOrBackoffQueue(logger, framework.AssignedPodAdd, nil, pod, nil)
}

// AssignedPodUpdated reacts to a change of a bound pod (its labels, or
// requests scaled down), classified as in framework.PodUpdateActions. A
// status-only change is ignored.
func (p *PriorityQueue) AssignedPodUpdated(logger klog.Logger, oldPod, newPod *v1.Pod) {
	actions := framework.PodUpdateActions(oldPod, newPod)
	if actions == 0 {
		return
	}
	event := framework.ClusterEvent{Resource: framework.Pod, ActionType: actions, Label: "AssignedPodUpdate"}
	p.MoveAllToActiveOrBackoffQueue(logger, event, oldPod, newPod, nil)
}

// movePods offers event to each of pods (all among the unschedulable pods)
// and moves those worth requeuing.
func (p *PriorityQueue) movePods(logger klog.Logger, pods []*framework.QueuedPodInfo, event framework.ClusterEvent,
	oldObj, newObj interface{}) {
	activated := false
	for _, pInfo := range pods {
		strategy := p.isPodWorthRequeuing(logger, pInfo, event, oldObj, newObj)
		if strategy == queueSkip {
			logger.V(5).Info("Event does not help pod; it stays unschedulable", "pod", klog.KObj(pInfo.Pod), "event", event)
			continue
		}
		p.unschedulablePods.delete(pInfo.Pod.UID)
		if p.requeue(logger, pInfo, strategy, event.String()) {
			activated = true
		}
	}
	if activated {
		p.cond.Broadcast()
	}
}

// destination is the sub-queue a strategy sends the pod to: queueSkip keeps
// it unschedulable; queueAfterBackoff sends it to backoffQ while it is
// backing off (a gated pod never is) and to activeQ otherwise;
// queueImmediately sends it to activeQ.
func (p *PriorityQueue) destination(pInfo *framework.QueuedPodInfo, strategy queueingStrategy) Location {
	switch {
	case strategy == queueSkip:
		return UnschedulablePods
	case strategy == queueAfterBackoff && p.isPodBackingOff(pInfo):
		return BackoffQ
	}
	return ActiveQ
}

// requeue moves a pod that an event took out of the unschedulable pods
// (strategy is not queueSkip) to where the strategy sends it: backoffQ while
// it is backing off, else activeQ through PreEnqueue, which may gate it back
// among the unschedulable pods. It reports whether the pod entered activeQ;
// the caller broadcasts.
func (p *PriorityQueue) requeue(logger klog.Logger, pInfo *framework.QueuedPodInfo, strategy queueingStrategy,
	event string) bool {
	if p.destination(pInfo, strategy) == BackoffQ {
		p.backoffQ.AddOrUpdate(pInfo)
		logger.V(4).Info("Pod moved to backoffQ", "pod", klog.KObj(pInfo.Pod), "event", event,
			"backoff", p.backoffDuration(pInfo))
		return false
	}
	return p.moveToActiveQ(logger, pInfo, event)
}
