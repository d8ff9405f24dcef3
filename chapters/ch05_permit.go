// Chapter 5's story (docs/05-permit.md): Permit holds pods, and their
// binding cycles run in parallel.

package chapters

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/minisched/minisched/scenario"
)

// chapter5 is chapter 5's story, run with the scheduler as it stands at
// its chapter (ChapterConfig).
func chapter5() []scenario.Scenario {
	return []scenario.Scenario{
		{
			Name: "ch5-permit", Chapter: 5,
			Description: "Permit and parallel binding: pods waiting 1-4 s on Permit bind concurrently, " +
				"in about the longest wait",
			Config: chapterConfig(5),
			Run:    runPermit,
		},
	}
}

func runPermit(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, scenario.Nodes(scenario.Numbered("node", 0, 9)...)...); err != nil {
		return err
	}
	names := scenario.Numbered("pod", 1, 4)
	start := time.Now()
	for _, name := range names {
		if err := env.CreatePods(ctx, scenario.MakePod(name).Obj()); err != nil {
			return err
		}
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		errs  []string
		bound = map[string]time.Duration{}
	)
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := env.WaitForPodBound(ctx, name, scenario.DefaultWait)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err.Error())
				return
			}
			bound[name] = time.Since(start)
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	total := time.Since(start)
	for _, name := range names {
		env.Logf("%s waited on Permit and was bound after %.1fs", name, bound[name].Seconds())
	}
	env.Logf("all four bound after %.1fs: the waits (1+2+3+4 = 10 s) overlapped", total.Seconds())
	if total >= 10*time.Second {
		return fmt.Errorf("binding took %v, as long as the waits one after another: binding cycles did not run in parallel",
			total)
	}
	if bound["pod4"] < 4*time.Second {
		return fmt.Errorf("pod4 was bound after %v, before its 4 s Permit wait", bound["pod4"])
	}
	return nil
}
