// This file is FuzzQueue's part for pod groups (WithPodGroups, chapter 19):
// FuzzQueuePodGroups runs the same model with two PodGroups that come and
// go, members of either among the pods, a GangScheduling-like gate that
// holds a gang's members back until minCount of them exist, pod-group pops
// and the ends of their attempts; and it checks that every member is in
// exactly one place, in an entity of its own group only, and never parked
// among the unschedulable pods but by a gate.

package queue

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/internal/fuzzinput"
	"github.com/minisched/minisched/minisched/framework"
)

// fuzzGroups is how many PodGroups the fuzzed universe has: two, so that
// one group's moves are seen not to disturb the other's.
const fuzzGroups = 2

// gangPlugin stands for GangScheduling: its PreEnqueue holds a gang's
// members back until the scheduler knows minCount pods of the group.
const gangPlugin = "Gang"

// The pod-group operations, numbered after the pods' ones.
const (
	opAddPodGroup = opCount + iota
	opUpdatePodGroup
	opDeletePodGroup
	opEndGroupAttempt
	opCountWithGroups
)

// FuzzQueuePodGroups is FuzzQueue with pod groups: the same promises, and
// these of the members: a member is in exactly one of an entity of its own
// group (in activeQ, backoffQ or, gated, among the unschedulable pods),
// incomplete (exactly while its PodGroup is unknown), pending (only while
// its group is being scheduled) or in flight; a group's members are in one
// place; a group that failed backs off and is never parked but by a gate.
func FuzzQueuePodGroups(f *testing.F) {
	for _, seed := range [][]byte{
		// Two members of g0 (slots 0, 2) wait for their PodGroup (gang of
		// 2); it comes, the group is popped, rejected, backs off (a member
		// is updated there: new label, fewer requests), is popped again and
		// succeeds with one member bound.
		{opAdd, 0, 0x21, opAdd, 2, 0x21, opAddPodGroup, 0, 1, opPop, opEndGroupAttempt, 1, 0, opUpdate, 0, 0x12,
			opFlushBackoff, 3, opPop, opEndGroupAttempt, 0, 1, opDone, 0},
		// A gang of 3 with two members is gated; a third arrives while the
		// PodGroup is lowered to 2, which lets it in; a member arrives
		// during its attempt and waits pending.
		{opAddPodGroup, 1, 2, opAdd, 1, 0x21, opAdd, 3, 0x21, opUpdatePodGroup, 1, 1, opPop, opAdd, 5, 0x21,
			opEndGroupAttempt, 2, 0, opActivate, 0x2a},
		// A gated member holds its group among the unschedulable pods until
		// its gate goes; the PodGroup is deleted while the group is in
		// flight and its members come back incomplete.
		{opAddPodGroup, 0, 0x80, opAdd, 0, 0x23, opAdd, 2, 0x21, opUpdate, 0, 4, opPop, opDeletePodGroup, 0,
			opRequeue, 0, 1, opEndGroupAttempt, 1, 0, opAddPodGroup, 0, 0x81},
		// Plain pods and a group side by side: events, updates, the
		// leftover flush.
		{opAdd, 1, 0, opAdd, 3, 0x21, opAddPodGroup, 1, 0x80, opPop, opEndGroupAttempt, 1, 0, opRequeue, 0, 1,
			opPop, opEndGroupAttempt, 1, 0, opRequeue, 0, 1, opMoveAll, 5, opUpdate, 1, 0x12, opFlushLeftover, 5,
			opFlushBackoff, 5},
		// Members leave from everywhere: incomplete, the entity in
		// activeQ, pending; the last one takes its gated group away.
		{opAdd, 0, 0x21, opAdd, 2, 0x21, opDelete, 1, opAddPodGroup, 0, 1, opAdd, 4, 0x21, opDelete, 1, opPop,
			opAdd, 2, 0x21, opDelete, 1, opEndGroupAttempt, 1, 0, opDelete, 0},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) { runFuzzQueue(t, data, true) })
}

