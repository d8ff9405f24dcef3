// This file holds chapter 10's scenarios, preemption and nominated pods,
// with the helpers they need. They run the default profile (DefaultPreemption
// included) with KWOK, so victims really go away and pods have start times.

package scenario

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/minisched/minisched/minisched"
)

// Priority classes of chapter 10 (cluster-wide; created once, kept).
var chapter10Classes = map[string]int32{"lowest": 10, "low": 20, "mid": 500, "high": 1000}

// holdFinalizer keeps a victim Terminating until the scenario lets it go.
const holdFinalizer = "minisched.example/hold"

func preemptionScenarios() []Scenario {
	return []Scenario{
		{
			Name: "ch10-preemption", Chapter: 10, Lifecycle: true,
			Description: "a high-priority pod that fits nowhere evicts the lowest-priority pod that frees enough room, " +
				"is nominated to the node, and lands there once the victim is gone",
			Run: runPreemption,
		},
		{
			Name: "ch10-pdb", Chapter: 10, Lifecycle: true,
			Description: "a PodDisruptionBudget spares the pod it protects when another node can be freed instead",
			Run:         runPreemptionPDB,
		},
		{
			Name: "ch10-preemption-policy-never", Chapter: 10, Lifecycle: true,
			Description: "a pod whose priority class says preemptionPolicy: Never waits instead, and FailedScheduling " +
				"says why",
			Run: runPreemptionPolicyNever,
		},
		{
			Name: "ch10-nominated-node", Chapter: 10, Lifecycle: true,
			Description: "the nominated node is held while the victim terminates: a lower-priority pod created " +
				"meanwhile does not take the room, although it would fit",
			Run: runNominatedNodeHeld,
		},
		{
			Name: "ch10-two-preemptors", Chapter: 10, Lifecycle: true,
			Description: "two high-priority pods at once: the first preempts on the only node big enough for it, " +
				"the second, seeing that node held for the first, preempts on the other",
			Run: runTwoPreemptors,
		},
	}
}

func runPreemption(ctx context.Context, env *Env) error {
	if err := env.setUpChapter10(ctx, cpuNode("node0", "2")); err != nil {
		return err
	}
	if err := env.createRunning(ctx, MakePod("low").PriorityClassName("low").Req(cpus("1")).Obj(),
		MakePod("lowest").PriorityClassName("lowest").Req(cpus("1")).Obj()); err != nil {
		return err
	}
	return env.preemptAndReport(ctx, MakePod("high").PriorityClassName("high").Req(cpus("1")).Obj(),
		"node0", []string{"lowest"}, []string{"low"})
}

func runPreemptionPDB(ctx context.Context, env *Env) error {
	if err := env.setUpChapter10(ctx, cpuNode("node0", "2"), cpuNode("node1", "2")); err != nil {
		return err
	}
	// No disruption controller runs here, so the budget's status (0
	// disruptions allowed) is written by hand.
	if err := env.createPDB(ctx, "db", map[string]string{"app": "db"}, 0); err != nil {
		return err
	}
	db := MakePod("db").Label("app", "db").PriorityClassName("low").Req(cpus("2")).NodeName("node0").Obj()
	web := MakePod("web").Label("app", "web").PriorityClassName("low").Req(cpus("2")).NodeName("node1").Obj()
	if err := env.createRunning(ctx, db, web); err != nil {
		return err
	}
	env.Logf("db (protected by a PDB allowing 0 disruptions) runs on node0, web on node1; same priority")
	return env.preemptAndReport(ctx, MakePod("high").PriorityClassName("high").Req(cpus("1")).Obj(),
		"node1", []string{"web"}, []string{"db"})
}

