// Chapter 10's stories (docs/10-preemption.md): preemption and nominated
// pods, with the helpers they need. They run the default profile
// (DefaultPreemption included) with KWOK, so victims really go away and pods
// have start times.

package chapters

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/minisched/minisched/minisched"
	"github.com/minisched/minisched/scenario"
)

// Priority classes of chapter 10 (cluster-wide; created once, kept).
var chapter10Classes = map[string]int32{"lowest": 10, "low": 20, "mid": 500, "high": 1000}

// holdFinalizer keeps a victim Terminating until the scenario lets it go.
const holdFinalizer = "minisched.example/hold"

// chapter10 is chapter 10's stories.
func chapter10() []scenario.Scenario {
	return []scenario.Scenario{
		{
			Name: "ch10-preemption", Chapter: 10, Parts: scenario.Parts{scenario.KWOK},
			Description: "a high-priority pod that fits nowhere evicts the lowest-priority pod that frees enough room, " +
				"is nominated to the node, and lands there once the victim is gone",
			Run: runPreemption,
		},
		{
			Name: "ch10-pdb", Chapter: 10, Parts: scenario.Parts{scenario.KWOK},
			Description: "a PodDisruptionBudget spares the pod it protects when another node can be freed instead",
			Run:         runPreemptionPDB,
		},
		{
			Name: "ch10-preemption-policy-never", Chapter: 10, Parts: scenario.Parts{scenario.KWOK},
			Description: "a pod whose priority class says preemptionPolicy: Never waits instead, and FailedScheduling " +
				"says why",
			Run: runPreemptionPolicyNever,
		},
		{
			Name: "ch10-nominated-node", Chapter: 10, Parts: scenario.Parts{scenario.KWOK},
			Description: "the nominated node is held while the victim terminates: a lower-priority pod created " +
				"meanwhile does not take the room, although it would fit",
			Run: runNominatedNodeHeld,
		},
		{
			Name: "ch10-two-preemptors", Chapter: 10, Parts: scenario.Parts{scenario.KWOK},
			Description: "two high-priority pods at once: the first preempts on the only node big enough for it, " +
				"the second, seeing that node held for the first, preempts on the other",
			Run: runTwoPreemptors,
		},
	}
}

func runPreemption(ctx context.Context, env *scenario.Env) error {
	if err := setUpChapter10(ctx, env, cpuNode("node0", "2")); err != nil {
		return err
	}
	if err := createRunning(ctx, env, scenario.MakePod("low").PriorityClassName("low").Req(cpus("1")).Obj(),
		scenario.MakePod("lowest").PriorityClassName("lowest").Req(cpus("1")).Obj()); err != nil {
		return err
	}
	return preemptAndReport(ctx, env, scenario.MakePod("high").PriorityClassName("high").Req(cpus("1")).Obj(),
		"node0", []string{"lowest"}, []string{"low"})
}

func runPreemptionPDB(ctx context.Context, env *scenario.Env) error {
	if err := setUpChapter10(ctx, env, cpuNode("node0", "2"), cpuNode("node1", "2")); err != nil {
		return err
	}
	// No disruption controller runs here, so the budget's status (0
	// disruptions allowed) is written by hand.
	if err := env.CreatePDB(ctx, pdb("db", map[string]string{"app": "db"}, 0)); err != nil {
		return err
	}
	db := scenario.MakePod("db").Label("app", "db").PriorityClassName("low").Req(cpus("2")).NodeName("node0").Obj()
	web := scenario.MakePod("web").Label("app", "web").PriorityClassName("low").Req(cpus("2")).NodeName("node1").Obj()
	if err := createRunning(ctx, env, db, web); err != nil {
		return err
	}
	env.Logf("db (protected by a PDB allowing 0 disruptions) runs on node0, web on node1; same priority")
	return preemptAndReport(ctx, env, scenario.MakePod("high").PriorityClassName("high").Req(cpus("1")).Obj(),
		"node1", []string{"web"}, []string{"db"})
}

