// This file is the PriorityQueue itself: its parts, Add, Update, Delete, Pop
// and Done. Putting pods back, moving them on events and activating them is
// requeue.go.

package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/minisched/metrics"
)

// Profile is what the queue needs from one profile's runtime;
// *framework.Framework satisfies it.
type Profile interface {
	// RunPreEnqueuePlugins decides whether the pod may enter activeQ; a
	// non-success status gates it and names the gating plugin.
	RunPreEnqueuePlugins(ctx context.Context, pod *v1.Pod) *framework.Status
	// QueueingHints maps each plugin that can reject a pod to the events it
	// registered (a plugin without EnqueueExtensions registers the wildcard).
	QueueingHints() map[string][]framework.ClusterEventWithHint
	// SignPod returns the pod's signature for OpportunisticBatching (nil:
	// never batched). The queue signs a pod when it receives or updates it,
	// so that a scheduling cycle only compares bytes.
	SignPod(ctx context.Context, pod *v1.Pod) framework.PodSignature
}

var _ Profile = (*framework.Framework)(nil)

// ErrClosed is returned by Pop once Close was called.
var ErrClosed = errors.New("scheduling queue is closed")

// How often Run flushes the backoff queue and the unschedulable leftovers,
// and how long a pod may wait among the unschedulable pods before the
// leftover flush retries it even though no event said it might fit; as in
// kube-scheduler.
const (
	unschedulableFlushInterval        = 30 * time.Second
	podMaxInUnschedulablePodsDuration = 5 * time.Minute
)

// Location names where the queue holds a pod.
type Location string

// The places a pod can be, as Locate reports them.
const (
	// ActiveQ: waiting to be popped.
	ActiveQ Location = "activeQ"
	// BackoffQ: waiting for its backoff to expire.
	BackoffQ Location = "backoffQ"
	// UnschedulablePods: waiting for an event that may help, or gated.
	UnschedulablePods Location = "unschedulablePods"
	// InFlight: popped and not yet put back nor marked Done.
	InFlight Location = "inFlight"
	// NotQueued: unknown to the queue (never added, deleted, or bound).
	NotQueued Location = ""
)

// PriorityQueue is the scheduling queue shared by all profiles.
type PriorityQueue struct {
	// lock guards every field below that is not set once by New.
	lock sync.Mutex
	// cond (on lock) wakes Pop when a pod enters activeQ or the queue closes.
	cond *sync.Cond

	// clock stamps pods and drives backoff and the flush tickers.
	clock clock.WithTicker
	// podInitialBackoffDuration is the backoff after the first failed
	// attempt; it doubles per further failure (see backoffCount) up to
	// podMaxBackoffDuration.
	podInitialBackoffDuration time.Duration
	podMaxBackoffDuration     time.Duration
	// profiles maps spec.schedulerName to the profile that owns such pods.
	profiles map[string]Profile
	// less is the QueueSort activeQ is ordered by (Contents sorts a copy
	// with it).
	less framework.LessFunc

	// activeQ holds entities (pods, pod groups) ready to be scheduled, best
	// first by less.
	activeQ *keyedHeap[framework.QueuedEntity]
	// backoffQ holds entities serving their backoff, earliest expiry first.
	backoffQ *backoffQueue
	// unschedulablePods holds rejected or gated entities until an event
	// helps.
	unschedulablePods *unschedulablePods
	// inFlight tracks popped pods and the events seen while they are out.
	inFlight *inFlightPods
	// nominator holds the nominated pods of every node (its own lock).
	nominator *nominator
	// podGroups holds what the queue knows of pod groups (podgroups.go).
	podGroups podGroups

	// closed is set by Close; Pop then returns ErrClosed.
	closed bool
	// schedulingCycle counts the pods popped: the number of the scheduling
	// cycle under way. OpportunisticBatching uses a stored ranking only in
	// the cycle right after the one that stored it.
	schedulingCycle int64

	// metrics counts pods entering activeQ, backoffQ and the unschedulable
	// pods (nil: none).
	metrics *metrics.Metrics
}

