// This file is the cache's and the snapshot's record of each pod group
// (GenericWorkload): which of the group's pods are unscheduled, assumed or
// assigned, and the PodGroup object, as kube-scheduler's podGroupState.

package cache

import (
	"fmt"
	"maps"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/minisched/minisched/minisched/framework"
)

// podGroupGeneration numbers the changes to every pod group state, process
// wide (as framework's NodeInfo generations). A per-state counter would
// start again at 1 for a group deleted and created again under the same
// name, and a snapshot still holding the old state could take the new one
// for unchanged.
var podGroupGeneration atomic.Int64

// nextPodGroupGeneration returns a generation no state has had yet.
func nextPodGroupGeneration() int64 { return podGroupGeneration.Add(1) }

// podGroupState is what is known of one pod group: the pods that name it
// and are not finished, each in exactly one of three states, and the
// PodGroup object. A pod is
//
//   - unscheduled: pending, not placed (the queue holds it, or a cycle is
//     trying it);
//   - assumed: placed by this scheduler, not yet seen bound;
//   - assigned: bound (the informer reports its spec.nodeName).
//
// A state exists while it has a pod or the PodGroup object: pods may arrive
// before their PodGroup, and a PodGroup is known before its pods. The
// cache's states change under the cache's lock and are never handed out
// (PodGroupStates().Get returns a copy); a snapshot owns its copies, and
// its AssumePod and ForgetPod change them for one pod-group cycle.
type podGroupState struct {
	// generation changes with every change below, so that UpdateSnapshot
	// copies only the states that changed.
	generation int64
	// pods are the group's pods by UID, each as last reported by the
	// informer (an assumed pod's placed copy is in assumed).
	pods map[types.UID]*v1.Pod
	// unscheduled, assumed and assigned split the keys of pods.
	unscheduled sets.Set[types.UID]
	// assumed holds the assumed pods as the scheduler placed them, with
	// spec.nodeName set.
	assumed  map[types.UID]*v1.Pod
	assigned sets.Set[types.UID]
	// podGroup is the API object, nil until the informer reports it.
	podGroup *schedulingv1beta1.PodGroup
}

var _ framework.PodGroupState = &podGroupState{}

// newPodGroupState returns a state with no pod and no PodGroup.
func newPodGroupState() *podGroupState {
	return &podGroupState{
		pods:        map[types.UID]*v1.Pod{},
		unscheduled: sets.New[types.UID](),
		assumed:     map[types.UID]*v1.Pod{},
		assigned:    sets.New[types.UID](),
	}
}

// clone returns a copy that shares only the pod and PodGroup objects, which
// nobody modifies.
func (st *podGroupState) clone() *podGroupState {
	return &podGroupState{
		generation:  st.generation,
		pods:        maps.Clone(st.pods),
		unscheduled: st.unscheduled.Clone(),
		assumed:     maps.Clone(st.assumed),
		assigned:    st.assigned.Clone(),
		podGroup:    st.podGroup,
	}
}

// empty reports whether the state has neither pods nor a PodGroup, and so
// should be dropped.
func (st *podGroupState) empty() bool { return len(st.pods) == 0 && st.podGroup == nil }

// has reports whether uid is one of the group's pods.
func (st *podGroupState) has(uid types.UID) bool {
	_, ok := st.pods[uid]
	return ok
}

// setPod records pod, as the informer reports it. A bound pod becomes
// assigned, whatever it was; an unbound one becomes unscheduled if it is
// new, and otherwise keeps its state (an assumed pod's update changes only
// its object).
func (st *podGroupState) setPod(pod *v1.Pod) {
	st.generation = nextPodGroupGeneration()
	_, known := st.pods[pod.UID]
	st.pods[pod.UID] = pod
	switch {
	case pod.Spec.NodeName != "":
		st.unscheduled.Delete(pod.UID)
		delete(st.assumed, pod.UID)
		st.assigned.Insert(pod.UID)
	case !known:
		st.unscheduled.Insert(pod.UID)
	}
}

// deletePod forgets the pod with uid, whatever its state.
func (st *podGroupState) deletePod(uid types.UID) {
	st.generation = nextPodGroupGeneration()
	delete(st.pods, uid)
	st.unscheduled.Delete(uid)
	delete(st.assumed, uid)
	st.assigned.Delete(uid)
}

