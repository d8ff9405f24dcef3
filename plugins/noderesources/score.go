// This file is NodeResourcesFit's scoring: PreScore computes the pod's
// requests for the scored resources once, Score rates each node with the
// configured strategy (LeastAllocated, MostAllocated or
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
// order of the strategy's resources.
type preScoreState struct {
	podRequests []int64
}

// Clone returns a copy.
func (s *preScoreState) Clone() framework.StateData {
	return &preScoreState{podRequests: append([]int64(nil), s.podRequests...)}
}

// PreScore computes the pod's requests for the scored resources.
func (pl *Fit) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod,
	_ []*framework.NodeInfo) *framework.Status {
	state.Write(preScoreStateKey, &preScoreState{podRequests: pl.scorer.podRequests(pod)})
	return nil
}

// Score rates the node with the configured strategy. A scalar resource the
// pod does not request, or a resource the node does not have, is left out.
// Without PreScore's state, the pod's requests are computed here.
func (pl *Fit) Score(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	var podRequests []int64
	if data, err := state.Read(preScoreStateKey); err == nil {
		s, ok := data.(*preScoreState)
		if !ok {
			return 0, framework.AsStatus(fmt.Errorf("%+v convert to NodeResourcesFit.preScoreState error", data))
		}
		podRequests = s.podRequests
	} else {
		podRequests = pl.scorer.podRequests(pod)
	}
	return pl.scorer.score(ctx, pod, nodeInfo, podRequests)
}

// ScoreExtensions returns nil: every strategy's scores are already 0-100.
func (pl *Fit) ScoreExtensions() framework.ScoreExtensions { return nil }
