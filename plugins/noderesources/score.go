// This file is NodeResourcesFit's scoring: PreScore computes the pod's
// requests for the scored resources once (and, for resources backed by
// DeviceClasses, gathers the devices; see dra.go), Score rates each node
// with the configured strategy (LeastAllocated, MostAllocated or
// RequestedToCapacityRatio; see their files).

package noderesources

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// preScoreStateKey is where PreScore leaves the pod's requests for Score.
const preScoreStateKey framework.StateKey = "PreScore" + Name

var (
	_ framework.PreScorePlugin = &Fit{}
	_ framework.ScorePlugin    = &Fit{}
)

// newFitScorer returns the scorer for a validated strategy. Fit scores with
// non-zero requests: a container without cpu or memory requests counts as
// asking for 100m and 200Mi, so best-effort pods still spread (or pack).
func newFitScorer(strategy *configv1.ScoringStrategy) (*resourceAllocationScorer, error) {
	s := &resourceAllocationScorer{name: string(strategy.Type), resources: strategy.Resources}
	switch strategy.Type {
	case configv1.LeastAllocated:
		s.scorer = leastAllocatedScorer(strategy.Resources)
	case configv1.MostAllocated:
		s.scorer = mostAllocatedScorer(strategy.Resources)
	case configv1.RequestedToCapacityRatio:
		s.scorer = requestedToCapacityRatioScorer(strategy.Resources, strategy.RequestedToCapacityRatio.Shape)
	default:
		return nil, fmt.Errorf("scoring strategy %s is not supported", strategy.Type)
	}
	return s, nil
}

// preScoreState holds the pod's request for each scored resource, in the
// order of the strategy's resources, and what counting DRA-backed extended
// resources needs (nil when no scored resource is backed by a DeviceClass).
type preScoreState struct {
	podRequests []int64
	// draPreScoreState is shared by clones: nothing writes to it.
	*draPreScoreState
}

// Clone returns a copy.
func (s *preScoreState) Clone() framework.StateData {
	return &preScoreState{podRequests: append([]int64(nil), s.podRequests...), draPreScoreState: s.draPreScoreState}
}

// PreScore computes the pod's requests for the scored resources and, when
// a scored resource is backed by a DeviceClass, gathers the slices and
// allocated devices once for every node's Score.
func (pl *Fit) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod,
	_ []*framework.NodeInfo) *framework.Status {
	s, status := pl.computePreScoreState(state, pod)
	if status != nil {
		return status
	}
	state.Write(preScoreStateKey, s)
	return nil
}

// computePreScoreState is PreScore's state for pod.
func (pl *Fit) computePreScoreState(state *framework.CycleState, pod *v1.Pod) (*preScoreState, *framework.Status) {
	draState, status := pl.scorer.dra.getDRAPreScoredParams(pl.scorer.resources)
	if status != nil {
		return nil, status
	}
	return &preScoreState{podRequests: pl.scorer.podRequests(state, pod), draPreScoreState: draState}, nil
}

// Score rates the node with the configured strategy. A scalar resource the
// pod does not request, or a resource the node does not have, is left out.
// Without PreScore's state, it is computed here.
func (pl *Fit) Score(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	var s *preScoreState
	if data, err := state.Read(preScoreStateKey); err == nil {
		var ok bool
		if s, ok = data.(*preScoreState); !ok {
			return 0, framework.AsStatus(fmt.Errorf("%+v convert to NodeResourcesFit.preScoreState error", data))
		}
	} else {
		var status *framework.Status
		if s, status = pl.computePreScoreState(state, pod); status != nil {
			return 0, status
		}
	}
	return pl.scorer.score(ctx, pod, nodeInfo, s.podRequests, s.draPreScoreState)
}

// ScoreExtensions returns nil: every strategy's scores are already 0-100.
func (pl *Fit) ScoreExtensions() framework.ScoreExtensions { return nil }
