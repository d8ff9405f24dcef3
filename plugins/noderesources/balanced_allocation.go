// This file is NodeResourcesBalancedAllocation, the Score plugin that favours
// nodes whose resources would be used evenly (cpu as full as memory), and
// more so when the pod makes a node more even than it was, as
// kube-scheduler's does.

package noderesources

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

const (
	// BalancedAllocationName is the plugin's name in the registry and in
	// configurations.
	BalancedAllocationName = "NodeResourcesBalancedAllocation"

	// balancedAllocationPreScoreStateKey is where PreScore leaves the pod's
	// requests for Score.
	balancedAllocationPreScoreStateKey framework.StateKey = "PreScore" + BalancedAllocationName
)

// BalancedAllocation scores nodes by how evenly the scored resources (cpu
// and memory unless configured) would be used with the pod on them. It never
// rejects a node, so it registers no events.
type BalancedAllocation struct {
	resourceAllocationScorer
}

var (
	_ framework.PreScorePlugin = &BalancedAllocation{}
	_ framework.ScorePlugin    = &BalancedAllocation{}
	_ framework.SignPlugin     = &BalancedAllocation{}
)

// NewBalancedAllocation builds the plugin from its
// NodeResourcesBalancedAllocationArgs (see DecodeBalancedAllocationArgs). h
// may be nil (in tests): the plugin then has no DRA manager.
//
// Its DRA counter has a CEL cache of its own. kube-scheduler builds its
// BalancedAllocation without one (a nil cache), so it panics on the first
// DeviceClass CEL selector it has to evaluate (only possible with a
// DRA-backed extended resource among its configured resources); minisched
// evaluates the selector, as NodeResourcesFit does.
func NewBalancedAllocation(_ context.Context, rawArgs *runtime.RawExtension,
	h framework.Handle) (framework.Plugin, error) {
	args, err := DecodeBalancedAllocationArgs(rawArgs)
	if err != nil {
		return nil, err
	}
	return &BalancedAllocation{resourceAllocationScorer: resourceAllocationScorer{
		name:      BalancedAllocationName,
		resources: args.Resources,
		// Balance is about what pods really ask for: no non-zero defaults,
		// for the pod or for the node.
		useRequested: true,
		scorer:       balancedResourceScorer,
		dra:          newDRAScorer(sharedDRAManager(h)),
	}}, nil
}

// Name returns BalancedAllocationName.
func (ba *BalancedAllocation) Name() string { return BalancedAllocationName }

// SignPod signs the pod's effective requests (PodRequests), the fragment
// NodeResourcesFit gives too: PreScore and Score read nothing else of the
// pod, only those requests for the scored resources. See signResources for
// the pods it refuses.
func (ba *BalancedAllocation) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	return signResources(pod, ba.dra.manager())
}

// balancedAllocationPreScoreState holds the pod's request for each scored
// resource, in the order of the configured resources, and what counting
// DRA-backed extended resources needs (nil when no scored resource is
// backed by a DeviceClass).
type balancedAllocationPreScoreState struct {
	podRequests []int64
	// draPreScoreState is shared by clones: nothing writes to it.
	*draPreScoreState
}

// Clone returns a copy.
func (s *balancedAllocationPreScoreState) Clone() framework.StateData {
	return &balancedAllocationPreScoreState{podRequests: append([]int64(nil), s.podRequests...),
		draPreScoreState: s.draPreScoreState}
}

// PreScore computes the pod's requests for the scored resources. A pod that
// requests none of them (best-effort) is not scored (Skip): it changes no
// node's balance, and rating it by the balance nodes already have piled such
// pods onto the same few nodes (kubernetes/kubernetes#129138).
func (ba *BalancedAllocation) PreScore(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	_ []*framework.NodeInfo) *framework.Status {
	podRequests := ba.podRequests(state, pod)
	if isBestEffort(podRequests) {
		klog.FromContext(ctx).V(5).Info("Skipping balanced-allocation scoring of a best-effort pod", "pod", klog.KObj(pod))
		return framework.NewStatus(framework.Skip)
	}
	draState, status := ba.dra.getDRAPreScoredParams(ba.resources)
	if status != nil {
		return status
	}
	state.Write(balancedAllocationPreScoreStateKey,
		&balancedAllocationPreScoreState{podRequests: podRequests, draPreScoreState: draState})
	return nil
}

// Score rates the node by the balance of its resource use with the pod and
// its change from before (see balancedResourceScorer). Without PreScore's
// state, the pod's requests are computed here, and a best-effort pod scores 0.
func (ba *BalancedAllocation) Score(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	var s *balancedAllocationPreScoreState
	if data, err := state.Read(balancedAllocationPreScoreStateKey); err == nil {
		var ok bool
		if s, ok = data.(*balancedAllocationPreScoreState); !ok {
			return 0, framework.AsStatus(fmt.Errorf("invalid PreScore state, got type %T", data))
		}
	} else {
		s = &balancedAllocationPreScoreState{podRequests: ba.podRequests(state, pod)}
		if isBestEffort(s.podRequests) {
			return 0, nil
		}
		var status *framework.Status
		if s.draPreScoreState, status = ba.dra.getDRAPreScoredParams(ba.resources); status != nil {
			return 0, status
		}
	}
	return ba.score(ctx, pod, nodeInfo, s.podRequests, s.draPreScoreState)
}

// ScoreExtensions returns nil: scores are already 0-100.
func (ba *BalancedAllocation) ScoreExtensions() framework.ScoreExtensions { return nil }

// balancedResourceScorer combines the node's balance with the pod (b1) and
// without it (b0), both in [50, 100] (see balancedResourceScore), as
// 50 + (50 + b1 − b0) / 2. An unchanged balance scores 75; a pod that evens
// the node out scores towards 100, one that unbalances it towards 50.
func balancedResourceScorer(requested, allocated, allocatable []int64) int64 {
	withPod := balancedResourceScore(requested, allocatable)
	withoutPod := balancedResourceScore(allocated, allocatable)
	return framework.MaxNodeScore/2 + (framework.MaxNodeScore/2+withPod-withoutPod)/2
}

// balancedResourceScore is (1 − std) × 100, truncated, where std is the
// population standard deviation of the used fractions (use / allocatable,
// capped at 1) of the resources that count. For two resources that is
// |f1 − f2| / 2; for one or none it is 0.
func balancedResourceScore(used, allocatable []int64) int64 {
	var fractions []float64
	var total float64
	for i := range used {
		if allocatable[i] == 0 {
			continue
		}
		f := math.Min(float64(used[i])/float64(allocatable[i]), 1)
		fractions = append(fractions, f)
		total += f
	}
	var std float64
	switch n := len(fractions); {
	case n == 2:
		std = math.Abs(fractions[0]-fractions[1]) / 2
	case n > 2:
		mean := total / float64(n)
		var sum float64
		for _, f := range fractions {
			sum += (f - mean) * (f - mean)
		}
		std = math.Sqrt(sum / float64(n))
	}
	return int64((1 - std) * float64(framework.MaxNodeScore))
}
