// This file is PodTopologySpread's filtering: PreFilter counts, for every
// DoNotSchedule constraint, the matching pods in each topology domain and
// remembers the emptiest domains; Filter rejects a node whose domain would
// then exceed maxSkew; AddPod and RemovePod keep the counts right when
// preemption asks "what if".

package podtopologyspread

import (
	"context"
	"fmt"
	"maps"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// preFilterStateKey is where PreFilter leaves the counts for Filter.
const preFilterStateKey framework.StateKey = "PreFilter" + Name

// preFilterState is what Filter needs, per DoNotSchedule constraint (all
// slices are indexed like Constraints).
type preFilterState struct {
	Constraints []constraint
	// CriticalPaths holds the two emptiest domains of each constraint;
	// CriticalPaths[i][0] has the fewest matching pods (the global minimum).
	CriticalPaths []*criticalPaths
	// TpValueToMatchNum counts the matching pods in each eligible domain
	// (topology value), including domains with none.
	TpValueToMatchNum []map[string]int
}

// Clone copies the counts; the parsed constraints never change and are
// shared.
func (s *preFilterState) Clone() framework.StateData {
	if s == nil {
		return nil
	}
	c := &preFilterState{
		Constraints:       s.Constraints,
		CriticalPaths:     make([]*criticalPaths, len(s.CriticalPaths)),
		TpValueToMatchNum: make([]map[string]int, len(s.TpValueToMatchNum)),
	}
	for i, p := range s.CriticalPaths {
		cp := *p
		c.CriticalPaths[i] = &cp
	}
	for i, m := range s.TpValueToMatchNum {
		c.TpValueToMatchNum[i] = maps.Clone(m)
	}
	return c
}

// minMatchNum is the global minimum the skew of constraint i is measured
// against: the count of its emptiest domain, or 0 while there are fewer
// eligible domains than minDomains (the missing domains count as empty).
func (s *preFilterState) minMatchNum(i int, minDomains int32) int {
	if len(s.TpValueToMatchNum[i]) < int(minDomains) {
		return 0
	}
	return s.CriticalPaths[i][0].MatchNum
}

// criticalPath is one domain and its number of matching pods.
type criticalPath struct {
	TopologyValue string
	MatchNum      int
}

// criticalPaths keeps the two domains with the fewest matching pods: [0]
// always has the minimum, [1] at least as many (not necessarily the second
// smallest after updates). Two are enough because preemption only ever
// removes pods from one node, so at most one domain shrinks per what-if.
type criticalPaths [2]criticalPath

func newCriticalPaths() *criticalPaths {
	return &criticalPaths{{MatchNum: math.MaxInt32}, {MatchNum: math.MaxInt32}}
}

// update records that domain tpVal now has num matching pods.
func (p *criticalPaths) update(tpVal string, num int) {
	switch tpVal {
	case p[0].TopologyValue:
		p[0].MatchNum = num
	case p[1].TopologyValue:
		p[1].MatchNum = num
	default:
		// A domain not tracked: it enters if it is among the two smallest.
		if num < p[0].MatchNum {
			p[1] = p[0]
			p[0] = criticalPath{TopologyValue: tpVal, MatchNum: num}
		} else if num < p[1].MatchNum {
			p[1] = criticalPath{TopologyValue: tpVal, MatchNum: num}
		}
		return
	}
	if p[0].MatchNum > p[1].MatchNum {
		p[0], p[1] = p[1], p[0]
	}
}

// PreFilter counts matching pods per domain for the pod's DoNotSchedule
// constraints (or the default ones). It returns Skip when there are none.
func (pl *PodTopologySpread) PreFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	nodes []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	s, err := pl.calPreFilterState(ctx, pod, nodes)
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	if len(s.Constraints) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterStateKey, s)
	return nil, nil
}

// PreFilterExtensions returns the plugin itself: its counts depend on the
// pods of each node.
func (pl *PodTopologySpread) PreFilterExtensions() framework.PreFilterExtensions { return pl }

