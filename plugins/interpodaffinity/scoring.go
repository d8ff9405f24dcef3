// This file is InterPodAffinity's soft half: PreScore sums, per topology
// domain, the weights of every preferred term (and of existing pods' required
// affinity) that pairs the incoming pod with a pod already there; Score adds
// up a node's domains; NormalizeScore maps the result onto 0..100.

package interpodaffinity

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// preScoreStateKey is where PreScore leaves the domain scores for Score.
const preScoreStateKey framework.StateKey = "PreScore" + Name

// scoreMap holds a score per topology domain: key → value → score.
type scoreMap map[string]map[string]int64

// add adds weight×sign to the domain of node for term, if pod matches the
// term (pod's namespace having labels nsLabels) and node has the term's
// topology label. A nil map is allocated on the first score: PreScore keeps
// one map per node, and on most nodes no pair scores.
func (m *scoreMap) add(term *framework.AffinityTerm, weight int32, pod *v1.Pod, nsLabels labels.Set, node *v1.Node,
	sign int32) {
	if !term.Matches(pod, nsLabels) {
		return
	}
	value, ok := node.Labels[term.TopologyKey]
	if !ok {
		return
	}
	if *m == nil {
		*m = scoreMap{}
	}
	if (*m)[term.TopologyKey] == nil {
		(*m)[term.TopologyKey] = map[string]int64{}
	}
	(*m)[term.TopologyKey][value] += int64(weight * sign)
}

// addWeighted calls add for each weighted term.
func (m *scoreMap) addWeighted(terms []framework.WeightedAffinityTerm, pod *v1.Pod, nsLabels labels.Set, node *v1.Node,
	sign int32) {
	for i := range terms {
		m.add(&terms[i].AffinityTerm, terms[i].Weight, pod, nsLabels, node, sign)
	}
}

// merge adds every score of other.
func (m scoreMap) merge(other scoreMap) {
	for key, values := range other {
		if m[key] == nil {
			m[key] = map[string]int64{}
		}
		for value, score := range values {
			m[key][value] += score
		}
	}
}

// preScoreState is what PreScore computes for Score.
type preScoreState struct {
	topologyScore scoreMap
}

// Clone returns the state itself: Score only reads it.
func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore computes a score for every topology domain from each pair of
// the incoming pod and an existing pod:
//
//	+weight for each of the incoming pod's preferred affinity terms the existing pod matches,
//	−weight for each of its preferred anti-affinity terms the existing pod matches,
//	+hardPodAffinityWeight for each required affinity term of the existing pod the incoming pod matches,
//	+weight for each preferred affinity term of the existing pod the incoming pod matches,
//	−weight for each preferred anti-affinity term of the existing pod the incoming pod matches,
//
// each credited to the existing pod's node's domain for the term's key. The
// pods considered are all pods when the incoming pod has preferred terms,
// else only pods with affinity.
//
// It returns Skip when ignorePreferredTermsOfExistingPods is set and the pod
// has no preferred terms, or when no pair scored anywhere.
func (pl *InterPodAffinity) PreScore(ctx context.Context, cycleState *framework.CycleState, pod *v1.Pod,
	_ []*framework.NodeInfo) *framework.Status {
	if pl.sharedLister == nil {
		return framework.NewStatus(framework.Error, "empty shared lister in InterPodAffinity PreScore")
	}
	a := pod.Spec.Affinity
	hasPreferred := a != nil &&
		((a.PodAffinity != nil && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0) ||
			(a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0))
	if pl.ignorePreferredTermsOfExistingPods && !hasPreferred {
		return framework.NewStatus(framework.Skip)
	}

	// Domains are scored over the whole snapshot, not only the feasible
	// nodes: a pod on an infeasible node still attracts to its zone. Without
	// preferred terms of its own, only the terms of existing pods can score
	// it: their required affinity and preferred terms. Upstream visits every
	// pod with any affinity; pods with only required anti-affinity add
	// nothing, and skipping their nodes keeps a cluster of such replicas from
	// costing every cycle a pass over all its nodes.
	var nodes []*framework.NodeInfo
	var err error
	if hasPreferred {
		if nodes, err = pl.sharedLister.NodeInfos().List(); err != nil {
			return framework.AsStatus(fmt.Errorf("failed to get all nodes from shared lister: %w", err))
		}
	} else if nodes, err = pl.sharedLister.NodeInfos().HavePodsWithAffinityScoringTermsList(); err != nil {
		return framework.AsStatus(fmt.Errorf("failed to get pods with affinity list: %w", err))
	}

	// A fresh PodInfo with only the terms (not the requests NewPodInfo
	// computes too): its terms are ours to rewrite below.
	podInfo := &framework.PodInfo{Pod: pod, PodAffinityTerms: framework.ParsePodAffinityTerms(pod)}
	if podInfo.AffinityParseError != nil {
		return framework.AsStatus(fmt.Errorf("failed to parse pod: %w", affinityParseError(pod)))
	}
	for i := range podInfo.PreferredAffinityTerms {
		if err := pl.mergeTermNamespaces(&podInfo.PreferredAffinityTerms[i].AffinityTerm); err != nil {
			return framework.AsStatus(fmt.Errorf("updating PreferredAffinityTerms: %w", err))
		}
	}
	for i := range podInfo.PreferredAntiAffinityTerms {
		if err := pl.mergeTermNamespaces(&podInfo.PreferredAntiAffinityTerms[i].AffinityTerm); err != nil {
			return framework.AsStatus(fmt.Errorf("updating PreferredAntiAffinityTerms: %w", err))
		}
	}
	nsLabels := pl.namespaceLabels(klog.FromContext(ctx), pod.Namespace)

	perNode := make([]scoreMap, len(nodes))
	pl.parallelizer.Until(ctx, len(nodes), func(i int) {
		node := nodes[i].Node()
		// A node without labels belongs to no domain.
		if node == nil || len(node.Labels) == 0 {
			return
		}
		pods := nodes[i].PodsWithAffinity
		if hasPreferred {
			pods = nodes[i].Pods
		}
		var scores scoreMap // allocated by the first score
		for _, existing := range pods {
			pl.scoreExistingPod(&scores, podInfo, nsLabels, existing, node)
		}
		if len(scores) > 0 {
			perNode[i] = scores
		}
	})

	s := &preScoreState{topologyScore: scoreMap{}}
	for _, scores := range perNode {
		s.topologyScore.merge(scores)
	}
	if len(s.topologyScore) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	cycleState.Write(preScoreStateKey, s)
	return nil
}

