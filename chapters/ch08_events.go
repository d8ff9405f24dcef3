// Chapter 8's story (docs/08-events.md): event handlers requeue precisely,
// by the events each plugin registered.

package chapters

import (
	"context"
	"fmt"
	"time"

	"github.com/minisched/minisched/scenario"
)

// chapter8 is chapter 8's story, run with the scheduler as it stands at
// its chapter (ChapterConfig).
func chapter8() []scenario.Scenario {
	return []scenario.Scenario{
		{
			Name: "ch8-events", Chapter: 8,
			Description: "event handlers requeue precisely: an unrelated pod add does not retry a cordoned-out pod, " +
				"an uncordon does at once",
			Config: chapterConfig(8),
			Run:    runEvents,
		},
	}
}

func runEvents(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, scenario.MakeNode("node0").Unschedulable(true).Obj()); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, scenario.MakePod("waiting").Obj()); err != nil {
		return err
	}
	msg, err := env.WaitForPodUnschedulable(ctx, "waiting", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("waiting is pending: %s", msg)

	env.Logf("a pod is added to node0 by someone else: NodeUnschedulable did not register pod events")
	if err := env.CreatePods(ctx, scenario.MakePod("unrelated").NodeName("node0").Obj()); err != nil {
		return err
	}
	if err := env.ExpectNoNewAttempts(ctx, "waiting", 3*time.Second); err != nil {
		return err
	}
	env.Logf("no retry in 3 s; now node0 is uncordoned")
	uncordoned := time.Now()
	if err := env.SetUnschedulable(ctx, "node0", false); err != nil {
		return err
	}
	if _, err := env.WaitForPodBound(ctx, "waiting", scenario.DefaultWait); err != nil {
		return err
	}
	took := time.Since(uncordoned)
	// The scheduler tells of the attempt after the bind (and PostBind):
	// the pod can be seen bound a moment before its attempt is told.
	attempts, err := env.WaitForAttempts(ctx, "waiting", 2, scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("waiting was bound %.2fs after the uncordon, at attempt %d", took.Seconds(), len(attempts))
	if len(attempts) != 2 {
		return fmt.Errorf("want exactly 2 attempts (fail, then succeed after the uncordon), got %d", len(attempts))
	}
	if took > 2*time.Second {
		return fmt.Errorf("the uncordon should retry the pod at once, but binding took %v", took)
	}
	return nil
}
