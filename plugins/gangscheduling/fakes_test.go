// This file is what the tests run GangScheduling against: pods and
// PodGroups, a PodGroupManager that knows what a test says, and a Handle
// that records what the plugin asks of it.

package gangscheduling

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
)

// member is pod name (UID name) in namespace ns, a member of pod group
// group.
func member(ns, name, group string) *v1.Pod {
	pod := st.MakePod().Namespace(ns).Name(name).UID(name).Obj()
	pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
	return pod
}

// gang is PodGroup ns/name with a gang policy of minCount.
func gang(ns, name string, minCount int32) *schedulingv1beta1.PodGroup {
	return &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}}}}
}

// basic is PodGroup ns/name with the basic policy.
func basic(ns, name string) *schedulingv1beta1.PodGroup {
	return &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}}}
}

// fakeState is one group's pods, each pending, assumed or bound.
type fakeState struct {
	pending, assumed, bound []*v1.Pod
}

var _ framework.PodGroupState = &fakeState{}

func (s *fakeState) PodGroup() *schedulingv1beta1.PodGroup { return nil }
func (s *fakeState) AllPodsCount() int                     { return len(s.pending) + len(s.assumed) + len(s.bound) }
func (s *fakeState) ScheduledPodsCount() int               { return len(s.assumed) + len(s.bound) }
func (s *fakeState) ScheduledPods() []*v1.Pod {
	return append(append([]*v1.Pod{}, s.assumed...), s.bound...)
}

func (s *fakeState) UnscheduledPods() map[string]*v1.Pod {
	pods := map[string]*v1.Pod{}
	for _, p := range s.pending {
		pods[p.Name] = p
	}
	return pods
}

func (s *fakeState) AssumedPods() sets.Set[types.UID] {
	uids := sets.New[types.UID]()
	for _, p := range s.assumed {
		uids.Insert(p.UID)
	}
	return uids
}

// assume moves the pending pod named name to the assumed pods, as the cache
// does when a cycle assumes it.
func (s *fakeState) assume(name string) {
	for i, p := range s.pending {
		if p.Name == name {
			s.pending = append(s.pending[:i:i], s.pending[i+1:]...)
			s.assumed = append(s.assumed, p)
			return
		}
	}
	panic(fmt.Sprintf("pod %s is not pending", name))
}

// podGroupLister holds PodGroups by PodGroupKey.
type podGroupLister map[string]*schedulingv1beta1.PodGroup

func (l podGroupLister) Get(namespace, name string) (*schedulingv1beta1.PodGroup, error) {
	if pg, ok := l[framework.PodGroupKey(namespace, name)]; ok {
		return pg, nil
	}
	return nil, fmt.Errorf("pod group %s not found", framework.PodGroupKey(namespace, name))
}

// stateLister holds states by PodGroupKey.
type stateLister map[string]framework.PodGroupState

func (l stateLister) Get(namespace, name string) (framework.PodGroupState, error) {
	if s, ok := l[framework.PodGroupKey(namespace, name)]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("no state for pod group %s", framework.PodGroupKey(namespace, name))
}

// fakeManager is a PodGroupManager: the cache, or the snapshot's part of it.
type fakeManager struct {
	podGroups podGroupLister
	states    stateLister
}

// newManager knows podGroups, and state as the pods of each group that
// states names.
func newManager(podGroups []*schedulingv1beta1.PodGroup, states map[string]*fakeState) fakeManager {
	m := fakeManager{podGroups: podGroupLister{}, states: stateLister{}}
	for _, pg := range podGroups {
		m.podGroups[framework.PodGroupKey(pg.Namespace, pg.Name)] = pg
	}
	for key, s := range states {
		m.states[key] = s
	}
	return m
}

func (m fakeManager) PodGroups() framework.PodGroupLister           { return m.podGroups }
func (m fakeManager) PodGroupStates() framework.PodGroupStateLister { return m.states }

// fakeSnapshot is a SharedLister that knows PodGroups only: any other
// method panics, as the plugin reads the group's pods from the cache.
type fakeSnapshot struct {
	framework.SharedLister
	podGroups podGroupLister
}

// newSnapshot knows podGroups.
func newSnapshot(podGroups ...*schedulingv1beta1.PodGroup) fakeSnapshot {
	return fakeSnapshot{podGroups: newManager(podGroups, nil).podGroups}
}

func (s fakeSnapshot) PodGroups() framework.PodGroupLister { return s.podGroups }

// fakeWaitingPod records which plugins allowed it.
type fakeWaitingPod struct {
	framework.WaitingPod
	allowedBy []string
}

func (wp *fakeWaitingPod) Allow(pluginName string) { wp.allowedBy = append(wp.allowedBy, pluginName) }

// fakeHandle gives the plugin a manager (nil: GenericWorkload off), a
// snapshot and waiting pods, and records the pods it activates. Any other
// Handle method panics: the plugin must not call it.
type fakeHandle struct {
	framework.Handle
	manager   framework.PodGroupManager
	snapshot  framework.SharedLister
	waiting   map[types.UID]*fakeWaitingPod
	activated []map[string]*v1.Pod
}

func (h *fakeHandle) PodGroupManager() framework.PodGroupManager   { return h.manager }
func (h *fakeHandle) SnapshotSharedLister() framework.SharedLister { return h.snapshot }

func (h *fakeHandle) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	h.activated = append(h.activated, pods)
}

func (h *fakeHandle) GetWaitingPod(uid types.UID) framework.WaitingPod {
	if wp, ok := h.waiting[uid]; ok {
		return wp
	}
	return nil
}

// recordingActivator is the queue's Activate for a real framework.
type recordingActivator struct{ activated []map[string]*v1.Pod }

func (a *recordingActivator) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	a.activated = append(a.activated, pods)
}
