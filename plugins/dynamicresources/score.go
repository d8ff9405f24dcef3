// Score: among nodes where the claims fit, prefer those where they fit
// with earlier firstAvailable alternatives (the user's preference order).

package dynamicresources

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// Score adds, for every firstAvailable request of every claim, 8 − i when
// the allocation on this node chose alternative i (8 is the most
// alternatives a request may list). An allocated claim counts with its
// allocation; a node Filter kept no allocation for scores 0.
func (pl *DynamicResources) Score(ctx context.Context, cs *framework.CycleState, _ *v1.Pod,
	nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	state, err := getStateData(cs)
	if err != nil {
		return 0, statusError(klog.FromContext(ctx), err)
	}
	if len(state.claims) == 0 {
		return 0, nil
	}
	allocations, found := state.nodeAllocations[nodeInfo.Node().Name]
	if !found {
		return 0, nil
	}
	score, err := computeScore(state.claims, allocations.allocationResults)
	if err != nil {
		return 0, statusError(klog.FromContext(ctx), err)
	}
	return score, nil
}

// computeScore scores claims given the allocations of the unallocated
// ones, in order.
func computeScore(claims []*resourceapi.ResourceClaim, allocations []resourceapi.AllocationResult) (int64, error) {
	var score int64
	next := 0
	for _, claim := range claims {
		allocation := claim.Status.Allocation
		if allocation == nil {
			if next >= len(allocations) {
				return 0, fmt.Errorf("number of allocations %d is smaller than number of claims needing allocation", len(allocations))
			}
			allocation = &allocations[next]
			next++
		}
		chosen := sets.New[string]()
		for _, result := range allocation.Devices.Results {
			if resourceclaim.IsSubRequestRef(result.Request) {
				chosen.Insert(result.Request)
			}
		}
		for _, request := range claim.Spec.Devices.Requests {
			for i, sub := range request.FirstAvailable {
				if chosen.Has(resourceclaim.CreateSubRequestRef(request.Name, sub.Name)) {
					score += int64(resourceapi.FirstAvailableDeviceRequestMaxSize - i)
				}
			}
		}
	}
	return score, nil
}

// ScoreExtensions returns the plugin: it normalizes its scores.
func (pl *DynamicResources) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore scales scores to [0, 100] by the highest.
func (pl *DynamicResources) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod,
	scores framework.NodeScoreList) *framework.Status {
	framework.DefaultNormalizeScore(framework.MaxNodeScore, false, scores)
	return nil
}
