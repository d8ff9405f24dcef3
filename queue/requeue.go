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
// the attempt (both empty if it failed with an error); it still calls Done
// afterwards.
//
// PreEnqueue runs again first: a gated pod waits among the unschedulable
// pods. Otherwise the pod goes to backoffQ (or activeQ, if its backoff is
// already over) when it failed with an error or when an event seen during
// its attempt is worth retrying it for; to activeQ at once when such an
// event answered a Pending plugin; else among the unschedulable pods.
//
// A pod deleted during its attempt is dropped. If the pod itself was updated
// during its attempt, the newest object is queued. podSchedulingCycle is
// kept for kube-scheduler's signature; the in-flight log makes it unneeded.
// It is an error to put back a pod the queue already holds.
func (p *PriorityQueue) AddUnschedulableIfNotPresent(logger klog.Logger, pInfo *framework.QueuedPodInfo, podSchedulingCycle int64) error {
	p.lock.Lock()
	defer p.lock.Unlock()
	pod := pInfo.Pod
	if loc := p.locate(pod.UID); loc != NotQueued && loc != InFlight {
		return fmt.Errorf("pod %v is already present in %s", klog.KObj(pod), loc)
	}
	if _, ok := p.profiles[pod.Spec.SchedulerName]; !ok {
		return fmt.Errorf("pod %v names scheduler %q, which has no profile", klog.KObj(pod), pod.Spec.SchedulerName)
	}
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
	pInfo.Timestamp = p.clock.Now()

	if !p.admit(logger, pInfo) {
		p.unschedulablePods.add(pInfo)
		return nil
	}
	strategy := p.strategyAfterAttempt(logger, pInfo, events)
	dest := p.destination(pInfo, strategy)
	logger.V(4).Info("Pod requeued after a failed attempt", "pod", klog.KObj(pInfo.Pod), "strategy", strategy, "queue", dest,
		"unschedulablePlugins", pInfo.UnschedulablePlugins, "pendingPlugins", pInfo.PendingPlugins, "eventsDuringAttempt", len(events), "cycle", podSchedulingCycle)
	if p.place(logger, pInfo, dest, "ScheduleAttemptFailure", true) == ActiveQ {
		p.cond.Broadcast()
	}
	return nil
}

// MoveAllToActiveOrBackoffQueue offers event (with its old and new objects)
// to every unschedulable pod that passes preCheck (nil passes all): pods
// whose rejecting plugins say it may help move to backoffQ or activeQ (gated
// ones re-run PreEnqueue first); the others stay. The event is also logged
// for the pods in flight.
func (p *PriorityQueue) MoveAllToActiveOrBackoffQueue(logger klog.Logger, event framework.ClusterEvent, oldObj, newObj interface{}, preCheck func(*v1.Pod) bool) {
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
func (p *PriorityQueue) movePods(logger klog.Logger, pods []*framework.QueuedPodInfo, event framework.ClusterEvent, oldObj, newObj interface{}) {
	activated := false
	for _, pInfo := range pods {
		strategy := p.isPodWorthRequeuing(logger, pInfo, event, oldObj, newObj)
		if strategy == queueSkip {
			logger.V(5).Info("Event does not help pod; it stays unschedulable", "pod", klog.KObj(pInfo.Pod), "event", event)
			continue
		}
		p.unschedulablePods.delete(pInfo.Pod.UID)
		if p.place(logger, pInfo, p.destination(pInfo, strategy), event.String(), false) == ActiveQ {
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

// place puts a pod that is in no sub-queue into dest. On the way to activeQ
// it passes PreEnqueue, unless the caller has just run it (admitted); a pod
// that is still gated lands among the unschedulable pods instead. place
// returns where the pod landed; the caller broadcasts for ActiveQ.
func (p *PriorityQueue) place(logger klog.Logger, pInfo *framework.QueuedPodInfo, dest Location, event string, admitted bool) Location {
	switch dest {
	case UnschedulablePods:
		p.unschedulablePods.add(pInfo)
		logger.V(4).Info("Pod moved to unschedulablePods", "pod", klog.KObj(pInfo.Pod), "event", event)
	case BackoffQ:
		p.backoffQ.AddOrUpdate(pInfo)
		logger.V(4).Info("Pod moved to backoffQ", "pod", klog.KObj(pInfo.Pod), "event", event, "backoff", p.backoffDuration(pInfo))
	case ActiveQ:
		if admitted {
			p.activeQ.AddOrUpdate(pInfo)
			logger.V(4).Info("Pod moved to activeQ", "pod", klog.KObj(pInfo.Pod), "event", event)
		} else if !p.moveToActiveQ(logger, pInfo, event) {
			return UnschedulablePods
		}
	}
	return dest
}
