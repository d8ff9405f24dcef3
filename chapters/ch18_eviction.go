// Chapter 18's stories (docs/18-eviction.md): pods leaving the nodes they
// were placed on, made to leave by the components that do it on a real
// cluster — kube-controller-manager's node lifecycle, taint-eviction,
// ReplicaSet and disruption controllers, the apiserver's Eviction API,
// KWOK playing the kubelets — and placed again by the scheduler. Only the
// kubelet's own eviction, which needs a kubelet that measures memory, is
// played by the story, which says so.

package chapters

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/explain"
	"github.com/minisched/minisched/minisched"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/testenv"
)

// The controllers chapter 18's stories run, beside KWOK.
var (
	// taintControllers evict from NoExecute-tainted nodes, and replace.
	taintControllers = []string{testenv.NodeLifecycleController, testenv.TaintEvictionController,
		testenv.ReplicaSetController}
	// budgetControllers replace, and keep PodDisruptionBudgets' status.
	budgetControllers = []string{testenv.ReplicaSetController, testenv.DisruptionController}
)

// The DisruptionTarget reasons of the taint-eviction controller and of the
// Eviction API (k8s.io/api names only the scheduler's and the kubelet's).
const (
	reasonDeletionByTaintManager = "DeletionByTaintManager"
	reasonEvictionByEvictionAPI  = "EvictionByEvictionAPI"
)

// maintenance is the NoExecute taint of ch18-noexecute.
var maintenance = v1.Taint{Key: "maintenance", Value: "true", Effect: v1.TaintEffectNoExecute}

// chapter18 is chapter 18's stories.
func chapter18() []scenario.Scenario {
	kwok := scenario.Parts{scenario.KWOK}
	return []scenario.Scenario{
		{
			Name: "ch18-noexecute", Chapter: 18, Parts: kwok, Controllers: taintControllers, Run: runNoExecute,
			Description: "a NoExecute taint: the taint-eviction controller deletes the pod that does not tolerate " +
				"it, its ReplicaSet's replacement goes elsewhere; tolerationSeconds delays, removing the taint cancels",
		},
		{
			Name: "ch18-node-unreachable", Chapter: 18, Parts: kwok, Controllers: taintControllers,
			Run: runNodeUnreachable,
			Description: "a kubelet stops: the node lifecycle controller marks the node Unknown and taints it " +
				"unreachable; a pod tolerating that for 5s is replaced on a healthy node, the default 300s stay",
		},
		{
			Name: "ch18-memory-pressure", Chapter: 18, Parts: kwok,
			Controllers: []string{testenv.NodeLifecycleController}, Run: runMemoryPressure,
			Description: "a node reports MemoryPressure: the node lifecycle controller taints it " +
				"memory-pressure:NoSchedule, and TaintToleration keeps new pods off it",
		},
		{
			Name: "ch18-kubelet-evicts", Chapter: 18, Parts: kwok, Run: runKubeletEvicts,
			Description: "the kubelet evicts the pod furthest over its memory request: the pod is Failed, " +
				"Evicted, and the scheduler counts it gone, so a pending pod takes its place at once",
		},
		{
			Name: "ch18-eviction-api", Chapter: 18, Parts: kwok, Controllers: budgetControllers,
			Run: runEvictionAPI,
			Description: "the Eviction API with a PodDisruptionBudget: the first eviction is allowed, the second " +
				"refused with 429 until the replacement is ready",
		},
		{
			Name: "ch18-descheduler", Chapter: 18, Parts: scenario.Parts{scenario.KWOK, scenario.Descheduler},
			Controllers: budgetControllers, Run: runDescheduler,
			Description: "the descheduler evicts, through the Eviction API, the pods a new NoSchedule taint " +
				"does not let stay; the budget lets one go at a time, and the scheduler places each again",
		},
		{
			Name: "ch18-preemption-ignores-pdb", Chapter: 18, Parts: kwok, Controllers: budgetControllers,
			Run: runPreemptionIgnoresPDB,
			Description: "where the Eviction API refuses, DefaultPreemption still deletes the victim: a budget " +
				"only ranks a preemption's candidates",
		},
	}
}

