// Chapter 13's stories (docs/13-practice.md), custom schedulers from
// practice: StatefulSetOrdinal, a rule teams write when affinity and taints
// cannot say what they need, and Dynamic, crane-scheduler's load-aware
// plugin, reading node load from annotations. No Prometheus runs here: each
// Dynamic story plays the annotator, writing the annotations that
// `minisched annotate` would write, with fresh timestamps.

package chapters

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/annotator"
	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/plugins/dynamic"
	"github.com/minisched/minisched/scenario"
)

// ordinalLabel is the node label StatefulSetOrdinal reads in the scenario.
const ordinalLabel = "example.com/ordinal"

// cranePolicy is crane-scheduler's published DynamicSchedulerPolicy
// (deploy/manifests/dynamic/policy.yaml there), without its comments.
const cranePolicy = `apiVersion: scheduler.policy.crane.io/v1alpha1
kind: DynamicSchedulerPolicy
spec:
  syncPolicy:
    - name: cpu_usage_avg_5m
      period: 3m
    - name: cpu_usage_max_avg_1h
      period: 15m
    - name: cpu_usage_max_avg_1d
      period: 3h
    - name: mem_usage_avg_5m
      period: 3m
    - name: mem_usage_max_avg_1h
      period: 15m
    - name: mem_usage_max_avg_1d
      period: 3h
  predicate:
    - name: cpu_usage_avg_5m
      maxLimitPecent: 0.65
    - name: cpu_usage_max_avg_1h
      maxLimitPecent: 0.75
    - name: mem_usage_avg_5m
      maxLimitPecent: 0.65
    - name: mem_usage_max_avg_1h
      maxLimitPecent: 0.75
  priority:
    - name: cpu_usage_avg_5m
      weight: 0.2
    - name: cpu_usage_max_avg_1h
      weight: 0.3
    - name: cpu_usage_max_avg_1d
      weight: 0.5
    - name: mem_usage_avg_5m
      weight: 0.2
    - name: mem_usage_max_avg_1h
      weight: 0.3
    - name: mem_usage_max_avg_1d
      weight: 0.5
  hotValue:
    - timeRange: 5m
      count: 5
    - timeRange: 1m
      count: 2
`

// craneMetrics are the policy's metrics, in the order usage() takes them.
var craneMetrics = []string{
	"cpu_usage_avg_5m", "cpu_usage_max_avg_1h", "cpu_usage_max_avg_1d",
	"mem_usage_avg_5m", "mem_usage_max_avg_1h", "mem_usage_max_avg_1d",
}

// chapter13 is chapter 13's stories: StatefulSetOrdinal's, then Dynamic's.
func chapter13() []scenario.Scenario {
	return []scenario.Scenario{
		{
			Name: "ch13-statefulset-ordinal", Chapter: 13,
			Description: "StatefulSetOrdinal: pod app-N runs only on the node labelled with ordinal N; pods wait for " +
				"their node, come back to it, and a pod nothing owns is never tried",
			Config: scenario.ProfilesYAML(`- plugins:
    multiPoint:
      enabled:
      - name: StatefulSetOrdinal
  pluginConfig:
  - name: StatefulSetOrdinal
    args:
      podLabels: [app]
      nodeOrdinalLabel: ` + ordinalLabel + `
`),
			Run: runStatefulSetOrdinal,
		},
		withDynamicPolicy(scenario.Scenario{
			Name: "ch13-dynamic-overload", Chapter: 13, Run: runDynamicOverload,
			Description: "Dynamic's Filter: nodes over a load limit are filtered with crane's reason; a lower load " +
				"written by the annotator lets the pod in at once; a DaemonSet pod is never filtered",
		}),
		withDynamicPolicy(scenario.Scenario{
			Name: "ch13-dynamic-least-loaded", Chapter: 13, Run: runDynamicLeastLoaded,
			Description: "Dynamic's Score: of three nodes the one with the lowest weighted real usage wins, " +
				"not the one with the lowest usage right now",
		}),
		withDynamicPolicy(scenario.Scenario{
			Name: "ch13-dynamic-hot-value", Chapter: 13, Run: runDynamicHotValue,
			Description: "Dynamic's hot value: a burst of pods spreads over three nodes instead of piling onto " +
				"the idlest, because recent bindings cost a node 10 points each hot-value unit",
		}),
	}
}

