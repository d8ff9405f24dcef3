// PodGroupPostFilter (chapter 19, GenericWorkload): a pod group fits
// nowhere; free, for each member, what PostFilter would have freed for it
// alone, from what each member's PreFilter recorded in the group's cycle
// state.

package dynamicresources

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// podGroupStateData is what the plugin keeps in a pod group's cycle state
// (CycleState.PodGroupCycleState): each member's stateData, by namespace
// and name, as the member's PreFilter recorded it. The members are tried
// one after the other, so it needs no lock. (kube-scheduler keeps there
// too the claims whose allocation the members share within the cycle;
// minisched does not share pending allocations between members.)
type podGroupStateData struct {
	podsStateData map[types.NamespacedName]*stateData
}

// Clone shares the data: the group's state belongs to one cycle.
func (d *podGroupStateData) Clone() framework.StateData { return d }

// recordInPodGroup keeps the member's stateData in its group's cycle
// state, if the pod is tried in a pod-group cycle; PreFilter calls it
// first thing, so that every member it saw is there.
func recordInPodGroup(cs *framework.CycleState, pod *v1.Pod, s *stateData) error {
	groupState := cs.PodGroupCycleState()
	if groupState == nil {
		return nil
	}
	data, err := getPodGroupStateData(groupState)
	if errors.Is(err, framework.ErrNotFound) {
		data = &podGroupStateData{podsStateData: map[types.NamespacedName]*stateData{}}
		groupState.Write(stateKey, data)
	} else if err != nil {
		return err
	}
	data.podsStateData[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = s
	return nil
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
