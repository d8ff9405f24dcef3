// Tests of preemption for a whole pod group (DefaultPreemption's
// PodGroupPostFilter) against an apiserver, with GenericWorkload on.

package scheduler_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/scenario"
)

// groupHistory records what a namespace's pods and PodGroups went through:
// every PodGroupInitiallyScheduled condition of a PodGroup, and every
// nominated node of a pod, in the order the watches delivered them. A
// condition or a nomination may last a moment only (the gang is bound
// right after), so polling could miss it.
type groupHistory struct {
	mu         sync.Mutex
	conditions []metav1.Condition
	nominated  map[string][]string
}

// watchGroupHistory starts recording ns's history until the test ends.
func watchGroupHistory(ctx context.Context, t *testing.T, env *scenario.Env) *groupHistory {
	t.Helper()
	h := &groupHistory{nominated: map[string][]string{}}
	pods, err := env.Client.CoreV1().Pods(env.Namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	groups, err := env.Client.SchedulingV1beta1().PodGroups(env.Namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pods.Stop)
	t.Cleanup(groups.Stop)
	record := func(w watch.Interface) {
		for ev := range w.ResultChan() {
			h.mu.Lock()
			switch obj := ev.Object.(type) {
			case *v1.Pod:
				if n := obj.Status.NominatedNodeName; n != "" {
					h.nominated[obj.Name] = append(h.nominated[obj.Name], n)
				}
			case *schedulingv1beta1.PodGroup:
				if c := apimeta.FindStatusCondition(obj.Status.Conditions, "PodGroupInitiallyScheduled"); c != nil {
					h.conditions = append(h.conditions, *c)
				}
			}
			h.mu.Unlock()
		}
	}
	go record(pods)
	go record(groups)
	return h
}

// sawCondition reports whether the PodGroup went through a condition of
// the status and reason given, whose message starts with prefix and ends
// with suffix; and lists what it went through.
func (h *groupHistory) sawCondition(status metav1.ConditionStatus, reason, prefix, suffix string) (bool, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var seen []string
	found := false
	for _, c := range h.conditions {
		seen = append(seen, fmt.Sprintf("%s/%s %q", c.Status, c.Reason, c.Message))
		found = found || c.Status == status && c.Reason == reason && strings.HasPrefix(c.Message, prefix) &&
			strings.HasSuffix(c.Message, suffix)
	}
	return found, seen
}

// nominations returns the nominated nodes pod went through.
func (h *groupHistory) nominations(pod string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.nominated[pod])
}

// podGroupCondition polls until the PodGroup has a PodGroupInitiallyScheduled
// condition that done accepts, and returns it.
func podGroupCondition(ctx context.Context, t *testing.T, env *scenario.Env, name string,
	done func(*metav1.Condition) bool) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, scenario.DefaultWait, true,
		func(ctx context.Context) (bool, error) {
			pg, err := env.Client.SchedulingV1beta1().PodGroups(env.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			cond = apimeta.FindStatusCondition(pg.Status.Conditions, "PodGroupInitiallyScheduled")
			return cond != nil && done(cond), nil
		})
	if err != nil {
		t.Fatalf("PodGroup %s: no such PodGroupInitiallyScheduled condition (last %v): %v", name, cond, err)
	}
	return cond
}

