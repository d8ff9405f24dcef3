// This file is what a pod group is to the framework (chapter 19, the
// GenericWorkload gate): the pods that name one PodGroup in
// spec.schedulingGroup.podGroupName, scheduled all or nothing in one
// pod-group cycle. It holds the group as one cycle sees it (PodGroupInfo),
// as the queue holds it (QueuedPodGroupInfo), the order its members are
// tried in, and what the scheduler knows of each group's pods
// (PodGroupState, PodGroupManager).

package framework

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// PodGroupKey names a pod group: "namespace/name". It is also the group's
// key in the queue, which no pod UID can equal.
func PodGroupKey(namespace, name string) string { return namespace + "/" + name }

// PodGroupName returns the name of the PodGroup the pod is a member of, and
// false if it names none.
func PodGroupName(pod *v1.Pod) (string, bool) {
	if g := pod.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil {
		return *g.PodGroupName, true
	}
	return "", false
}

// MinCount is how many of the group's pods must be placed together: a gang
// policy's minCount, or 1 for a basic group (whose pods are then placed as
// they fit, but still in one cycle).
func MinCount(pg *schedulingv1beta1.PodGroup) int {
	if g := pg.Spec.SchedulingPolicy.Gang; g != nil {
		return int(g.MinCount)
	}
	return 1
}

// PodGroupPriority is the PodGroup's spec.priority, resolved by the
// apiserver's Priority admission from its priorityClassName; nil (no class
// and no global default) counts as 0, as a pod's does.
func PodGroupPriority(pg *schedulingv1beta1.PodGroup) int32 {
	if pg.Spec.Priority != nil {
		return *pg.Spec.Priority
	}
	return 0
}

// PodGroupInfo is a pod group as a pod-group cycle sees it.
type PodGroupInfo struct {
	Namespace string
	Name      string
	// PodGroup is the API object: the queue's copy until the cycle starts,
	// then the snapshot's.
	PodGroup *schedulingv1beta1.PodGroup
	// UnscheduledPods are the members this cycle tries, in the order it
	// tries them. The group's pods already assumed or bound are in its
	// PodGroupState.
	UnscheduledPods []*v1.Pod
}

// Key is the group's PodGroupKey.
func (pgi *PodGroupInfo) Key() string { return PodGroupKey(pgi.Namespace, pgi.Name) }

// QueuedPodGroupInfo is a pod group as the queue holds it: one entity,
// ordered by its PodGroup's priority, with the members queued so far.
// Members arriving while it is queued join it; members arriving while it
// is being scheduled wait for the attempt to end.
type QueuedPodGroupInfo struct {
	*PodGroupInfo
	QueueingParams
	// Members are the group's queued pods, in the order a cycle tries them
	// (MemberLess). UnscheduledPods holds the same pods.
	Members []*QueuedPodInfo
}

// NewQueuedPodGroupInfo is a group queued at now, with no member yet.
func NewQueuedPodGroupInfo(pg *schedulingv1beta1.PodGroup, now time.Time) *QueuedPodGroupInfo {
	return &QueuedPodGroupInfo{
		PodGroupInfo:   &PodGroupInfo{Namespace: pg.Namespace, Name: pg.Name, PodGroup: pg},
		QueueingParams: newQueueingParams(now),
	}
}

// Priority is the PodGroup's (PodGroupPriority).
func (q *QueuedPodGroupInfo) Priority() int32 { return PodGroupPriority(q.PodGroup) }

// ForEachPod calls fn on each member, in order, until fn returns false.
func (q *QueuedPodGroupInfo) ForEachPod(fn func(*QueuedPodInfo) bool) {
	for _, m := range q.Members {
		if !fn(m) {
			return
		}
	}
}

// Size is the number of queued members.
func (q *QueuedPodGroupInfo) Size() int { return len(q.Members) }

// AddMember puts a member in its place in the order.
func (q *QueuedPodGroupInfo) AddMember(pInfo *QueuedPodInfo) {
	i, _ := slices.BinarySearchFunc(q.Members, pInfo, MemberOrder)
	q.Members = slices.Insert(q.Members, i, pInfo)
	q.syncUnscheduled()
}

// RemoveMember takes the member with uid out, and returns it (nil if it is
// not a member).
func (q *QueuedPodGroupInfo) RemoveMember(uid types.UID) *QueuedPodInfo {
	i := slices.IndexFunc(q.Members, func(m *QueuedPodInfo) bool { return m.Pod.UID == uid })
	if i < 0 {
		return nil
	}
	m := q.Members[i]
	q.Members = slices.Delete(q.Members, i, i+1)
	q.syncUnscheduled()
	return m
}

// Member returns the member with uid, or nil.
func (q *QueuedPodGroupInfo) Member(uid types.UID) *QueuedPodInfo {
	for _, m := range q.Members {
		if m.Pod.UID == uid {
			return m
		}
	}
	return nil
}

// UpdateMember replaces a member's pod object by pod (same UID), with what
// PodInfo derives from it computed anew (an update may scale requests
// down), and returns the member; it reports an error if pod is not a
// member. The member's signature is the queue's to renew.
func (q *QueuedPodGroupInfo) UpdateMember(pod *v1.Pod) (*QueuedPodInfo, error) {
	m := q.Member(pod.UID)
	if m == nil {
		return nil, fmt.Errorf("pod %s is not queued in pod group %s", PodKey(pod), q.Key())
	}
	m.PodInfo = NewPodInfo(pod)
	q.syncUnscheduled()
	return m, nil
}

