// Chapter 15's stories (docs/15-performance.md): a burst of pods on a
// hundred nodes, measured as kube-scheduler's dashboards measure it, from
// the scheduler's /metrics; and OpportunisticBatching, alike pods placed by
// the ranking of the first one's cycle. `make bench` goes further: larger
// workloads, several rounds, and the real kube-scheduler on the same ones.

package chapters

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/testenv"
)

// The size of ch15-throughput: every node has room for exactly podsPerNode
// of its pods (3 × 1300m of 4 cpu), and there are exactly enough pods to
// fill every node.
const (
	throughputNodes = 100
	podsPerNode     = 3
	throughputPods  = throughputNodes * podsPerNode
	throughputCPU   = "1300m"
)

// chapter15 is chapter 15's story.
func chapter15() []scenario.Scenario {
	return []scenario.Scenario{
		{
			Name: "ch15-throughput", Chapter: 15, Parts: scenario.Parts{scenario.OwnSchedulers},
			Description: fmt.Sprintf("a scheduler started with %d pods waiting on %d nodes, each node with room for "+
				"exactly %d of them: all bound, none overcommitted; pods/s and the latency quantiles from /metrics "+
				"(`make bench` compares with kube-scheduler on larger workloads)",
				throughputPods, throughputNodes, podsPerNode),
			Run: runThroughput,
		},
		{
			Name: "ch15-batching", Chapter: 15, Parts: scenario.Parts{scenario.OwnSchedulers},
			Description: fmt.Sprintf("OpportunisticBatching: %d alike pods that each need a node of their own "+
				"(the same host port) wait for a scheduler configured for batching; the first is filtered and "+
				"scored on all %d nodes, the others take the next nodes of its ranking as hints",
				batchingPods, batchingNodes),
			Run: runBatching,
		},
	}
}

// throughputConfig is the default profile with make bench's settings:
// client qps and burst 5000 (at the default qps of 50, the binds and the
// Scheduled events, two requests a pod, would cap the run at 25 pods/s),
// no leader election, no profiling.
const throughputConfig = `clientConnection:
  qps: 5000
  burst: 5000
leaderElection:
  leaderElect: false
enableProfiling: false
`

// The size of ch15-batching: nodes of different sizes, so that the ranking
// is strict, and fewer pods than nodes.
const (
	batchingNodes = 6
	batchingPods  = 5
)

// batchingConfig is throughputConfig with upstream's batching configuration
// of PodTopologySpread: no default constraints, so that pods without
// constraints of their own can be signed (with the system defaults,
// PodTopologySpread refuses to sign any pod).
const batchingConfig = throughputConfig + `profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
`

// runBatching starts a scheduler on a backlog of alike pods, so that their
// cycles follow one another, and shows which of them got a hint: the
// attempt records say, and /metrics counts it.
func runBatching(ctx context.Context, env *scenario.Env) (err error) {
	cfg, err := scenario.ConfigYAML(batchingConfig)()
	if err != nil {
		return err
	}
	// node1 is the smallest, node6 the largest: for a pod of 1 cpu and 2Gi,
	// LeastAllocated and BalancedAllocation rank the largest first, each
	// node apart from the next, and the pods go down the ranking.
	var nodes []*v1.Node
	for i := 1; i <= batchingNodes; i++ {
		nodes = append(nodes, scenario.MakeNode(fmt.Sprintf("node%d", i)).Capacity(map[v1.ResourceName]string{
			v1.ResourceCPU: fmt.Sprint(2 + i), v1.ResourceMemory: fmt.Sprintf("%dGi", 8+4*i), v1.ResourcePods: "110",
		}).Obj())
	}
	if err := env.CreateNodes(ctx, nodes...); err != nil {
		return err
	}
	for i := 1; i <= batchingPods; i++ {
		pod := scenario.MakePod(fmt.Sprintf("job-%d", i)).HostPort(v1.ProtocolTCP, "", 8080).
			Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "2Gi"}).Obj()
		if err := env.CreatePods(ctx, pod); err != nil {
			return err
		}
	}
	sched, err := env.StartReplica(ctx, "minisched", cfg)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := sched.ShutDown(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	if _, err := waitAllBound(ctx, env, batchingPods, time.Minute); err != nil {
		return err
	}
	// Pods of one priority come out of a backlog in the order the informer
	// delivered them, which is not their names'; which pod was first, the
	// records tell. Whatever the order, the pods take the five best nodes.
	taken := map[string]bool{}
	for i := 1; i <= batchingPods; i++ {
		name := fmt.Sprintf("job-%d", i)
		// Told after the bind: a moment after the pod shows bound.
		last, err := env.WaitForScheduledAttempt(ctx, name, scenario.DefaultWait)
		if err != nil {
			return err
		}
		how := fmt.Sprintf("a full cycle: every node filtered, %d scored", len(last.Nodes))
		if last.Hint != "" && last.Hint == last.Node {
			how = "the hint: 1 node filtered, none scored"
		} else if last.Node != "node6" {
			return fmt.Errorf("%s had a full cycle and went to %s, not to the best node, node6", name, last.Node)
		}
		env.Logf("%s → %s (%s)", name, last.Node, how)
		taken[last.Node] = true
	}
	if len(taken) != batchingPods || taken["node1"] {
		return fmt.Errorf("the pods took %v, want the five best nodes, node2 to node6", taken)
	}
	m, err := testenv.Scrape(ctx, sched.MetricsURL)
	if err != nil {
		return err
	}
	used := m.Value("scheduler_batch_attempts_total", map[string]string{"result": "hint_used"})
	env.Logf("scheduler_batch_attempts_total: %v hint_used, %v no_hint", used,
		m.Value("scheduler_batch_attempts_total", map[string]string{"result": "no_hint"}))
	// Four hints, unless a ranking outlived its 500 ms on a very slow
	// machine: that pod then got a full cycle, and the same node.
	if used == 0 {
		return fmt.Errorf("no pod used a hint: batching did not fire")
	}
	return nil
}