func runPreemptionPolicyNever(ctx context.Context, env *scenario.Env) error {
	if err := setUpChapter10(ctx, env, cpuNode("node0", "2")); err != nil {
		return err
	}
	if err := env.CreatePriorityClass(ctx, priorityClass("high-never", 1000, v1.PreemptNever)); err != nil {
		return err
	}
	if err := createRunning(ctx, env, scenario.MakePod("low").PriorityClassName("low").Req(cpus("2")).Obj()); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, scenario.MakePod("polite").PriorityClassName("high-never").Req(cpus("1")).Obj()); err != nil {
		return err
	}
	msg, err := env.WaitForPodUnschedulable(ctx, "polite", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("polite (priority 1000, preemptionPolicy: Never) stays pending: %s", msg)
	if want := "preemption: not eligible due to preemptionPolicy=Never."; !strings.HasSuffix(msg, want) {
		return fmt.Errorf("FailedScheduling says %q, want it to end with %q", msg, want)
	}
	// The condition is written before the attempt is told to the observer:
	// wait for the attempt, then check no other follows.
	if _, err := env.WaitForAttempts(ctx, "polite", 1, scenario.DefaultWait); err != nil {
		return err
	}
	if err := env.ExpectNoNewAttempts(ctx, "polite", 2*time.Second); err != nil {
		return err
	}
	p, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, "low", metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp != nil {
		return fmt.Errorf("low should still run: %v", err)
	}
	return nil
}

func runNominatedNodeHeld(ctx context.Context, env *scenario.Env) error {
	if err := setUpChapter10(ctx, env, cpuNode("node0", "3")); err != nil {
		return err
	}
	// The victim's finalizer keeps it Terminating (as a long grace period
	// would) until the scenario removes it.
	slow := scenario.MakePod("slow").PriorityClassName("low").Req(cpus("2")).Obj()
	slow.Finalizers = []string{holdFinalizer}
	if err := createRunning(ctx, env, slow); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, scenario.MakePod("high").PriorityClassName("high").Req(cpus("3")).Obj()); err != nil {
		return err
	}
	node, err := waitNominated(ctx, env, "high")
	if err != nil {
		return err
	}
	if err := waitTerminating(ctx, env, "slow"); err != nil {
		return err
	}
	env.Logf("high (3 cpu) is nominated to %s; the victim slow is Terminating (%s)", node, disruption(ctx, env, "slow"))
	// node0 has 3 cpu: slow's 2 are still counted, 1 is free. "sneaky" asks
	// for that 1 cpu with a lower priority than high: Filter counts high's
	// 3 cpu on its nominated node, so sneaky does not fit there, and
	// evicting slow would not make room for both.
	if err := env.CreatePods(ctx, scenario.MakePod("sneaky").PriorityClassName("mid").Req(cpus("1")).Obj()); err != nil {
		return err
	}
	msg, err := env.WaitForPodUnschedulable(ctx, "sneaky", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("sneaky (priority 500, 1 cpu) does not take the free cpu held for high: %s", msg)
	// Preemption's own verdict is Filter's, rerun with slow removed and
	// high counted: still no room.
	want := "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Insufficient cpu."
	if msg != want {
		return fmt.Errorf("sneaky's FailedScheduling says %q, want %q", msg, want)
	}
	env.Logf("letting slow finish terminating")
	if err := removeFinalizer(ctx, env, "slow"); err != nil {
		return err
	}
	p, err := env.WaitForPodBound(ctx, "high", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("high bound to %s; sneaky still waits, node0 is full", p.Spec.NodeName)
	if p.Spec.NodeName != node {
		return fmt.Errorf("high bound to %s, not to its nominated node %s", p.Spec.NodeName, node)
	}
	sp, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, "sneaky", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if sp.Spec.NodeName != "" {
		return fmt.Errorf("sneaky bound to %s, want it pending", sp.Spec.NodeName)
	}
	return nil
}

func runTwoPreemptors(ctx context.Context, env *scenario.Env) error {
	// Only node1 is big enough for first, so where it lands does not hang on
	// which of the two concurrent evictions finishes first.
	if err := setUpChapter10(ctx, env, cpuNode("node0", "2"), cpuNode("node1", "3")); err != nil {
		return err
	}
	if err := createRunning(ctx, env,
		scenario.MakePod("victim-low").PriorityClassName("low").Req(cpus("2")).NodeName("node0").Obj(),
		scenario.MakePod("victim-lowest").PriorityClassName("lowest").Req(cpus("3")).NodeName("node1").Obj()); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, scenario.MakePod("first").PriorityClassName("high").Req(cpus("3")).Obj(),
		scenario.MakePod("second").PriorityClassName("mid").Req(cpus("2")).Obj()); err != nil {
		return err
	}
	want := map[string]string{"first": "node1", "second": "node0"}
	for _, name := range []string{"first", "second"} {
		a, err := waitNominatedAttempt(ctx, env, name)
		if err != nil {
			return err
		}
		env.Logf("%s: %s", name, a.Message)
		env.Logf("%s nominated to %s", name, a.NominatedNode)
		if a.NominatedNode != want[name] {
			return fmt.Errorf("%s nominated to %s, want %s", name, a.NominatedNode, want[name])
		}
	}
	for _, v := range []string{"victim-low", "victim-lowest"} {
		notes, err := env.WaitForEvent(ctx, v, "Preempted", scenario.DefaultWait)
		if err != nil {
			return err
		}
		if err := env.WaitForPodGone(ctx, v, scenario.DefaultWait); err != nil {
			return err
		}
		env.Logf("victim %s: %s; it terminated and is gone", v, notes[0])
	}
	return env.ExpectBound(ctx, want, "first", "second")
}