// webPod is the template of the stories' ReplicaSets: a small pod whose
// deletion waits the usual 30s (KWOK, playing its kubelet, ends it at once).
func webPod() *builders.PodWrapper {
	return scenario.MakePod("web").Req(cpus("100m")).TerminationGracePeriod(30)
}

// noExecuteToleration tolerates the taint for seconds (nil: for ever).
func noExecuteToleration(key string, seconds *int64) v1.Toleration {
	return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute,
		TolerationSeconds: seconds}
}

// since says how long ago start was, in tenths of a second.
func since(start time.Time) string { return fmt.Sprintf("+%.1fs", time.Since(start).Seconds()) }

// placedAgain waits for the ReplicaSet's pod that replaces old, and for the
// attempt that bound it; it checks the replacement went to want and that
// TaintToleration is what rejected the node old was on, tells it all, and
// returns the replacement's name.
func placedAgain(ctx context.Context, env *scenario.Env, rs string, old v1.Pod, want string, start time.Time) (
	string, error) {
	pods, err := env.WaitForReplicas(ctx, rs, 1, []string{old.Name}, scenario.DefaultWait)
	if err != nil {
		return "", err
	}
	repl := pods[0]
	a, err := env.WaitForScheduledAttempt(ctx, repl.Name, scenario.DefaultWait)
	if err != nil {
		return "", err
	}
	env.Logf("%s %s's replacement %s is bound to %s (attempt %d); %s", since(start), rs, repl.Name, a.Node,
		a.Attempt, rejections(a))
	if a.Node != want {
		return "", fmt.Errorf("%s went to %s, want %s", repl.Name, a.Node, want)
	}
	if !rejectedBy(a, old.Spec.NodeName, "TaintToleration") {
		return "", fmt.Errorf("%s's attempt does not show TaintToleration rejecting %s: %s", repl.Name,
			old.Spec.NodeName, rejections(a))
	}
	return repl.Name, nil
}

// explainPod prints what `minisched explain` prints for the pod (from the
// record the scheduler wrote on it), and checks that it names the plugin:
// a replacement is explained like any other pod.
func explainPod(ctx context.Context, env *scenario.Env, name, plugin string) error {
	var b strings.Builder
	if err := explain.Pod(ctx, env.Client, env.Namespace, name, &b, explain.Options{}); err != nil {
		return fmt.Errorf("explaining %s: %w", name, err)
	}
	env.Logf("minisched explain %s -n %s:", name, env.Namespace)
	for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		env.Logf("  %s", l)
	}
	if !strings.Contains(b.String(), plugin) {
		return fmt.Errorf("minisched explain %s does not name %s", name, plugin)
	}
	return nil
}

// rejections says which plugin rejected each node an attempt filtered out.
func rejections(a minisched.Attempt) string {
	var out []string
	for _, n := range a.Rejections() {
		out = append(out, fmt.Sprintf("%s rejected by %s: %q", n.Name, n.RejectedBy, n.Reason))
	}
	if len(out) == 0 {
		return "no node rejected"
	}
	return strings.Join(out, "; ")
}

// rejectedBy says whether the attempt's plugin rejected the node.
func rejectedBy(a minisched.Attempt, node, plugin string) bool {
	for _, n := range a.Rejections() {
		if n.Name == node && n.RejectedBy == plugin {
			return true
		}
	}
	return false
}

// onlyPod returns the ReplicaSet's one ready pod.
func onlyPod(ctx context.Context, env *scenario.Env, rs string) (v1.Pod, error) {
	pods, err := env.WaitForReplicas(ctx, rs, 1, nil, scenario.DefaultWait)
	if err != nil {
		return v1.Pod{}, err
	}
	return pods[0], nil
}