// TestGangPreemption: with GenericWorkload, a gang of three 1-CPU pods
// that fits nowhere preempts as kube-scheduler v1.37.1 does. The node
// (4 CPU) holds four 1-CPU pods bound before the gang (low1 to low4, in
// that order, none started: no kubelet runs).
//
//   - When they have a lower priority, the whole group's preemption takes
//     them all out in its simulation, places the gang, and puts back the
//     most important first: low1, the oldest of equals (victims that never
//     started count as starting when the preemption looked at them, in
//     the node's order). low2, low3 and low4 are evicted, marked
//     DisruptionTarget by the scheduler and told "Preempted by podgroup
//     <UID> on node cluster"; every member is nominated to the node; the
//     PodGroup says, while the victims go, that it is preempting 3 of
//     them, then that it is scheduled, and the gang is bound.
//   - When they have a higher priority than the gang, there is nothing to
//     evict anywhere: the PodGroup says so, and nothing is evicted.
func TestGangPreemption(t *testing.T) {
	const (
		lowClass  = "gang-preemption-low"
		highClass = "gang-preemption-high"
	)
	tests := []struct {
		name string
		// blockerClass is the class of low1 to low4; gangClass the gang's
		// ("": priority 0).
		blockerClass, gangClass string
		// wantEvicted are the blockers preempted; the others must stay.
		wantEvicted []string
		// wantCondition is the PodGroup's False condition after the first
		// attempt: its message's start (PlacementFeasible's part) and end
		// (DefaultPreemption's).
		wantConditionPrefix, wantConditionSuffix string
	}{
		{name: "lower-priority pods make room", blockerClass: lowClass, gangClass: highClass,
			wantEvicted:         []string{"low2", "low3", "low4"},
			wantConditionPrefix: "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining, ",
			wantConditionSuffix: "pod group preemption: found a placement for podgroup, preempting 3 victims"},
		{name: "nothing of lower priority anywhere", blockerClass: highClass,
			wantConditionPrefix: "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining, ",
			wantConditionSuffix: "pod group preemption: No preemption victims found for incoming preemptor"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			ns := fmt.Sprintf("gang-preempt-%d", i)
			env := runWithGates(ctx, t, testEnv.Config, ns, features.Gates{GenericWorkload: true})
			for name, value := range map[string]int32{lowClass: 100, highClass: 1000} {
				pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
				if err := env.CreatePriorityClass(ctx, pc); err != nil {
					t.Fatal(err)
				}
			}
			node := ns + "-node"
			if err := env.CreateNodes(ctx, scenario.MakeNode(node).Label("group", ns).Capacity(
				map[v1.ResourceName]string{v1.ResourceCPU: "4", v1.ResourcePods: "10"}).Obj()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })
			blockers := []string{"low1", "low2", "low3", "low4"}
			for _, name := range blockers {
				pod := scenario.MakePod(name).NodeName(node).PriorityClassName(tt.blockerClass).
					Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
				if err := env.CreatePods(ctx, pod); err != nil {
					t.Fatal(err)
				}
			}
			marks := map[string]func(timeout time.Duration) (v1.PodCondition, error){}
			for _, name := range tt.wantEvicted {
				mark, err := env.WatchPodCondition(ctx, name, v1.DisruptionTarget)
				if err != nil {
					t.Fatal(err)
				}
				marks[name] = mark
			}
			history := watchGroupHistory(ctx, t, env)

			pg := builders.MakePodGroup().Name("gang").Namespace(ns).Gang(3).PriorityClassName(tt.gangClass).Obj()
			pg, err := env.Client.SchedulingV1beta1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			members := []string{"a", "b", "c"}
			for _, m := range members {
				pod := scenario.MakePod(m).PodGroup("gang").PriorityClassName(tt.gangClass).NodeSelector("group", ns).
					Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
				if err := env.CreatePods(ctx, pod); err != nil {
					t.Fatal(err)
				}
			}

			if len(tt.wantEvicted) == 0 {
				cond := podGroupCondition(ctx, t, env, "gang", func(c *metav1.Condition) bool {
					return c.Status == metav1.ConditionFalse
				})
				if cond.Reason != "Unschedulable" || !strings.HasPrefix(cond.Message, tt.wantConditionPrefix) ||
					!strings.HasSuffix(cond.Message, tt.wantConditionSuffix) {
					t.Errorf("condition %s/%s %q, want False/Unschedulable %q...%q", cond.Status, cond.Reason,
						cond.Message, tt.wantConditionPrefix, tt.wantConditionSuffix)
				}
				expectPodsStay(ctx, t, env, blockers)
				return
			}

			for _, name := range tt.wantEvicted {
				c, err := marks[name](scenario.DefaultWait)
				if err != nil {
					t.Fatal(err)
				}
				want := ns + ": preempting to accommodate a higher priority podgroup"
				if c.Reason != v1.PodReasonPreemptionByScheduler || c.Message != want {
					t.Errorf("%s: DisruptionTarget %s %q, want %s %q", name, c.Reason, c.Message,
						v1.PodReasonPreemptionByScheduler, want)
				}
				if err := env.WaitForPodGone(ctx, name, scenario.DefaultWait); err != nil {
					t.Fatal(err)
				}
				notes, err := env.WaitForEvent(ctx, name, "Preempted", scenario.DefaultWait)
				if err != nil {
					t.Fatal(err)
				}
				if want := fmt.Sprintf("Preempted by podgroup %s on node cluster", pg.UID); !slices.Contains(notes, want) {
					t.Errorf("%s: Preempted events %q, want %q", name, notes, want)
				}
			}
			if _, err := env.WaitForPodsBound(ctx, members); err != nil {
				t.Fatal(err)
			}
			podGroupCondition(ctx, t, env, "gang", func(c *metav1.Condition) bool {
				return c.Status == metav1.ConditionTrue && c.Reason == "Scheduled"
			})
			if ok, seen := history.sawCondition(metav1.ConditionFalse, "Unschedulable", tt.wantConditionPrefix,
				tt.wantConditionSuffix); !ok {
				t.Errorf("the PodGroup never said False/Unschedulable %q...%q; it said:\n%s",
					tt.wantConditionPrefix, tt.wantConditionSuffix, strings.Join(seen, "\n"))
			}
			for _, m := range members {
				if got := history.nominations(m); !slices.Contains(got, node) {
					t.Errorf("%s: nominated to %q, want %s among them", m, got, node)
				}
			}
			expectPodsStay(ctx, t, env, slices.DeleteFunc(slices.Clone(blockers),
				func(name string) bool { return slices.Contains(tt.wantEvicted, name) }))
		})
	}
}

// expectPodsStay fails the test if one of pods is gone or being deleted.
func expectPodsStay(ctx context.Context, t *testing.T, env *scenario.Env, pods []string) {
	t.Helper()
	for _, name := range pods {
		p, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p.DeletionTimestamp != nil {
			t.Errorf("%s is being deleted, want it to stay", name)
		}
	}
}