// fuzzGroup is the model of one PodGroup name.
type fuzzGroup struct {
	name     string
	priority int32
	// pg is the PodGroup the scheduler knows (its cache, which the gang
	// gate reads), nil while none is: not created yet, or deleted.
	pg *schedulingv1beta1.PodGroup
	// bound counts the members bound so far: they count towards minCount.
	bound int
	// popped is the entity Pop returned, while its attempt is open.
	popped *framework.QueuedPodGroupInfo
	// attempt numbers the group's pops; a member in flight remembers the
	// one that popped it.
	attempt int
}

func (g *fuzzGroup) key() string { return framework.PodGroupKey(metav1.NamespaceDefault, g.name) }

// newFuzzGroups returns the groups of the universe: g0 of priority 10 and
// g1 of priority 0, as the two priorities of the pods.
func newFuzzGroups() []*fuzzGroup {
	return []*fuzzGroup{{name: "g0", priority: 10}, {name: "g1", priority: 0}}
}

// groupOf returns the modelled group pod is a member of, nil if none (or
// pod groups are off).
func (m *queueModel) groupOf(pod *v1.Pod) *fuzzGroup {
	name, ok := framework.PodGroupName(pod)
	if !ok {
		return nil
	}
	for _, g := range m.groups {
		if g.name == name {
			return g
		}
	}
	return nil
}

// groupPodCount is what the gang gate counts: the group's pods the
// scheduler knows, pending anywhere, in flight or bound.
func (m *queueModel) groupPodCount(g *fuzzGroup) int {
	n := g.bound
	for _, fp := range m.current {
		if fp != nil && fp.group == g {
			n++
		}
	}
	return n
}

// gangShort reports whether the gang gate holds g's members back: its
// PodGroup is unknown, or a gang with fewer pods than minCount.
func (m *queueModel) gangShort(g *fuzzGroup) bool {
	if g.pg == nil {
		return true
	}
	gang := g.pg.Spec.SchedulingPolicy.Gang
	return gang != nil && m.groupPodCount(g) < int(gang.MinCount)
}

// gangGate is the profile's PreEnqueue beyond scheduling gates, as
// GangScheduling's: a member waits until its gang can reach minCount.
func (m *queueModel) gangGate(pod *v1.Pod) *framework.Status {
	if g := m.groupOf(pod); g != nil && m.gangShort(g) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable,
			"waiting for minCount pods from a gang to appear in scheduling queue").WithPlugin(gangPlugin)
	}
	return nil
}

// gangHints are what the gang plugin registers, with hints reading the
// events' objects as GangScheduling's do.
func gangHints() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		onWithHint(framework.UnscheduledPodAdd, gangHint),
		onWithHint(framework.AssignedPodAdd, gangHint),
		onWithHint(framework.ClusterEvent{Resource: framework.PodGroup, ActionType: framework.Add}, gangHint),
		onWithHint(framework.ClusterEvent{Resource: framework.PodGroup, ActionType: framework.Update}, gangHint),
	}
}