// runNoExecute: node a runs web's pod and three pods tolerating the
// maintenance taint for 3s, for 30s and for ever; node b is empty. a is
// tainted maintenance=true:NoExecute.
func runNoExecute(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, scenario.Nodes("a")...); err != nil {
		return err
	}
	if err := env.CreateReplicaSet(ctx, "web", 1, webPod().Obj()); err != nil {
		return err
	}
	brief := scenario.MakePod("brief").Toleration(noExecuteToleration(maintenance.Key, ptr.To[int64](3))).Obj()
	patient := scenario.MakePod("patient").Toleration(noExecuteToleration(maintenance.Key, ptr.To[int64](30))).Obj()
	steadfast := scenario.MakePod("steadfast").Toleration(noExecuteToleration(maintenance.Key, nil)).Obj()
	if err := createRunning(ctx, env, brief, patient, steadfast); err != nil {
		return err
	}
	old, err := onlyPod(ctx, env, "web")
	if err != nil {
		return err
	}
	if err := env.CreateNodes(ctx, scenario.Nodes("b")...); err != nil {
		return err
	}
	env.Logf("on a: %s (ReplicaSet web), brief (tolerates maintenance 3s), patient (30s), steadfast (for ever); "+
		"b is empty", old.Name)
	marked, err := env.WatchPodCondition(ctx, old.Name, v1.DisruptionTarget)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := env.TaintNode(ctx, "a", maintenance); err != nil {
		return err
	}
	env.Logf("+0.0s node a tainted maintenance=true:NoExecute")
	cond, err := marked(scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("%s %s: condition DisruptionTarget, reason %s: %q", since(start), old.Name, cond.Reason, cond.Message)
	if cond.Reason != reasonDeletionByTaintManager {
		return fmt.Errorf("%s's DisruptionTarget reason is %s, want %s", old.Name, cond.Reason,
			reasonDeletionByTaintManager)
	}
	notes, err := env.WaitForEvent(ctx, old.Name, "TaintManagerEviction", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("%s event TaintManagerEviction about %s: %q", since(start), old.Name, notes[0])
	repl, err := placedAgain(ctx, env, "web", old, "b", start)
	if err != nil {
		return err
	}
	if err := explainPod(ctx, env, repl, "TaintToleration"); err != nil {
		return err
	}
	if err := env.WaitForPodGone(ctx, "brief", scenario.DefaultWait); err != nil {
		return err
	}
	took := time.Since(start)
	env.Logf("%s brief is gone: its 3s of toleration ran out", since(start))
	if took < 3*time.Second {
		return fmt.Errorf("brief went after %v, before its tolerationSeconds (3s)", took)
	}
	if err := env.UntaintNode(ctx, "a", maintenance.Key, maintenance.Effect); err != nil {
		return err
	}
	env.Logf("%s node a's maintenance taint removed", since(start))
	notes, err = env.WaitForEvent(ctx, "patient", "TaintManagerEviction", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("%s event TaintManagerEviction about patient: %q", since(start), notes[len(notes)-1])
	if !strings.HasPrefix(notes[len(notes)-1], "Cancelling deletion") {
		return fmt.Errorf("patient's event says %q, want \"Cancelling deletion of Pod ...\"", notes[len(notes)-1])
	}
	return stillOn(ctx, env, "a", "patient", "steadfast")
}

// stillOn checks that the pods are bound to node and not being deleted.
func stillOn(ctx context.Context, env *scenario.Env, node string, pods ...string) error {
	for _, name := range pods {
		p, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("%s should still run on %s: %w", name, node, err)
		}
		if p.Spec.NodeName != node || p.DeletionTimestamp != nil {
			return fmt.Errorf("%s is on %q, deletionTimestamp %v; want it still on %s", name, p.Spec.NodeName,
				p.DeletionTimestamp, node)
		}
	}
	return nil
}

// runNodeUnreachable: node a runs web's pod, which tolerates the
// unreachable taint for 5s, and stays, which has the default tolerations;
// b is empty. a's kubelet stops.
func runNodeUnreachable(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, scenario.Nodes("a")...); err != nil {
		return err
	}
	web := webPod().Toleration(noExecuteToleration(v1.TaintNodeUnreachable, ptr.To[int64](5))).Obj()
	if err := env.CreateReplicaSet(ctx, "web", 1, web); err != nil {
		return err
	}
	if err := createRunning(ctx, env, scenario.MakePod("stays").TerminationGracePeriod(30).Obj()); err != nil {
		return err
	}
	old, err := onlyPod(ctx, env, "web")
	if err != nil {
		return err
	}
	stays, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, "stays", metav1.GetOptions{})
	if err != nil {
		return err
	}
	env.Logf("stays asked for no toleration; the DefaultTolerationSeconds admission plugin gave it %s",
		describeTolerations(stays.Spec.Tolerations))
	if err := env.CreateNodes(ctx, scenario.Nodes("b")...); err != nil {
		return err
	}
	marked, err := env.WatchPodCondition(ctx, old.Name, v1.DisruptionTarget)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := env.StopKubelet(ctx, "a"); err != nil {
		return err
	}
	env.Logf("+0.0s node a's kubelet stops (the story takes over its Lease: KWOK no longer renews it, nor plays a)")
	ready, err := env.WaitForNodeCondition(ctx, "a", v1.NodeReady, v1.ConditionUnknown, scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("%s node a Ready=Unknown, reason %s: %q", since(start), ready.Reason, ready.Message)
	for _, effect := range []v1.TaintEffect{v1.TaintEffectNoSchedule, v1.TaintEffectNoExecute} {
		if _, err := env.WaitForNodeTaint(ctx, "a", v1.TaintNodeUnreachable, effect, scenario.DefaultWait); err != nil {
			return err
		}
		env.Logf("%s node a tainted %s:%s", since(start), v1.TaintNodeUnreachable, effect)
	}
	notes, err := env.WaitForEvent(ctx, "stays", "NodeNotReady", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("%s event NodeNotReady about the pods on a: %q (their Ready condition is False)", since(start), notes[0])
	cond, err := marked(scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("%s %s: DisruptionTarget, reason %s (its 5s of toleration ran out)", since(start), old.Name, cond.Reason)
	if _, err := placedAgain(ctx, env, "web", old, "b", start); err != nil {
		return err
	}
	if err := stillOn(ctx, env, "a", "stays"); err != nil {
		return err
	}
	env.Logf("%s stays: still on a, its 300s running", since(start))
	p, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, old.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// Seen now and then on a busy machine: KWOK finishes a deletion
		// it had started to play before the Lease was taken over.
		env.Logf("%s %s: gone, which a dead kubelet would not have done: KWOK, which plays it, had "+
			"work for that pod under way (on a real cluster it stays Terminating)", since(start), old.Name)
	case err != nil:
		return err
	default:
		env.Logf("%s %s: Terminating: no kubelet is there to confirm that its containers stopped", since(start),
			p.Name)
	}
	return nil
}

// describeTolerations renders tolerations as key:effect for Ns.
func describeTolerations(ts []v1.Toleration) string {
	var out []string
	for _, t := range ts {
		s := fmt.Sprintf("%s:%s", t.Key, t.Effect)
		if t.TolerationSeconds != nil {
			s += fmt.Sprintf(" for %ds", *t.TolerationSeconds)
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// runMemoryPressure: nodes a (4 cpu) and b (2 cpu); a reports
// MemoryPressure.
func runMemoryPressure(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, cpuNode("a", "4"), cpuNode("b", "2")); err != nil {
		return err
	}
	start := time.Now()
	if err := env.LabelNode(ctx, "a", testenv.MemoryPressureLabel, "true"); err != nil {
		return err
	}
	env.Logf("+0.0s node a labelled %s=true: KWOK, playing a's kubelet, reports memory pressure",
		testenv.MemoryPressureLabel)
	cond, err := env.WaitForNodeCondition(ctx, "a", v1.NodeMemoryPressure, v1.ConditionTrue, scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("%s node a MemoryPressure=True, reason %s: %q", since(start), cond.Reason, cond.Message)
	if _, err := env.WaitForNodeTaint(ctx, "a", v1.TaintNodeMemoryPressure, v1.TaintEffectNoSchedule,
		scenario.DefaultWait); err != nil {
		return err
	}
	env.Logf("%s node a tainted %s:NoSchedule by the node lifecycle controller", since(start),
		v1.TaintNodeMemoryPressure)
	pods := []*v1.Pod{
		scenario.MakePod("besteffort").Obj(),
		scenario.MakePod("burstable").Req(map[v1.ResourceName]string{v1.ResourceCPU: "100m",
			v1.ResourceMemory: "64Mi"}).Obj(),
		scenario.MakePod("agent").Toleration(v1.Toleration{Key: v1.TaintNodeMemoryPressure,
			Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}).NodeSelector(v1.LabelHostname, "a").Obj(),
		scenario.MakePod("big").Req(cpus("3")).Obj(),
	}
	if err := env.CreatePods(ctx, pods...); err != nil {
		return err
	}
	for _, name := range []string{"besteffort", "burstable"} {
		a, err := env.WaitForScheduledAttempt(ctx, name, scenario.DefaultWait)
		if err != nil {
			return err
		}
		if a.Node != "b" {
			return fmt.Errorf("%s went to %s, want b", name, a.Node)
		}
		env.Logf("%s went to b: %s", name, rejections(a))
		if !rejectedBy(a, "a", "TaintToleration") {
			return fmt.Errorf("%s's attempt does not show TaintToleration rejecting a: %s", name, rejections(a))
		}
	}
	agent, err := env.WaitForScheduledAttempt(ctx, "agent", scenario.DefaultWait)
	if err != nil {
		return err
	}
	if agent.Node != "a" {
		return fmt.Errorf("agent went to %s, want a", agent.Node)
	}
	env.Logf("agent tolerates %s:NoSchedule, as DaemonSet pods do, and runs on a", v1.TaintNodeMemoryPressure)
	msg, err := env.WaitForPodUnschedulable(ctx, "big", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("big (3 cpu) fits only a: %s", msg)
	return nil
}

// runKubeletEvicts: node a (2 cpu) runs cache (1 cpu, 100Mi of memory
// requested, 600Mi used) and steady (1 cpu, 1Gi requested, 300Mi used);
// urgent (1 cpu) waits. a's kubelet runs short of memory.
func runKubeletEvicts(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, cpuNode("a", "2")); err != nil {
		return err
	}
	req := func(cpu, mem string) map[v1.ResourceName]string {
		return map[v1.ResourceName]string{v1.ResourceCPU: cpu, v1.ResourceMemory: mem}
	}
	if err := createRunning(ctx, env, scenario.MakePod("cache").Req(req("1", "100Mi")).Obj(),
		scenario.MakePod("steady").Req(req("1", "1Gi")).Obj()); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, scenario.MakePod("urgent").Req(cpus("1")).Obj()); err != nil {
		return err
	}
	msg, err := env.WaitForPodUnschedulable(ctx, "urgent", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("urgent waits: %s", msg)
	env.Logf("a's memory.available falls below 100Mi. cache uses 600Mi of its 100Mi request, steady 300Mi of its " +
		"1Gi: the kubelet ranks first the pods above their request, so cache goes")
	message := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. " +
		"Container c0 was using 600Mi, request is 100Mi, has larger consumption of memory. "
	start := time.Now()
	if err := env.KubeletEvict(ctx, "cache", message); err != nil {
		return err
	}
	p, err := env.WaitForPodBound(ctx, "urgent", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("%s urgent is bound to %s: the scheduler's informer drops Failed pods, so cache's cpu is free", since(start),
		p.Spec.NodeName)
	cache, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, "cache", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("cache should still exist, Failed: %w", err)
	}
	env.Logf("cache is still there: phase %s, reason %s (a ReplicaSet would make a replacement; the pod "+
		"garbage collector deletes such pods past --terminated-pod-gc-threshold)", cache.Status.Phase, cache.Status.Reason)
	if cache.Status.Phase != v1.PodFailed || cache.Status.Reason != "Evicted" {
		return fmt.Errorf("cache is %s/%s, want Failed/Evicted", cache.Status.Phase, cache.Status.Reason)
	}
	return nil
}

// budget is a PodDisruptionBudget keeping minAvailable pods with app=name.
func budget(name string, minAvailable int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(minAvailable)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}},
	}
}

// runEvictionAPI drains two nodes as `kubectl drain` does, cordoning
// each, then evicting its pods through the Eviction API: ReplicaSet web
// has a pod on each of a and b (1 cpu each, 1 cpu per pod), and a budget
// keeping one available.
func runEvictionAPI(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, cpuNode("a", "1"), cpuNode("b", "1")); err != nil {
		return err
	}
	if err := env.CreateReplicaSet(ctx, "web", 2, scenario.MakePod("web").Req(cpus("1")).TerminationGracePeriod(30).Obj()); err != nil {
		return err
	}
	if err := env.CreateObjects(ctx, budget("web", 1)); err != nil {
		return err
	}
	pods, err := env.WaitForReplicas(ctx, "web", 2, nil, scenario.DefaultWait)
	if err != nil {
		return err
	}
	b, err := env.WaitForDisruptionsAllowed(ctx, "web", 1, scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("web's pods run on a and b; the disruption controller writes budget web (minAvailable 1): %s",
		scenario.DescribeBudget(b))
	onA, onB := pods[0], pods[1]
	if onA.Spec.NodeName != "a" {
		onA, onB = onB, onA
	}
	if err := env.SetUnschedulable(ctx, "a", true); err != nil {
		return err
	}
	marked, err := env.WatchPodCondition(ctx, onA.Name, v1.DisruptionTarget)
	if err != nil {
		return err
	}
	if err := env.Evict(ctx, onA.Name); err != nil {
		return fmt.Errorf("evicting %s: %s", onA.Name, scenario.DescribeRefusal(err))
	}
	cond, err := marked(scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("drain a: cordoned; evict %s: allowed; DisruptionTarget, reason %s: %q", onA.Name, cond.Reason,
		cond.Message)
	if cond.Reason != reasonEvictionByEvictionAPI {
		return fmt.Errorf("%s's DisruptionTarget reason is %s, want %s", onA.Name, cond.Reason,
			reasonEvictionByEvictionAPI)
	}
	if err := env.WaitForPodGone(ctx, onA.Name, scenario.DefaultWait); err != nil {
		return err
	}
	if err := env.SetUnschedulable(ctx, "b", true); err != nil {
		return err
	}
	err = env.Evict(ctx, onB.Name)
	if err == nil {
		return fmt.Errorf("evicting %s was allowed, want a refusal: %s's replacement cannot be ready", onB.Name,
			onA.Name)
	}
	env.Logf("drain b: cordoned; evict %s: refused, %s", onB.Name, scenario.DescribeRefusal(err))
	if !apierrors.IsTooManyRequests(err) {
		return fmt.Errorf("evicting %s: %s, want 429", onB.Name, scenario.DescribeRefusal(err))
	}
	repl, msg, err := pendingReplacement(ctx, env, "web")
	if err != nil {
		return err
	}
	env.Logf("%s's replacement %s waits: %s", onA.Name, repl, msg)
	if err := env.SetUnschedulable(ctx, "a", false); err != nil {
		return err
	}
	env.Logf("a's maintenance is done: uncordoned")
	ready, err := env.WaitForReplicas(ctx, "web", 2, nil, scenario.DefaultWait)
	if err != nil {
		return err
	}
	if b, err = env.WaitForDisruptionsAllowed(ctx, "web", 1, scenario.DefaultWait); err != nil {
		return err
	}
	for _, p := range ready {
		if p.Name != onB.Name {
			env.Logf("the replacement %s is ready on %s; budget web: %s", p.Name, p.Spec.NodeName,
				scenario.DescribeBudget(b))
		}
	}
	if err := env.Evict(ctx, onB.Name); err != nil {
		return fmt.Errorf("evicting %s again: %s", onB.Name, scenario.DescribeRefusal(err))
	}
	if err := env.WaitForPodGone(ctx, onB.Name, scenario.DefaultWait); err != nil {
		return err
	}
	env.Logf("drain b, again: evict %s: allowed", onB.Name)
	repl, msg, err = pendingReplacement(ctx, env, "web")
	if err != nil {
		return err
	}
	env.Logf("its replacement %s waits in turn: %s", repl, msg)
	return nil
}

// pendingReplacement waits for the ReplicaSet's one pod that no node
// took, and for the scheduler to find it unschedulable; it returns the
// pod's name and the FailedScheduling message.
func pendingReplacement(ctx context.Context, env *scenario.Env, rs string) (name, msg string, err error) {
	err = wait.PollUntilContextTimeout(ctx, scenario.PollInterval, env.WaitLimit(scenario.DefaultWait), true,
		func(ctx context.Context) (bool, error) {
			pods, err := env.PodsOf(ctx, rs)
			for _, p := range pods {
				if p.Spec.NodeName == "" {
					name = p.Name
				}
			}
			return name != "", err
		})
	if err != nil {
		return "", "", fmt.Errorf("ReplicaSet %s has no pending pod within %v: %w", rs, scenario.DefaultWait, err)
	}
	msg, err = env.WaitForPodUnschedulable(ctx, name, scenario.DefaultWait)
	return name, msg, err
}

// runPreemptionIgnoresPDB: node a (1 cpu) runs db's one pod (priority
// low), whose budget allows no disruption; urgent (priority high) needs
// the cpu.
func runPreemptionIgnoresPDB(ctx context.Context, env *scenario.Env) error {
	if err := setUpChapter10(ctx, env, cpuNode("a", "1")); err != nil {
		return err
	}
	if err := env.CreateReplicaSet(ctx, "db", 1, scenario.MakePod("db").PriorityClassName("low").
		Req(cpus("1")).TerminationGracePeriod(30).Obj()); err != nil {
		return err
	}
	if err := env.CreateObjects(ctx, budget("db", 1)); err != nil {
		return err
	}
	victim, err := onlyPod(ctx, env, "db")
	if err != nil {
		return err
	}
	b, err := env.WaitForDisruptionsAllowed(ctx, "db", 0, scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("%s (priority low) runs on a; budget db: %s", victim.Name, scenario.DescribeBudget(b))
	err = env.Evict(ctx, victim.Name)
	if err == nil {
		return fmt.Errorf("evicting %s was allowed, want a refusal", victim.Name)
	}
	env.Logf("evict %s: refused, %s", victim.Name, scenario.DescribeRefusal(err))
	marked, err := env.WatchPodCondition(ctx, victim.Name, v1.DisruptionTarget)
	if err != nil {
		return err
	}
	if err := env.CreatePods(ctx, scenario.MakePod("urgent").PriorityClassName("high").Req(cpus("1")).Obj()); err != nil {
		return err
	}
	cond, err := marked(scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("urgent (priority high) preempts %s all the same: DisruptionTarget, reason %s: %q", victim.Name,
		cond.Reason, cond.Message)
	if cond.Reason != v1.PodReasonPreemptionByScheduler {
		return fmt.Errorf("%s's DisruptionTarget reason is %s, want %s", victim.Name, cond.Reason,
			v1.PodReasonPreemptionByScheduler)
	}
	p, err := env.WaitForPodBound(ctx, "urgent", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("urgent is bound to %s; db's replacement waits for room", p.Spec.NodeName)
	return nil
}

// taintPolicy is the descheduler's policy for ch18-descheduler: one
// profile, RemovePodsViolatingNodeTaints with the default evictor.
const taintPolicy = `apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: taints
  pluginConfig:
  - name: DefaultEvictor
  - name: RemovePodsViolatingNodeTaints
  plugins:
    deschedule:
      enabled: [RemovePodsViolatingNodeTaints]
`

// runDescheduler: ReplicaSet web's two pods run on a, with a budget
// keeping one available; b joins cordoned, and a is tainted NoSchedule,
// which evicts nothing by itself. The descheduler runs; b is uncordoned;
// the descheduler runs again.
func runDescheduler(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, scenario.Nodes("a")...); err != nil {
		return err
	}
	if err := env.CreateReplicaSet(ctx, "web", 2, webPod().Obj()); err != nil {
		return err
	}
	if err := env.CreateObjects(ctx, budget("web", 1)); err != nil {
		return err
	}
	first, err := env.WaitForReplicas(ctx, "web", 2, nil, scenario.DefaultWait)
	if err != nil {
		return err
	}
	if _, err := env.WaitForDisruptionsAllowed(ctx, "web", 1, scenario.DefaultWait); err != nil {
		return err
	}
	// The descheduler evicts nothing from a cluster of one node; b joins
	// cordoned.
	if err := env.CreateNodes(ctx, scenario.MakeNode("b").Unschedulable(true).Obj()); err != nil {
		return err
	}
	taint := v1.Taint{Key: "maintenance", Value: "true", Effect: v1.TaintEffectNoSchedule}
	if err := env.TaintNode(ctx, "a", taint); err != nil {
		return err
	}
	env.Logf("web's pods %s and %s run on a; b joins, cordoned; a is tainted maintenance=true:NoSchedule, "+
		"which evicts nothing", first[0].Name, first[1].Name)
	for pass := 1; pass <= 2; pass++ {
		lines, err := env.RunDescheduler(ctx, taintPolicy)
		if err != nil {
			return err
		}
		env.Logf("descheduler %s, pass %d:", testenv.DeschedulerVersion, pass)
		evicted := 0
		for _, l := range lines {
			env.Logf("  %s", l)
			if strings.Contains(l, "Evicted pod") {
				evicted++
			}
		}
		if evicted != 1 {
			return fmt.Errorf("pass %d evicted %d pods, want 1: the budget allows one disruption at a time", pass, evicted)
		}
		if pass == 1 {
			// The replacement cannot be ready before b is uncordoned, so
			// the budget refused the second eviction whatever the timing.
			name, msg, err := pendingReplacement(ctx, env, "web")
			if err != nil {
				return err
			}
			env.Logf("the replacement %s waits: %s", name, msg)
			if err := env.SetUnschedulable(ctx, "b", false); err != nil {
				return err
			}
			env.Logf("b is uncordoned")
		}
		pods, err := env.WaitForReplicas(ctx, "web", 2, nil, scenario.DefaultWait)
		if err != nil {
			return err
		}
		onB := 0
		for _, p := range pods {
			if p.Spec.NodeName == "b" {
				onB++
			}
		}
		if onB != pass {
			return fmt.Errorf("after pass %d, %d of web's pods run on b, want %d", pass, onB, pass)
		}
		b, err := env.WaitForDisruptionsAllowed(ctx, "web", 1, scenario.DefaultWait)
		if err != nil {
			return err
		}
		env.Logf("minisched placed the replacement on b; %d of web's pods run there; budget web: %s", onB,
			scenario.DescribeBudget(b))
	}
	return nil
}
