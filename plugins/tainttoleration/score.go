// This file is TaintToleration's scoring: a node scores lower the more
// PreferNoSchedule taints it has that the pod does not tolerate.

package tainttoleration

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// preScoreStateKey is where PreScore leaves the pod's tolerations for Score.
const preScoreStateKey framework.StateKey = "PreScore" + Name

// preScoreState holds the pod's tolerations that can tolerate a
// PreferNoSchedule taint: those with that effect or with no effect (which
// means every effect).
type preScoreState struct {
	tolerationsPreferNoSchedule []v1.Toleration
}

// Clone returns the same state: it is never changed after PreScore.
func (s *preScoreState) Clone() framework.StateData { return s }

// preferNoScheduleTolerations returns the tolerations that can tolerate a
// PreferNoSchedule taint.
func preferNoScheduleTolerations(tolerations []v1.Toleration) []v1.Toleration {
	var out []v1.Toleration
	for _, t := range tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			out = append(out, t)
		}
	}
	return out
}

// PreScore picks out, once per cycle, the tolerations Score needs.
func (pl *TaintToleration) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod,
	_ []*framework.NodeInfo) *framework.Status {
	state.Write(preScoreStateKey,
		&preScoreState{tolerationsPreferNoSchedule: preferNoScheduleTolerations(pod.Spec.Tolerations)})
	return nil
}

func getPreScoreState(state *framework.CycleState) (*preScoreState, error) {
	c, err := state.Read(preScoreStateKey)
	if err != nil {
		return nil, fmt.Errorf("failed to read %q from cycleState: %w", preScoreStateKey, err)
	}
	s, ok := c.(*preScoreState)
	if !ok {
		return nil, fmt.Errorf("%+v convert to tainttoleration.preScoreState error", c)
	}
	return s, nil
}

// countIntolerablePreferNoSchedule counts the PreferNoSchedule taints that
// none of tolerations tolerates.
func countIntolerablePreferNoSchedule(logger klog.Logger, taints []v1.Taint, tolerations []v1.Toleration) int64 {
	var n int64
	for i := range taints {
		if taints[i].Effect != v1.TaintEffectPreferNoSchedule {
			continue
		}
		if !corev1helpers.TolerationsTolerateTaint(logger, tolerations, &taints[i], enableComparisonOperators) {
			n++
		}
	}
	return n
}

// Score returns the number of the node's PreferNoSchedule taints that the pod
// does not tolerate. It is a raw count, turned around by NormalizeScore so
// that fewer such taints score higher.
func (pl *TaintToleration) Score(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	node := nodeInfo.Node()
	if node == nil {
		return 0, framework.AsStatus(errNodeNotFound)
	}
	s, err := getPreScoreState(state)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	return countIntolerablePreferNoSchedule(klog.FromContext(ctx), node.Spec.Taints, s.tolerationsPreferNoSchedule), nil
}

// ScoreExtensions returns the plugin itself, for NormalizeScore.
func (pl *TaintToleration) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore maps the counts onto [0, MaxNodeScore], reversed: the node
// with the most intolerable taints scores 0, a node with none scores
// MaxNodeScore, and the rest in proportion.
func (pl *TaintToleration) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod,
	scores framework.NodeScoreList) *framework.Status {
	framework.DefaultNormalizeScore(framework.MaxNodeScore, true, scores)
	return nil
}