// preemptAndReport creates preemptor, waits for its nomination, its victims
// to go and it to bind to node, checks survivors still run, and tells the
// story: the first FailedScheduling message, the nominated node, the
// victims and their Preempted events.
func preemptAndReport(ctx context.Context, e *scenario.Env, preemptor *v1.Pod, node string, victims,
	survivors []string) error {
	if err := e.CreatePods(ctx, preemptor); err != nil {
		return err
	}
	// The nomination is read from the attempt log, not the pod: KWOK lets
	// the victim go at once, and the apiserver clears
	// status.nominatedNodeName when the pod is bound, so a poll of the pod
	// may never see it.
	a, err := waitNominatedAttempt(ctx, e, preemptor.Name)
	if err != nil {
		return err
	}
	nominated := a.NominatedNode
	e.Logf("%s: %s", preemptor.Name, a.Message)
	e.Logf("%s nominated to %s", preemptor.Name, nominated)
	for _, v := range victims {
		notes, err := e.WaitForEvent(ctx, v, "Preempted", scenario.DefaultWait)
		if err != nil {
			return err
		}
		if err := e.WaitForPodGone(ctx, v, scenario.DefaultWait); err != nil {
			return err
		}
		e.Logf("victim %s: %s; it terminated and is gone", v, notes[0])
	}
	p, err := e.WaitForPodBound(ctx, preemptor.Name, scenario.DefaultWait)
	if err != nil {
		return err
	}
	e.Logf("%s bound to %s", preemptor.Name, p.Spec.NodeName)
	if p.Spec.NodeName != node || nominated != node {
		return fmt.Errorf("%s nominated to %s and bound to %s, want %s", preemptor.Name, nominated, p.Spec.NodeName, node)
	}
	for _, s := range survivors {
		sp, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, s, metav1.GetOptions{})
		if err != nil || sp.DeletionTimestamp != nil {
			return fmt.Errorf("%s should have been spared: %v", s, err)
		}
	}
	return nil
}

