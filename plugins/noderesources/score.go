// This file is NodeResourcesFit's scoring: PreScore computes the pod's
// requests for the scored resources once, Score rates each node with the
// configured strategy. minisched implements kube-scheduler's default,
// LeastAllocated: the emptier the node, the higher the score.
package noderesources

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// preScoreStateKey is where PreScore leaves the pod's requests for Score.
const preScoreStateKey framework.StateKey = "PreScore" + Name

var (
	_ framework.PreScorePlugin = &Fit{}
	_ framework.ScorePlugin    = &Fit{}
)

// preScoreState holds the pod's request for each scored resource, in the
// order of the strategy's resources.
type preScoreState struct {
	podRequests []int64
}

// Clone returns a copy.
func (s *preScoreState) Clone() framework.StateData {
	return &preScoreState{podRequests: append([]int64(nil), s.podRequests...)}
}

// PreScore computes the pod's requests for the scored resources.
func (pl *Fit) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	state.Write(preScoreStateKey, &preScoreState{podRequests: pl.podRequests(pod)})
	return nil
}

// podRequests returns the pod's request for each scored resource. Like
// kube-scheduler, scoring counts a container without cpu or memory requests
// as asking for 100m and 200Mi, so best-effort pods still spread.
func (pl *Fit) podRequests(pod *v1.Pod) []int64 {
	opts := resourcehelper.PodResourcesOptions{
		UseStatusResources: true,
		InPlacePodLevelResourcesVerticalScalingEnabled: true,
		NonMissingContainerRequests: v1.ResourceList{
			v1.ResourceCPU:    *resource.NewMilliQuantity(framework.DefaultMilliCPURequest, resource.DecimalSI),
			v1.ResourceMemory: *resource.NewQuantity(framework.DefaultMemoryRequest, resource.DecimalSI),
		},
	}
	reqs := resourcehelper.PodRequests(pod, opts)
	out := make([]int64, len(pl.scoringStrategy.Resources))
	for i, r := range pl.scoringStrategy.Resources {
		q := reqs[v1.ResourceName(r.Name)]
		if r.Name == string(v1.ResourceCPU) {
			out[i] = q.MilliValue()
		} else {
			out[i] = q.Value()
		}
	}
	return out
}

// Score rates the node by what would be left of each scored resource after
// the pod lands, weighted: Σ weight × (allocatable − requested) × 100 /
// allocatable, divided by the sum of weights. cpu and memory count the
// node's non-zero requests; an extended resource the pod does not request,
// or the node does not have, is left out.
func (pl *Fit) Score(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	var podRequests []int64
	if data, err := state.Read(preScoreStateKey); err == nil {
		s, ok := data.(*preScoreState)
		if !ok {
			return 0, framework.AsStatus(fmt.Errorf("%+v convert to NodeResourcesFit.preScoreState error", data))
		}
		podRequests = s.podRequests
	} else {
		podRequests = pl.podRequests(pod)
	}
	var nodeScore, weightSum int64
	for i, r := range pl.scoringStrategy.Resources {
		name := v1.ResourceName(r.Name)
		if podRequests[i] == 0 && framework.IsScalarResourceName(name) {
			continue
		}
		allocatable, allocated := allocatableAndRequested(nodeInfo, name)
		if allocatable == 0 {
			continue
		}
		nodeScore += leastRequestedScore(allocated+podRequests[i], allocatable) * r.Weight
		weightSum += r.Weight
	}
	if weightSum == 0 {
		return 0, nil
	}
	score := nodeScore / weightSum
	if logger := klog.FromContext(ctx).V(10); logger.Enabled() {
		logger.Info("NodeResourcesFit score", "pod", klog.KObj(pod), "node", klog.KObj(nodeInfo.Node()), "score", score)
	}
	return score, nil
}

// ScoreExtensions returns nil: LeastAllocated scores are already 0-100.
func (pl *Fit) ScoreExtensions() framework.ScoreExtensions { return nil }

// allocatableAndRequested returns the node's allocatable and what its pods
// request of one resource (non-zero requests for cpu and memory).
func allocatableAndRequested(ni *framework.NodeInfo, name v1.ResourceName) (int64, int64) {
	switch name {
	case v1.ResourceCPU:
		return ni.Allocatable.MilliCPU, ni.NonZeroRequested.MilliCPU
	case v1.ResourceMemory:
		return ni.Allocatable.Memory, ni.NonZeroRequested.Memory
	case v1.ResourceEphemeralStorage:
		return ni.Allocatable.EphemeralStorage, ni.Requested.EphemeralStorage
	}
	if alloc, ok := ni.Allocatable.ScalarResources[name]; ok {
		return alloc, ni.Requested.ScalarResources[name]
	}
	return 0, 0
}

// leastRequestedScore is the unused share of capacity on a 0-100 scale; a
// node that would be overcommitted scores 0.
func leastRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * framework.MaxNodeScore / capacity
}
