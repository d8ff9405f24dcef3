// This file puts pods back and moves them on: after a failed attempt
// (AddUnschedulablePodIfNotPresent), when a cluster event may have helped
// the unschedulable ones (MoveAllToActiveOrBackoffQueue and its callers), and
// when a plugin asks for some by name (Activate).

package queue

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// AddUnschedulablePodIfNotPresent puts back a popped pod whose attempt failed.
// The scheduler has set pInfo's UnschedulablePlugins and PendingPlugins from
// the attempt (both empty if it failed with an error). A failed pod takes
// these steps, in order:
//
//  1. Refused: a pod the queue already holds in a sub-queue, or a pod whose
//     schedulerName has no profile, is an error.
//  2. Dropped: a pod deleted during its attempt is not put back. A pod
//     updated during its attempt is put back as its newest object.
//  3. Counted and stamped: an error adds to its consecutive errors, a
//     rejection to its rejections (and ends the error streak); its
//     timestamp is set to now, and its backoff counts from here.
//  4. Judged (strategyAfterAttempt): a pod that failed with an error is
//     retried after backoff. A rejected pod is offered every event recorded
//     while it was in flight: an event a Pending plugin says answers it
//     retries it immediately, one a rejecting plugin says may help retries
//     it after backoff, and with no such event it waits.
//  5. Placed (requeue): waiting means the unschedulable pods, until an event
//     one of its rejecting plugins registered (or the five-minute leftover
//     flush); after backoff means backoffQ while the backoff lasts and
//     activeQ once it is over; immediately means activeQ. Entering backoffQ
//     or activeQ runs PreEnqueue, which may gate the pod among the
//     unschedulable pods instead.
//
// Whatever the outcome, it ends the pod's in-flight period, under the same
// lock: once the pod is back, a Pop may take it again at once, and that new
// attempt's in-flight record must not be ended by the old one (see Done).
func (p *PriorityQueue) AddUnschedulablePodIfNotPresent(logger klog.Logger, pInfo *framework.QueuedPodInfo) error {
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
	// 3. Counted and stamped.
	if pInfo.UnschedulablePlugins.Len() == 0 && pInfo.PendingPlugins.Len() == 0 {
		pInfo.ConsecutiveErrorsCount++
	} else {
		pInfo.UnschedulableCount++
		pInfo.ConsecutiveErrorsCount = 0
	}
	pInfo.Timestamp = p.clock.Now()
	pInfo.BackoffExpiration = time.Time{}
	// A member of a pod group goes back to its group (pending while the
	// group's attempt runs): the group, not the member, is judged and
	// placed, by AddAttemptedPodGroupIfNeeded.
	if key, ok := p.podGroups.groupKeyOf(pod); ok {
		p.addMember(logger, key, pInfo, "ScheduleAttemptFailure")
		return nil
	}
	// 4. Judged.
	strategy := p.strategyAfterAttempt(logger, pInfo, events)
	// 5. Placed.
	dest := p.requeue(logger, pInfo, strategy, "ScheduleAttemptFailure")
	logger.V(4).Info("Pod requeued after a failed attempt", "pod", klog.KObj(pInfo.Pod), "strategy", strategy,
		"queue", dest, "unschedulablePlugins", pInfo.UnschedulablePlugins, "pendingPlugins", pInfo.PendingPlugins,
		"eventsDuringAttempt", len(events))
	if dest == ActiveQ || dest == BackoffQ {
		p.cond.Broadcast()
	}
	return nil
}

