// The plugin in a pod-group cycle (chapter 19, GenericWorkload): what it
// keeps in the group's cycle state (each member's PreFilter record, and the
// pending allocations the members share), and PodGroupPostFilter: a pod
// group fits nowhere; free, for each member, what PostFilter would have
// freed for it alone, from what each member's PreFilter recorded.

package dynamicresources

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// podGroupStateData is what the plugin keeps in a pod group's cycle state
// (CycleState.PodGroupCycleState). The members are tried one after the
// other, so it needs no lock.
type podGroupStateData struct {
	// podsStateData is each member's stateData, by namespace and name, as
	// the member's PreFilter recorded it.
	podsStateData map[types.NamespacedName]*stateData
	// pendingAllocations holds the claims whose allocation a member's
	// Reserve made in this cycle and no PreBind has written yet, each with
	// the members sharing it. A later member of the cycle that asks for
	// such a claim reuses the allocation (PreFilter) instead of waiting for
	// it to be written; a pod outside the cycle still waits. The DRA
	// manager counts the sharers across cycles.
	pendingAllocations map[types.UID]sets.Set[types.UID]
}

// Clone shares the data: the group's state belongs to one cycle.
func (d *podGroupStateData) Clone() framework.StateData { return d }

// recordInPodGroup keeps the member's stateData in its group's cycle
// state, if the pod is tried in a pod-group cycle, and returns the group's
// data (nil outside a pod-group cycle); PreFilter calls it first thing, so
// that every member it saw is there.
func recordInPodGroup(cs *framework.CycleState, pod *v1.Pod, s *stateData) (*podGroupStateData, error) {
	groupState := cs.PodGroupCycleState()
	if groupState == nil {
		return nil, nil
	}
	data, err := getPodGroupStateData(groupState)
	if errors.Is(err, framework.ErrNotFound) {
		data = &podGroupStateData{podsStateData: map[types.NamespacedName]*stateData{},
			pendingAllocations: map[types.UID]sets.Set[types.UID]{}}
		groupState.Write(stateKey, data)
	} else if err != nil {
		return nil, err
	}
	data.podsStateData[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = s
	return data, nil
}

// podGroupStateOf returns the group's data of the pod-group cycle cs
// belongs to; nil outside one, or when no member's PreFilter ran.
func podGroupStateOf(cs *framework.CycleState) *podGroupStateData {
	groupState := cs.PodGroupCycleState()
	if groupState == nil {
		return nil
	}
	data, err := getPodGroupStateData(groupState)
	if err != nil {
		return nil
	}
	return data
}

// getPodGroupStateData reads what the members' PreFilter recorded in the
// group's cycle state; framework.ErrNotFound when no member got that far.
func getPodGroupStateData(groupState *framework.CycleState) (*podGroupStateData, error) {
	data, err := groupState.Read(stateKey)
	if err != nil {
		return nil, err
	}
	s, ok := data.(*podGroupStateData)
	if !ok {
		return nil, errors.New("state is not podGroupStateData")
	}
	return s, nil
}

// errReasonPodGroupPostFilter is what PodGroupPostFilter says it did,
// whether or not a member had a claim to free: kube-scheduler's words.
const errReasonPodGroupPostFilter = "deallocation and deletion of ResourceClaims completed"

// PodGroupPostFilter does, for each member the cycle tried, what
// PostFilter does for a pod alone (deallocateOrDeletePodClaims): a claim
// one of them holds that kept it off some node may then be allocated
// where the whole group fits. It says so with Unschedulable, so the next
// PodGroupPostFilter plugin (DefaultPreemption) is asked too, and the
// group's message gains "deallocation and deletion of ResourceClaims
// completed".
//
// Its cases, in kube-scheduler's order:
//
//  1. With TopologyAwareWorkloadScheduling, a group with scheduling
//     constraints is left alone: Unschedulable, with no reason.
//  2. If no member was tried (PlacementFeasible stopped the cycle before
//     the first: fewer members queued than minCount needs), no PreFilter
//     recorded anything, and reading the record fails: that Error is
//     kube-scheduler's too, and every member then fails with `error in
//     "DynamicResources" PodGroupPostFilter plugins: not found`.
//  3. Each member in the group's unscheduled pods that PreFilter recorded
//     gets its claims freed; a failed write to the apiserver is an Error.
//
// PodGroup-scoped claims (spec.resourceClaims, DRAWorkloadResourceClaims,
// off in v1.37) are not implemented, so there is nothing to unreserve from
// the group itself.
func (pl *DynamicResources) PodGroupPostFilter(ctx context.Context, cs *framework.CycleState,
	podGroup *framework.PodGroupInfo, _ framework.PodGroupSchedulingFunc) (*framework.PodGroupPostFilterResult, *framework.Status) {
	logger := klog.FromContext(ctx)
	// 1.
	if pl.topologyAwareWorkloadScheduling && podGroup.PodGroup != nil && podGroup.PodGroup.Spec.SchedulingConstraints != nil {
		logger.V(5).Info("DRA PodGroupPostFilter is not supporting topology-aware workloads",
			"podGroup", klog.KRef(podGroup.Namespace, podGroup.Name))
		return nil, framework.NewStatus(framework.Unschedulable)
	}
	// 2.
	data, err := getPodGroupStateData(cs)
	if err != nil {
		return nil, statusError(logger, err)
	}
	// 3.
	for _, pod := range podGroup.UnscheduledPods {
		state := data.podsStateData[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}]
		if state == nil {
			continue
		}
		if status := pl.deallocateOrDeletePodClaims(ctx, pod, state); status.IsError() {
			return nil, status
		}
	}
	return nil, framework.NewStatus(framework.Unschedulable, errReasonPodGroupPostFilter)
}
