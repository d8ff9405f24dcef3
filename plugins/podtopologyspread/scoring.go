// This file is PodTopologySpread's scoring for ScheduleAnyway constraints:
// PreScore counts matching pods per domain over all nodes, Score gives each
// feasible node the weighted count of its domains (more pods, higher raw
// score), and NormalizeScore reverses that so the emptiest node gets 100.

package podtopologyspread

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// preScoreStateKey is where PreScore leaves the counts for Score.
const preScoreStateKey framework.StateKey = "PreScore" + Name

// invalidScore marks ignored nodes inside NormalizeScore; real raw scores
// are never negative.
const invalidScore = -1

// preScoreState is what Score and NormalizeScore need, per ScheduleAnyway
// constraint (slices are indexed like Constraints).
type preScoreState struct {
	Constraints []constraint
	// IgnoredNodes are feasible nodes lacking a required topology key: they
	// score 0.
	IgnoredNodes sets.Set[string]
	// TopologyValueToPodCounts counts matching pods per domain, for the
	// domains of feasible nodes only. Hostname constraints are counted per
	// node in Score instead and have no entries.
	TopologyValueToPodCounts []map[string]int64
	// TopologyNormalizingWeight is log(domains + 2) per constraint, so that a
	// topology with few domains (zones) weighs less per pod than one with
	// many (nodes).
	TopologyNormalizingWeight []float64
}

// Clone returns the state itself: nothing changes it after PreScore.
func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore counts matching pods per domain for the pod's ScheduleAnyway
// constraints (or the default ones). It returns Skip when there are none,
// or when the snapshot has no nodes.
//
// Only with the system default constraints may a node lack a topology key
// and still be scored (a cluster without zone labels still spreads over
// hostnames); otherwise feasible nodes lacking a key are ignored.
func (pl *PodTopologySpread) PreScore(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	filteredNodes []*framework.NodeInfo) *framework.Status {
	allNodes, err := pl.sharedLister.NodeInfos().List()
	if err != nil {
		return framework.AsStatus(fmt.Errorf("getting all nodes: %w", err))
	}
	if len(allNodes) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	requireAllTopologies := len(pod.Spec.TopologySpreadConstraints) > 0 || !pl.systemDefaulted
	s, err := pl.initPreScoreState(pod, filteredNodes, requireAllTopologies)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("calculating preScoreState: %w", err))
	}
	if len(s.Constraints) == 0 {
		return framework.NewStatus(framework.Skip)
	}

	logger := klog.FromContext(ctx)
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	perNode := newPerNodeCounts(len(allNodes), len(s.Constraints))
	pl.parallelizer.Until(ctx, len(allNodes), func(n int) {
		node := allNodes[n].Node()
		if node == nil || (requireAllTopologies && !nodeHasAllTopologyKeys(node.Labels, s.Constraints)) {
			return
		}
		for i := range s.Constraints {
			c := &s.Constraints[i]
			if !c.includesNode(logger, pod, node, affinity) {
				continue
			}
			v := node.Labels[c.TopologyKey]
			// Only domains of feasible nodes are scored; hostname
			// constraints have none here (Score counts them per node).
			if _, ok := s.TopologyValueToPodCounts[i][v]; !ok {
				continue
			}
			perNode.set(n, i, v, countMatchingPods(allNodes[n].Pods, c.Selector, pod.Namespace))
		}
	})
	perNode.forEach(func(i int, dc domainCount) { s.TopologyValueToPodCounts[i][dc.value] += int64(dc.count) })
	state.Write(preScoreStateKey, s)
	return nil
}

// initPreScoreState parses the constraints, records the domains of the
// feasible nodes (with zero counts) and the ignored nodes, and computes
// each constraint's normalizing weight from its number of domains (for
// hostname, the number of feasible nodes not ignored).
func (pl *PodTopologySpread) initPreScoreState(pod *v1.Pod, filteredNodes []*framework.NodeInfo,
	requireAllTopologies bool) (*preScoreState, error) {
	cs, err := pl.constraintsOf(pod, v1.ScheduleAnyway)
	if err != nil {
		return nil, err
	}
	s := &preScoreState{Constraints: cs, IgnoredNodes: sets.New[string]()}
	if len(cs) == 0 {
		return s, nil
	}
	s.TopologyValueToPodCounts = make([]map[string]int64, len(cs))
	for i := range cs {
		s.TopologyValueToPodCounts[i] = map[string]int64{}
	}
	for _, ni := range filteredNodes {
		node := ni.Node()
		if requireAllTopologies && !nodeHasAllTopologyKeys(node.Labels, cs) {
			s.IgnoredNodes.Insert(node.Name)
			continue
		}
		for i := range cs {
			if cs[i].TopologyKey == v1.LabelHostname {
				continue
			}
			// A node lacking the key (allowed with system defaults) joins
			// the domain "".
			s.TopologyValueToPodCounts[i][node.Labels[cs[i].TopologyKey]] += 0
		}
	}
	s.TopologyNormalizingWeight = make([]float64, len(cs))
	for i := range cs {
		size := len(s.TopologyValueToPodCounts[i])
		if cs[i].TopologyKey == v1.LabelHostname {
			size = len(filteredNodes) - s.IgnoredNodes.Len()
		}
		s.TopologyNormalizingWeight[i] = topologyNormalizingWeight(size)
	}
	return s, nil
}