// New returns an empty queue. less orders activeQ (it is the QueueSort of the
// profiles, which must all agree on it); profiles maps each schedulerName to
// its profile. Pods naming any other scheduler are ignored.
func New(less framework.LessFunc, profiles map[string]Profile, opts ...Option) *PriorityQueue {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	p := &PriorityQueue{
		clock:                     o.clock,
		podInitialBackoffDuration: o.podInitialBackoffDuration,
		podMaxBackoffDuration:     o.podMaxBackoffDuration,
		profiles:                  profiles,
		less:                      less,
		activeQ:                   newKeyedHeap(entityKey, less),
		unschedulablePods:         newUnschedulablePods(),
		inFlight:                  newInFlightPods(),
		nominator:                 newNominator(o.podLister),
		podGroups:                 newPodGroups(o.podGroups),
		metrics:                   o.metrics,
	}
	p.backoffQ = p.newBackoffQueue(less)
	p.cond = sync.NewCond(&p.lock)
	return p
}

// entityKey keys entities in every sub-queue: a pod by its UID (a pod
// deleted and re-created under the same name is a different pod;
// framework.PodKey, namespace/name, is for messages), a pod group by its
// namespace/name.
func entityKey(e framework.QueuedEntity) string { return e.Key() }

// Run starts the two flush loops on the queue's clock (backoffQ on every
// whole second, the unschedulable leftovers every 30 seconds) and returns at
// once; they stop when ctx is done. Call it once.
func (p *PriorityQueue) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	// Create the timers before returning so that a fake clock stepped right
	// after Run already fires them.
	now := p.clock.Now()
	toNextSecond := now.Truncate(backoffWindow).Add(backoffWindow).Sub(now)
	backoff := p.clock.NewTimer(toNextSecond)
	leftover := p.clock.NewTicker(unschedulableFlushInterval)
	go p.runBackoffFlush(ctx, backoff, logger)
	go runEvery(ctx, leftover, func() { p.FlushUnschedulablePodsLeftover(logger) })
}

// runEvery calls fn on every tick until ctx is done.
func runEvery(ctx context.Context, t clock.Ticker, fn func()) {
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			fn()
		}
	}
}

// Add queues a new pending pod: into activeQ, or among the unschedulable pods
// if a PreEnqueue plugin gates it. A pod the queue already holds is treated
// as an update; a pod of no known profile is ignored.
func (p *PriorityQueue) Add(logger klog.Logger, pod *v1.Pod) {
	p.lock.Lock()
	defer p.lock.Unlock()
	p.add(logger, pod)
}

func (p *PriorityQueue) add(logger klog.Logger, pod *v1.Pod) {
	if _, ok := p.profiles[pod.Spec.SchedulerName]; !ok {
		logger.V(4).Info("Ignoring pod of another scheduler", "pod", klog.KObj(pod), "schedulerName", pod.Spec.SchedulerName)
		return
	}
	if old := p.knownPod(pod.UID); old != nil {
		// An informer relist can re-deliver a pod we hold.
		p.update(logger, old, pod)
		return
	}
	now := p.clock.Now()
	pInfo := framework.NewQueuedPodInfo(pod, now)
	pInfo.InitialAttemptTimestamp = &now
	pInfo.PodSignature = p.signPod(logger, pod)
	// Nominate before the pod can be popped, even if it is gated.
	p.nominator.add(logger, pInfo.PodInfo, nil)
	if key, ok := p.podGroups.groupKeyOf(pod); ok {
		p.addMember(logger, key, pInfo, "PodAdd")
		return
	}
	if p.moveToActiveQ(logger, pInfo, "PodAdd") {
		p.cond.Broadcast()
	}
}

