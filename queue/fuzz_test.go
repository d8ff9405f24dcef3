// This file fuzzes the scheduling queue: FuzzQueue decodes its input into a
// sequence of queue operations on a handful of pods, keeps a model of where
// each pod must be, and after every operation checks the queue's inner
// structure, its counts and every pod's place against the model.
// FuzzQueuePodGroups (fuzz_podgroups_test.go) runs the same model with pod
// groups.

package queue

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minisched/minisched/internal/fuzzinput"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/minisched/metrics"
)

// The fuzzed universe: few pod names, so that operations collide, and an
// upper bound on the operations one input may run, so that one input stays
// cheap.
const (
	fuzzPodNames = 6
	fuzzMaxOps   = 120
)

// The events a MoveAllToActiveOrBackoffQueue operation may deliver.
var (
	podLabelUpdate = framework.ClusterEvent{Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodLabel}
	podScaleDown   = framework.ClusterEvent{Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodScaleDown}
)

// queueIfHighPriority is a QueueingHintFn that answers Queue only for pods
// of positive priority.
func queueIfHighPriority(_ klog.Logger, pod *v1.Pod, _, _ interface{}) (framework.QueueingHint, error) {
	if podPriority(pod) > 0 {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// newFuzzProfile returns the profile every fuzzed queue uses: Foo, Bar and
// Wait register the events below (one of Bar's hints is broken and errs,
// which counts as Queue); SchedulingGates gates pods with gates.
func newFuzzProfile() *fakeProfile {
	return newProfile(map[string][]framework.ClusterEventWithHint{
		fooPlugin: {on(framework.NodeAdd), on(podLabelUpdate)},
		barPlugin: {
			onWithHint(framework.AssignedPodDelete, queueIfHighPriority),
			onWithHint(nodeLabelChange, hintReturning(framework.QueueSkip, errors.New("broken hint"))),
		},
		waitPlugin: {on(framework.AssignedPodAdd), on(podScaleDown)},
	})
}

// fuzzPluginHelps is the model's own reading of newFuzzProfile (and of the
// gang plugin, with pod groups): whether an event, with its objects, makes
// plugin answer Queue for pod.
func fuzzPluginHelps(plugin string, pod *v1.Pod, e framework.ClusterEvent, oldObj, newObj interface{}) bool {
	switch plugin {
	case fooPlugin:
		return (e.Resource == framework.Node && e.ActionType&framework.Add != 0) ||
			(e.Resource == framework.UnscheduledPod && e.ActionType&framework.UpdatePodLabel != 0)
	case barPlugin:
		return (e.Resource == framework.Pod && e.ActionType&framework.Delete != 0 && podPriority(pod) > 0) ||
			(e.Resource == framework.Node && e.ActionType&framework.UpdateNodeLabel != 0)
	case waitPlugin:
		return (e.Resource == framework.Pod && e.ActionType&framework.Add != 0) ||
			(e.Resource == framework.UnscheduledPod && e.ActionType&framework.UpdatePodScaleDown != 0)
	case gatesPlugin:
		return e.Resource == framework.UnscheduledPod && e.ActionType&framework.UpdatePodSchedulingGatesEliminated != 0
	case gangPlugin:
		registered := slices.ContainsFunc(gangHints(), func(r framework.ClusterEventWithHint) bool { return r.Event.Match(e) })
		return registered && gangHelps(pod, oldObj, newObj)
	}
	return false
}

// fuzzStrategy is the model's verdict on an event (with its objects) for a
// pod that failed with the given plugins (none: an error).
func fuzzStrategy(pod *v1.Pod, unschedulable, pending sets.Set[string], e framework.ClusterEvent,
	oldObj, newObj interface{}) queueingStrategy {
	if unschedulable.Len() == 0 && pending.Len() == 0 {
		return queueAfterBackoff
	}
	if e.Resource == framework.WildCard && e.ActionType == framework.All {
		return queueAfterBackoff
	}
	for plugin := range pending {
		if fuzzPluginHelps(plugin, pod, e, oldObj, newObj) {
			return queueImmediately
		}
	}
	for plugin := range unschedulable {
		if fuzzPluginHelps(plugin, pod, e, oldObj, newObj) {
			return queueAfterBackoff
		}
	}
	return queueSkip
}

// locSet is a set of Locations a pod may be in after an operation.
type locSet []Location

// allowedBy reports where strategy sends a pod taken out of the
// unschedulable pods: queueAfterBackoff may mean activeQ (its backoff is
// over) or backoffQ.
func allowedBy(s queueingStrategy, gated bool) locSet {
	switch {
	case gated || s == queueSkip:
		return locSet{UnschedulablePods}
	case s == queueImmediately:
		return locSet{ActiveQ}
	}
	return locSet{ActiveQ, BackoffQ}
}

// fuzzEvent is an event logged for a pod in flight, with its objects. (The
// hint functions see the pod's newest object, which the model has.)
type fuzzEvent struct {
	event          framework.ClusterEvent
	oldObj, newObj interface{}
}

// fuzzPod is the model of one pod (one UID).
type fuzzPod struct {
	slot int
	// pod is the newest object handed to the queue.
	pod *v1.Pod
	// loc is where the pod was after the last operation; NotQueued once it
	// is deleted or bound, and the record dropped after the check.
	loc Location
	// allowed is where the current operation may have put it.
	allowed locSet
	// byBackoff: this operation placed the pod by its backoff, so it is
	// backing off if it is in backoffQ, and not if it is in activeQ.
	byBackoff bool
	// deleted: deleted while in flight; it must not come back.
	deleted bool
	// nominated is the node the nominator must hold the pod under: its
	// status.nominatedNodeName, or what preemption (AddNominatedPod) set
	// and no update has contradicted since.
	nominated string
	// popped is the entry Pop returned, while in flight.
	popped *framework.QueuedPodInfo
	// seen are the events logged since the pod was popped.
	seen []fuzzEvent
	// group is the modelled group of a member (with pod groups), nil for
	// a pod in none.
	group *fuzzGroup
	// attempt is, in flight, the number of its group's attempt that popped
	// it.
	attempt int
	// signature is the signature its entry must carry: its object's when
	// the queue last received it outside flight.
	signature string
}

// queueModel drives a queue and holds what it must contain.
type queueModel struct {
	t      *testing.T
	q      *PriorityQueue
	clk    *testingclock.FakeClock
	logger klog.Logger
	// pods maps UID to model, for every pod the queue must know.
	pods map[types.UID]*fuzzPod
	// current is each name's incarnation that is not deleted, or nil.
	current [fuzzPodNames]*fuzzPod
	// incarnations counts the UIDs each name had.
	incarnations [fuzzPodNames]int
	// version stamps each object handed to the queue (ResourceVersion), so
	// the check can tell the newest object from an older one.
	version int
	// history describes the operations run so far, for failure messages.
	history []string
	// groups are the PodGroups of the universe; nil without pod groups.
	groups []*fuzzGroup
	// ops is how many operations the model decodes.
	ops byte
}

// FuzzQueue checks the queue's central promise, that nothing is lost: after
// every operation of a fuzzed sequence, each pod that was added and not
// deleted or bound is in exactly one of activeQ, backoffQ, the unschedulable
// pods (gated or not) or in flight, where the model says it must be, and the
// queue's counts, nominations and in-flight event log agree.
//
// Each operation is one opcode byte and up to two argument bytes (see
// queueModel.step).
func FuzzQueue(f *testing.F) {
	for _, seed := range [][]byte{
		// Add p0, p1 and a gated p2; pop, fail on Foo, NodeAdd; pop and bind.
		{opAdd, 0, 0, opAdd, 1, 1, opAdd, 2, 3, opPop, opRequeue, 0, 1, opMoveAll, 0, opPop, opDone, 0},
		// A gated pod's gate is removed; popped, it fails with an error and
		// leaves backoffQ with the flush.
		{opAdd, 3, 2, opUpdate, 0, 4, opPop, opRequeue, 0, 0, opFlushBackoff, 3, opFlushBackoff, 3, opPop, opDone, 0},
		// Events while in flight: NodeAdd, Activate, an update, AssignedPodAdd.
		{opAdd, 0, 0, opAdd, 1, 1, opPop, opMoveAll, 0, opActivate, 0xff, opRequeue, 0, 4, opPop, opUpdate, 0, 2,
			opMoveAll, 6, opRequeue, 0, 5, opRequeueQueued, 0},
		// Deleted while in flight, then re-created under a new UID.
		{opAdd, 4, 1, opPop, opDelete, 0, opAdd, 4, 0, opAdd, 4, 0, opPop, opDone, 0, opRequeue, 0, 1, opDone, 0x80},
		// The leftover flush after a long wait; a filtered move; a big update.
		{opAdd, 5, 4, opPop, opRequeue, 0, 1, opFlushLeftover, 5, opFlushLeftover, 5, opPop, opRequeue, 0, 2,
			opMoveAll, 0x84, opFlushBackoff, 4, opUpdate, 0, 0x1b},
		// Preemption nominates a pod; updates keep or replace the nomination.
		{opAdd, 0, 0, opNominate, 0, 1, opUpdate, 0, 2, opPop, opNominate, 0, 0x80, opUpdate, 0, 8, opRequeue, 0, 1,
			opNominate, 0, 2, opAdd, 0, 0, opDelete, 0},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) { runFuzzQueue(t, data, false) })
}

// runFuzzQueue runs the operations data encodes, checking the queue after
// each, with pod groups or without.
func runFuzzQueue(t *testing.T, data []byte, withGroups bool) {
	m := newQueueModel(t, withGroups)
	r := fuzzinput.New(data)
	for range fuzzMaxOps {
		op, ok := r.Next()
		if !ok {
			break
		}
		m.step(op, r)
		m.check()
	}
}

// newQueueModel returns an empty queue over newFuzzProfile, with a fake
// clock, and its empty model. With pod groups, the profile gates a gang's
// members as GangScheduling does.
func newQueueModel(t *testing.T, withGroups bool) *queueModel {
	profile := newFuzzProfile()
	var opts []Option
	m := &queueModel{t: t, logger: logr.Discard(), pods: map[types.UID]*fuzzPod{}, ops: opCount}
	if withGroups {
		opts = append(opts, WithPodGroups())
		m.groups, m.ops = newFuzzGroups(), opCountWithGroups
		profile.hints[gangPlugin] = gangHints()
		profile.extraGate = m.gangGate
	}
	m.q, m.clk = newTestQueue(profile, opts...)
	return m
}

// fail reports a broken promise with the last operations.
func (m *queueModel) fail(format string, args ...any) {
	m.t.Helper()
	last := m.history[max(0, len(m.history)-8):]
	m.t.Fatalf("after %d operations (last: %s): %s", len(m.history), strings.Join(last, "; "), fmt.Sprintf(format, args...))
}

// stamp gives pod the next ResourceVersion.
func (m *queueModel) stamp(pod *v1.Pod) *v1.Pod {
	m.stampObject(&pod.ObjectMeta)
	return pod
}

// stampObject gives an object the next ResourceVersion.
func (m *queueModel) stampObject(meta *metav1.ObjectMeta) {
	m.version++
	meta.ResourceVersion = fmt.Sprint(m.version)
}

// newPod makes a new incarnation of name slot: bits of v choose its
// priority, scheduling gate, label (its signature follows it) and nominated
// node, and (0x20) whether it is a member of group slot%2, which gives it
// its group's priority when pod groups are on.
func (m *queueModel) newPod(slot int, v byte) *v1.Pod {
	m.incarnations[slot]++
	name := fmt.Sprintf("p%d", slot)
	app := fmt.Sprint(v >> 2 & 1)
	w := makePod(name).UID(fmt.Sprintf("%s-%d", name, m.incarnations[slot])).
		Priority(int32(v&1)*10).Req(cpu("200m")).Label("app", app).Label(signatureLabel, app)
	if v&0x20 != 0 {
		w.PodGroup(fmt.Sprintf("g%d", slot%fuzzGroups))
		if m.groups != nil {
			w.Priority(m.groups[slot%fuzzGroups].priority)
		}
	}
	if v&2 != 0 {
		w.SchedulingGates("example.com/gate")
	}
	if node := (v >> 3) & 3; node >= 2 {
		w.NominatedNodeName(fmt.Sprintf("n%d", node-1))
	}
	return m.stamp(w.Obj())
}

// updated returns a new version of pod changed as bits of v say: priority
// (never a member's, which must stay its group's), label (and signature),
// scheduling gates removed (gates are never added after creation, as the
// API forbids), nominated node, requests scaled down. v of 0 changes
// nothing but the ResourceVersion (a status-only update).
func (m *queueModel) updated(pod *v1.Pod, v byte) *v1.Pod {
	pod = pod.DeepCopy()
	if v&1 != 0 && m.groupOf(pod) == nil {
		prio := 10 - podPriority(pod)
		pod.Spec.Priority = &prio
	}
	if v&2 != 0 {
		pod.Labels["app"] += "x"
		pod.Labels[signatureLabel] = pod.Labels["app"]
	}
	if v&4 != 0 {
		pod.Spec.SchedulingGates = nil
	}
	if v&8 != 0 {
		pod.Status.NominatedNodeName = map[string]string{"": "n1", "n1": "n2", "n2": ""}[pod.Status.NominatedNodeName]
	}
	if v&16 != 0 {
		req := pod.Spec.Containers[0].Resources.Requests
		if q := req[v1.ResourceCPU]; q.MilliValue() > 50 {
			req[v1.ResourceCPU] = *resource.NewMilliQuantity(q.MilliValue()-50, resource.DecimalSI)
		}
	}
	return m.stamp(pod)
}

// live returns the current incarnations in name order, optionally only
// those at loc.
func (m *queueModel) live(loc ...Location) []*fuzzPod {
	var out []*fuzzPod
	for _, fp := range m.current {
		if fp != nil && (len(loc) == 0 || slices.Contains(loc, fp.loc)) {
			out = append(out, fp)
		}
	}
	return out
}

// inFlight returns the pods in flight (deleted ones included), by UID.
func (m *queueModel) inFlight() []*fuzzPod {
	var out []*fuzzPod
	for _, uid := range slices.Sorted(maps.Keys(m.pods)) {
		if fp := m.pods[uid]; fp.loc == InFlight {
			out = append(out, fp)
		}
	}
	return out
}

// pickFrom chooses one of pods by b, or nil if there is none.
func pickFrom(pods []*fuzzPod, b byte) *fuzzPod {
	if len(pods) == 0 {
		return nil
	}
	return pods[int(b)%len(pods)]
}

// keepAll resets every pod's expectations to "where it was".
func (m *queueModel) keepAll() {
	for _, fp := range m.pods {
		fp.allowed = locSet{fp.loc}
		fp.byBackoff = false
	}
}

// logEvent records e for every pod in flight, as the queue logs it.
func (m *queueModel) logEvent(e framework.ClusterEvent, oldObj, newObj interface{}) {
	for _, fp := range m.inFlight() {
		fp.seen = append(fp.seen, fuzzEvent{event: e, oldObj: oldObj, newObj: newObj})
	}
}

// offer predicts where e sends each unschedulable pod (or group, for
// members) among pods, as MoveAllToActiveOrBackoffQueue and the leftover
// flush do.
func (m *queueModel) offer(e framework.ClusterEvent, oldObj, newObj interface{}, pods []*fuzzPod) {
	m.offerGroups(e, oldObj, newObj, pods)
	for _, fp := range pods {
		if fp.group != nil {
			continue // offerGroups did
		}
		entry := m.q.entry(fp.pod.UID)
		if entry == nil {
			m.fail("pod %s at %s has no entry", fp.pod.UID, fp.loc)
		}
		gated := len(fp.pod.Spec.SchedulingGates) > 0
		wildcard := e.Resource == framework.WildCard && e.ActionType == framework.All
		if gated && !wildcard {
			continue // only the gates plugin's own events could lift it
		}
		s := fuzzStrategy(fp.pod, entry.UnschedulablePlugins, entry.PendingPlugins, e, oldObj, newObj)
		fp.allowed = allowedBy(s, gated)
		fp.byBackoff = !gated && s == queueAfterBackoff
	}
}

// The operations, by opcode modulo opCount.
const (
	opAdd = iota
	opUpdate
	opDelete
	opPop
	opRequeue
	opDone
	opMoveAll
	opActivate
	opFlushBackoff
	opFlushLeftover
	opRequeueQueued
	opNominate
	opCount
)

// step decodes and runs one operation, and sets every pod's expectations.
func (m *queueModel) step(op byte, r *fuzzinput.Reader) {
	m.keepAll()
	q, logger := m.q, m.logger
	if op %= m.ops; op >= opCount {
		m.stepPodGroups(op, r)
		return
	}
	switch op {
	case opAdd: // name, variant: a new pod, a relist of a known one, or another scheduler's
		slot, v := int(r.Arg())%fuzzPodNames, r.Arg()
		if v&0x80 != 0 {
			pod := makePod("theirs").SchedulerName("other-scheduler").Obj()
			q.Add(logger, pod)
			m.history = append(m.history, "Add(other scheduler's pod)")
			if loc := q.Locate(pod.UID); loc != NotQueued {
				m.fail("another scheduler's pod is at %s", loc)
			}
			return
		}
		if fp := m.current[slot]; fp != nil {
			// An informer relist re-delivers the same object: nothing moves.
			if node := fp.pod.Status.NominatedNodeName; node != "" {
				fp.nominated = node
			}
			if fp.loc != InFlight {
				fp.signature = fp.pod.Labels[signatureLabel] // signed anew, as an update
			}
			q.Add(logger, fp.pod)
			m.history = append(m.history, "Add(again "+string(fp.pod.UID)+")")
			return
		}
		pod := m.newPod(slot, v)
		fp := &fuzzPod{slot: slot, pod: pod, allowed: locSet{ActiveQ}, nominated: pod.Status.NominatedNodeName,
			group: m.groupOf(pod), signature: pod.Labels[signatureLabel]}
		if len(pod.Spec.SchedulingGates) > 0 {
			fp.allowed = locSet{UnschedulablePods}
		}
		m.pods[pod.UID], m.current[slot] = fp, fp
		if fp.group != nil {
			m.joinGroup(fp) // counted by the gang gate from here on
		}
		if v&0x40 != 0 {
			q.Update(logger, nil, pod) // Update of an unknown pod adds it
			m.history = append(m.history, fmt.Sprintf("Update(nil, new %s v=%#x)", pod.UID, v))
			return
		}
		q.Add(logger, pod)
		m.history = append(m.history, fmt.Sprintf("Add(%s v=%#x)", pod.UID, v))
		if m.groups != nil {
			// With GenericWorkload, the scheduler tells the queue a pending
			// pod was added: it may complete a gang.
			m.check()
			m.moveOnEvent(framework.UnscheduledPodAdd, nil, pod)
		}

	case opUpdate: // name, variant
		fp := pickFrom(m.live(), r.Arg())
		v := r.Arg()
		if fp == nil {
			m.history = append(m.history, "Update(nothing)")
			return
		}
		oldPod, newPod := fp.pod, m.updated(fp.pod, v)
		fp.pod = newPod
		if fp.loc != InFlight {
			fp.signature = newPod.Labels[signatureLabel] // re-signed
		}
		// An update that says nothing about the nomination keeps one made
		// in memory: the status patch may not have arrived yet.
		if oldPod.Status.NominatedNodeName != "" || newPod.Status.NominatedNodeName != "" {
			fp.nominated = newPod.Status.NominatedNodeName
		}
		m.history = append(m.history, fmt.Sprintf("Update(%s v=%#x) at %s", newPod.UID, v, fp.loc))
		actions := framework.PodUpdateActions(oldPod, newPod)
		event := unscheduledPodUpdate(actions)
		switch fp.loc {
		case InFlight:
			if actions != 0 {
				fp.seen = append(fp.seen, fuzzEvent{event: event, oldObj: oldPod, newObj: newPod})
			}
		case UnschedulablePods:
			if actions != 0 && fp.group != nil {
				m.offerGroup(fp.group, event, oldPod, newPod)
			} else if actions != 0 {
				entry := m.q.entry(newPod.UID)
				s := fuzzStrategy(newPod, entry.UnschedulablePlugins, entry.PendingPlugins, event, oldPod, newPod)
				gated := len(newPod.Spec.SchedulingGates) > 0
				fp.allowed = allowedBy(s, gated)
				fp.byBackoff = !gated && s == queueAfterBackoff
			}
		}
		if v&0x80 != 0 {
			q.Update(logger, nil, newPod)
		} else {
			q.Update(logger, oldPod, newPod)
		}

	case opDelete: // name
		fp := pickFrom(m.live(), r.Arg())
		if fp == nil {
			// Deleting a pod the queue never had changes nothing.
			q.Delete(makePod("never-added").Obj())
			m.history = append(m.history, "Delete(unknown)")
			return
		}
		m.history = append(m.history, fmt.Sprintf("Delete(%s) at %s", fp.pod.UID, fp.loc))
		m.current[fp.slot] = nil
		if fp.loc == InFlight {
			fp.deleted = true
		} else {
			fp.allowed = locSet{NotQueued}
		}
		q.Delete(fp.pod)

	case opPop:
		m.pop()

	case opRequeue: // which pod in flight, which plugins, then Done or not
		m.requeue(pickFrom(m.inFlight(), r.Arg()), r.Arg())

	case opDone: // which pod in flight is bound; or Done on a queued pod
		b := r.Arg()
		if b&0x80 != 0 {
			fp := pickFrom(m.live(ActiveQ, BackoffQ, UnschedulablePods, PendingPodGroupPods, IncompletePodGroupPods), b)
			if fp != nil {
				m.history = append(m.history, fmt.Sprintf("Done(%s) at %s", fp.pod.UID, fp.loc))
				q.Done(fp.pod.UID) // not in flight: nothing happens
			}
			return
		}
		fp := pickFrom(m.inFlight(), b)
		if fp == nil {
			m.history = append(m.history, "Done(nothing in flight)")
			return
		}
		m.history = append(m.history, fmt.Sprintf("assume+Done(%s)", fp.pod.UID))
		// As the scheduler does: the assumed pod's nomination goes, and its
		// in-flight period ends once Permit allowed it.
		q.DeleteNominatedPodIfExists(fp.pod)
		q.Done(fp.pod.UID)
		m.bind(fp)

	case opMoveAll: // event, preCheck
		m.moveAll(r.Arg())

	case opActivate: // bit set of names
		bits := r.Arg()
		pods := map[string]*v1.Pod{}
		activated := map[*fuzzGroup]bool{}
		for _, fp := range m.live() {
			if bits&(1<<fp.slot) == 0 {
				continue
			}
			pods[fp.pod.Name] = fp.pod
			if g := fp.group; g != nil && fp.loc != InFlight {
				// A member activates its whole group, from where its
				// entity is (from incomplete or pending, nothing moves).
				if !activated[g] {
					activated[g] = true
					members := m.entityMembers(g)
					switch fp.loc {
					case UnschedulablePods:
						m.placeGroup(g, members, queueImmediately)
					case BackoffQ:
						for _, member := range members {
							member.allowed = locSet{ActiveQ}
						}
					}
				}
				continue
			}
			switch fp.loc {
			case UnschedulablePods:
				fp.allowed = allowedBy(queueImmediately, len(fp.pod.Spec.SchedulingGates) > 0)
			case BackoffQ:
				fp.allowed = locSet{ActiveQ}
			case InFlight:
				fp.seen = append(fp.seen, fuzzEvent{event: framework.ForceActivate})
			}
		}
		m.history = append(m.history, fmt.Sprintf("Activate(%#x)", bits))
		q.Activate(logger, pods)

	case opFlushBackoff: // clock step
		d := []time.Duration{0, 300 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 11 * time.Second}[r.Arg()%6]
		m.clk.Step(d)
		// Pods whose backoff is over go to activeQ; the others stay.
		for _, fp := range m.pods {
			if fp.loc == BackoffQ {
				fp.allowed, fp.byBackoff = locSet{BackoffQ, ActiveQ}, true
			}
		}
		m.history = append(m.history, fmt.Sprintf("Step(%v)+FlushBackoffQCompleted", d))
		q.FlushBackoffQCompleted(logger)

	case opFlushLeftover: // clock step
		d := []time.Duration{0, 30 * time.Second, time.Minute, 4 * time.Minute, 5 * time.Minute, 6 * time.Minute}[r.Arg()%6]
		m.clk.Step(d)
		var stale []*fuzzPod
		for _, fp := range m.live(UnschedulablePods) {
			since := m.q.entry(fp.pod.UID).Timestamp
			if fp.group != nil {
				since = m.q.groupEntry(fp.group.key()).Timestamp // the group's, not the member's
			}
			if m.clk.Now().Sub(since) > podMaxInUnschedulablePodsDuration {
				stale = append(stale, fp)
			}
		}
		// Unlike an event, the flush is not logged for the pods in flight.
		m.offer(framework.UnschedulableTimeout, nil, nil, stale)
		m.history = append(m.history, fmt.Sprintf("Step(%v)+FlushUnschedulablePodsLeftover", d))
		q.FlushUnschedulablePodsLeftover(logger)

	case opRequeueQueued: // putting back a pod the queue holds is refused
		fp := pickFrom(m.live(ActiveQ, BackoffQ, UnschedulablePods, PendingPodGroupPods, IncompletePodGroupPods), r.Arg())
		if fp == nil {
			return
		}
		m.history = append(m.history, fmt.Sprintf("AddUnschedulablePodIfNotPresent(%s at %s)", fp.pod.UID, fp.loc))
		if err := q.AddUnschedulablePodIfNotPresent(logger, m.q.entry(fp.pod.UID)); err == nil {
			m.fail("AddUnschedulablePodIfNotPresent accepted pod %s, which is at %s", fp.pod.UID, fp.loc)
		}

	case opNominate: // pod, node and mode: what preemption decides
		fp, b := pickFrom(m.live(), r.Arg()), r.Arg()
		if fp == nil {
			return
		}
		info := &framework.NominatingInfo{NominatedNodeName: []string{"", "n1", "n2"}[b%3], NominatingMode: framework.ModeOverride}
		if b&0x80 != 0 {
			info.NominatingMode = framework.ModeNoop // the pod's own status decides
		}
		fp.nominated = info.NominatedNodeName
		if info.Mode() == framework.ModeNoop {
			fp.nominated = fp.pod.Status.NominatedNodeName
		}
		m.history = append(m.history, fmt.Sprintf("AddNominatedPod(%s, %q, mode %v)", fp.pod.UID, info.NominatedNodeName, info.Mode()))
		q.AddNominatedPod(logger, framework.NewPodInfo(fp.pod), info)
	}
}

// pop pops, if Pop would not block and no group's attempt is open, and
// checks the entity it returns.
func (m *queueModel) pop() {
	if g := m.openAttempt(); g != nil {
		m.history = append(m.history, "Pop(the attempt of "+g.name+" is open)")
		return
	}
	activeQ, rejected := m.q.popCandidates()
	if len(activeQ) == 0 && len(rejected) == 0 {
		m.history = append(m.history, "Pop(would block)")
		return
	}
	e, err := m.q.Pop(m.logger)
	if err != nil {
		m.fail("Pop: %v", err)
	}
	key := e.Key()
	m.history = append(m.history, "Pop() = "+key)
	candidates := activeQ
	if len(activeQ) == 0 {
		candidates = rejected
	}
	before := candidates[key]
	if before == nil {
		m.fail("Pop returned %s; activeQ had %d entities, backoffQ's rejected heap %d", key, len(activeQ), len(rejected))
	}
	if len(activeQ) > 0 {
		for other, o := range activeQ {
			if prioritySort(o, before) {
				m.fail("Pop returned %s (priority %d) before %s (priority %d)", key, before.Priority(), other, o.Priority())
			}
		}
	}
	if e.Params().Attempts != before.Params().Attempts+1 {
		m.fail("Pop: %s has %d attempts, had %d", key, e.Params().Attempts, before.Params().Attempts)
	}
	if e.Params().Gated() {
		m.fail("Pop returned gated %s", key)
	}
	if group, ok := e.(*framework.QueuedPodGroupInfo); ok {
		m.poppedGroup(group, before.(*framework.QueuedPodGroupInfo))
		return
	}
	pInfo := e.(*framework.QueuedPodInfo)
	fp := m.pods[pInfo.Pod.UID]
	if fp == nil {
		m.fail("Pop returned %s, which the model does not know", key)
	}
	fp.allowed = locSet{InFlight}
	fp.popped, fp.seen = pInfo, nil
}

// requeue ends the attempt of pod fp (if any) with the plugins b chooses,
// as the failure handler does, and predicts where it goes.
func (m *queueModel) requeue(fp *fuzzPod, b byte) {
	if fp == nil {
		m.history = append(m.history, "AddUnschedulablePodIfNotPresent(nothing in flight)")
		return
	}
	verdicts := []struct{ unschedulable, pending []string }{
		{}, // an error
		{unschedulable: []string{fooPlugin}},
		{unschedulable: []string{barPlugin}},
		{unschedulable: []string{fooPlugin, barPlugin}},
		{pending: []string{waitPlugin}},
		{unschedulable: []string{fooPlugin}, pending: []string{waitPlugin}},
	}
	verdict := verdicts[int(b&0x7f)%len(verdicts)]
	pInfo := fp.popped
	pInfo.ClearRejectorPlugins()
	pInfo.UnschedulablePlugins.Insert(verdict.unschedulable...)
	pInfo.PendingPlugins.Insert(verdict.pending...)
	m.history = append(m.history, fmt.Sprintf("AddUnschedulablePodIfNotPresent(%s, %v, pending %v) after %d events",
		fp.pod.UID, verdict.unschedulable, verdict.pending, len(fp.seen)))

	switch {
	case fp.deleted:
		fp.allowed = locSet{NotQueued}
	case fp.group != nil:
		// A member goes back to its group, which is judged as a whole.
		m.joinGroup(fp)
	case len(verdict.unschedulable)+len(verdict.pending) == 0:
		// An error: backoff of at least a second from now.
		fp.allowed, fp.byBackoff = locSet{BackoffQ}, true
	default:
		best := queueSkip
		for _, e := range fp.seen {
			best = max(best, fuzzStrategy(fp.pod, pInfo.UnschedulablePlugins, pInfo.PendingPlugins, e.event,
				e.oldObj, e.newObj))
		}
		// The pod was stamped just now, so its backoff is not over.
		fp.allowed = map[queueingStrategy]locSet{
			queueSkip: {UnschedulablePods}, queueAfterBackoff: {BackoffQ}, queueImmediately: {ActiveQ}}[best]
		fp.byBackoff = best == queueAfterBackoff
	}
	if err := m.q.AddUnschedulablePodIfNotPresent(m.logger, pInfo); err != nil {
		m.fail("AddUnschedulablePodIfNotPresent(%s): %v", fp.pod.UID, err)
	}
	fp.popped, fp.seen = nil, nil
	if b&0x80 != 0 {
		m.q.Done(fp.pod.UID) // the scheduler's Done after a requeue: nothing happens
	}
}

// moveAll delivers the event b chooses to the unschedulable pods, maybe only
// to those of positive priority.
func (m *queueModel) moveAll(b byte) {
	q, logger := m.q, m.logger
	node := makeNode("n1")
	relabelled := node.DeepCopy()
	relabelled.Labels = map[string]string{"zone": "a"}
	bound := makePod("bound").NodeName("n1").Label("app", "0").Obj()
	boundRelabelled := bound.DeepCopy()
	boundRelabelled.Labels["app"] = "1"

	var preCheck func(*v1.Pod) bool
	if b&0x80 != 0 {
		preCheck = func(pod *v1.Pod) bool { return podPriority(pod) > 0 }
	}
	// A group is offered the event when any of its members passes.
	var candidates []*fuzzPod
	passing := map[*fuzzGroup]bool{}
	for _, fp := range m.live(UnschedulablePods) {
		if preCheck == nil || preCheck(fp.pod) {
			candidates = append(candidates, fp)
			passing[fp.group] = true
		}
	}
	for _, fp := range m.live(UnschedulablePods) {
		if fp.group != nil && passing[fp.group] && !slices.Contains(candidates, fp) {
			candidates = append(candidates, fp)
		}
	}
	deliver := func(e framework.ClusterEvent, oldObj, newObj interface{}, call func()) {
		m.history = append(m.history, fmt.Sprintf("MoveAll(%s, preCheck=%t)", e, preCheck != nil))
		m.offer(e, oldObj, newObj, candidates)
		m.logEvent(e, oldObj, newObj)
		call()
	}
	moveAll := func(e framework.ClusterEvent, oldObj, newObj interface{}) {
		deliver(e, oldObj, newObj, func() { q.MoveAllToActiveOrBackoffQueue(logger, e, oldObj, newObj, preCheck) })
	}
	switch (b & 0x7f) % 8 {
	case 0:
		moveAll(framework.NodeAdd, nil, node)
	case 1:
		moveAll(framework.NodeDelete, node, nil)
	case 2:
		moveAll(nodeLabelChange, node, relabelled)
	case 3:
		moveAll(nodeTaintChange, node, relabelled)
	case 4:
		moveAll(framework.AssignedPodDelete, bound, nil)
	case 5:
		moveAll(framework.UnschedulableTimeout, nil, nil)
	case 6: // AssignedPodAdded offers to every pod: no preCheck
		preCheck, candidates = nil, m.live(UnschedulablePods)
		deliver(framework.AssignedPodAdd, nil, bound, func() { q.AssignedPodAdded(logger, bound) })
	case 7:
		preCheck, candidates = nil, m.live(UnschedulablePods)
		e := framework.ClusterEvent{Resource: framework.Pod, ActionType: framework.UpdatePodLabel, Label: "AssignedPodUpdate"}
		deliver(e, bound, boundRelabelled, func() { q.AssignedPodUpdated(logger, bound, boundRelabelled) })
	}
}

// check compares the queue with the model and checks its inner structure,
// then records where each pod is.
func (m *queueModel) check() {
	m.t.Helper()
	if err := m.q.checkStructure(); err != nil {
		m.fail("queue structure: %v", err)
	}
	// Every pod the model knows is where the operation may have put it.
	for uid, fp := range m.pods {
		loc := m.q.Locate(uid)
		if !slices.Contains(fp.allowed, loc) {
			m.fail("pod %s is at %q, want one of %q (was at %q)", uid, loc, fp.allowed, fp.loc)
		}
		fp.loc = loc
	}
	if m.groups != nil {
		m.checkGroups()
	}
	// ... and the queue holds no other pod, each as its newest object,
	// signed and measured as that object.
	held := m.q.heldPods()
	want := map[types.UID]*v1.Pod{}
	for uid, fp := range m.pods {
		if fp.loc == NotQueued {
			delete(m.pods, uid)
			continue
		}
		want[uid] = fp.pod
		if len(fp.pod.Spec.SchedulingGates) > 0 && fp.loc != InFlight {
			m.checkGated(fp)
		}
	}
	for uid, pod := range held {
		fp := m.pods[uid]
		if fp == nil {
			m.fail("the queue holds pod %s, which the model does not", uid)
		}
		// The queue has the newest object: updates are never lost.
		if pod.ResourceVersion != fp.pod.ResourceVersion {
			m.fail("the queue holds version %s of pod %s, the newest is %s", pod.ResourceVersion, uid, fp.pod.ResourceVersion)
		}
	}
	if len(held) != len(want) {
		m.fail("the queue holds %d pods, the model %d", len(held), len(want))
	}
	for uid, pInfo := range m.q.heldEntries() {
		if got, want := string(pInfo.PodSignature), m.pods[uid].signature; got != want {
			m.fail("pod %s at %s is signed %q, want %q", uid, m.pods[uid].loc, got, want)
		}
		if got, want := pInfo.Requests, framework.NewPodInfo(pInfo.Pod).Requests; !reflect.DeepEqual(got, want) {
			m.fail("pod %s at %s requests %+v, its object %+v", uid, m.pods[uid].loc, got, want)
		}
	}

	// Backoff promises of this operation.
	for uid, fp := range m.pods {
		if fp.byBackoff && (fp.loc == BackoffQ || fp.loc == ActiveQ) {
			if got, want := m.q.backingOff(uid), fp.loc == BackoffQ; got != want {
				m.fail("pod %s at %s: backing off = %t, want %t", uid, fp.loc, got, want)
			}
		}
	}
	m.checkCounts()

	// Nominations follow the newest objects of the pods not deleted nor bound.
	wantNominated := map[types.UID]string{}
	for uid, fp := range m.pods {
		if fp.nominated != "" && !fp.deleted {
			wantNominated[uid] = fp.nominated
		}
	}
	if err := m.q.checkNominations(wantNominated, func(uid types.UID) string { return m.pods[uid].pod.ResourceVersion }); err != nil {
		m.fail("nominations: %v", err)
	}
}

// checkGated checks a queued pod with scheduling gates: a pod is parked,
// gated, among the unschedulable pods; a member is there too, its group
// gated, unless it waits outside any entity.
func (m *queueModel) checkGated(fp *fuzzPod) {
	uid := fp.pod.UID
	switch {
	case fp.group == nil && fp.loc != UnschedulablePods:
		m.fail("pod %s has scheduling gates but is at %s", uid, fp.loc)
	case fp.group == nil && !m.q.entry(uid).Gated():
		m.fail("pod %s has scheduling gates but its entry is not gated", uid)
	case fp.group != nil && fp.loc != UnschedulablePods && fp.loc != IncompletePodGroupPods &&
		fp.loc != PendingPodGroupPods:
		m.fail("member %s has scheduling gates but is at %s", uid, fp.loc)
	case fp.group != nil && fp.loc == UnschedulablePods && !m.q.groupEntry(fp.group.key()).Gated():
		m.fail("member %s has scheduling gates but its group is not gated", uid)
	}
}

// checkCounts checks what the queue reports for its metrics and its
// debugger against the model: the pods by queue (a member of a group among
// the unschedulable pods is gated: only a gate parks a group there), the
// entities by queue and type, the pending pods, and the unschedulable
// pods by plugin.
func (m *queueModel) checkCounts() {
	wantCounts := map[string]int{}
	wantEntities := map[metrics.QueueEntity]int{}
	kinds := []string{metrics.PodEntity}
	if m.groups != nil {
		kinds = append(kinds, metrics.PodGroupEntity)
	}
	for _, queue := range []string{metrics.ActiveQ, metrics.BackoffQ, metrics.Unschedulable, metrics.Gated} {
		for _, t := range kinds {
			wantEntities[metrics.QueueEntity{Queue: queue, Type: t}] = 0
		}
	}
	groupsIn := map[string]map[*fuzzGroup]bool{}
	plainUnschedulable := 0
	for _, fp := range m.pods {
		label := map[Location]string{ActiveQ: metrics.ActiveQ, BackoffQ: metrics.BackoffQ,
			UnschedulablePods: metrics.Unschedulable, IncompletePodGroupPods: metrics.Incomplete,
			PendingPodGroupPods: metrics.Pending}[fp.loc]
		if fp.loc == UnschedulablePods && (fp.group != nil || len(fp.pod.Spec.SchedulingGates) > 0) {
			label = metrics.Gated
		}
		if label == "" {
			continue // in flight
		}
		wantCounts[label]++
		switch {
		case fp.loc == IncompletePodGroupPods || fp.loc == PendingPodGroupPods:
		case fp.group == nil:
			wantEntities[metrics.QueueEntity{Queue: label, Type: metrics.PodEntity}]++
			if fp.loc == UnschedulablePods {
				plainUnschedulable++
			}
		default:
			if groupsIn[label] == nil {
				groupsIn[label] = map[*fuzzGroup]bool{}
			}
			groupsIn[label][fp.group] = true
		}
	}
	for label, groups := range groupsIn {
		wantEntities[metrics.QueueEntity{Queue: label, Type: metrics.PodGroupEntity}] = len(groups)
	}
	counts := m.q.PendingPodCounts()
	for _, label := range []string{metrics.ActiveQ, metrics.BackoffQ, metrics.Unschedulable, metrics.Gated,
		metrics.Incomplete, metrics.Pending} {
		if counts[label] != wantCounts[label] {
			m.fail("PendingPodCounts = %v, want %v", counts, wantCounts)
		}
	}
	if got := m.q.QueuedEntityCounts(); !maps.Equal(got, wantEntities) {
		m.fail("QueuedEntityCounts = %v, want %v", got, wantEntities)
	}
	queued := counts[metrics.ActiveQ] + counts[metrics.BackoffQ] + counts[metrics.Unschedulable] + counts[metrics.Gated]
	pods, summary := m.q.PendingPods()
	if want := queued + counts[metrics.Incomplete] + counts[metrics.Pending]; len(pods) != want {
		m.fail("PendingPods lists %d pods, want %d", len(pods), want)
	}
	wantSummary := fmt.Sprintf(pendingPodsSummary, counts[metrics.ActiveQ], counts[metrics.BackoffQ],
		counts[metrics.Unschedulable]+counts[metrics.Gated])
	if m.groups != nil {
		wantSummary = fmt.Sprintf(pendingPodsExtendedSummary, counts[metrics.ActiveQ], counts[metrics.BackoffQ],
			counts[metrics.Unschedulable]+counts[metrics.Gated], counts[metrics.Pending], counts[metrics.Incomplete])
	}
	if summary != wantSummary {
		m.fail("PendingPods summary %q, want %q", summary, wantSummary)
	}
	// A plain unschedulable pod was rejected or is gated by some plugin;
	// a member that joined a parked group without PreEnqueue may name none.
	byPlugin := 0
	for _, n := range m.q.UnschedulablePodsByPlugin() {
		byPlugin += n
	}
	if unsched := counts[metrics.Unschedulable] + counts[metrics.Gated]; unsched == 0 && byPlugin != 0 ||
		plainUnschedulable > 0 && byPlugin == 0 {
		m.fail("UnschedulablePodsByPlugin counts %d, with %d unschedulable pods", byPlugin, unsched)
	}
}

// popCandidates returns copies of the entities Pop may take, by key:
// activeQ's and, if activeQ is empty, those of backoffQ's rejected heap.
func (p *PriorityQueue) popCandidates() (activeQ, rejected map[string]framework.QueuedEntity) {
	p.lock.Lock()
	defer p.lock.Unlock()
	activeQ, rejected = map[string]framework.QueuedEntity{}, map[string]framework.QueuedEntity{}
	for _, e := range p.activeQ.List() {
		activeQ[e.Key()] = copyForSort(e)
	}
	for _, e := range p.backoffQ.rejected.List() {
		rejected[e.Key()] = copyForSort(e)
	}
	return activeQ, rejected
}

// heldPods returns every pod the queue holds, in a sub-queue, waiting as a
// member outside any entity, or in flight, by UID, with the object it
// holds.
func (p *PriorityQueue) heldPods() map[types.UID]*v1.Pod {
	out := map[types.UID]*v1.Pod{}
	for uid, pInfo := range p.heldEntries() {
		out[uid] = pInfo.Pod
	}
	p.lock.Lock()
	defer p.lock.Unlock()
	for uid, rec := range p.inFlight.pods {
		out[uid] = rec.pod
	}
	return out
}

// heldEntries returns the entries of the pods the queue holds outside
// flight: in a sub-queue (a group's members one by one), incomplete or
// pending.
func (p *PriorityQueue) heldEntries() map[types.UID]*framework.QueuedPodInfo {
	p.lock.Lock()
	defer p.lock.Unlock()
	out := map[types.UID]*framework.QueuedPodInfo{}
	for _, e := range append(append(p.activeQ.List(), p.backoffQ.list()...), p.unschedulablePods.list()...) {
		e.ForEachPod(func(pInfo *framework.QueuedPodInfo) bool {
			out[pInfo.Pod.UID] = pInfo
			return true
		})
	}
	for _, lists := range []map[string][]*framework.QueuedPodInfo{p.podGroups.incomplete, p.podGroups.pending} {
		for _, members := range lists {
			for _, pInfo := range members {
				out[pInfo.Pod.UID] = pInfo
			}
		}
	}
	return out
}

// backingOff reports whether the pod's entry (a member's group) is still
// backing off.
func (p *PriorityQueue) backingOff(uid types.UID) bool {
	p.lock.Lock()
	defer p.lock.Unlock()
	e := p.getEntity(string(uid))
	if key, ok := p.podGroups.memberOf[uid]; ok {
		e = p.getEntity(key)
	}
	return e != nil && p.isBackingOff(e)
}

// checkStructure checks what the queue's parts promise each other: each
// heap's index and order; every pod in exactly one place (a pod entity, a
// group entity's members, incomplete, pending, in flight); each entity
// sound (checkEntity); no gated entity outside the unschedulable pods and
// no group there but a gated one; backoffQ's two heaps holding the right
// entities; the pod-group bookkeeping (checkPodGroupsStructure); and the
// in-flight event log trimmed to what the pods in flight need.
func (p *PriorityQueue) checkStructure() error {
	p.lock.Lock()
	defer p.lock.Unlock()
	where := map[types.UID]string{}
	place := func(uid types.UID, part string) error {
		if prev, ok := where[uid]; ok {
			return fmt.Errorf("pod %s is in both %s and %s", uid, prev, part)
		}
		where[uid] = part
		return nil
	}
	memberKeys := map[types.UID]string{}
	heaps := []struct {
		name string
		h    *keyedHeap[framework.QueuedEntity]
	}{{"activeQ", p.activeQ}, {"backoffQ.rejected", p.backoffQ.rejected}, {"backoffQ.errored", p.backoffQ.errored}}
	for _, h := range heaps {
		if err := h.h.check(); err != nil {
			return fmt.Errorf("%s: %w", h.name, err)
		}
		for _, e := range h.h.List() {
			if err := p.checkEntity(e, h.name, place, memberKeys); err != nil {
				return err
			}
			params := e.Params()
			if params.Gated() {
				return fmt.Errorf("gated %s is in %s", e.Key(), h.name)
			}
			rejected := params.UnschedulablePlugins.Len()+params.PendingPlugins.Len() > 0
			if h.h == p.backoffQ.rejected && !rejected || h.h == p.backoffQ.errored && rejected {
				return fmt.Errorf("%s (plugins %v, pending %v) is in %s", e.Key(),
					params.UnschedulablePlugins, params.PendingPlugins, h.name)
			}
		}
	}
	for key, e := range p.unschedulablePods.entities {
		if e.Key() != key {
			return fmt.Errorf("unschedulablePods holds %s under %s", e.Key(), key)
		}
		if err := p.checkEntity(e, "unschedulablePods", place, memberKeys); err != nil {
			return err
		}
		if _, ok := e.(*framework.QueuedPodGroupInfo); ok && !e.Params().Gated() {
			return fmt.Errorf("pod group %s is parked among the unschedulable pods, and no gate holds it", key)
		}
	}
	if err := p.checkPodGroupsStructure(place, memberKeys); err != nil {
		return err
	}
	for uid, rec := range p.inFlight.pods {
		if rec.pod.UID != uid {
			return fmt.Errorf("in flight: pod %s recorded under %s", rec.pod.UID, uid)
		}
		if err := place(uid, "inFlight"); err != nil {
			return err
		}
	}
	// The event log holds exactly the events some pod in flight may need.
	f := p.inFlight
	if len(f.pods) == 0 {
		if len(f.events) != 0 {
			return fmt.Errorf("in-flight event log keeps %d events with no pod in flight", len(f.events))
		}
		return nil
	}
	oldest := f.next()
	for uid, rec := range f.pods {
		if rec.firstEvent < f.offset || rec.firstEvent > f.next() {
			return fmt.Errorf("pod %s in flight starts at event %d, the log holds %d..%d", uid, rec.firstEvent, f.offset, f.next())
		}
		oldest = min(oldest, rec.firstEvent)
	}
	if oldest != f.offset {
		return fmt.Errorf("in-flight event log starts at %d, the oldest pod in flight needs only %d on", f.offset, oldest)
	}
	return nil
}

// checkNominations checks that the nominator holds exactly want (UID →
// node), each under the newest object (version gives its ResourceVersion).
func (p *PriorityQueue) checkNominations(want map[types.UID]string, version func(types.UID) string) error {
	n := p.nominator
	n.mu.RLock()
	defer n.mu.RUnlock()
	if len(n.nodeOf) != len(want) {
		return fmt.Errorf("%d pods nominated, want %d (%v, want %v)", len(n.nodeOf), len(want), n.nodeOf, want)
	}
	listed := 0
	for node, pods := range n.byNode {
		for _, pi := range pods {
			uid := pi.Pod.UID
			if want[uid] != node || n.nodeOf[uid] != node {
				return fmt.Errorf("pod %s listed under %s; nodeOf says %q, want %q", uid, node, n.nodeOf[uid], want[uid])
			}
			if v := version(uid); pi.Pod.ResourceVersion != v {
				return fmt.Errorf("pod %s nominated as version %s, the newest is %s", uid, pi.Pod.ResourceVersion, v)
			}
			listed++
		}
	}
	if listed != len(want) {
		return fmt.Errorf("%d nominations listed by node, want %d", listed, len(want))
	}
	return nil
}

// check verifies the heap's index and its order.
func (h *keyedHeap[T]) check() error {
	d := &h.data
	if len(d.index) != len(d.items) {
		return fmt.Errorf("index has %d keys for %d items", len(d.index), len(d.items))
	}
	for i, item := range d.items {
		key := d.keyOf(item)
		if d.index[key] != i {
			return fmt.Errorf("item %s at %d is indexed at %d", key, i, d.index[key])
		}
		if i > 0 && d.less(item, d.items[(i-1)/2]) {
			return fmt.Errorf("item %s at %d sorts before its parent", key, i)
		}
	}
	return nil
}
