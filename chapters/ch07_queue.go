// Chapter 7's story (docs/07-queue.md): backoffQ, and an idle scheduler
// that pops from it at once.

package chapters

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minisched/minisched/scenario"
)

// chapter7 is chapter 7's story, run with the scheduler as it stands at
// its chapter (ChapterConfig).
func chapter7() []scenario.Scenario {
	return []scenario.Scenario{
		{
			Name: "ch7-backoff", Chapter: 7,
			Description: "backoffQ and an idle scheduler: an unschedulable pod that events keep sending to backoffQ " +
				"is popped from it at once while activeQ is empty, sooner than its 1 s, 2 s, 4 s backoff",
			Config: chapterConfig(7),
			Run:    runBackoff,
		},
	}
}

func runBackoff(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx,
		scenario.MakeNode("node0").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, scenario.MakePod("big").Req(map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Obj()); err != nil {
		return err
	}
	if _, err := env.WaitForAttempts(ctx, "big", 1, scenario.DefaultWait); err != nil {
		return err
	}
	// Churn: small pods come and go on node0. Each deletion is an event
	// NodeResourcesFit registered (it frees cpu), so each could retry "big";
	// backoff is what paces the retries.
	churnCtx, stopChurn := context.WithCancel(ctx)
	churnDone := make(chan error, 1)
	go func() { churnDone <- churn(churnCtx, env) }()
	attempts, err := env.WaitForAttempts(ctx, "big", 4, scenario.DefaultWait)
	stopChurn()
	if cerr := <-churnDone; cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// Each deletion moves "big" to backoffQ, and with activeQ empty Pop
	// takes it from there at once (SchedulerPopFromBackoffQ, on since
	// kube-scheduler 1.33): an idle scheduler has no reason to wait. Its
	// backoff (1 s, 2 s, 4 s, in one-second windows) only orders backoffQ
	// and paces it when other pods keep activeQ busy.
	for i := 1; i < 4; i++ {
		gap := attempts[i].Time.Sub(attempts[i-1].Time)
		backoff := time.Duration(1<<(i-1)) * time.Second
		env.Logf("attempt %d → %d: %.2fs (its backoff was %v; popped from backoffQ because activeQ was empty)",
			i, i+1, gap.Seconds(), backoff)
		if gap >= backoff {
			return fmt.Errorf("retry %d came %v after the previous attempt, want it sooner than its %v backoff",
				i, gap, backoff)
		}
	}
	return nil
}

// churn creates and deletes a small pod bound to node0 every 200 ms.
func churn(ctx context.Context, env *scenario.Env) error {
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		name := fmt.Sprintf("churn-%d", i)
		p := scenario.MakePod(name).NodeName("node0").Req(map[v1.ResourceName]string{v1.ResourceCPU: "100m"}).Obj()
		err := env.CreatePods(ctx, p)
		if err == nil {
			err = env.DeletePod(ctx, name)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil // stopped mid-request: not a failure
			}
			return err
		}
	}
}
