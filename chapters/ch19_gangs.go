// Chapter 19's stories (docs/19-gangs.md): pods that join a PodGroup
// (spec.schedulingGroup.podGroupName) are scheduled as one entity, all or
// nothing, by the pod-group cycle — with the GenericWorkload gate on, as
// kube-scheduler v1.37.1 does it. Each story sets the gate itself
// (Scenario.FeatureGates); the last runs the same gang with it off.

package chapters

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
)

// gangGates turn on workload-aware scheduling.
var gangGates = features.Gates{GenericWorkload: true}

// chapter19 is chapter 19's stories.
func chapter19() []scenario.Scenario {
	return []scenario.Scenario{
		{
			Name: "ch19-all-or-nothing", Chapter: 19, FeatureGates: gangGates,
			Description: "a gang of three that fits is bound whole; a gang of two with room for one is not bound " +
				"at all, and each member's message says how far it got",
			Run: runAllOrNothing,
		},
		{
			Name: "ch19-last-member", Chapter: 19, FeatureGates: gangGates,
			Description: "two members of a gang of three wait, untried and silent; the third arrives and the " +
				"three are placed in one cycle",
			Run: runLastMember,
		},
		{
			Name: "ch19-two-gangs", Chapter: 19, FeatureGates: gangGates,
			Parts: scenario.Parts{scenario.OwnSchedulers},
			Description: "two gangs wait for a scheduler with room for one: the PodGroup of higher priority is " +
				"placed, the other holds no node",
			Run: runTwoGangs,
		},
		{
			Name: "ch19-basic-group", Chapter: 19, FeatureGates: gangGates,
			Description: "a basic PodGroup: its pods are placed in one cycle, as many as fit; the one that " +
				"fits nowhere waits with its own message",
			Run: runBasicGroup,
		},
		{
			Name: "ch19-preemption", Chapter: 19, FeatureGates: gangGates,
			Description: "a gang of three high-priority pods on a full node: DefaultPreemption takes every " +
				"lower-priority pod out, runs the gang again, puts back the most important it can, and evicts " +
				"the rest: three of four",
			Run: runGangPreemption,
		},
		{
			Name: "ch19-topology", Chapter: 19,
			FeatureGates: features.Gates{GenericWorkload: true, TopologyAwareWorkloadScheduling: true},
			Description: "TopologyAwareWorkloadScheduling: a gang that asks for one rack is tried in each; only " +
				"rack b holds all three, and all three land there",
			Run: runTopology,
		},
		{
			Name: "ch19-gate-off", Chapter: 19,
			Description: "the same gang, one node short, with GenericWorkload off: placed pod by pod, two of " +
				"three bound and holding their nodes for nothing",
			Run: runGateOff,
		},
	}
}

// gangNode is a node with room for one of the chapter's members.
func gangNode(name string) *v1.Node {
	return scenario.MakeNode(name).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
}

// gangNodes creates n nodes named node0, node1, ….
func gangNodes(ctx context.Context, env *scenario.Env, n int) error {
	nodes := make([]*v1.Node, n)
	for i := range nodes {
		nodes[i] = gangNode(fmt.Sprintf("node%d", i))
	}
	return env.CreateNodes(ctx, nodes...)
}

// members are the pods of a group, named <group>-0, <group>-1, …, each
// asking for one CPU, with priorityClass if it is not "".
func members(group string, n int, priorityClass string) []*v1.Pod {
	pods := make([]*v1.Pod, n)
	for i := range pods {
		p := scenario.MakePod(fmt.Sprintf("%s-%d", group, i)).PodGroup(group).
			Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"})
		if priorityClass != "" {
			p.PriorityClassName(priorityClass)
		}
		pods[i] = p.Obj()
	}
	return pods
}

// names are the pods' names.
func names(pods []*v1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

// createGang creates the PodGroup, then its members, one by one, and
// narrates it.
func createGang(ctx context.Context, env *scenario.Env, pg *schedulingv1beta1.PodGroup, pods []*v1.Pod) error {
	if err := env.CreatePodGroups(ctx, pg); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, pods...); err != nil {
		return err
	}
	env.Logf("created PodGroup %s (%s) and its pods %s", pg.Name, scenario.DescribePodGroupPolicy(pg),
		strings.Join(names(pods), ", "))
	return nil
}