// knownPod returns the queue's current object for uid, from a sub-queue or
// from the in-flight record, or nil.
func (p *PriorityQueue) knownPod(uid types.UID) *v1.Pod {
	if pInfo := p.get(uid); pInfo != nil {
		return pInfo.Pod
	}
	if m, _ := p.member(uid); m != nil {
		return m.Pod
	}
	if f := p.inFlight.get(uid); f != nil {
		return f.pod
	}
	return nil
}

// get finds the pod with uid, queued as an entity of its own, in the three
// sub-queues.
func (p *PriorityQueue) get(uid types.UID) *framework.QueuedPodInfo {
	pInfo, _ := p.getEntity(string(uid)).(*framework.QueuedPodInfo)
	return pInfo
}

// getEntity finds the entity with key in the three sub-queues, or nil.
func (p *PriorityQueue) getEntity(key string) framework.QueuedEntity {
	if e, ok := p.activeQ.Get(key); ok {
		return e
	}
	if e, ok := p.backoffQ.get(key); ok {
		return e
	}
	return p.unschedulablePods.get(key)
}

// Update reacts to a change of a pending pod.
//
//   - In activeQ or backoffQ, the pod object is replaced in place; its place
//     and bookkeeping stay.
//   - Among the unschedulable pods, the object is replaced and the change is
//     offered to the rejecting plugins as an UnscheduledPod event: a
//     scheduling gate removed, requests scaled down, a toleration added can
//     each be what the pod was waiting for.
//   - In flight, the change is remembered for the pod and decided on when it
//     comes back (AddUnschedulablePodIfNotPresent).
//   - Unknown, the pod is added.
//
// A pod is never in a sub-queue and in flight at once:
// AddUnschedulablePodIfNotPresent ends the in-flight period under the lock
// it puts the pod back with.
func (p *PriorityQueue) Update(logger klog.Logger, oldPod, newPod *v1.Pod) {
	p.lock.Lock()
	defer p.lock.Unlock()
	if oldPod == nil {
		oldPod = p.knownPod(newPod.UID)
	}
	if oldPod == nil {
		p.add(logger, newPod)
		return
	}
	p.update(logger, oldPod, newPod)
}

func (p *PriorityQueue) update(logger klog.Logger, oldPod, newPod *v1.Pod) {
	key := string(newPod.UID)
	defer func() {
		// Whatever sub-queue holds the pod, its nomination follows the
		// newest object.
		if pInfo := p.get(newPod.UID); pInfo != nil {
			p.nominator.update(logger, oldPod, pInfo.PodInfo)
		} else if m, _ := p.member(newPod.UID); m != nil {
			p.nominator.update(logger, oldPod, m.PodInfo)
		} else if p.inFlight.get(newPod.UID) != nil {
			p.nominator.update(logger, oldPod, framework.NewPodInfo(newPod))
		}
	}()
	if p.updateMember(logger, oldPod, newPod) {
		return
	}
	if p.activeQ.Has(key) {
		pInfo := p.get(newPod.UID)
		pInfo.PodInfo = framework.NewPodInfo(newPod)
		pInfo.PodSignature = p.signPod(logger, newPod)
		p.activeQ.Fix(key)
		logger.V(5).Info("Updated pod in activeQ", "pod", klog.KObj(newPod))
		return
	}
	if p.backoffQ.has(key) {
		pInfo := p.get(newPod.UID)
		pInfo.PodInfo = framework.NewPodInfo(newPod)
		pInfo.PodSignature = p.signPod(logger, newPod)
		p.backoffQ.fix(key)
		logger.V(5).Info("Updated pod in backoffQ", "pod", klog.KObj(newPod))
		return
	}
	if pInfo, _ := p.unschedulablePods.get(key).(*framework.QueuedPodInfo); pInfo != nil {
		pInfo.PodInfo = framework.NewPodInfo(newPod)
		pInfo.PodSignature = p.signPod(logger, newPod)
		actions := framework.PodUpdateActions(oldPod, newPod)
		if actions == 0 {
			return // status only: nothing a plugin could care about
		}
		event := unscheduledPodUpdate(actions)
		strategy := p.isPodWorthRequeuing(logger, pInfo, event, oldPod, newPod)
		if strategy == queueSkip {
			logger.V(5).Info("Pod update does not help; pod stays unschedulable", "pod", klog.KObj(newPod), "event", event)
			return
		}
		p.unschedulablePods.delete(key)
		if dest := p.requeue(logger, pInfo, strategy, event.String()); dest == ActiveQ || dest == BackoffQ {
			p.cond.Broadcast()
		}
		return
	}
	if p.inFlight.recordPodUpdate(oldPod, newPod, unscheduledPodUpdate(framework.PodUpdateActions(oldPod, newPod))) {
		logger.V(5).Info("Pod updated while in flight; the update is kept for when it is requeued", "pod", klog.KObj(newPod))
		return
	}
	p.add(logger, newPod)
}

