// Chapter 1's story (docs/01-random.md): the scheduler with no Filter or
// Score plugin, where any node will do and the next one, round robin, is
// taken.

package chapters

import (
	"context"
	"fmt"

	"github.com/minisched/minisched/scenario"
)

// chapter1 is chapter 1's story, run with the scheduler as it stands at its
// chapter (ChapterConfig).
func chapter1() []scenario.Scenario {
	return []scenario.Scenario{
		{
			Name: "ch1-random", Chapter: 1,
			Description: "with no Filter or Score plugin, any node will do: the scheduler takes the next one, round robin: " +
				"10 nodes, 20 pods, all land",
			Config: chapterConfig(1),
			Run:    runRandom,
		},
	}
}

func runRandom(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, scenario.Nodes(scenario.Numbered("node", 0, 9)...)...); err != nil {
		return err
	}
	used := map[string]int{}
	for _, name := range scenario.Numbered("pod", 0, 19) {
		if err := env.CreatePods(ctx, scenario.MakePod(name).Obj()); err != nil {
			return err
		}
	}
	for _, name := range scenario.Numbered("pod", 0, 19) {
		p, err := env.WaitForPodBound(ctx, name, scenario.DefaultWait)
		if err != nil {
			return err
		}
		used[p.Spec.NodeName]++
	}
	env.Logf("20 pods spread over %d of 10 nodes, each search starting after the node the last one took", len(used))
	if len(used) < 2 {
		return fmt.Errorf("all pods went to one node; taking the nodes in turn would spread them")
	}
	return nil
}