// showPodGroup prints the PodGroup's condition once it has the status.
func showPodGroup(ctx context.Context, env *scenario.Env, name string, status metav1.ConditionStatus) (*metav1.Condition,
	error) {
	c, err := env.WaitForPodGroupCondition(ctx, name, status, scenario.DefaultWait)
	if err != nil {
		return nil, err
	}
	msg := c.Message
	if msg == "" {
		msg = `""`
	}
	env.Logf("PodGroup %s: PodGroupInitiallyScheduled=%s, reason %s, message %s", name, c.Status, c.Reason, msg)
	return c, nil
}

// waitMessages waits until each pod is unschedulable and prints its
// message; it returns them by pod.
func waitMessages(ctx context.Context, env *scenario.Env, pods []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pods {
		msg, err := env.WaitForPodUnschedulable(ctx, p, scenario.DefaultWait)
		if err != nil {
			return nil, err
		}
		env.Logf("%s: %s", p, msg)
		out[p] = msg
	}
	return out, nil
}

func runAllOrNothing(ctx context.Context, env *scenario.Env) error {
	if err := gangNodes(ctx, env, 4); err != nil {
		return err
	}
	env.Logf("four nodes with one CPU each; every member asks for one CPU")
	training := members("training", 3, "")
	if err := createGang(ctx, env, scenario.MakePodGroup("training").Gang(3).Obj(), training); err != nil {
		return err
	}
	if _, err := env.WaitForPodsBound(ctx, names(training)); err != nil {
		return err
	}
	if _, err := showPodGroup(ctx, env, "training", metav1.ConditionTrue); err != nil {
		return err
	}
	eval := members("eval", 2, "")
	if err := createGang(ctx, env, scenario.MakePodGroup("eval").Gang(2).Obj(), eval); err != nil {
		return err
	}
	msgs, err := waitMessages(ctx, env, names(eval))
	if err != nil {
		return err
	}
	// eval-0 came first: it was placed on the free node in the cycle's
	// simulation (shape 1); eval-1 fitted nowhere (shape 2, its own
	// FitError, with no "preemption:" part).
	const failed = "pod group is unschedulable, minCount (2) cannot be satisfied: 1 scheduled, 0 remaining"
	if !strings.HasPrefix(msgs["eval-0"], failed) {
		return fmt.Errorf("eval-0: %q, want it to start with %q", msgs["eval-0"], failed)
	}
	if want := "0/4 nodes are available: 4 Insufficient cpu."; msgs["eval-1"] != want {
		return fmt.Errorf("eval-1: %q, want %q", msgs["eval-1"], want)
	}
	c, err := showPodGroup(ctx, env, "eval", metav1.ConditionFalse)
	if err != nil {
		return err
	}
	if c.Reason != schedulingv1beta1.PodGroupReasonUnschedulable {
		return fmt.Errorf("PodGroup eval: reason %s, want Unschedulable", c.Reason)
	}
	env.Logf("node3 stays empty: a member alone would hold it for nothing")
	return nil
}

func runLastMember(ctx context.Context, env *scenario.Env) error {
	if err := gangNodes(ctx, env, 3); err != nil {
		return err
	}
	workers := members("workers", 3, "")
	if err := createGang(ctx, env, scenario.MakePodGroup("workers").Gang(3).Obj(), workers[:2]); err != nil {
		return err
	}
	// A pod created after the two is bound only once the scheduler has
	// taken it from the queue: by then it has seen the two members too,
	// and GangScheduling's PreEnqueue has held them back.
	probe := scenario.MakePod("probe").Obj()
	if err := env.CreatePods(ctx, probe); err != nil {
		return err
	}
	if _, err := env.WaitForPodBound(ctx, "probe", scenario.DefaultWait); err != nil {
		return err
	}
	for _, p := range names(workers[:2]) {
		if n := len(env.Attempts.Of(env.Namespace, p)); n != 0 {
			return fmt.Errorf("%s was tried %d times while its gang was incomplete", p, n)
		}
		if msg, ok, err := podScheduledMessage(ctx, env, p); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("%s has a PodScheduled condition while its gang is incomplete: %q", p, msg)
		}
	}
	env.Logf("probe was scheduled; workers-0 and workers-1 were never tried: no attempt, no condition, no event " +
		"(2 of minCount 3)")
	if err := env.CreatePods(ctx, workers[2]); err != nil {
		return err
	}
	env.Logf("created pod workers-2")
	if _, err := env.WaitForPodsBound(ctx, names(workers)); err != nil {
		return err
	}
	_, err := showPodGroup(ctx, env, "workers", metav1.ConditionTrue)
	return err
}