// Score sums, over the constraints whose topology key the node has,
//
//	matching pods in the node's domain × log(domains + 2) + (maxSkew - 1)
//
// and rounds it. The more matching pods around, the higher this raw score;
// NormalizeScore turns it around. Ignored nodes score 0.
func (pl *PodTopologySpread) Score(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	node := nodeInfo.Node()
	if node == nil {
		return 0, framework.AsStatus(fmt.Errorf("node not found"))
	}
	s, err := getPreScoreState(state)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	if s.IgnoredNodes.Has(node.Name) {
		return 0, nil
	}
	var score float64
	for i := range s.Constraints {
		c := &s.Constraints[i]
		tpVal, ok := node.Labels[c.TopologyKey]
		if !ok {
			continue
		}
		var count int64
		if c.TopologyKey == v1.LabelHostname {
			count = int64(countMatchingPods(nodeInfo.Pods, c.Selector, pod.Namespace))
		} else {
			count = s.TopologyValueToPodCounts[i][tpVal]
		}
		score += scoreForCount(count, c.MaxSkew, s.TopologyNormalizingWeight[i])
	}
	if logger := klog.FromContext(ctx).V(5); logger.Enabled() {
		logger.Info("Scored node by topology spread", "pod", klog.KObj(pod), "node", klog.KObj(node), "rawScore", score)
	}
	return int64(math.Round(score)), nil
}

// NormalizeScore maps raw scores to [0, 100], reversed so that fewer
// matching pods score higher:
//
//	score = 100 × (max + min - raw) / max   (integer division)
//
// with min and max over the nodes not ignored. Every node scores 100 when
// max is 0; ignored nodes score 0.
func (pl *PodTopologySpread) NormalizeScore(_ context.Context, state *framework.CycleState, _ *v1.Pod,
	scores framework.NodeScoreList) *framework.Status {
	s, err := getPreScoreState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	if s == nil {
		return nil
	}
	var minScore int64 = math.MaxInt64
	var maxScore int64
	for i := range scores {
		if s.IgnoredNodes.Has(scores[i].Name) {
			scores[i].Score = invalidScore
			continue
		}
		minScore = min(minScore, scores[i].Score)
		maxScore = max(maxScore, scores[i].Score)
	}
	for i := range scores {
		switch {
		case scores[i].Score == invalidScore:
			scores[i].Score = 0
		case maxScore == 0:
			scores[i].Score = framework.MaxNodeScore
		default:
			scores[i].Score = framework.MaxNodeScore * (maxScore + minScore - scores[i].Score) / maxScore
		}
	}
	return nil
}

// ScoreExtensions returns the plugin itself, for NormalizeScore.
func (pl *PodTopologySpread) ScoreExtensions() framework.ScoreExtensions { return pl }

func getPreScoreState(state *framework.CycleState) (*preScoreState, error) {
	c, err := state.Read(preScoreStateKey)
	if err != nil {
		return nil, fmt.Errorf("error reading %q from cycleState: %w", preScoreStateKey, err)
	}
	s, ok := c.(*preScoreState)
	if !ok {
		return nil, fmt.Errorf("%+v  convert to podtopologyspread.preScoreState error", c)
	}
	return s, nil
}

// topologyNormalizingWeight is log(size + 2) for a topology with size
// domains: at least log 2 even with no domains, about 8.52 for 5000 nodes.
func topologyNormalizingWeight(size int) float64 {
	return math.Log(float64(size + 2))
}

// scoreForCount is one constraint's raw score for a domain holding count
// matching pods. Adding maxSkew - 1 waters down the differences between
// domains: the larger the tolerated skew, the flatter the scores.
func scoreForCount(count int64, maxSkew int32, weight float64) float64 {
	return float64(count)*weight + float64(maxSkew-1)
}