// withDynamicPolicy gives the scenario crane-scheduler's profile (Dynamic
// in Filter and in Score with weight 3) with only PrioritySort,
// NodeUnschedulable and DefaultBinder beside it, so the placements are
// Dynamic's alone. Its Config writes crane's policy into a temporary
// directory, which its Run removes.
func withDynamicPolicy(s scenario.Scenario) scenario.Scenario {
	var dir string
	s.Config = func() (*configv1.KubeSchedulerConfiguration, error) {
		var err error
		if dir, err = os.MkdirTemp("", s.Name+"-"); err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "policy.yaml")
		if err := os.WriteFile(path, []byte(cranePolicy), 0o600); err != nil {
			return nil, err
		}
		return scenario.ProfilesYAML(`- plugins:
    multiPoint:
      enabled: [{name: PrioritySort}, {name: NodeUnschedulable}, {name: DefaultBinder}]
      disabled: [{name: "*"}]
    filter:
      enabled: [{name: Dynamic}]
    score:
      enabled: [{name: Dynamic, weight: 3}]
  pluginConfig:
  - name: Dynamic
    args:
      policyConfigPath: ` + path + `
`)()
	}
	run := s.Run
	s.Run = func(ctx context.Context, env *scenario.Env) error {
		defer func() { _ = os.RemoveAll(dir) }()
		return run(ctx, env)
	}
	return s
}

// usage maps craneMetrics, in order, to values; cpu and mem give the three
// cpu and the three memory metrics.
func usage(cpu5m, cpu1h, cpu1d, mem5m, mem1h, mem1d string) map[string]string {
	values := []string{cpu5m, cpu1h, cpu1d, mem5m, mem1h, mem1d}
	out := map[string]string{}
	for i, m := range craneMetrics {
		out[m] = values[i]
	}
	return out
}

// flat is the same usage for every metric.
func flat(u string) map[string]string { return usage(u, u, u, u, u, u) }

// annotateNode writes annotations as the annotator would: "<value>,<now>".
func annotateNode(ctx context.Context, e *scenario.Env, node string, values map[string]string) error {
	now, loc := time.Now(), dynamic.TimestampLocation()
	annotations := map[string]string{}
	for k, v := range values {
		annotations[k] = dynamic.FormatAnnotation(v, now, loc)
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	_, err = e.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("annotating node %s: %w", node, err)
	}
	return nil
}

// describeLoad is "cpu 0.80/0.50/0.40 mem 0.30/0.30/0.30" (5m/1h/1d).
func describeLoad(values map[string]string) string {
	get := func(ms ...string) string {
		var parts []string
		for _, m := range ms {
			parts = append(parts, values[m])
		}
		return strings.Join(parts, "/")
	}
	return "cpu " + get(craneMetrics[:3]...) + ", mem " + get(craneMetrics[3:]...)
}