func runPreemptionPolicyNever(ctx context.Context, env *Env) error {
	if err := env.setUpChapter10(ctx, cpuNode("node0", "2")); err != nil {
		return err
	}
	if err := env.createPriorityClass(ctx, "high-never", 1000, v1.PreemptNever); err != nil {
		return err
	}
	if err := env.createRunning(ctx, MakePod("low").PriorityClassName("low").Req(cpus("2")).Obj()); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, MakePod("polite").PriorityClassName("high-never").Req(cpus("1")).Obj()); err != nil {
		return err
	}
	msg, err := env.WaitForPodUnschedulable(ctx, "polite", DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("polite (priority 1000, preemptionPolicy: Never) stays pending: %s", msg)
	if want := "preemption: not eligible due to preemptionPolicy=Never."; !strings.HasSuffix(msg, want) {
		return fmt.Errorf("FailedScheduling says %q, want it to end with %q", msg, want)
	}
	// The condition is written before the attempt is told to the observer:
	// wait for the attempt, then check no other follows.
	if _, err := env.WaitForAttempts(ctx, "polite", 1, DefaultWait); err != nil {
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

func runNominatedNodeHeld(ctx context.Context, env *Env) error {
	if err := env.setUpChapter10(ctx, cpuNode("node0", "3")); err != nil {
		return err
	}
	// The victim's finalizer keeps it Terminating (as a long grace period
	// would) until the scenario removes it.
	slow := MakePod("slow").PriorityClassName("low").Req(cpus("2")).Obj()
	slow.Finalizers = []string{holdFinalizer}
	if err := env.createRunning(ctx, slow); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, MakePod("high").PriorityClassName("high").Req(cpus("3")).Obj()); err != nil {
		return err
	}
	node, err := env.waitNominated(ctx, "high")
	if err != nil {
		return err
	}
	if err := env.waitTerminating(ctx, "slow"); err != nil {
		return err
	}
	env.Logf("high (3 cpu) is nominated to %s; the victim slow is Terminating (%s)", node, env.disruption(ctx, "slow"))
	// node0 has 3 cpu: slow's 2 are still counted, 1 is free. "sneaky" asks
	// for that 1 cpu with a lower priority than high: Filter counts high's
	// 3 cpu on its nominated node, so sneaky does not fit there, and
	// evicting slow would not make room for both.
	if err := env.CreatePods(ctx, MakePod("sneaky").PriorityClassName("mid").Req(cpus("1")).Obj()); err != nil {
		return err
	}
	msg, err := env.WaitForPodUnschedulable(ctx, "sneaky", DefaultWait)
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
	if err := env.removeFinalizer(ctx, "slow"); err != nil {
		return err
	}
	p, err := env.WaitForPodBound(ctx, "high", DefaultWait)
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

func runTwoPreemptors(ctx context.Context, env *Env) error {
	// Only node1 is big enough for first, so where it lands does not hang on
	// which of the two concurrent evictions finishes first.
	if err := env.setUpChapter10(ctx, cpuNode("node0", "2"), cpuNode("node1", "3")); err != nil {
		return err
	}
	if err := env.createRunning(ctx,
		MakePod("victim-low").PriorityClassName("low").Req(cpus("2")).NodeName("node0").Obj(),
		MakePod("victim-lowest").PriorityClassName("lowest").Req(cpus("3")).NodeName("node1").Obj()); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, MakePod("first").PriorityClassName("high").Req(cpus("3")).Obj(),
		MakePod("second").PriorityClassName("mid").Req(cpus("2")).Obj()); err != nil {
		return err
	}
	want := map[string]string{"first": "node1", "second": "node0"}
	for _, name := range []string{"first", "second"} {
		a, err := env.waitNominatedAttempt(ctx, name)
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
		notes, err := env.WaitForEvent(ctx, v, "Preempted", DefaultWait)
		if err != nil {
			return err
		}
		if err := env.waitGone(ctx, v); err != nil {
			return err
		}
		env.Logf("victim %s: %s; it terminated and is gone", v, notes[0])
	}
	return env.expectBound(ctx, want, "first", "second")
}

// preemptAndReport creates preemptor, waits for its nomination, its victims
// to go and it to bind to node, checks survivors still run, and tells the
// story: the first FailedScheduling message, the nominated node, the
// victims and their Preempted events.
func (e *Env) preemptAndReport(ctx context.Context, preemptor *v1.Pod, node string, victims,
	survivors []string) error {
	if err := e.CreatePods(ctx, preemptor); err != nil {
		return err
	}
	// The nomination is read from the attempt log, not the pod: KWOK lets
	// the victim go at once, and the apiserver clears
	// status.nominatedNodeName when the pod is bound, so a poll of the pod
	// may never see it.
	a, err := e.waitNominatedAttempt(ctx, preemptor.Name)
	if err != nil {
		return err
	}
	nominated := a.NominatedNode
	e.Logf("%s: %s", preemptor.Name, a.Message)
	e.Logf("%s nominated to %s", preemptor.Name, nominated)
	for _, v := range victims {
		notes, err := e.WaitForEvent(ctx, v, "Preempted", DefaultWait)
		if err != nil {
			return err
		}
		if err := e.waitGone(ctx, v); err != nil {
			return err
		}
		e.Logf("victim %s: %s; it terminated and is gone", v, notes[0])
	}
	p, err := e.WaitForPodBound(ctx, preemptor.Name, DefaultWait)
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
func (e *Env) setUpChapter10(ctx context.Context, nodes ...*v1.Node) error {
	for name, value := range chapter10Classes {
		if err := e.createPriorityClass(ctx, name, value, v1.PreemptLowerPriority); err != nil {
			return err
		}
	}
	return e.CreateNodes(ctx, nodes...)
}

func (e *Env) createPriorityClass(ctx context.Context, name string, value int32, policy v1.PreemptionPolicy) error {
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value,
		PreemptionPolicy: &policy}
	_, err := e.Client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// createPDB creates a PodDisruptionBudget and writes the status the
// disruption controller would (none runs here).
func (e *Env) createPDB(ctx context.Context, name string, selector map[string]string, allowed int32) error {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &intstr.IntOrString{Type: intstr.Int, IntVal: 1},
			Selector:     &metav1.LabelSelector{MatchLabels: selector},
		},
	}
	created, err := e.Client.PolicyV1().PodDisruptionBudgets(e.Namespace).Create(ctx, pdb, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: created.Generation,
		DisruptionsAllowed: allowed, CurrentHealthy: allowed + 1, DesiredHealthy: 1, ExpectedPods: allowed + 1}
	_, err = e.Client.PolicyV1().PodDisruptionBudgets(e.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// createRunning creates pods (bound by the scheduler, or created bound) and
// waits until KWOK reports each Running with a start time.
func (e *Env) createRunning(ctx context.Context, pods ...*v1.Pod) error {
	if err := e.CreatePods(ctx, pods...); err != nil {
		return err
	}
	for _, p := range pods {
		name := p.Name
		err := wait.PollUntilContextTimeout(ctx, pollInterval, DefaultWait, true, func(ctx context.Context) (bool, error) {
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

func (e *Env) waitNominated(ctx context.Context, name string) (string, error) {
	var node string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, DefaultWait, true, func(ctx context.Context) (bool, error) {
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
func (e *Env) waitNominatedAttempt(ctx context.Context, name string) (minisched.Attempt, error) {
	var found minisched.Attempt
	err := wait.PollUntilContextTimeout(ctx, pollInterval, DefaultWait, true, func(context.Context) (bool, error) {
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

func (e *Env) waitTerminating(ctx context.Context, name string) error {
	return wait.PollUntilContextTimeout(ctx, pollInterval, DefaultWait, true, func(ctx context.Context) (bool, error) {
		p, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.DeletionTimestamp != nil, nil
	})
}

func (e *Env) waitGone(ctx context.Context, name string) error {
	err := wait.PollUntilContextTimeout(ctx, pollInterval, DefaultWait, true, func(ctx context.Context) (bool, error) {
		_, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("pod %s did not go away: %w", name, err)
	}
	return nil
}

// disruption describes the pod's DisruptionTarget condition.
func (e *Env) disruption(ctx context.Context, name string) string {
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

func (e *Env) removeFinalizer(ctx context.Context, name string) error {
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	_, err := e.Client.CoreV1().Pods(e.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func cpuNode(name, cpu string) *v1.Node {
	return MakeNode(name).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: cpu}).Obj()
}

func cpus(q string) map[v1.ResourceName]string { return map[v1.ResourceName]string{v1.ResourceCPU: q} }
