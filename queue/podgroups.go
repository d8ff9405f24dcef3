// This file is the queue's side of gang scheduling (chapter 19, the
// GenericWorkload gate): the members of a PodGroup queue as one entity, a
// QueuedPodGroupInfo, ordered by the PodGroup's priority, backed off and
// gated as a whole, and popped whole into one pod-group cycle.
//
// A member is, at any time, in exactly one of these places:
//
//	Add ─▶ PodGroup not seen yet ─────────────▶ incomplete ──PodGroup Add──┐
//	  │                                                                   │
//	  ├──▶ its group queued ─▶ joins the group entity (activeQ, backoffQ, ◀┤
//	  │                        or unschedulable when a member gates it)   │
//	  ├──▶ its group in flight ─▶ pending ──AddAttemptedPodGroupIfNeeded──┤
//	  └──▶ otherwise ─▶ a new group entity, through PreEnqueue ◀──────────┘
//
// Pop takes the whole entity: its members are in flight. The pod-group
// cycle puts each member that did not bind back with
// AddUnschedulablePodIfNotPresent, which, while its group is in flight,
// leaves it pending; AddAttemptedPodGroupIfNeeded then makes the pending
// members one entity again, with the group's bookkeeping: straight to
// activeQ after a success (the leftovers are tried at once), else to
// backoffQ. A failed group is never parked among the unschedulable pods:
// only a member's gate puts it there. Deleting the PodGroup sends its
// members back to incomplete.

package queue

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// The places of a member that is in no sub-queue.
const (
	// IncompletePodGroupPods: its PodGroup has not been seen yet. It waits,
	// silently: no attempt, no event.
	IncompletePodGroupPods Location = "incompletePodGroupPods"
	// PendingPodGroupPods: it arrived, or came back, while its group was
	// being scheduled; it joins the group when the attempt ends.
	PendingPodGroupPods Location = "pendingPodGroupPods"
)

// podGroups is the queue's knowledge of pod groups. Only the queue's lock
// guards it.
type podGroups struct {
	// enabled is the GenericWorkload gate: without it no pod is a member.
	enabled bool
	// objects are the PodGroups seen, by key (framework.PodGroupKey): the
	// queue's own view, so that where a member goes never depends on the
	// cache's timing.
	objects map[string]*schedulingv1beta1.PodGroup
	// incomplete and pending hold members outside any entity, by group key.
	incomplete map[string][]*framework.QueuedPodInfo
	pending    map[string][]*framework.QueuedPodInfo
	// memberOf maps every member the queue holds in an entity, incomplete or
	// pending (not in flight) to its group's key.
	memberOf map[types.UID]string
	// inFlight is the key of the group being scheduled, "" if none: only
	// one scheduling cycle runs at a time.
	inFlight string
}

func newPodGroups(enabled bool) podGroups {
	return podGroups{
		enabled:    enabled,
		objects:    map[string]*schedulingv1beta1.PodGroup{},
		incomplete: map[string][]*framework.QueuedPodInfo{},
		pending:    map[string][]*framework.QueuedPodInfo{},
		memberOf:   map[types.UID]string{},
	}
}

// groupKeyOf returns the key of the group pod is a member of, and false if
// it is no member (no group named, or the gate off).
func (g *podGroups) groupKeyOf(pod *v1.Pod) (string, bool) {
	if !g.enabled {
		return "", false
	}
	name, ok := framework.PodGroupName(pod)
	if !ok {
		return "", false
	}
	return framework.PodGroupKey(pod.Namespace, name), true
}

// addMember puts a member where it belongs (see the file comment). It is
// how members enter the queue, and how they come back after an attempt.
func (p *PriorityQueue) addMember(logger klog.Logger, key string, pInfo *framework.QueuedPodInfo, event string) {
	g := &p.podGroups
	pod := pInfo.Pod
	switch {
	case g.objects[key] == nil:
		g.incomplete[key] = append(g.incomplete[key], pInfo)
		g.memberOf[pod.UID] = key
		logger.V(5).Info("Pod waits for its PodGroup to be seen", "pod", klog.KObj(pod), "podGroup", key)
	case g.inFlight == key:
		g.pending[key] = append(g.pending[key], pInfo)
		g.memberOf[pod.UID] = key
		logger.V(5).Info("Pod waits for its group's attempt to end", "pod", klog.KObj(pod), "podGroup", key)
	default:
		group, strategy := p.takeGroup(key)
		if group == nil {
			group = framework.NewQueuedPodGroupInfo(g.objects[key], p.clock.Now())
			strategy = queueImmediately
		}
		group.AddMember(pInfo)
		g.memberOf[pod.UID] = key
		// Requeued where it was (a new one to activeQ): PreEnqueue runs
		// again on the way, for the new member's gates.
		if dest := p.requeue(logger, group, strategy, event); dest == ActiveQ || dest == BackoffQ {
			p.cond.Broadcast()
		}
	}
}