// syncUnscheduled keeps UnscheduledPods the members' pods, in order.
func (q *QueuedPodGroupInfo) syncUnscheduled() {
	q.UnscheduledPods = q.UnscheduledPods[:0]
	for _, m := range q.Members {
		q.UnscheduledPods = append(q.UnscheduledPods, m.Pod)
	}
}

// MemberOrder is the order a pod-group cycle tries members in, as
// kube-scheduler's PodGroupMemberPodsOrderingFunc: higher priority first,
// then more attempts (a pod's timestamp is renewed when it is put back, so
// the one tried more often is the older), then the earlier timestamp, then
// the name, so that the order never depends on the clock's resolution.
func MemberOrder(a, b *QueuedPodInfo) int {
	if pa, pb := a.Priority(), b.Priority(); pa != pb {
		return cmp.Compare(pb, pa)
	}
	if a.Attempts != b.Attempts {
		return cmp.Compare(b.Attempts, a.Attempts)
	}
	if c := a.Timestamp.Compare(b.Timestamp); c != 0 {
		return c
	}
	return cmp.Compare(a.Pod.Name, b.Pod.Name)
}

// PodGroupState is what the scheduler knows of one pod group's pods: every
// pod of the group it has seen that is not finished, whether pending,
// assumed (placed, not yet bound) or bound. The cache keeps one per group;
// a snapshot copies them, and a pod-group cycle assumes its members in the
// snapshot's copy only, undoing that when the cycle ends.
type PodGroupState interface {
	// PodGroup is the API object, nil while the scheduler has not seen it.
	PodGroup() *schedulingv1beta1.PodGroup
	// AllPodsCount counts every pod of the group: pending, assumed and
	// bound. GangScheduling's PreEnqueue waits until it reaches minCount.
	AllPodsCount() int
	// ScheduledPodsCount counts the assumed and bound pods.
	ScheduledPodsCount() int
	// ScheduledPods are the assumed and bound pods.
	ScheduledPods() []*v1.Pod
	// UnscheduledPods are the pending pods, by name (what Handle.Activate
	// takes).
	UnscheduledPods() map[string]*v1.Pod
	// AssumedPods are the UIDs of the assumed pods: placed, waiting on
	// Permit or binding.
	AssumedPods() sets.Set[types.UID]
}

// PodGroupLister reads PodGroup objects.
type PodGroupLister interface {
	// Get returns the named PodGroup, or an error if the scheduler has not
	// seen it.
	Get(namespace, name string) (*schedulingv1beta1.PodGroup, error)
}

// PodGroupStateLister reads PodGroupStates.
type PodGroupStateLister interface {
	// Get returns the named group's state, or an error if the scheduler
	// knows neither the PodGroup nor any of its pods.
	Get(namespace, name string) (PodGroupState, error)
}

// PodGroupManager is what the scheduler knows of pod groups: the PodGroup
// objects and each group's pods. The cache is one (live, what PreEnqueue
// and Permit read, Handle.PodGroupManager); the snapshot is another (what
// one cycle decides on, SharedLister).
type PodGroupManager interface {
	PodGroups() PodGroupLister
	PodGroupStates() PodGroupStateLister
}

// PlacementProgress is how far a pod-group cycle has got in one placement:
// what PlacementFeasible judges.
type PlacementProgress struct {
	// Remaining counts the members not tried yet.
	Remaining int
	// Scheduled counts the group's pods placed: bound or assumed before
	// this cycle, and placed in the snapshot by this cycle so far.
	Scheduled int
}

// Placement is a set of nodes a pod-group cycle tries to place the whole
// group on (with TopologyAwareWorkloadScheduling, one per topology domain;
// without it, one with every node).
type Placement struct {
	// Name names it in logs, messages and records (the domain's value).
	Name string
	// Nodes are the nodes the group may use in this placement.
	Nodes []*NodeInfo
}

// PlacementScore is one placement's score from one PlacementScore plugin.
type PlacementScore struct {
	Placement *Placement
	Score     int64
}

// ProposedAssignment is one member placed by a pod-group cycle: the node
// it would go to, and the cycle state of its try.
type ProposedAssignment struct {
	PodInfo  *PodInfo
	NodeName string
	State    *CycleState
}

// PodGroupAssignments are the members a cycle placed in one placement.
type PodGroupAssignments struct {
	Placement           *Placement
	ProposedAssignments []ProposedAssignment
}

// PodGroupSchedulingFunc re-runs a pod group's placement on the snapshot as
// it stands, undoing what it placed before it returns: what a
// PodGroupPostFilter plugin asks after taking victims out.
type PodGroupSchedulingFunc func(ctx context.Context) (*PodGroupAssignments, *Status)

// PodGroupPostFilterResult is the nominated node of each member, by
// namespace and name, when a PodGroupPostFilter plugin made room.
type PodGroupPostFilterResult struct {
	NominatingInfos map[types.NamespacedName]*NominatingInfo
}