// AddPod counts podInfoToAdd as if it ran on nodeInfo's node.
func (pl *PodTopologySpread) AddPod(ctx context.Context, state *framework.CycleState, podToSchedule *v1.Pod,
	podInfoToAdd *framework.PodInfo, nodeInfo *framework.NodeInfo) *framework.Status {
	s, err := getPreFilterState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.updateWithPod(klog.FromContext(ctx), podInfoToAdd.Pod, podToSchedule, nodeInfo.Node(), 1)
	return nil
}

// RemovePod stops counting podInfoToRemove on nodeInfo's node.
func (pl *PodTopologySpread) RemovePod(ctx context.Context, state *framework.CycleState, podToSchedule *v1.Pod,
	podInfoToRemove *framework.PodInfo, nodeInfo *framework.NodeInfo) *framework.Status {
	s, err := getPreFilterState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.updateWithPod(klog.FromContext(ctx), podInfoToRemove.Pod, podToSchedule, nodeInfo.Node(), -1)
	return nil
}

// updateWithPod adds delta to the count of every constraint that selects
// updatedPod, in the domain of node, if the node counts for that
// constraint. Pods of other namespaces, and nodes lacking a topology key,
// change nothing.
func (s *preFilterState) updateWithPod(logger klog.Logger, updatedPod, preemptor *v1.Pod, node *v1.Node, delta int) {
	if s == nil || node == nil || updatedPod.Namespace != preemptor.Namespace {
		return
	}
	if !nodeHasAllTopologyKeys(node.Labels, s.Constraints) {
		return
	}
	affinity := nodeaffinity.GetRequiredNodeAffinity(preemptor)
	podLabels := labels.Set(updatedPod.Labels)
	for i := range s.Constraints {
		c := &s.Constraints[i]
		if !c.Selector.Matches(podLabels) || !c.includesNode(logger, preemptor, node, affinity) {
			continue
		}
		v := node.Labels[c.TopologyKey]
		s.TpValueToMatchNum[i][v] += delta
		s.CriticalPaths[i].update(v, s.TpValueToMatchNum[i][v])
	}
}

func getPreFilterState(state *framework.CycleState) (*preFilterState, error) {
	c, err := state.Read(preFilterStateKey)
	if err != nil {
		return nil, fmt.Errorf("reading %q from cycleState: %w", preFilterStateKey, err)
	}
	s, ok := c.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%+v convert to podtopologyspread.preFilterState error", c)
	}
	return s, nil
}

// domainCount is one node's contribution to one constraint: the node's
// domain and the matching pods on the node. counted is false when the node
// does not count for the constraint.
type domainCount struct {
	value   string
	count   int
	counted bool
}

// perNodeCounts holds a domainCount for every node and constraint, node n's
// for constraint i at n*numConstraints+i: one allocation per cycle rather
// than one per node.
type perNodeCounts struct {
	counts         []domainCount
	numConstraints int
}

func newPerNodeCounts(numNodes, numConstraints int) perNodeCounts {
	return perNodeCounts{counts: make([]domainCount, numNodes*numConstraints), numConstraints: numConstraints}
}

// set records node n's count for constraint i. Each goroutine of the
// parallel count writes only its own nodes' slots.
func (p perNodeCounts) set(n, i int, value string, count int) {
	p.counts[n*p.numConstraints+i] = domainCount{value: value, count: count, counted: true}
}

// forEach calls fn for every recorded count, by node, then by constraint.
func (p perNodeCounts) forEach(fn func(constraint int, dc domainCount)) {
	for j, dc := range p.counts {
		if dc.counted {
			fn(j%p.numConstraints, dc)
		}
	}
}