// assumePod makes pod, placed on pod.Spec.NodeName, assumed. A pod the
// group did not know (its unscheduled Add was not seen) is learnt from
// this placed copy.
func (st *podGroupState) assumePod(pod *v1.Pod) {
	st.generation = nextPodGroupGeneration()
	if !st.has(pod.UID) {
		st.pods[pod.UID] = pod
	}
	st.unscheduled.Delete(pod.UID)
	st.assigned.Delete(pod.UID)
	st.assumed[pod.UID] = pod
}

// forgetPod makes an assumed pod unscheduled again; it does nothing to a
// pod that is not assumed.
func (st *podGroupState) forgetPod(uid types.UID) {
	if _, ok := st.assumed[uid]; !ok {
		return
	}
	st.generation = nextPodGroupGeneration()
	delete(st.assumed, uid)
	st.unscheduled.Insert(uid)
}

// setPodGroup records the PodGroup object, or its absence (nil).
func (st *podGroupState) setPodGroup(pg *schedulingv1beta1.PodGroup) {
	st.generation = nextPodGroupGeneration()
	st.podGroup = pg
}

// PodGroup implements framework.PodGroupState.
func (st *podGroupState) PodGroup() *schedulingv1beta1.PodGroup { return st.podGroup }

// AllPodsCount implements framework.PodGroupState.
func (st *podGroupState) AllPodsCount() int { return len(st.pods) }

// ScheduledPodsCount implements framework.PodGroupState.
func (st *podGroupState) ScheduledPodsCount() int { return len(st.assumed) + len(st.assigned) }

// ScheduledPods implements framework.PodGroupState: the assigned pods, then
// the assumed ones as placed, in no particular order.
func (st *podGroupState) ScheduledPods() []*v1.Pod {
	out := make([]*v1.Pod, 0, st.ScheduledPodsCount())
	for uid := range st.assigned {
		out = append(out, st.pods[uid])
	}
	for _, pod := range st.assumed {
		out = append(out, pod)
	}
	return out
}

// UnscheduledPods implements framework.PodGroupState.
func (st *podGroupState) UnscheduledPods() map[string]*v1.Pod {
	out := make(map[string]*v1.Pod, len(st.unscheduled))
	for uid := range st.unscheduled {
		pod := st.pods[uid]
		out[pod.Name] = pod
	}
	return out
}

// AssumedPods implements framework.PodGroupState.
func (st *podGroupState) AssumedPods() sets.Set[types.UID] { return sets.KeySet(st.assumed) }

// podGroupStates holds pod group states by framework.PodGroupKey.
type podGroupStates map[string]*podGroupState

// podGroupKeyOf returns the key of pod's group, and false if pod names no
// group.
func podGroupKeyOf(pod *v1.Pod) (string, bool) {
	name, ok := framework.PodGroupName(pod)
	if !ok {
		return "", false
	}
	return framework.PodGroupKey(pod.Namespace, name), true
}

// ensure returns the state under key, creating an empty one if there is
// none.
func (m podGroupStates) ensure(key string) *podGroupState {
	st, ok := m[key]
	if !ok {
		st = newPodGroupState()
		m[key] = st
	}
	return st
}

// dropIfEmpty deletes the state under key if it has neither pods nor a
// PodGroup.
func (m podGroupStates) dropIfEmpty(key string) {
	if st, ok := m[key]; ok && st.empty() {
		delete(m, key)
	}
}

// state returns the named group's state, or kube-scheduler's error.
func (m podGroupStates) state(namespace, name string) (*podGroupState, error) {
	st, ok := m[framework.PodGroupKey(namespace, name)]
	if !ok {
		return nil, fmt.Errorf("pod group state not found for pod group %s/%s", namespace, name)
	}
	return st, nil
}

// podGroup returns the named group's PodGroup object, or an error if the
// group is unknown or its object has not been seen (kube-scheduler's
// messages).
func (m podGroupStates) podGroup(namespace, name string) (*schedulingv1beta1.PodGroup, error) {
	key := framework.PodGroupKey(namespace, name)
	st, ok := m[key]
	if !ok {
		return nil, fmt.Errorf("pod group state not found for pod group %s", key)
	}
	if st.podGroup == nil {
		return nil, fmt.Errorf("pod group object not found for pod group %s", key)
	}
	return st.podGroup, nil
}
