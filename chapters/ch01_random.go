package scenario

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/scheduler"
)

// fromYAML returns a configuration given as the YAML of its profiles list.
func fromYAML(profiles string) func() (*configv1.KubeSchedulerConfiguration, error) {
	return configYAML("profiles:\n" + profiles)
}

// configYAML returns a configuration given as YAML, as a reader would write
// it in a file for --config, without its apiVersion and kind.
func configYAML(doc string) func() (*configv1.KubeSchedulerConfiguration, error) {
	return func() (*configv1.KubeSchedulerConfiguration, error) {
		return scheduler.DecodeConfig([]byte("apiVersion: kubescheduler.config.k8s.io/v1\n" +
			"kind: KubeSchedulerConfiguration\n" + doc))
	}
}

// chapters are the scenarios of chapters 1-8, each run with the scheduler
// as it stands at its chapter (ChapterConfig).
func chapters() []Scenario {
	return []Scenario{
		{
			Name: "ch1-random", Chapter: 1,
			Description: "with no Filter or Score plugin, any node will do: the scheduler takes the next one, round robin: " +
				"10 nodes, 20 pods, all land",
			Config: chapterConfig(1),
			Run:    runRandom,
		},
		{
			Name: "ch2-nodeunschedulable", Chapter: 2,
			Description: "a Filter plugin: node0-node9 are cordoned, so the pod waits; node10 appears and the pod lands there",
			Config:      chapterConfig(2),
			Run:         runNodeUnschedulable,
		},
		{
			Name: "ch3-nodenumber", Chapter: 3,
			Description: "a Score plugin: NodeNumber prefers the node whose number matches the pod's " +
				"(pod1 → node1, pod3 → node3)",
			Config: chapterConfig(3),
			Run:    runNodeNumber,
		},
		{
			Name: "ch4-cyclestate", Chapter: 4,
			Description: "CycleState: the digit PreScore wrote for pod2 is the one Score read on every node",
			Config:      chapterConfig(4),
			Run:         runCycleState,
		},
		{
			Name: "ch5-permit", Chapter: 5,
			Description: "Permit and parallel binding: pods waiting 1-4 s on Permit bind concurrently, " +
				"in about the longest wait",
			Config: chapterConfig(5),
			Run:    runPermit,
		},
		{
			Name: "ch6-assume", Chapter: 6,
			Description: "the cache assumes pods: a node with room for one pod, two pods at once, exactly one bound",
			Config:      chapterConfig(6),
			Run:         runAssume,
		},
		{
			Name: "ch7-backoff", Chapter: 7,
			Description: "backoffQ and an idle scheduler: an unschedulable pod that events keep sending to backoffQ " +
				"is popped from it at once while activeQ is empty, sooner than its 1 s, 2 s, 4 s backoff",
			Config: chapterConfig(7),
			Run:    runBackoff,
		},
		{
			Name: "ch8-events", Chapter: 8,
			Description: "event handlers requeue precisely: an unrelated pod add does not retry a cordoned-out pod, " +
				"an uncordon does at once",
			Config: chapterConfig(8),
			Run:    runEvents,
		},
	}
}

func nodes(names ...string) []*v1.Node {
	out := make([]*v1.Node, len(names))
	for i, n := range names {
		out[i] = MakeNode(n).Obj()
	}
	return out
}