func runDynamicOverload(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, scenario.Nodes("node1", "node2")...); err != nil {
		return err
	}
	load := map[string]map[string]string{
		"node1": usage("0.80", "0.50", "0.40", "0.30", "0.30", "0.30"),
		"node2": usage("0.20", "0.20", "0.20", "0.30", "0.90", "0.50"),
	}
	for _, n := range []string{"node1", "node2"} {
		env.Logf("annotator: %s %s (5m/1h/1d)", n, describeLoad(load[n]))
		if err := annotateNode(ctx, env, n, load[n]); err != nil {
			return err
		}
	}
	env.Logf("limits (crane's policy): cpu_usage_avg_5m 0.65, cpu_usage_max_avg_1h 0.75, " +
		"mem_usage_avg_5m 0.65, mem_usage_max_avg_1h 0.75")
	if err := env.CreatePods(ctx, scenario.MakePod("web").Obj()); err != nil {
		return err
	}
	msg, err := env.WaitForPodUnschedulable(ctx, "web", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("web pending: %s", msg)
	notes, err := env.WaitForEvent(ctx, "web", "FailedScheduling", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("FailedScheduling event: %s", notes[0])
	for _, want := range []string{"Load[cpu_usage_avg_5m] of node[node1] is too high",
		"Load[mem_usage_max_avg_1h] of node[node2] is too high"} {
		if !strings.Contains(notes[0], want) {
			return fmt.Errorf("FailedScheduling %q does not say %q", notes[0], want)
		}
	}

	env.Logf("a DaemonSet pod is never filtered by load:")
	if err := env.CreatePods(ctx, scenario.MakePod("agent").OwnerReference("DaemonSet", "agent", "uid-agent").Obj()); err != nil {
		return err
	}
	if _, err := env.WaitForPodBound(ctx, "agent", scenario.DefaultWait); err != nil {
		return err
	}
	env.ShowAttempt("agent")

	cooler := usage("0.30", "0.50", "0.40", "0.30", "0.30", "0.30")
	env.Logf("annotator: node1 cooled down to %s; the annotation update wakes web (Dynamic's queueing hint)",
		describeLoad(cooler))
	start := time.Now()
	if err := annotateNode(ctx, env, "node1", cooler); err != nil {
		return err
	}
	if err := env.ExpectBound(ctx, map[string]string{"web": "node1"}, "web"); err != nil {
		return err
	}
	// The backoff of a pod that failed once is 1 s; a node event that the
	// hint accepts moves it at once, well before the periodic flush.
	env.Logf("web was bound %.1fs after the annotation changed", time.Since(start).Seconds())
	return nil
}

func runDynamicLeastLoaded(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, scenario.Nodes("node1", "node2", "node3")...); err != nil {
		return err
	}
	// Weighted idle share, crane's weights (0.2, 0.3, 0.5 per resource):
	//   node1: (0.9×0.2 + 0.5×0.3 + 0.4×0.5 + 0.7×1.0) × 100 / 2 = 61
	//   node2: (0.7×1.0 + 0.7×1.0) × 100 / 2                      = 70
	//   node3: (0.5×1.0 + 0.8×1.0) × 100 / 2                      = 65
	load := map[string]map[string]string{
		"node1": usage("0.10", "0.50", "0.60", "0.30", "0.30", "0.30"),
		"node2": flat("0.30"),
		"node3": usage("0.50", "0.50", "0.50", "0.20", "0.20", "0.20"),
	}
	for _, n := range []string{"node1", "node2", "node3"} {
		env.Logf("annotator: %s %s (5m/1h/1d)", n, describeLoad(load[n]))
		if err := annotateNode(ctx, env, n, load[n]); err != nil {
			return err
		}
	}
	env.Logf("node1 is the least busy right now, but the 1 h and 1 d averages weigh more (0.3 and 0.5 of each resource)")
	if err := env.PlaceAndCheck(ctx, map[string]string{"batch": "node2"}, scenario.MakePod("batch").Obj()); err != nil {
		return err
	}
	return expectDynamicScores(ctx, env, "batch", map[string]int64{"node1": 61, "node2": 70, "node3": 65})
}

// expectDynamicScores checks Dynamic's score (before its weight of 3) of
// the pod's last attempt on each node in want that is among the top scores.
func expectDynamicScores(ctx context.Context, env *scenario.Env, pod string, want map[string]int64) error {
	last, err := env.WaitForScheduledAttempt(ctx, pod, scenario.DefaultWait)
	if err != nil {
		return err
	}
	for _, n := range last.TopScores(3) {
		w, ok := want[n.Name]
		if !ok {
			continue
		}
		if got := scenario.Weighted(last, n, dynamic.Name); got != w*3 {
			return fmt.Errorf("%s on %s: Dynamic scored %d (weighted), want %d × 3", pod, n.Name, got, w)
		}
	}
	return nil
}