// MoveAllToActiveOrBackoffQueue offers event (with its old and new objects)
// to every unschedulable entity one of whose pods passes preCheck (nil
// passes all): entities whose rejecting plugins say it may help move to
// backoffQ or activeQ (gated ones re-run PreEnqueue first); the others
// stay. The event is also logged for the pods in flight.
func (p *PriorityQueue) MoveAllToActiveOrBackoffQueue(logger klog.Logger, event framework.ClusterEvent, oldObj,
	newObj interface{}, preCheck func(*v1.Pod) bool) {
	p.lock.Lock()
	defer p.lock.Unlock()
	p.inFlight.record(event, oldObj, newObj)
	var candidates []framework.QueuedEntity
	for _, e := range p.unschedulablePods.entities {
		if preCheck == nil || anyPod(e, preCheck) {
			candidates = append(candidates, e)
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

// anyPod reports whether check holds for some pod of e.
func anyPod(e framework.QueuedEntity, check func(*v1.Pod) bool) bool {
	found := false
	e.ForEachPod(func(pInfo *framework.QueuedPodInfo) bool {
		found = check(pInfo.Pod)
		return !found
	})
	return found
}

// movePods offers event to each of entities (all among the unschedulable
// pods) and moves those worth requeuing.
func (p *PriorityQueue) movePods(logger klog.Logger, entities []framework.QueuedEntity, event framework.ClusterEvent,
	oldObj, newObj interface{}) {
	activated := false
	for _, e := range entities {
		if e.Params().Gated() && !gateMayLift(e.Params(), event) {
			continue // only the gating plugin's events (or a wildcard) can let it in
		}
		strategy := p.isEntityWorthRequeuing(logger, e, event, oldObj, newObj)
		if strategy == queueSkip {
			logger.V(5).Info("Event does not help; it stays unschedulable", entityKV(e), entityRef(e), "event", event)
			continue
		}
		p.unschedulablePods.delete(e.Key())
		if dest := p.requeue(logger, e, strategy, event.String()); dest == ActiveQ || dest == BackoffQ {
			activated = true
		}
	}
	if activated {
		p.cond.Broadcast()
	}
}

// isEntityWorthRequeuing is the most urgent strategy the event calls for
// among the entity's pods (isPodWorthRequeuing): a pod group moves when
// the event may help any of its members.
func (p *PriorityQueue) isEntityWorthRequeuing(logger klog.Logger, e framework.QueuedEntity,
	event framework.ClusterEvent, oldObj, newObj interface{}) queueingStrategy {
	best := queueSkip
	e.ForEachPod(func(pInfo *framework.QueuedPodInfo) bool {
		best = max(best, p.isPodWorthRequeuing(logger, pInfo, event, oldObj, newObj))
		return best != queueImmediately
	})
	return best
}

// requeue places an entity that is in no sub-queue where strategy sends
// it: queueSkip among the unschedulable pods; queueAfterBackoff into
// backoffQ while it is backing off; otherwise (its backoff is over, or
// queueImmediately) into activeQ. Entering backoffQ or activeQ runs
// PreEnqueue, which may gate it among the unschedulable pods. It returns
// where it went; the caller broadcasts if that is activeQ or backoffQ (an
// idle Pop takes entities from backoffQ too).
func (p *PriorityQueue) requeue(logger klog.Logger, e framework.QueuedEntity, strategy queueingStrategy,
	event string) Location {
	switch {
	case strategy == queueSkip:
		p.addUnschedulable(e, event)
		return UnschedulablePods
	case strategy == queueAfterBackoff && p.isBackingOff(e):
		if p.moveToBackoffQ(logger, e, event) {
			return BackoffQ
		}
		return UnschedulablePods
	}
	if p.moveToActiveQ(logger, e, event) {
		return ActiveQ
	}
	return UnschedulablePods
}

// gateMayLift reports whether event is a wildcard or one of the events the
// entity's gating plugin registered.
func gateMayLift(params *framework.QueueingParams, event framework.ClusterEvent) bool {
	if event.Resource == framework.WildCard && event.ActionType == framework.All {
		return true
	}
	for _, e := range params.GatingPluginEvents {
		if e.Match(event) {
			return true
		}
	}
	return false
}

// Activate moves the given pods (keyed by namespace/name) to activeQ: from
// the unschedulable pods through PreEnqueue, from backoffQ directly (its
// PreEnqueue ran on the way in). A pod in flight gets a ForceActivate event
// of its own, so it is retried after backoff when it comes back whatever
// rejected it. Pods the queue does not hold are ignored. It implements
// framework.PodActivator.
func (p *PriorityQueue) Activate(logger klog.Logger, pods map[string]*v1.Pod) {
	p.lock.Lock()
	defer p.lock.Unlock()
	activated := false
	for _, pod := range pods {
		key := string(pod.UID)
		// A member activates its whole group.
		if groupKey, ok := p.podGroups.memberOf[pod.UID]; ok {
			key = groupKey
		}
		if e := p.unschedulablePods.get(key); e != nil {
			p.unschedulablePods.delete(key)
			if p.moveToActiveQ(logger, e, framework.ForceActivate.Label) {
				activated = true
			}
			continue
		}
		if e, ok := p.backoffQ.get(key); ok {
			p.backoffQ.delete(key)
			p.pushToActiveQ(logger, e, framework.ForceActivate.Label)
			activated = true
			continue
		}
		if p.inFlight.recordFor(pod.UID, framework.ForceActivate) {
			logger.V(5).Info("Pod to activate is in flight; it will be retried when it comes back", "pod", klog.KObj(pod))
		}
	}
	if activated {
		p.cond.Broadcast()
	}
}

var _ framework.PodActivator = (*PriorityQueue)(nil)
