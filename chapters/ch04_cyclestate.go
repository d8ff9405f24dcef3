// Chapter 4's story (docs/04-cyclestate.md): CycleState, what NodeNumber's
// PreScore hands to its Score within one scheduling cycle.

package chapters

import (
	"context"
	"fmt"

	"github.com/minisched/minisched/scenario"
)

// chapter4 is chapter 4's story, run with the scheduler as it stands at
// its chapter (ChapterConfig).
func chapter4() []scenario.Scenario {
	return []scenario.Scenario{
		{
			Name: "ch4-cyclestate", Chapter: 4,
			Description: "CycleState: the digit PreScore wrote for pod2 is the one Score read on every node",
			Config:      chapterConfig(4),
			Run:         runCycleState,
		},
	}
}

func runCycleState(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, scenario.Nodes(scenario.Numbered("node", 0, 9)...)...); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, scenario.MakePod("pod2").Obj()); err != nil {
		return err
	}
	p, err := env.WaitForPodBound(ctx, "pod2", scenario.DefaultWait)
	if err != nil {
		return err
	}
	attempts, err := env.WaitForAttempts(ctx, "pod2", 1, scenario.DefaultWait)
	if err != nil {
		return err
	}
	last := attempts[len(attempts)-1]
	env.Logf("PreScore stored 2 for pod2; Score read it on each node: %s", scenario.ScoreSummary(last))
	top := last.TopScores(2)
	if p.Spec.NodeName != "node2" || len(top) < 2 || scenario.Weighted(last, top[0], "NodeNumber") != 10 ||
		scenario.Weighted(last, top[1], "NodeNumber") != 0 {
		return fmt.Errorf("want pod2 on node2 scored 10 and every other node 0, got %s on %s", scenario.ScoreSummary(last),
			p.Spec.NodeName)
	}
	return nil
}