// takeGroup takes the group entity with key out of whichever sub-queue
// holds it, and returns it with the strategy that puts it back there; nil
// if no sub-queue holds it.
func (p *PriorityQueue) takeGroup(key string) (*framework.QueuedPodGroupInfo, queueingStrategy) {
	if e, ok := p.activeQ.Get(key); ok {
		p.activeQ.Delete(key)
		return e.(*framework.QueuedPodGroupInfo), queueImmediately
	}
	if e, ok := p.backoffQ.get(key); ok {
		p.backoffQ.delete(key)
		return e.(*framework.QueuedPodGroupInfo), queueAfterBackoff
	}
	if e := p.unschedulablePods.get(key); e != nil {
		p.unschedulablePods.delete(key)
		return e.(*framework.QueuedPodGroupInfo), queueSkip
	}
	return nil, queueSkip
}

// member finds a held member (in an entity, incomplete or pending) and the
// place it is in.
func (p *PriorityQueue) member(uid types.UID) (*framework.QueuedPodInfo, Location) {
	key, ok := p.podGroups.memberOf[uid]
	if !ok {
		return nil, NotQueued
	}
	if e := p.getEntity(key); e != nil {
		if m := e.(*framework.QueuedPodGroupInfo).Member(uid); m != nil {
			return m, p.locateEntity(key)
		}
	}
	for loc, lists := range map[Location]map[string][]*framework.QueuedPodInfo{
		IncompletePodGroupPods: p.podGroups.incomplete, PendingPodGroupPods: p.podGroups.pending} {
		for _, m := range lists[key] {
			if m.Pod.UID == uid {
				return m, loc
			}
		}
	}
	return nil, NotQueued
}

// updateMember replaces a held member's pod object, and what the queue
// derives from it (its requests, its signature), as update does for a pod
// in no group. In a group gated by a member, the change is offered to it as
// an UnscheduledPod event (a scheduling gate removed lets the group in). It
// reports whether the pod was a held member.
func (p *PriorityQueue) updateMember(logger klog.Logger, oldPod, newPod *v1.Pod) bool {
	m, loc := p.member(newPod.UID)
	if m == nil {
		return false
	}
	key := p.podGroups.memberOf[newPod.UID]
	var group *framework.QueuedPodGroupInfo
	if loc == ActiveQ || loc == BackoffQ || loc == UnschedulablePods {
		group = p.getEntity(key).(*framework.QueuedPodGroupInfo)
		if _, err := group.UpdateMember(newPod); err != nil {
			logger.Error(err, "Updating a member of a queued pod group")
		}
	} else {
		m.PodInfo = framework.NewPodInfo(newPod)
	}
	m.PodSignature = p.signPod(logger, newPod)
	if loc == UnschedulablePods {
		if actions := framework.PodUpdateActions(oldPod, newPod); actions != 0 {
			p.movePods(logger, []framework.QueuedEntity{group}, unscheduledPodUpdate(actions), oldPod, newPod)
		}
	}
	logger.V(5).Info("Updated a pod group member", "pod", klog.KObj(newPod), "podGroup", key, "queue", loc)
	return true
}

// deleteMember removes a held member. A group left with no member leaves
// the queue; one with members stays where it is. It reports whether the pod
// was a held member.
func (p *PriorityQueue) deleteMember(uid types.UID) bool {
	g := &p.podGroups
	key, ok := g.memberOf[uid]
	if !ok {
		return false
	}
	delete(g.memberOf, uid)
	dropPod(g.incomplete, key, uid)
	dropPod(g.pending, key, uid)
	if e := p.getEntity(key); e != nil {
		group := e.(*framework.QueuedPodGroupInfo)
		group.RemoveMember(uid)
		if group.Size() == 0 {
			p.takeGroup(key)
		} else {
			p.activeQ.Fix(key)
			p.backoffQ.fix(key)
		}
	}
	return true
}