// podScheduledMessage returns the pod's PodScheduled message, and whether
// it has that condition at all.
func podScheduledMessage(ctx context.Context, env *scenario.Env, name string) (string, bool, error) {
	p, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", false, err
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return c.Message, true, nil
		}
	}
	return "", false, nil
}

// The priority classes of ch19-two-gangs (cluster-wide; created once, kept).
var chapter19Classes = map[string]int32{"batch-lowest": 10, "batch-low": 100, "batch-high": 1000}

// createChapter19Classes creates the chapter's priority classes.
func createChapter19Classes(ctx context.Context, env *scenario.Env) error {
	for name, value := range chapter19Classes {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if err := env.CreatePriorityClass(ctx, pc); err != nil {
			return err
		}
	}
	return nil
}

func runTwoGangs(ctx context.Context, env *scenario.Env) (err error) {
	if err := createChapter19Classes(ctx, env); err != nil {
		return err
	}
	if err := gangNodes(ctx, env, 3); err != nil {
		return err
	}
	low, high := members("low", 3, "batch-low"), members("high", 3, "batch-high")
	if err := createGang(ctx, env, scenario.MakePodGroup("low").Gang(3).PriorityClassName("batch-low").Obj(),
		low); err != nil {
		return err
	}
	if err := createGang(ctx, env, scenario.MakePodGroup("high").Gang(3).PriorityClassName("batch-high").Obj(),
		high); err != nil {
		return err
	}
	// Both gangs are in the queue before the first pop: the scheduler
	// starts scheduling once its informers have listed every pod.
	env.Logf("both gangs wait; the scheduler starts now, with room for one gang")
	sched, err := env.StartReplica(ctx, "minisched", scheduler.DefaultConfigFor(gangGates))
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := sched.ShutDown(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	if _, err := env.WaitForPodsBound(ctx, names(high)); err != nil {
		return err
	}
	if _, err := waitMessages(ctx, env, names(low)); err != nil {
		return err
	}
	c, err := showPodGroup(ctx, env, "low", metav1.ConditionFalse)
	if err != nil {
		return err
	}
	// An equal or higher priority is never a victim.
	const want = "pod group preemption: No preemption victims found for incoming preemptor"
	if !strings.HasSuffix(c.Message, want) {
		return fmt.Errorf("PodGroup low: %q, want it to end with %q", c.Message, want)
	}
	return nil
}

func runGangPreemption(ctx context.Context, env *scenario.Env) error {
	if err := createChapter19Classes(ctx, env); err != nil {
		return err
	}
	node := scenario.MakeNode("node0").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "4"}).Obj()
	if err := env.CreateNodes(ctx, node); err != nil {
		return err
	}
	// Four pods already running fill the node: low-1 of priority 100,
	// the others of 10. Without a kubelet, a victim (grace period 0) is
	// gone as soon as it is deleted.
	running := []*v1.Pod{}
	for i, class := range []string{"batch-low", "batch-lowest", "batch-lowest", "batch-lowest"} {
		running = append(running, scenario.MakePod(fmt.Sprintf("low-%d", i+1)).NodeName("node0").
			PriorityClassName(class).Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj())
	}
	if err := env.CreatePods(ctx, running...); err != nil {
		return err
	}
	env.Logf("node0 (4 CPUs) runs low-1 (priority 100), low-2, low-3 and low-4 (priority 10), one CPU each")
	gang := members("train", 3, "batch-high")
	if err := createGang(ctx, env, scenario.MakePodGroup("train").Gang(3).PriorityClassName("batch-high").Obj(),
		gang); err != nil {
		return err
	}
	c, err := showPodGroup(ctx, env, "train", metav1.ConditionFalse)
	if err != nil {
		return err
	}
	const preempting = "pod group preemption: found a placement for podgroup, preempting 3 victims"
	if !strings.HasSuffix(c.Message, preempting) {
		return fmt.Errorf("PodGroup train: %q, want it to end with %q", c.Message, preempting)
	}
	for _, victim := range []string{"low-2", "low-3", "low-4"} {
		if err := env.WaitForPodGone(ctx, victim, scenario.DefaultWait); err != nil {
			return err
		}
	}
	env.Logf("low-2, low-3 and low-4 were evicted; low-1, the most important, was put back: the gang fits beside it")
	if _, err := env.WaitForPodsBound(ctx, names(gang)); err != nil {
		return err
	}
	if _, err := env.WaitForPodBound(ctx, "low-1", scenario.DefaultWait); err != nil {
		return err
	}
	_, err = showPodGroup(ctx, env, "train", metav1.ConditionTrue)
	return err
}