// gangHint answers Queue when an added pod or PodGroup is of pod's group,
// or its PodGroup's gang minCount went down.
func gangHint(_ klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	if gangHelps(pod, oldObj, newObj) {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// gangHelps is the gang plugin's verdict on an event's objects for pod
// (the model reads the profile with it too).
func gangHelps(pod *v1.Pod, oldObj, newObj interface{}) bool {
	name, ok := framework.PodGroupName(pod)
	if !ok {
		return false
	}
	switch obj := newObj.(type) {
	case *v1.Pod:
		added, ok := framework.PodGroupName(obj)
		return ok && added == name
	case *schedulingv1beta1.PodGroup:
		if obj.Name != name {
			return false
		}
		old, _ := oldObj.(*schedulingv1beta1.PodGroup)
		if old == nil {
			return true // added
		}
		was, is := old.Spec.SchedulingPolicy.Gang, obj.Spec.SchedulingPolicy.Gang
		return was != nil && is != nil && is.MinCount < was.MinCount
	}
	return false
}

// wouldGate reports whether admitting an entity of g's members fps gates
// it: a member with scheduling gates, or the gang short of minCount.
func (m *queueModel) wouldGate(g *fuzzGroup, fps []*fuzzPod) bool {
	for _, fp := range fps {
		if len(fp.pod.Spec.SchedulingGates) > 0 {
			return true
		}
	}
	return m.gangShort(g)
}

// entityMembers returns the live members of g held in its entity, in slot
// order.
func (m *queueModel) entityMembers(g *fuzzGroup) []*fuzzPod {
	var out []*fuzzPod
	for _, fp := range m.live(ActiveQ, BackoffQ, UnschedulablePods) {
		if fp.group == g {
			out = append(out, fp)
		}
	}
	return out
}

// placeGroup predicts where requeue(strategy) sends the entity of g's
// members fps: queueSkip parks it without PreEnqueue; otherwise PreEnqueue
// runs, and a gate parks it among the unschedulable pods.
func (m *queueModel) placeGroup(g *fuzzGroup, fps []*fuzzPod, strategy queueingStrategy) {
	allowed, byBackoff := locSet{ActiveQ, BackoffQ}, true
	switch {
	case strategy == queueSkip || m.wouldGate(g, fps):
		allowed, byBackoff = locSet{UnschedulablePods}, false
	case strategy == queueImmediately:
		allowed, byBackoff = locSet{ActiveQ}, false
	}
	for _, fp := range fps {
		fp.allowed, fp.byBackoff = allowed, byBackoff
	}
}

// joinGroup predicts where a member coming to the queue (added, or put
// back after its attempt) goes: incomplete while its PodGroup is unknown,
// pending while its group is in flight, else into its group's entity,
// which is requeued where it was (a new one to activeQ).
func (m *queueModel) joinGroup(fp *fuzzPod) {
	g := fp.group
	switch {
	case g.pg == nil:
		fp.allowed = locSet{IncompletePodGroupPods}
	case g.popped != nil:
		fp.allowed = locSet{PendingPodGroupPods}
	default:
		members := m.entityMembers(g)
		strategy := queueImmediately
		if len(members) > 0 {
			strategy = map[Location]queueingStrategy{ActiveQ: queueImmediately, BackoffQ: queueAfterBackoff,
				UnschedulablePods: queueSkip}[members[0].loc]
		}
		m.placeGroup(g, append(members, fp), strategy)
	}
}

// offerGroups predicts, for each group with members among fps (all among
// the unschedulable pods), where the event sends its entity, reading the
// entity's gate and its members' rejecting plugins from the queue.
func (m *queueModel) offerGroups(e framework.ClusterEvent, oldObj, newObj interface{}, fps []*fuzzPod) {
	seen := map[*fuzzGroup]bool{}
	for _, fp := range fps {
		if g := fp.group; g != nil && !seen[g] {
			seen[g] = true
			m.offerGroup(g, e, oldObj, newObj)
		}
	}
}

// offerGroup predicts where e sends g's entity, which is among the
// unschedulable pods: only an event its gate registered (or a wildcard) is
// looked at; then the most urgent strategy of its members decides.
func (m *queueModel) offerGroup(g *fuzzGroup, e framework.ClusterEvent, oldObj, newObj interface{}) {
	entity := m.q.groupEntry(g.key())
	if entity == nil {
		m.fail("group %s has members among the unschedulable pods but no entity", g.key())
	}
	wildcard := e.Resource == framework.WildCard && e.ActionType == framework.All
	if entity.Gated() && !wildcard && !slices.ContainsFunc(entity.GatingPluginEvents, func(r framework.ClusterEvent) bool {
		return r.Match(e)
	}) {
		return
	}
	best := queueSkip
	var fps []*fuzzPod
	for _, member := range entity.Members {
		fp := m.pods[member.Pod.UID]
		fps = append(fps, fp)
		best = max(best, fuzzStrategy(fp.pod, member.UnschedulablePlugins, member.PendingPlugins, e, oldObj, newObj))
	}
	if best != queueSkip {
		m.placeGroup(g, fps, best)
	}
}

// stepPodGroups runs the pod-group operations.
func (m *queueModel) stepPodGroups(op byte, r *fuzzinput.Reader) {
	q, logger := m.q, m.logger
	switch op {
	case opAddPodGroup: // which group, policy and minCount
		g, v := m.groups[int(r.Arg())%fuzzGroups], r.Arg()
		if g.pg != nil {
			// A relist re-delivers the same object: nothing moves.
			m.history = append(m.history, "AddPodGroup(again "+g.name+")")
			q.AddPodGroup(logger, g.pg)
			return
		}
		g.pg = m.newPodGroup(g, v)
		m.history = append(m.history, fmt.Sprintf("AddPodGroup(%s %s)", g.name, policyOf(g.pg)))
		// Its incomplete members come in as one entity (pending if the
		// group is in flight: deleted and re-created meanwhile).
		var waiting []*fuzzPod
		for _, fp := range m.live(IncompletePodGroupPods) {
			if fp.group == g {
				waiting = append(waiting, fp)
			}
		}
		if g.popped != nil {
			for _, fp := range waiting {
				fp.allowed = locSet{PendingPodGroupPods}
			}
		} else if len(waiting) > 0 {
			m.placeGroup(g, waiting, queueImmediately)
		}
		q.AddPodGroup(logger, g.pg)
		m.check()
		m.moveOnEvent(framework.ClusterEvent{Resource: framework.PodGroup, ActionType: framework.Add,
			Label: "PodGroupAdd"}, nil, g.pg)

	case opUpdatePodGroup: // which group, minCount
		g, v := m.groups[int(r.Arg())%fuzzGroups], r.Arg()
		if g.pg == nil {
			m.history = append(m.history, "UpdatePodGroup(nothing)")
			return
		}
		oldPG := g.pg
		g.pg = oldPG.DeepCopy()
		if gang := g.pg.Spec.SchedulingPolicy.Gang; gang != nil {
			gang.MinCount = 1 + int32(v%4) // the policy's kind is immutable, minCount not
		}
		m.stampObject(&g.pg.ObjectMeta)
		m.history = append(m.history, fmt.Sprintf("UpdatePodGroup(%s %s → %s)", g.name, policyOf(oldPG), policyOf(g.pg)))
		q.UpdatePodGroup(logger, g.pg)
		m.check()
		m.moveOnEvent(framework.ClusterEvent{Resource: framework.PodGroup, ActionType: framework.Update,
			Label: "PodGroupUpdate"}, oldPG, g.pg)

	case opDeletePodGroup: // which group
		g := m.groups[int(r.Arg())%fuzzGroups]
		if g.pg == nil {
			m.history = append(m.history, "DeletePodGroup(nothing)")
			return
		}
		oldPG := g.pg
		g.pg = nil
		for _, fp := range m.live(ActiveQ, BackoffQ, UnschedulablePods, PendingPodGroupPods) {
			if fp.group == g {
				fp.allowed = locSet{IncompletePodGroupPods}
			}
		}
		m.history = append(m.history, "DeletePodGroup("+g.name+")")
		q.DeletePodGroup(logger, oldPG)
		m.check()
		m.moveOnEvent(framework.ClusterEvent{Resource: framework.PodGroup, ActionType: framework.Delete,
			Label: "PodGroupDelete"}, oldPG, nil)

	case opEndGroupAttempt: // status, which members were placed
		m.endGroupAttempt(r.Arg(), r.Arg())
	}
}

// newPodGroup makes g's PodGroup: a gang of minCount 1 to 4, or (v&0x80) a
// basic group.
func (m *queueModel) newPodGroup(g *fuzzGroup, v byte) *schedulingv1beta1.PodGroup {
	w := st.MakePodGroup().Name(g.name).Priority(g.priority)
	if v&0x80 == 0 {
		w.Gang(1 + int32(v%4))
	}
	pg := w.Obj()
	pg.UID = types.UID(fmt.Sprintf("%s-%d", g.name, m.version))
	m.stampObject(&pg.ObjectMeta)
	return pg
}

// policyOf names a PodGroup's policy in the history.
func policyOf(pg *schedulingv1beta1.PodGroup) string {
	if gang := pg.Spec.SchedulingPolicy.Gang; gang != nil {
		return fmt.Sprintf("gang of %d", gang.MinCount)
	}
	return "basic"
}

// moveOnEvent delivers a PodGroup event, or a pending pod's add, to every
// unschedulable entity, as the scheduler's event handlers do after telling
// the queue, and predicts where each goes.
func (m *queueModel) moveOnEvent(e framework.ClusterEvent, oldObj, newObj interface{}) {
	m.keepAll()
	m.history = append(m.history, fmt.Sprintf("MoveAll(%s)", e))
	m.offer(e, oldObj, newObj, m.live(UnschedulablePods))
	m.logEvent(e, oldObj, newObj)
	m.q.MoveAllToActiveOrBackoffQueue(m.logger, e, oldObj, newObj, nil)
}

// endGroupAttempt ends the attempt of the group in flight, as the
// pod-group cycle does: with status b%4 (0 Success, some members placed
// and binding as mask says, the others put back; 1 rejected and 2 an
// error, every member put back; 3 every member skipped, a nil status), then
// AddAttemptedPodGroupIfNeeded, which makes the pending members one entity
// again.
func (m *queueModel) endGroupAttempt(b, mask byte) {
	g := m.openAttempt()
	if g == nil {
		m.history = append(m.history, "AddAttemptedPodGroupIfNeeded(no group in flight)")
		return
	}
	var members []*fuzzPod
	for _, fp := range m.inFlight() {
		if fp.group == g && fp.attempt == g.attempt {
			members = append(members, fp)
		}
	}
	var status *framework.Status
	switch b % 4 {
	case 0:
		status = framework.NewStatus(framework.Success)
		if mask == 0 {
			mask = 1 // a Success placed someone
		}
	case 1:
		status = framework.NewStatus(framework.Unschedulable, "minCount cannot be satisfied")
	case 2:
		status = framework.AsStatus(errorString("boom"))
	}
	m.history = append(m.history, fmt.Sprintf("end of %s's attempt %d: %v, placed %#x", g.name, g.attempt,
		status.Code(), mask))
	for i, fp := range members {
		switch {
		case b%4 == 3:
			// Skipped: assumed already, or being deleted. The informer
			// soon says it left the pending pods; here it says so at once.
			g.popped.RemoveMember(fp.pod.UID)
			m.q.Done(fp.pod.UID)
			m.q.Delete(fp.pod)
			m.bind(fp)
		case b%4 == 0 && mask&(1<<i) != 0:
			// Placed: it stays in flight while it binds (opDone binds it,
			// opRequeue fails its binding).
		default:
			verdict := byte(1) // Foo rejected it
			if b%4 == 2 {
				verdict = 0 // an error
			} else if mask&(1<<i) != 0 {
				verdict = 2 // Bar did
			}
			m.requeue(fp, verdict)
		}
	}
	var pending []*fuzzPod
	for _, fp := range m.pods {
		if fp.group == g && slices.Equal(fp.allowed, locSet{PendingPodGroupPods}) {
			pending = append(pending, fp)
		}
	}
	strategy := queueAfterBackoff // stamped now: backing off
	if status.IsSuccess() {
		strategy = queueImmediately
	}
	if len(pending) > 0 {
		m.placeGroup(g, pending, strategy)
	}
	m.history = append(m.history, fmt.Sprintf("AddAttemptedPodGroupIfNeeded(%s, %v), %d pending", g.name,
		status.Code(), len(pending)))
	if err := m.q.AddAttemptedPodGroupIfNeeded(m.logger, g.popped, status); err != nil {
		m.fail("AddAttemptedPodGroupIfNeeded(%s): %v", g.key(), err)
	}
	g.popped = nil
}

// openAttempt returns the group whose attempt is open, or nil: the
// scheduler pops nothing else until it ends.
func (m *queueModel) openAttempt() *fuzzGroup {
	for _, g := range m.groups {
		if g.popped != nil {
			return g
		}
	}
	return nil
}

// bind is a pod going on to be bound: it leaves the queue for good, and a
// member still counts towards its gang.
func (m *queueModel) bind(fp *fuzzPod) {
	fp.allowed = locSet{NotQueued}
	if m.current[fp.slot] == fp {
		m.current[fp.slot] = nil
		if fp.group != nil {
			fp.group.bound++
		}
	}
}

// poppedGroup checks a popped group against the model (its members are
// the entity's, each with one more attempt) and puts them in flight.
func (m *queueModel) poppedGroup(group, before *framework.QueuedPodGroupInfo) {
	var g *fuzzGroup
	for _, fg := range m.groups {
		if fg.key() == group.Key() {
			g = fg
		}
	}
	if g == nil {
		m.fail("Pop returned pod group %s, which the model does not know", group.Key())
	}
	var want, got []types.UID
	for _, fp := range m.entityMembers(g) {
		want = append(want, fp.pod.UID)
	}
	for i, member := range group.Members {
		got = append(got, member.Pod.UID)
		if member.Attempts != before.Members[i].Attempts+1 {
			m.fail("Pop: member %s of %s has %d attempts, had %d", member.Pod.UID, g.name, member.Attempts,
				before.Members[i].Attempts)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		m.fail("Pop returned %s with members %v, want %v", g.name, got, want)
	}
	g.attempt++
	g.popped = group
	for _, member := range group.Members {
		fp := m.pods[member.Pod.UID]
		fp.allowed = locSet{InFlight}
		fp.popped, fp.seen, fp.attempt = member, nil, g.attempt
	}
}

// checkGroups checks the members' places against their groups: incomplete
// exactly while the PodGroup is unknown, pending only while the group is
// in flight, and all of a group's queued members in one place.
func (m *queueModel) checkGroups() {
	for _, g := range m.groups {
		var entityLoc Location
		for _, fp := range m.pods {
			if fp.group != g || fp.loc == NotQueued || fp.loc == InFlight {
				continue
			}
			switch {
			case (fp.loc == IncompletePodGroupPods) != (g.pg == nil):
				m.fail("member %s of %s is at %q while its PodGroup is known: %t", fp.pod.UID, g.name, fp.loc,
					g.pg != nil)
			case fp.loc == PendingPodGroupPods && g.popped == nil:
				m.fail("member %s of %s is pending, but its group is not in flight", fp.pod.UID, g.name)
			case fp.loc == ActiveQ || fp.loc == BackoffQ || fp.loc == UnschedulablePods:
				if entityLoc != "" && entityLoc != fp.loc {
					m.fail("members of %s are in %q and %q", g.name, entityLoc, fp.loc)
				}
				entityLoc = fp.loc
			}
		}
	}
}

// groupEntry returns a copy of the pod group entity with key in a
// sub-queue (its bookkeeping and its members'), or nil.
func (p *PriorityQueue) groupEntry(key string) *framework.QueuedPodGroupInfo {
	p.lock.Lock()
	defer p.lock.Unlock()
	group, _ := p.getEntity(key).(*framework.QueuedPodGroupInfo)
	if group == nil {
		return nil
	}
	cp := *group
	cp.UnschedulablePlugins = group.UnschedulablePlugins.Clone()
	cp.PendingPlugins = group.PendingPlugins.Clone()
	cp.GatingPluginEvents = slices.Clone(group.GatingPluginEvents)
	cp.Members = nil
	for _, member := range group.Members {
		cp.Members = append(cp.Members, member.DeepCopy())
	}
	return &cp
}

// checkPodGroupsStructure checks the queue's pod-group bookkeeping:
// incomplete members only of unknown PodGroups, pending members only of
// the group in flight, no entity of the group in flight, and memberOf
// naming exactly the members held outside flight (memberKeys, gathered
// from the entities by checkEntity).
func (p *PriorityQueue) checkPodGroupsStructure(place func(types.UID, string) error,
	memberKeys map[types.UID]string) error {
	g := &p.podGroups
	lists := []struct {
		name  string
		lists map[string][]*framework.QueuedPodInfo
	}{{"incomplete", g.incomplete}, {"pending", g.pending}}
	for _, l := range lists {
		for key, members := range l.lists {
			switch {
			case len(members) == 0:
				return fmt.Errorf("%s holds an empty list for %s", l.name, key)
			case l.name == "incomplete" && g.objects[key] != nil:
				return fmt.Errorf("members of %s are incomplete, but its PodGroup is known", key)
			case l.name == "pending" && key != g.inFlight:
				return fmt.Errorf("members of %s are pending, but %q is in flight", key, g.inFlight)
			}
			for _, member := range members {
				if got, _ := g.groupKeyOf(member.Pod); got != key {
					return fmt.Errorf("%s of %s holds pod %s of %q", l.name, key, member.Pod.UID, got)
				}
				if err := place(member.Pod.UID, l.name+" "+key); err != nil {
					return err
				}
				memberKeys[member.Pod.UID] = key
			}
		}
	}
	if g.inFlight != "" && p.locateEntity(g.inFlight) != NotQueued {
		return fmt.Errorf("pod group %s is in flight and in %s", g.inFlight, p.locateEntity(g.inFlight))
	}
	if len(g.memberOf) != len(memberKeys) {
		return fmt.Errorf("memberOf holds %d pods, the queue %d members outside flight", len(g.memberOf), len(memberKeys))
	}
	for uid, key := range memberKeys {
		if g.memberOf[uid] != key {
			return fmt.Errorf("member %s of %s is under %q in memberOf", uid, key, g.memberOf[uid])
		}
	}
	return nil
}

// checkEntity checks one entity of a sub-queue and places its pods: a pod
// that is no member, or a non-empty group of a known PodGroup, holding its
// current object, whose members are of that group, in the order a cycle
// tries them.
func (p *PriorityQueue) checkEntity(e framework.QueuedEntity, part string, place func(types.UID, string) error,
	memberKeys map[types.UID]string) error {
	switch e := e.(type) {
	case *framework.QueuedPodInfo:
		if key, ok := p.podGroups.groupKeyOf(e.Pod); ok {
			return fmt.Errorf("pod %s of group %s is queued as a pod in %s", e.Pod.UID, key, part)
		}
		return place(e.Pod.UID, part)
	case *framework.QueuedPodGroupInfo:
		key := e.Key()
		switch {
		case e.Size() == 0:
			return fmt.Errorf("pod group %s in %s has no member", key, part)
		case p.podGroups.objects[key] == nil:
			return fmt.Errorf("pod group %s is in %s, but its PodGroup is unknown", key, part)
		case e.PodGroup != p.podGroups.objects[key]:
			return fmt.Errorf("pod group %s in %s holds a PodGroup other than the newest", key, part)
		case !slices.IsSortedFunc(e.Members, framework.MemberOrder):
			return fmt.Errorf("members of %s in %s are out of order", key, part)
		case len(e.UnscheduledPods) != e.Size():
			return fmt.Errorf("pod group %s in %s lists %d unscheduled pods for %d members", key, part,
				len(e.UnscheduledPods), e.Size())
		}
		for i, member := range e.Members {
			if got, _ := p.podGroups.groupKeyOf(member.Pod); got != key {
				return fmt.Errorf("pod group %s in %s holds pod %s of %q", key, part, member.Pod.UID, got)
			}
			if e.UnscheduledPods[i] != member.Pod {
				return fmt.Errorf("pod group %s in %s: unscheduled pod %d is not member %s", key, part, i, member.Pod.UID)
			}
			if err := place(member.Pod.UID, part+" in "+key); err != nil {
				return err
			}
			memberKeys[member.Pod.UID] = key
		}
		return nil
	}
	return fmt.Errorf("%s holds a %T", part, e)
}
