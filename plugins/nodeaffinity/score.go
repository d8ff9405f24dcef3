// This file is NodeAffinity's scoring: a node earns the weights of the
// preferred node affinity terms it matches (the pod's and the profile's
// addedAffinity's), and NormalizeScore scales the best node to 100.

package nodeaffinity

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// preScoreStateKey is where PreScore leaves the pod's parsed preferred terms.
const preScoreStateKey framework.StateKey = "PreScore" + Name

var (
	_ framework.PreScorePlugin  = &NodeAffinity{}
	_ framework.ScorePlugin     = &NodeAffinity{}
	_ framework.ScoreExtensions = &NodeAffinity{}
)

// preScoreState holds the pod's preferred terms, parsed once per cycle; nil
// when the pod has none.
type preScoreState struct {
	preferred *nodeaffinity.PreferredSchedulingTerms
}

// Clone returns the state itself: it is never changed after PreScore.
func (s *preScoreState) Clone() framework.StateData { return s }

// podPreferredTerms parses the pod's preferred node affinity terms; nil when
// the pod has no preferred list (an empty, non-nil list still parses, to no
// terms). Terms of weight 0 or without requirements are dropped.
func podPreferredTerms(pod *v1.Pod) (*nodeaffinity.PreferredSchedulingTerms, error) {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution == nil {
		return nil, nil
	}
	return nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
}

// PreScore parses the pod's preferred terms. A term that does not parse is
// an Error, as in kube-scheduler. With neither the pod's terms nor
// addedAffinity's there is nothing to score: Skip.
func (pl *NodeAffinity) PreScore(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	_ []*framework.NodeInfo) *framework.Status {
	preferred, err := podPreferredTerms(pod)
	if err != nil {
		return framework.AsStatus(err)
	}
	if preferred == nil && pl.addedPrefSchedTerms == nil {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreStateKey, &preScoreState{preferred: preferred})
	klog.FromContext(ctx).V(5).Info("Scoring nodes by preferred node affinity", "pod", klog.KObj(pod))
	return nil
}

// preferredTerms returns the terms PreScore parsed, or parses them afresh
// when PreScore did not run (it is not enabled in the profile).
func preferredTerms(state *framework.CycleState, pod *v1.Pod) (*nodeaffinity.PreferredSchedulingTerms, error) {
	c, err := state.Read(preScoreStateKey)
	if err != nil {
		return podPreferredTerms(pod)
	}
	s, ok := c.(*preScoreState)
	if !ok {
		return nil, fmt.Errorf("invalid PreScore state, got type %T", c)
	}
	return s.preferred, nil
}

// Score is the sum of the weights of the preferred terms the node matches:
// addedAffinity's terms plus the pod's own. The raw sum may exceed 100;
// NormalizeScore brings it into range.
func (pl *NodeAffinity) Score(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	node := nodeInfo.Node()
	if node == nil {
		return 0, framework.AsStatus(fmt.Errorf("node not found"))
	}
	var score int64
	if pl.addedPrefSchedTerms != nil {
		score += pl.addedPrefSchedTerms.Score(node)
	}
	preferred, err := preferredTerms(state, pod)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	if preferred != nil {
		score += preferred.Score(node)
	}
	if logger := klog.FromContext(ctx).V(10); logger.Enabled() {
		logger.Info("NodeAffinity score", "pod", klog.KObj(pod), "node", klog.KObj(node), "score", score)
	}
	return score, nil
}

// ScoreExtensions returns the plugin itself: its scores need normalising.
func (pl *NodeAffinity) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore scales the scores so the best node gets MaxNodeScore:
// score × 100 / max, in integer arithmetic. If no node scored above 0, the
// scores stay 0. This is kube-scheduler's DefaultNormalizeScore, not
// reversed.
func (pl *NodeAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod,
	scores framework.NodeScoreList) *framework.Status {
	framework.DefaultNormalizeScore(framework.MaxNodeScore, false, scores)
	return nil
}