// setUpChapter10 creates the priority classes (if missing) and the nodes.
func setUpChapter10(ctx context.Context, e *scenario.Env, nodes ...*v1.Node) error {
	for name, value := range chapter10Classes {
		if err := e.CreatePriorityClass(ctx, priorityClass(name, value, v1.PreemptLowerPriority)); err != nil {
			return err
		}
	}
	return e.CreateNodes(ctx, nodes...)
}

// priorityClass is a priority class of the value and preemption policy.
func priorityClass(name string, value int32, policy v1.PreemptionPolicy) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value,
		PreemptionPolicy: &policy}
}

// pdb is a PodDisruptionBudget keeping one pod of selector available, with
// the status the disruption controller would write (none runs here):
// allowed disruptions.
func pdb(name string, selector map[string]string, allowed int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &intstr.IntOrString{Type: intstr.Int, IntVal: 1},
			Selector:     &metav1.LabelSelector{MatchLabels: selector},
		},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, CurrentHealthy: allowed + 1,
			DesiredHealthy: 1, ExpectedPods: allowed + 1},
	}
}

// createRunning creates pods (bound by the scheduler, or created bound) and
// waits until KWOK reports each Running with a start time.
func createRunning(ctx context.Context, e *scenario.Env, pods ...*v1.Pod) error {
	if err := e.CreatePods(ctx, pods...); err != nil {
		return err
	}
	for _, p := range pods {
		name := p.Name
		err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, e.WaitLimit(scenario.DefaultWait), true, func(ctx context.Context) (bool, error) {
			got, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return got.Status.Phase == v1.PodRunning && got.Status.StartTime != nil, nil
		})
		if err != nil {
			return fmt.Errorf("pod %s did not start running: %w", name, err)
		}
	}
	return nil
}

func waitNominated(ctx context.Context, e *scenario.Env, name string) (string, error) {
	var node string
	err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, e.WaitLimit(scenario.DefaultWait), true, func(ctx context.Context) (bool, error) {
		p, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = p.Status.NominatedNodeName
		return node != "" || p.Spec.NodeName != "", nil
	})
	if err != nil {
		return "", fmt.Errorf("pod %s was not nominated: %w", name, err)
	}
	return node, nil
}

// waitNominatedAttempt waits for the first attempt of the pod that ended in
// a nomination, and returns it.
func waitNominatedAttempt(ctx context.Context, e *scenario.Env, name string) (minisched.Attempt, error) {
	var found minisched.Attempt
	err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, e.WaitLimit(scenario.DefaultWait), true, func(context.Context) (bool, error) {
		for _, a := range e.PodAttempts(name) {
			if a.NominatedNode != "" {
				found = a
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return found, fmt.Errorf("pod %s was not nominated: %w", name, err)
	}
	return found, nil
}

func waitTerminating(ctx context.Context, e *scenario.Env, name string) error {
	return wait.PollUntilContextTimeout(ctx, scenario.PollInterval, e.WaitLimit(scenario.DefaultWait), true, func(ctx context.Context) (bool, error) {
		p, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.DeletionTimestamp != nil, nil
	})
}

// disruption describes the pod's DisruptionTarget condition.
func disruption(ctx context.Context, e *scenario.Env, name string) string {
	p, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget {
			return fmt.Sprintf("DisruptionTarget=%s, reason %s: %q", c.Status, c.Reason, c.Message)
		}
	}
	return "no DisruptionTarget condition"
}

func removeFinalizer(ctx context.Context, e *scenario.Env, name string) error {
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	_, err := e.Client.CoreV1().Pods(e.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func cpuNode(name, cpu string) *v1.Node {
	return scenario.MakeNode(name).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: cpu}).Obj()
}

func cpus(q string) map[v1.ResourceName]string { return map[v1.ResourceName]string{v1.ResourceCPU: q} }