func runThroughput(ctx context.Context, env *scenario.Env) (err error) {
	cfg, err := scenario.ConfigYAML(throughputConfig)()
	if err != nil {
		return err
	}
	names := scenario.Numbered("node", 0, throughputNodes-1)
	if err := env.CreateNodes(ctx, scenario.Nodes(names...)...); err != nil {
		return err
	}
	// The pods are all there before the scheduler starts, as in make
	// bench's backlog runs: what is measured is the scheduler, not how fast
	// the scenario creates pods.
	req := map[v1.ResourceName]string{v1.ResourceCPU: throughputCPU, v1.ResourceMemory: "1Gi"}
	if err := createPodsInParallel(ctx, env, 8, throughputPods, func(i int) *v1.Pod {
		return scenario.MakePod(fmt.Sprintf("pod-%03d", i)).Req(req).Obj()
	}); err != nil {
		return err
	}
	start := time.Now()
	sched, err := env.StartReplica(ctx, "minisched", cfg)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := sched.ShutDown(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	pods, err := waitAllBound(ctx, env, throughputPods, time.Minute)
	if err != nil {
		return err
	}
	took := time.Since(start)
	env.Logf("%d pods were waiting; the scheduler started and bound them all in %.2fs: %.0f pods/s "+
		"(informer sync included)", throughputPods, took.Seconds(), float64(throughputPods)/took.Seconds())

	// None overcommitted: every node holds exactly podsPerNode pods, and
	// their requests fit its allocatable cpu.
	perNode := map[string]int{}
	for _, p := range pods {
		perNode[p.Spec.NodeName]++
	}
	perPod := resource.MustParse(throughputCPU)
	allocatable := scenario.MakeNode("any").Obj().Status.Allocatable[v1.ResourceCPU]
	for _, n := range names {
		used := perPod.MilliValue() * int64(perNode[n])
		if perNode[n] != podsPerNode || used > allocatable.MilliValue() {
			return fmt.Errorf("%s holds %d pods (%dm of %dm cpu), want exactly %d", n, perNode[n], used,
				allocatable.MilliValue(), podsPerNode)
		}
	}
	env.Logf("every node holds exactly %d pods (%dm of %dm cpu): none overcommitted, none left out",
		podsPerNode, perPod.MilliValue()*podsPerNode, allocatable.MilliValue())

	m, err := testenv.Scrape(ctx, sched.MetricsURL)
	if err != nil {
		return err
	}
	scheduled := map[string]string{"result": "scheduled"}
	attempts := m.Value("scheduler_schedule_attempts_total", scheduled)
	failed := m.Value("scheduler_schedule_attempts_total", nil) - attempts
	env.Logf("scheduler_schedule_attempts_total: %v scheduled, %v unschedulable or error", attempts, failed)
	for _, h := range []struct{ family, what string }{
		{"scheduler_scheduling_attempt_duration_seconds", "attempt (pop to bound)"},
		{"scheduler_scheduling_algorithm_duration_seconds", "algorithm (Filter and Score)"},
		{"scheduler_pod_scheduling_sli_duration_seconds", "SLI (queued to bound)"},
	} {
		labels := scheduled
		if h.family != "scheduler_scheduling_attempt_duration_seconds" {
			labels = nil
		}
		env.Logf("%-28s p50 %6.1f ms, p90 %6.1f ms, p99 %6.1f ms  (%s)", h.what,
			1000*m.Quantile(0.5, h.family, labels), 1000*m.Quantile(0.9, h.family, labels),
			1000*m.Quantile(0.99, h.family, labels), h.family)
	}
	if attempts != throughputPods {
		return fmt.Errorf("/metrics count %v scheduled attempts, want %d", attempts, throughputPods)
	}
	return nil
}

// createPodsInParallel creates n pods, built by pod(i), with the given
// number of clients at once.
func createPodsInParallel(ctx context.Context, e *scenario.Env, clients, n int, pod func(i int) *v1.Pod) error {
	next := make(chan int)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := e.CreatePods(ctx, pod(i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := range n {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	if err != nil {
		return err
	}
	return <-errs // nil once closed and empty
}

// waitAllBound polls until n pods of the namespace are bound, and returns
// them.
func waitAllBound(ctx context.Context, e *scenario.Env, n int, timeout time.Duration) ([]v1.Pod, error) {
	var bound []v1.Pod
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, e.WaitLimit(timeout), true, func(ctx context.Context) (bool, error) {
		list, err := e.Client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		bound = bound[:0]
		for _, p := range list.Items {
			if p.Spec.NodeName != "" {
				bound = append(bound, p)
			}
		}
		return len(bound) >= n, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%d of %d pods bound within %v: %w", len(bound), n, timeout, err)
	}
	return bound, nil
}