func runDynamicHotValue(ctx context.Context, env *scenario.Env) error {
	names := []string{"node1", "node2", "node3"}
	if err := env.CreateNodes(ctx, scenario.Nodes(names...)...); err != nil {
		return err
	}
	idle := map[string]string{"node1": "0.10", "node2": "0.12", "node3": "0.14"}
	for _, n := range names {
		env.Logf("annotator: %s at %s on every metric (load score about %d)", n, idle[n], loadScore(idle[n]))
		if err := annotateNode(ctx, env, n, flat(idle[n])); err != nil {
			return err
		}
	}
	policy, err := dynamic.ParsePolicy([]byte(cranePolicy))
	if err != nil {
		return err
	}
	env.Logf("the scenario plays the annotator's hot-value part: after each binding it reads the Scheduled event " +
		"(annotator.BindingFromEvent), records it (annotator.BindingRecords) and writes node_hot_value = " +
		"⌊bindings in 5m / 5⌋ + ⌊bindings in 1m / 2⌋ (annotator.HotValue) on every node, as `minisched annotate` " +
		"does every sync period")
	records := annotator.NewBindingRecords(annotator.DefaultBindingHeapSize)
	count := map[string]int{}
	const burst = 6
	for i := 1; i <= burst; i++ {
		name := fmt.Sprintf("burst%d", i)
		if err := env.CreatePods(ctx, scenario.MakePod(name).Obj()); err != nil {
			return err
		}
		p, err := env.WaitForPodBound(ctx, name, scenario.DefaultWait)
		if err != nil {
			return err
		}
		if _, err := env.WaitForAttempts(ctx, name, 1, scenario.DefaultWait); err != nil {
			return err
		}
		env.ShowAttempt(name)
		count[p.Spec.NodeName]++
		b, err := scheduledBinding(ctx, env, name)
		if err != nil {
			return err
		}
		records.Add(b)
		var hot []string
		for _, n := range names {
			value := annotator.HotValue(policy.Spec.HotValue, records, n, time.Now())
			hot = append(hot, fmt.Sprintf("%s=%d", n, value))
			if err := annotateNode(ctx, env, n, map[string]string{dynamic.HotValueKey: fmt.Sprint(value)}); err != nil {
				return err
			}
		}
		env.Logf("  annotator: node_hot_value %s", strings.Join(hot, " "))
	}
	var spread []string
	for _, n := range names {
		spread = append(spread, fmt.Sprintf("%s %d", n, count[n]))
	}
	sort.Strings(spread)
	env.Logf("the burst of %d: %s; without the hot value all would have gone to node1", burst, strings.Join(spread, ", "))
	for _, n := range names {
		if count[n] != burst/len(names) {
			return fmt.Errorf("%s got %d pods, want %d each: %v", n, count[n], burst/len(names), count)
		}
	}
	return nil
}

// loadScore is Dynamic's score of a node with usage u on every metric:
// (1 − u) × 100, truncated.
func loadScore(u string) int {
	var f float64
	_, _ = fmt.Sscan(u, &f)
	return int((1 - f) * 100)
}

// scheduledBinding waits for the scheduler's Scheduled event about pod (it
// is written asynchronously) and reads the binding from it, as the
// annotator does from its event informer.
func scheduledBinding(ctx context.Context, e *scenario.Env, pod string) (annotator.Binding, error) {
	var b annotator.Binding
	sel := fields.Set{"involvedObject.name": pod, "reason": "Scheduled"}.AsSelector().String()
	err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, e.WaitLimit(scenario.DefaultWait), true, func(ctx context.Context) (bool, error) {
		list, err := e.Client.CoreV1().Events(e.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		var ok bool
		b, ok, err = annotator.BindingFromEvent(&list.Items[0])
		if err == nil && !ok {
			err = fmt.Errorf("event %s is not a Scheduled event of type Normal", list.Items[0].Name)
		}
		return ok, err
	})
	if err != nil {
		return b, fmt.Errorf("reading the Scheduled event of %s: %w", pod, err)
	}
	return b, nil
}