// dropPod removes the pod with uid from lists[key], and the key once its
// list is empty (so that empty lists do not linger).
func dropPod(lists map[string][]*framework.QueuedPodInfo, key string, uid types.UID) {
	list := lists[key]
	out := list[:0]
	for _, m := range list {
		if m.Pod.UID != uid {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		delete(lists, key)
		return
	}
	lists[key] = out
}

// popGroup marks a popped group in flight: its members leave memberOf (the
// in-flight record follows them now), and members that arrive meanwhile
// wait as pending.
func (p *PriorityQueue) popGroup(group *framework.QueuedPodGroupInfo) {
	p.podGroups.inFlight = group.Key()
	for _, m := range group.Members {
		m.Attempts++
		delete(p.podGroups.memberOf, m.Pod.UID)
	}
}

// AddAttemptedPodGroupIfNeeded ends a pod group's attempt: the scheduler
// calls it once the cycle has put back every member that did not go on to
// bind (AddUnschedulablePodIfNotPresent left them pending). The pending
// members become one entity again, carrying the group's bookkeeping,
// counted and stamped by the attempt's status:
//
//   - Success (some members were placed): the rest go straight to activeQ,
//     with counts reset; a group some of whose members failed keeps its
//     timestamp, so that it is retried first among its priority;
//   - rejected: one more rejection, then backoffQ while it backs off;
//   - an error: one more error in a row, then backoffQ likewise.
//
// Entering activeQ or backoffQ runs PreEnqueue, which may gate it. With no
// member pending it does nothing more: the group is done. It is an error if
// a sub-queue already holds the group.
func (p *PriorityQueue) AddAttemptedPodGroupIfNeeded(logger klog.Logger, group *framework.QueuedPodGroupInfo,
	status *framework.Status) error {
	p.lock.Lock()
	defer p.lock.Unlock()
	g := &p.podGroups
	key := group.Key()
	if loc := p.locateEntity(key); loc != NotQueued {
		return fmt.Errorf("pod group %s is already present in %s", key, loc)
	}
	g.inFlight = ""
	pending := g.pending[key]
	delete(g.pending, key)
	if len(pending) == 0 {
		return nil
	}
	if g.objects[key] == nil {
		// Deleted meanwhile: DeletePodGroup moved the pending members to
		// incomplete already; any that came back since wait there too.
		g.incomplete[key] = append(g.incomplete[key], pending...)
		return nil
	}
	again := framework.NewQueuedPodGroupInfo(g.objects[key], group.Timestamp)
	again.QueueingParams = group.QueueingParams
	failedHere := false
	for _, m := range pending {
		again.AddMember(m)
		failedHere = failedHere || group.Member(m.Pod.UID) != nil
	}
	params := &again.QueueingParams
	switch {
	case status.IsSuccess():
		params.UnschedulableCount, params.ConsecutiveErrorsCount = 0, 0
		if !failedHere {
			params.Timestamp = p.clock.Now()
		}
	case status.IsRejected():
		params.UnschedulableCount++
		params.ConsecutiveErrorsCount = 0
		params.Timestamp = p.clock.Now()
	default:
		params.ConsecutiveErrorsCount++
		params.Timestamp = p.clock.Now()
	}
	params.BackoffExpiration = time.Time{} // counted from the new timestamp
	strategy := queueAfterBackoff
	if status.IsSuccess() {
		strategy = queueImmediately
	}
	dest := p.requeue(logger, again, strategy, "ScheduleAttemptFailure")
	logger.V(3).Info("Pod group requeued after its attempt", "podGroup", key, "status", status.Code(),
		"members", again.Size(), "queue", dest)
	if dest == ActiveQ || dest == BackoffQ {
		p.cond.Broadcast()
	}
	return nil
}

// AddPodGroup records a PodGroup the informer saw, and moves its members
// that were waiting for it into the queue.
func (p *PriorityQueue) AddPodGroup(logger klog.Logger, pg *schedulingv1beta1.PodGroup) {
	p.lock.Lock()
	defer p.lock.Unlock()
	g := &p.podGroups
	if !g.enabled {
		return
	}
	key, _ := p.setPodGroup(pg)
	waiting := g.incomplete[key]
	delete(g.incomplete, key)
	for _, m := range waiting {
		p.addMember(logger, key, m, "PodGroupAdd")
	}
	logger.V(5).Info("PodGroup seen; its waiting pods are queued", "podGroup", key, "pods", len(waiting))
}

// UpdatePodGroup records a PodGroup's new object, in the queue's view and
// in its queued entity.
func (p *PriorityQueue) UpdatePodGroup(logger klog.Logger, pg *schedulingv1beta1.PodGroup) {
	p.lock.Lock()
	defer p.lock.Unlock()
	if !p.podGroups.enabled {
		return
	}
	key, queued := p.setPodGroup(pg)
	if queued {
		// The priority may have changed: the heaps reorder the entity.
		p.activeQ.Fix(key)
		p.backoffQ.fix(key)
	}
	logger.V(5).Info("PodGroup updated", "podGroup", key)
}

// setPodGroup records pg in the queue's view and in its queued entity, if
// it has one, and returns its key and whether it has. The caller holds
// p.lock, with pod groups enabled.
func (p *PriorityQueue) setPodGroup(pg *schedulingv1beta1.PodGroup) (key string, queued bool) {
	key = framework.PodGroupKey(pg.Namespace, pg.Name)
	p.podGroups.objects[key] = pg
	e := p.getEntity(key)
	if e == nil {
		return key, false
	}
	e.(*framework.QueuedPodGroupInfo).PodGroup = pg
	return key, true
}

// DeletePodGroup forgets a PodGroup: its queued and pending members go back
// to incomplete, to wait for a PodGroup of that name again.
func (p *PriorityQueue) DeletePodGroup(logger klog.Logger, pg *schedulingv1beta1.PodGroup) {
	p.lock.Lock()
	defer p.lock.Unlock()
	g := &p.podGroups
	if !g.enabled {
		return
	}
	key := framework.PodGroupKey(pg.Namespace, pg.Name)
	delete(g.objects, key)
	var back []*framework.QueuedPodInfo
	if group, _ := p.takeGroup(key); group != nil {
		back = append(back, group.Members...)
	}
	back = append(back, g.pending[key]...)
	delete(g.pending, key)
	if len(back) > 0 {
		g.incomplete[key] = append(g.incomplete[key], back...)
	}
	logger.V(5).Info("PodGroup deleted; its pods wait for it again", "podGroup", key, "pods", len(back))
}