// scoreExistingPod adds to scores what the pair (incoming, existing on node)
// contributes; see PreScore. nsLabels are the labels of the incoming pod's
// namespace, which existing pods' namespaceSelectors are matched against.
func (pl *InterPodAffinity) scoreExistingPod(scores *scoreMap, incoming *framework.PodInfo, nsLabels labels.Set,
	existing *framework.PodInfo, node *v1.Node) {
	// The incoming pod's terms have their namespaceSelector merged: no
	// labels of the existing pod's namespace are needed.
	scores.addWeighted(incoming.PreferredAffinityTerms, existing.Pod, nil, node, 1)
	scores.addWeighted(incoming.PreferredAntiAffinityTerms, existing.Pod, nil, node, -1)

	if pl.hardPodAffinityWeight > 0 {
		for i := range existing.RequiredAffinityTerms {
			scores.add(&existing.RequiredAffinityTerms[i], pl.hardPodAffinityWeight, incoming.Pod, nsLabels, node, 1)
		}
	}
	scores.addWeighted(existing.PreferredAffinityTerms, incoming.Pod, nsLabels, node, 1)
	scores.addWeighted(existing.PreferredAntiAffinityTerms, incoming.Pod, nsLabels, node, -1)
}

func getPreScoreState(cycleState *framework.CycleState) (*preScoreState, error) {
	c, err := cycleState.Read(preScoreStateKey)
	if err != nil {
		return nil, fmt.Errorf("failed to read %q from cycleState: %w", preScoreStateKey, err)
	}
	s, ok := c.(*preScoreState)
	if !ok {
		return nil, fmt.Errorf("%+v convert to interpodaffinity.preScoreState error", c)
	}
	return s, nil
}

// Score sums the scores of the node's domains, one per topology key the node
// has a label for. It may be negative; NormalizeScore fixes that.
func (pl *InterPodAffinity) Score(_ context.Context, cycleState *framework.CycleState, _ *v1.Pod,
	nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	s, err := getPreScoreState(cycleState)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	node := nodeInfo.Node()
	if node == nil {
		return 0, framework.AsStatus(fmt.Errorf("node not found"))
	}
	var score int64
	for key, values := range s.topologyScore {
		if value, ok := node.Labels[key]; ok {
			score += values[value]
		}
	}
	return score, nil
}

// ScoreExtensions returns the plugin itself: scores need normalising.
func (pl *InterPodAffinity) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore maps scores linearly onto 0..100, the lowest to 0 and the
// highest to 100, truncating: 100 × ((score − min) / (max − min)). When all
// scores are equal, every node gets 0.
func (pl *InterPodAffinity) NormalizeScore(_ context.Context, cycleState *framework.CycleState, _ *v1.Pod,
	scores framework.NodeScoreList) *framework.Status {
	s, err := getPreScoreState(cycleState)
	if err != nil {
		return framework.AsStatus(err)
	}
	if len(s.topologyScore) == 0 {
		return nil
	}
	minScore, maxScore := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range scores {
		minScore = min(minScore, scores[i].Score)
		maxScore = max(maxScore, scores[i].Score)
	}
	spread := maxScore - minScore
	for i := range scores {
		normalized := float64(0)
		if spread > 0 {
			// The order of operations is kube-scheduler's: it decides how
			// float rounding truncates (100 × 0.29 is 28.999…, so 28).
			normalized = float64(framework.MaxNodeScore) * (float64(scores[i].Score-minScore) / float64(spread))
		}
		scores[i].Score = int64(normalized)
	}
	return nil
}
