//go:build conformance

// This file holds the preemption cases: DefaultPreemption in the default
// profile, compared on which pods are evicted (victims have no grace period,
// so they are simply gone, unless a case keeps one terminating), which node
// is nominated and bound, and the whole FailedScheduling text.
//
// Victims are created bound (spec.nodeName) before the scheduler starts, and
// have distinct priorities wherever the order of eviction or the node chosen
// could otherwise fall to start times, which no kubelet sets here.

package conformance

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/scenario"
)

func preemptionCases() []Case {
	classes := priorityClasses(map[string]int32{"lowest": 10, "low": 20, "low2": 30, "mid": 500, "high": 1000})
	cpuNode := func(name, cpu string) *builders.NodeWrapper { return node(name).Capacity(R{"cpu": cpu}) }
	// victim is a pod already bound to node, deleted at once when preempted.
	victim := func(name, node, class, cpu string) *builders.PodWrapper {
		return pod(name).NodeName(node).PriorityClassName(class).Req(R{"cpu": cpu}).TerminationGracePeriod(0)
	}
	preemptor := func(name, class, cpu string) *builders.PodWrapper {
		return pod(name).PriorityClassName(class).Req(R{"cpu": cpu})
	}
	return []Case{
		{Name: "preempt-lowest-that-frees-room", Profiles: defaultProfile, Backlog: []Step{classes,
			nodes(cpuNode("n", "2")), pods(victim("low", "n", "low", "1"), victim("lowest", "n", "lowest", "1"))},
			Steps: []Step{pods(preemptor("high", "high", "1"))}},
		{Name: "preempt-multiple-victims", Profiles: defaultProfile, Backlog: []Step{classes,
			nodes(cpuNode("n", "3")),
			pods(victim("v10", "n", "lowest", "1"), victim("v20", "n", "low", "1"), victim("v30", "n", "low2", "1"))},
			Steps: []Step{pods(preemptor("high", "high", "2"))}},
		{Name: "preempt-node-with-lowest-victim", Profiles: defaultProfile, Backlog: []Step{classes,
			nodes(cpuNode("n1", "2"), cpuNode("n2", "2")),
			pods(victim("on-n1", "n1", "mid", "2"), victim("on-n2", "n2", "low", "2"))},
			Steps: []Step{pods(preemptor("high", "high", "1"))}},
		{Name: "preempt-smallest-priority-sum", Profiles: defaultProfile, Backlog: []Step{classes,
			nodes(cpuNode("n1", "2"), cpuNode("n2", "2")),
			pods(victim("a-low", "n1", "low", "1"), victim("a-lowest", "n1", "lowest", "1"),
				victim("b-low", "n2", "low", "1"), victim("b-low2", "n2", "low2", "1"))},
			Steps: []Step{pods(preemptor("high", "high", "2"))}},
		{Name: "preempt-pdb-spared", Profiles: defaultProfile, Backlog: []Step{classes,
			nodes(cpuNode("n1", "2"), cpuNode("n2", "2")), pdb("db", map[string]string{"app": "db"}, 0),
			pods(victim("db", "n1", "low", "2").Label("app", "db"), victim("web", "n2", "low", "2").Label("app", "web"))},
			Steps: []Step{pods(preemptor("high", "high", "1"))}},
		{Name: "preempt-pdb-violated-when-needed", Profiles: defaultProfile, Backlog: []Step{classes,
			nodes(cpuNode("n", "2")), pdb("db", map[string]string{"app": "db"}, 0),
			pods(victim("db", "n", "low", "2").Label("app", "db"))},
			Steps: []Step{pods(preemptor("high", "high", "1"))}},
		{Name: "preempt-pdb-reprieved-first", Profiles: defaultProfile, Backlog: []Step{classes,
			nodes(cpuNode("n", "2")), pdb("guard", map[string]string{"app": "guarded"}, 0),
			pods(victim("guarded", "n", "lowest", "1").Label("app", "guarded"), victim("plain", "n", "low", "1"))},
			Steps: []Step{pods(preemptor("high", "high", "1"))}},
		{Name: "preempt-pdb-empty-selector-ignored", Profiles: defaultProfile, Backlog: []Step{classes,
			nodes(cpuNode("n1", "2"), cpuNode("n2", "2")), pdb("everything", nil, 0),
			pods(victim("a", "n1", "lowest", "2").Label("app", "a"), victim("b", "n2", "low", "2").Label("app", "b"))},
			Steps: []Step{pods(preemptor("high", "high", "1"))}},
		{Name: "preempt-policy-never", Profiles: defaultProfile, Backlog: []Step{classes, neverClass("high-never", 1000),
			nodes(cpuNode("n", "2")), pods(victim("low", "n", "low", "2"))},
			Steps: []Step{pods(preemptor("polite", "high-never", "1"))}},
		{Name: "preempt-no-lower-priority", Profiles: defaultProfile, Backlog: []Step{classes,
			nodes(cpuNode("n", "2")), pods(victim("peer", "n", "high", "2"))},
			Steps: []Step{pods(preemptor("high", "high", "1"))}},
		{Name: "preempt-unresolvable-nodes-skipped", Profiles: defaultProfile, Backlog: []Step{classes,
			nodes(cpuNode("cordoned", "2").Unschedulable(true), cpuNode("full", "2")),
			pods(victim("boss", "full", "high", "2"))},
			Steps: []Step{pods(preemptor("mid", "mid", "1"))}},
		{Name: "preempt-not-helpful", Profiles: defaultProfile, Backlog: []Step{classes,
			nodes(cpuNode("n1", "2"), cpuNode("n2", "2")),
			pods(victim("v1", "n1", "low", "2"), victim("v2", "n2", "low", "2"))},
			Steps: []Step{pods(preemptor("picky", "high", "1").NodeSelector("disk", "nvme"))}},
		// Only n2 is big enough for p-high, so its placement does not hang on
		// which of the two concurrent evictions the informers report first;
		// p-mid finds n2 held for p-high and preempts on n1.
		{Name: "preempt-two-preemptors", Profiles: defaultProfile, Backlog: []Step{classes,
			nodes(cpuNode("n1", "2"), cpuNode("n2", "3")),
			pods(victim("v-low", "n1", "low", "2"), victim("v-lowest", "n2", "lowest", "3"),
				preemptor("p-high", "high", "3"), preemptor("p-mid", "mid", "2"))}},
		{Name: "preempt-terminating-victim-holds-node", Profiles: defaultProfile, Backlog: []Step{classes,
			nodes(cpuNode("n", "3")), pods(victim("slow", "n", "low", "2").TerminationGracePeriod(30))},
			Steps: []Step{pods(preemptor("high", "high", "2")), waitNominated("high"),
				pods(preemptor("sneaky", "mid", "1"))}},
	}
}

// waitNominated waits until the named pod (in default) has a nominated node.
func waitNominated(name string) Step {
	return func(ctx context.Context, c *Cluster) error {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, scenario.DefaultWait, true,
			func(ctx context.Context) (bool, error) {
				p, err := c.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				return p.Status.NominatedNodeName != "", nil
			})
		if err != nil {
			return fmt.Errorf("pod %s was not nominated: %w", name, err)
		}
		return nil
	}
}

// neverClass creates a PriorityClass whose pods never preempt: the priority
// admission plugin copies preemptionPolicy from the class (a pod may not set
// its own).
func neverClass(name string, value int32) Step {
	return func(ctx context.Context, c *Cluster) error {
		never := v1.PreemptNever
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value,
			PreemptionPolicy: &never}
		_, err := c.Client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{})
		return err
	}
}