// unscheduledPodUpdate is the event for a pending pod's own update.
func unscheduledPodUpdate(actions framework.ActionType) framework.ClusterEvent {
	return framework.ClusterEvent{Resource: framework.UnscheduledPod, ActionType: actions, Label: "UnscheduledPodUpdate"}
}

// Delete removes a pod from whichever sub-queue holds it. A pod in flight is
// marked, so that it is not requeued when its attempt fails.
func (p *PriorityQueue) Delete(pod *v1.Pod) {
	p.lock.Lock()
	defer p.lock.Unlock()
	key := string(pod.UID)
	if !p.deleteMember(pod.UID) && !p.activeQ.Delete(key) && !p.backoffQ.delete(key) {
		p.unschedulablePods.delete(key)
	}
	p.inFlight.markDeleted(pod.UID)
	p.nominator.delete(pod.UID)
}

// Pop blocks until activeQ has an entity, removes the best one and returns
// it, now in flight, with its Attempts counted: a pod, or a pod group whose
// members are all in flight. When activeQ is empty it takes the head of
// backoffQ's rejected entities instead, backoff or not: an idle scheduler
// may as well retry them (those that failed with an error still wait).
// Once Close was called it returns ErrClosed, even if entities remain.
func (p *PriorityQueue) Pop(logger klog.Logger) (framework.QueuedEntity, error) {
	p.lock.Lock()
	defer p.lock.Unlock()
	for p.activeQ.Len() == 0 && p.backoffQ.rejected.Len() == 0 && !p.closed {
		p.cond.Wait()
	}
	if p.closed {
		return nil, ErrClosed
	}
	e, ok := p.activeQ.Pop()
	if !ok {
		e, _ = p.backoffQ.rejected.Pop()
		logger.V(5).Info("activeQ is empty; popping from backoffQ", entityKV(e), entityRef(e))
		p.metrics.QueueIncoming(metrics.ActiveQ, "PopFromBackoffQ")
	}
	e.Params().Attempts++
	if group, ok := e.(*framework.QueuedPodGroupInfo); ok {
		p.popGroup(group)
	}
	p.schedulingCycle++
	e.ForEachPod(func(pInfo *framework.QueuedPodInfo) bool {
		p.inFlight.add(pInfo.Pod)
		return true
	})
	logger.V(4).Info("Popped", entityKV(e), entityRef(e), "attempts", e.Params().Attempts)
	return e, nil
}

// SchedulingCycle returns the number of pods popped so far: during a
// scheduling cycle, that cycle's number.
func (p *PriorityQueue) SchedulingCycle() int64 {
	p.lock.Lock()
	defer p.lock.Unlock()
	return p.schedulingCycle
}

// signPod asks the pod's profile for its signature (the caller checked the
// profile exists).
func (p *PriorityQueue) signPod(logger klog.Logger, pod *v1.Pod) framework.PodSignature {
	return p.profiles[pod.Spec.SchedulerName].SignPod(klog.NewContext(context.Background(), logger), pod)
}