func runStatefulSetOrdinal(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, scenario.Nodes(scenario.Numbered("node", 0, 4)...)...); err != nil {
		return err
	}
	owner, err := createStatefulSet(ctx, env, "app")
	if err != nil {
		return err
	}
	member := func(name string) *v1.Pod {
		p := scenario.MakePod(name).Label("app", "kafka").Obj()
		p.OwnerReferences = []metav1.OwnerReference{*owner}
		return p
	}
	if err := env.CreatePods(ctx, member("app-0"), member("app-1"), member("app-2")); err != nil {
		return err
	}
	for _, name := range []string{"app-0", "app-1", "app-2"} {
		msg, err := env.WaitForPodUnschedulable(ctx, name, scenario.DefaultWait)
		if err != nil {
			return err
		}
		env.Logf("%s pending: %s", name, msg)
		if want := "0/5 nodes are available: 5 node(s) had no ordinal label."; !strings.HasPrefix(msg, want) {
			return fmt.Errorf("%s: message %q, want it to start with %q", name, msg, want)
		}
	}
	// Ordinals do not follow node names, so landing right is no accident.
	labels := map[string]string{"node1": "0", "node2": "1", "node3": "2", "node4": "3"}
	env.Logf("labelling node1..node4 with %s 0..3; node0 stays unlabelled", ordinalLabel)
	for _, node := range []string{"node1", "node2", "node3", "node4"} {
		if err := env.LabelNode(ctx, node, ordinalLabel, labels[node]); err != nil {
			return err
		}
	}
	want := map[string]string{"app-0": "node1", "app-1": "node2", "app-2": "node3", "app-3": "node4"}
	if err := env.ExpectBound(ctx, want, "app-0", "app-1", "app-2"); err != nil {
		return err
	}
	env.Logf("deleting app-1 and creating it again, as its StatefulSet would")
	if err := env.DeletePod(ctx, "app-1"); err != nil {
		return err
	}
	if err := env.WaitForPodGone(ctx, "app-1", scenario.DefaultWait); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, member("app-1"), member("app-3"), member("app-4")); err != nil {
		return err
	}
	if err := env.ExpectBound(ctx, want, "app-1", "app-3"); err != nil {
		return err
	}
	msg, err := env.WaitForPodUnschedulable(ctx, "app-4", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("app-4 pending: %s", msg)
	if want := "0/5 nodes are available: 1 node(s) had no ordinal label, 4 node(s) had a different ordinal."; !strings.HasPrefix(msg, want) {
		return fmt.Errorf("app-4: message %q, want it to start with %q", msg, want)
	}
	// A pod no StatefulSet owns is held by PreEnqueue: never tried at all.
	if err := env.CreatePods(ctx, scenario.MakePod("stray-0").Label("app", "kafka").Obj()); err != nil {
		return err
	}
	if err := env.ExpectNoNewAttempts(ctx, "stray-0", time.Second); err != nil {
		return err
	}
	env.Logf("stray-0, owned by no StatefulSet, was never tried: PreEnqueue keeps it out of activeQ")
	return nil
}

// createStatefulSet creates a StatefulSet with no replicas (no controller
// runs here; the scenario creates its pods) and returns the controller
// reference its pods carry.
func createStatefulSet(ctx context.Context, e *scenario.Env, name string) (*metav1.OwnerReference, error) {
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas: new(int32),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kafka"}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "kafka"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c0", Image: builders.PauseImage}}},
			},
		},
	}
	created, err := e.Client.AppsV1().StatefulSets(e.Namespace).Create(ctx, sts, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating StatefulSet %s: %w", name, err)
	}
	return metav1.NewControllerRef(created, appsv1.SchemeGroupVersion.WithKind("StatefulSet")), nil
}