func numbered(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

func runRandom(ctx context.Context, env *Env) error {
	if err := env.CreateNodes(ctx, nodes(numbered("node", 0, 9)...)...); err != nil {
		return err
	}
	used := map[string]int{}
	for _, name := range numbered("pod", 0, 19) {
		if err := env.CreatePods(ctx, MakePod(name).Obj()); err != nil {
			return err
		}
	}
	for _, name := range numbered("pod", 0, 19) {
		p, err := env.WaitForPodBound(ctx, name, DefaultWait)
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

func runNodeUnschedulable(ctx context.Context, env *Env) error {
	var cordoned []*v1.Node
	for _, n := range numbered("node", 0, 9) {
		cordoned = append(cordoned, MakeNode(n).Unschedulable(true).Obj())
	}
	if err := env.CreateNodes(ctx, cordoned...); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, MakePod("pod1").Obj()); err != nil {
		return err
	}
	msg, err := env.WaitForPodUnschedulable(ctx, "pod1", DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("pod1 is pending: %s", msg)
	if want := "0/10 nodes are available: 10 node(s) were unschedulable."; msg != want {
		return fmt.Errorf("pending message %q, want %q", msg, want)
	}
	env.Logf("adding node10, which is schedulable")
	if err := env.CreateNodes(ctx, MakeNode("node10").Obj()); err != nil {
		return err
	}
	p, err := env.WaitForPodBound(ctx, "pod1", DefaultWait)
	if err != nil {
		return err
	}
	if p.Spec.NodeName != "node10" {
		return fmt.Errorf("pod1 went to %s, want node10", p.Spec.NodeName)
	}
	// The record of the attempt that placed it: the table `minisched
	// explain` prints.
	env.Explain("pod1")
	return nil
}

func runNodeNumber(ctx context.Context, env *Env) error {
	if err := env.CreateNodes(ctx, nodes(numbered("node", 0, 9)...)...); err != nil {
		return err
	}
	for _, name := range []string{"pod1", "pod3"} {
		if err := env.CreatePods(ctx, MakePod(name).Obj()); err != nil {
			return err
		}
	}
	for name, want := range map[string]string{"pod1": "node1", "pod3": "node3"} {
		p, err := env.WaitForPodBound(ctx, name, DefaultWait)
		if err != nil {
			return err
		}
		if p.Spec.NodeName != want {
			return fmt.Errorf("%s went to %s, want %s", name, p.Spec.NodeName, want)
		}
		if a := env.PodAttempts(name); len(a) > 0 {
			env.Logf("%s: top scores %s", name, scoreSummary(a[len(a)-1]))
		}
	}
	return nil
}

func runCycleState(ctx context.Context, env *Env) error {
	if err := env.CreateNodes(ctx, nodes(numbered("node", 0, 9)...)...); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, MakePod("pod2").Obj()); err != nil {
		return err
	}
	p, err := env.WaitForPodBound(ctx, "pod2", DefaultWait)
	if err != nil {
		return err
	}
	attempts, err := env.WaitForAttempts(ctx, "pod2", 1, DefaultWait)
	if err != nil {
		return err
	}
	last := attempts[len(attempts)-1]
	env.Logf("PreScore stored 2 for pod2; Score read it on each node: %s", scoreSummary(last))
	if p.Spec.NodeName != "node2" || len(last.TopScores) < 2 ||
		last.TopScores[0].Plugin["NodeNumber"] != 10 || last.TopScores[1].Plugin["NodeNumber"] != 0 {
		return fmt.Errorf("want pod2 on node2 scored 10 and every other node 0, got %s on %s", scoreSummary(last),
			p.Spec.NodeName)
	}
	return nil
}

func runPermit(ctx context.Context, env *Env) error {
	if err := env.CreateNodes(ctx, nodes(numbered("node", 0, 9)...)...); err != nil {
		return err
	}
	names := numbered("pod", 1, 4)
	start := time.Now()
	for _, name := range names {
		if err := env.CreatePods(ctx, MakePod(name).Obj()); err != nil {
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
			_, err := env.WaitForPodBound(ctx, name, DefaultWait)
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

func runAssume(ctx context.Context, env *Env) error {
	if err := env.CreateNodes(ctx,
		MakeNode("node0").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()); err != nil {
		return err
	}
	cpu := map[v1.ResourceName]string{v1.ResourceCPU: "1"}
	if err := env.CreatePods(ctx, MakePod("pod-a").Req(cpu).Obj(), MakePod("pod-b").Req(cpu).Obj()); err != nil {
		return err
	}
	// Whichever was tried first is bound; the other must not be, even though
	// the apiserver may not have confirmed the first bind when it was tried.
	first, second := "pod-a", "pod-b"
	if _, err := env.WaitForPodBound(ctx, first, 5*time.Second); err != nil {
		first, second = second, first
		if _, err := env.WaitForPodBound(ctx, first, DefaultWait); err != nil {
			return fmt.Errorf("neither pod was bound: %w", err)
		}
	}
	msg, err := env.WaitForPodUnschedulable(ctx, second, DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("%s is bound; %s is pending: %s", first, second, msg)
	// Chapter 6 has no PostFilter plugin: with DefaultPreemption (chapter
	// 10) a second sentence would say that evicting the bound pod, of the
	// same priority, would not help.
	want := "0/1 nodes are available: 1 Insufficient cpu."
	if msg != want {
		return fmt.Errorf("pending message %q, want %q", msg, want)
	}
	return nil
}

func runBackoff(ctx context.Context, env *Env) error {
	if err := env.CreateNodes(ctx,
		MakeNode("node0").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, MakePod("big").Req(map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Obj()); err != nil {
		return err
	}
	if _, err := env.WaitForAttempts(ctx, "big", 1, DefaultWait); err != nil {
		return err
	}
	// Churn: small pods come and go on node0. Each deletion is an event
	// NodeResourcesFit registered (it frees cpu), so each could retry "big";
	// backoff is what paces the retries.
	churnCtx, stopChurn := context.WithCancel(ctx)
	churnDone := make(chan error, 1)
	go func() { churnDone <- churn(churnCtx, env) }()
	attempts, err := env.WaitForAttempts(ctx, "big", 4, DefaultWait)
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
func churn(ctx context.Context, env *Env) error {
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		name := fmt.Sprintf("churn-%d", i)
		p := MakePod(name).NodeName("node0").Req(map[v1.ResourceName]string{v1.ResourceCPU: "100m"}).Obj()
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

func runEvents(ctx context.Context, env *Env) error {
	if err := env.CreateNodes(ctx, MakeNode("node0").Unschedulable(true).Obj()); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, MakePod("waiting").Obj()); err != nil {
		return err
	}
	msg, err := env.WaitForPodUnschedulable(ctx, "waiting", DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("waiting is pending: %s", msg)

	env.Logf("a pod is added to node0 by someone else: NodeUnschedulable did not register pod events")
	if err := env.CreatePods(ctx, MakePod("unrelated").NodeName("node0").Obj()); err != nil {
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
	if _, err := env.WaitForPodBound(ctx, "waiting", DefaultWait); err != nil {
		return err
	}
	took := time.Since(uncordoned)
	attempts := env.PodAttempts("waiting")
	env.Logf("waiting was bound %.2fs after the uncordon, at attempt %d", took.Seconds(), len(attempts))
	if len(attempts) != 2 {
		return fmt.Errorf("want exactly 2 attempts (fail, then succeed after the uncordon), got %d", len(attempts))
	}
	if took > 2*time.Second {
		return fmt.Errorf("the uncordon should retry the pod at once, but binding took %v", took)
	}
	return nil
}