// Done ends the in-flight period of a popped pod and drops the events kept
// for it. Every popped pod's period ends exactly once:
//
//   - by Done when Permit has allowed the pod, before PreBind: from there on
//     a failure is an error, which sends the pod to backoff whatever
//     happened meanwhile, so the events are no longer needed (and a long
//     PreBind or Bind does not keep them alive);
//   - by AddUnschedulablePodIfNotPresent when the failure handler puts the pod
//     back: it needs the events to decide where the pod goes, and ends the
//     period under its lock, before a new Pop can start another;
//   - by Done when the attempt ends without the pod going back: it was
//     skipped, deleted, bound by someone else or replaced.
//
// Done on a pod that is not in flight does nothing.
func (p *PriorityQueue) Done(uid types.UID) {
	p.lock.Lock()
	defer p.lock.Unlock()
	p.inFlight.done(uid)
}

// Close wakes every blocked Pop with ErrClosed; later Pops fail at once.
func (p *PriorityQueue) Close() {
	p.lock.Lock()
	defer p.lock.Unlock()
	p.closed = true
	p.cond.Broadcast()
}

// The formats of PendingPods' summary, as in kube-scheduler: the second
// with the GenericWorkload gate (WithPodGroups).
const (
	pendingPodsSummary         = "activeQ:%v; backoffQ:%v; unschedulableEntities:%v"
	pendingPodsExtendedSummary = "activeQ:%v; backoffQ:%v; unschedulableEntities:%v; pendingPodGroupMemberPods:%v; incompletePodGroupPods:%v"
)

// PendingPods returns every pod the queue holds but those in flight: in the
// three sub-queues and, with pod groups, the members waiting pending or
// incomplete; and a summary of the counts, as kube-scheduler's cache
// debugger prints them (minisched's does too: debugger.CacheDumper).
func (p *PriorityQueue) PendingPods() ([]*v1.Pod, string) {
	p.lock.Lock()
	defer p.lock.Unlock()
	var pods []*v1.Pod
	add := func(entities []framework.QueuedEntity) int {
		n := 0
		for _, e := range entities {
			e.ForEachPod(func(pInfo *framework.QueuedPodInfo) bool {
				pods = append(pods, pInfo.Pod)
				n++
				return true
			})
		}
		return n
	}
	active, backoff, unschedulable := add(p.activeQ.List()), add(p.backoffQ.list()), add(p.unschedulablePods.list())
	if !p.podGroups.enabled {
		return pods, fmt.Sprintf(pendingPodsSummary, active, backoff, unschedulable)
	}
	addMembers := func(lists map[string][]*framework.QueuedPodInfo) int {
		n := 0
		for _, members := range lists {
			for _, m := range members {
				pods = append(pods, m.Pod)
				n++
			}
		}
		return n
	}
	pending, incomplete := addMembers(p.podGroups.pending), addMembers(p.podGroups.incomplete)
	return pods, fmt.Sprintf(pendingPodsExtendedSummary, active, backoff, unschedulable, pending, incomplete)
}

// Locate reports where the queue holds the pod with uid. Tests use it to
// follow a pod through the queue.
func (p *PriorityQueue) Locate(uid types.UID) Location {
	p.lock.Lock()
	defer p.lock.Unlock()
	return p.locate(uid)
}

func (p *PriorityQueue) locate(uid types.UID) Location {
	if _, loc := p.member(uid); loc != NotQueued {
		return loc
	}
	switch {
	case p.activeQ.Has(string(uid)):
		return ActiveQ
	case p.backoffQ.has(string(uid)):
		return BackoffQ
	case p.unschedulablePods.get(string(uid)) != nil:
		return UnschedulablePods
	case p.inFlight.get(uid) != nil:
		return InFlight
	}
	return NotQueued
}

// locateEntity reports which sub-queue holds the entity with key.
func (p *PriorityQueue) locateEntity(key string) Location {
	switch {
	case p.activeQ.Has(key):
		return ActiveQ
	case p.backoffQ.has(key):
		return BackoffQ
	case p.unschedulablePods.get(key) != nil:
		return UnschedulablePods
	}
	return NotQueued
}