func runTopology(ctx context.Context, env *scenario.Env) error {
	var nodes []*v1.Node
	for _, n := range []struct{ name, rack string }{{"a1", "a"}, {"a2", "a"}, {"b1", "b"}, {"b2", "b"}, {"b3", "b"}} {
		node := gangNode(n.name)
		node.Labels["rack"] = n.rack
		nodes = append(nodes, node)
	}
	if err := env.CreateNodes(ctx, nodes...); err != nil {
		return err
	}
	env.Logf("rack a: a1, a2; rack b: b1, b2, b3; one CPU each")
	pods := members("ring", 3, "")
	if err := createGang(ctx, env, scenario.MakePodGroup("ring").Gang(3).TopologyKey("rack").Obj(), pods); err != nil {
		return err
	}
	placed, err := env.WaitForPodsBound(ctx, names(pods))
	if err != nil {
		return err
	}
	for i, node := range placed {
		if !strings.HasPrefix(node, "b") {
			return fmt.Errorf("%s is on %s, outside rack b", pods[i].Name, node)
		}
	}
	env.Logf("rack a could hold two of three: that placement failed; rack b held all three: %s",
		strings.Join(placed, ", "))
	_, err = showPodGroup(ctx, env, "ring", metav1.ConditionTrue)
	return err
}

func runBasicGroup(ctx context.Context, env *scenario.Env) error {
	if err := gangNodes(ctx, env, 2); err != nil {
		return err
	}
	pods := members("web", 3, "")
	if err := createGang(ctx, env, scenario.MakePodGroup("web").Obj(), pods); err != nil {
		return err
	}
	if _, err := env.WaitForPodsBound(ctx, names(pods[:2])); err != nil {
		return err
	}
	msgs, err := waitMessages(ctx, env, names(pods[2:]))
	if err != nil {
		return err
	}
	if want := "0/2 nodes are available: 2 Insufficient cpu."; msgs["web-2"] != want {
		return fmt.Errorf("web-2: %q, want %q", msgs["web-2"], want)
	}
	env.Logf("a basic group's minCount is 1: web-0 and web-1 are bound, web-2 waits with its own message")
	return nil
}

func runGateOff(ctx context.Context, env *scenario.Env) error {
	if err := gangNodes(ctx, env, 2); err != nil {
		return err
	}
	pods := members("training", 3, "")
	if err := createGang(ctx, env, scenario.MakePodGroup("training").Gang(3).Obj(), pods); err != nil {
		return err
	}
	bound, err := env.WaitForPodsBound(ctx, names(pods[:2]))
	if err != nil {
		return err
	}
	msgs, err := waitMessages(ctx, env, names(pods[2:]))
	if err != nil {
		return err
	}
	const want = "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: " +
		"2 No preemption victims found for incoming pod."
	if msgs["training-2"] != want {
		return fmt.Errorf("training-2: %q, want %q", msgs["training-2"], want)
	}
	c, err := env.PodGroupCondition(ctx, "training")
	if err != nil {
		return err
	}
	if c != nil {
		return fmt.Errorf("PodGroup training has a condition with the gate off: %s %s", c.Status, c.Reason)
	}
	env.Logf("with the gate off the scheduler reads no PodGroup: training-0 and training-1 hold %s, and the "+
		"gang of three cannot run; the PodGroup has no condition", strings.Join(bound, " and "))
	return nil
}