// calPreFilterState counts, for each DoNotSchedule constraint, the matching
// pods per domain over the nodes that count for it: nodes carrying every
// constraint's topology key and passing the constraint's inclusion
// policies. Every such node's domain is recorded, even with zero pods, so
// the number of domains is known for minDomains.
func (pl *PodTopologySpread) calPreFilterState(ctx context.Context, pod *v1.Pod,
	nodes []*framework.NodeInfo) (*preFilterState, error) {
	cs, err := pl.constraintsOf(pod, v1.DoNotSchedule)
	if err != nil {
		return nil, fmt.Errorf("get constraints from pod: %w", err)
	}
	if len(cs) == 0 {
		return &preFilterState{}, nil
	}
	logger := klog.FromContext(ctx)
	s := &preFilterState{
		Constraints:       cs,
		CriticalPaths:     make([]*criticalPaths, len(cs)),
		TpValueToMatchNum: make([]map[string]int, len(cs)),
	}
	for i := range cs {
		size := 0
		if cs[i].TopologyKey == v1.LabelHostname {
			size = len(nodes) // one domain per node
		}
		s.TpValueToMatchNum[i] = make(map[string]int, size)
	}

	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	perNode := newPerNodeCounts(len(nodes), len(cs))
	pl.parallelizer.Until(ctx, len(nodes), func(n int) {
		node := nodes[n].Node()
		if node == nil || !nodeHasAllTopologyKeys(node.Labels, cs) {
			return
		}
		for i := range cs {
			c := &cs[i]
			if !c.includesNode(logger, pod, node, affinity) {
				continue
			}
			perNode.set(n, i, node.Labels[c.TopologyKey], countMatchingPods(nodes[n].Pods, c.Selector, pod.Namespace))
		}
	})
	perNode.forEach(func(i int, dc domainCount) { s.TpValueToMatchNum[i][dc.value] += dc.count })
	for i := range cs {
		s.CriticalPaths[i] = newCriticalPaths()
		for v, num := range s.TpValueToMatchNum[i] {
			s.CriticalPaths[i].update(v, num)
		}
	}
	return s, nil
}

// Filter checks every DoNotSchedule constraint on the node:
//
//	matching pods in the node's domain + (1 if the pod matches itself) - global minimum <= maxSkew
//
// A node without a constraint's topology key is UnschedulableAndUnresolvable
// (no eviction adds a label); a skew violation is Unschedulable (evicting
// matching pods may fix it).
func (pl *PodTopologySpread) Filter(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if node == nil {
		return framework.AsStatus(fmt.Errorf("node not found"))
	}
	s, err := getPreFilterState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	// An empty state is legitimate: no constraints, every node fits.
	if len(s.Constraints) == 0 {
		return nil
	}

	logger := klog.FromContext(ctx)
	podLabels := labels.Set(pod.Labels)
	for i := range s.Constraints {
		c := &s.Constraints[i]
		tpVal, ok := node.Labels[c.TopologyKey]
		if !ok {
			logger.V(5).Info("Node doesn't have required topology label for spread constraint",
				"pod", klog.KObj(pod), "node", klog.KObj(node), "topologyKey", c.TopologyKey)
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch)
		}
		selfMatch := 0
		if c.Selector.Matches(podLabels) {
			selfMatch = 1
		}
		minMatch := s.minMatchNum(i, c.MinDomains)
		matchNum := s.TpValueToMatchNum[i][tpVal]
		if skew := matchNum + selfMatch - minMatch; skew > int(c.MaxSkew) {
			logger.V(5).Info("Node failed spreadConstraint: matchNum + selfMatchNum - minMatchNum > maxSkew",
				"pod", klog.KObj(pod), "node", klog.KObj(node),
				"topologyKey", c.TopologyKey, "matchNum", matchNum, "selfMatchNum", selfMatch,
				"minMatchNum", minMatch, "maxSkew", c.MaxSkew)
			return framework.NewStatus(framework.Unschedulable, ErrReasonConstraintsNotMatch)
		}
	}
	return nil
}
