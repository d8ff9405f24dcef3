package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stretchr/testify/require"

	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
)

// The faults and bad input of gang scheduling (chapter 19), on the shared
// apiserver, each in its own namespace with nodes labelled for it.

var gangGates = features.Gates{GenericWorkload: true}

// startGangScheduler runs a scheduler with gangGates, configured by doc
// (with the out-of-tree plugins of registry), until stop or the end of the
// test.
func startGangScheduler(ctx context.Context, t *testing.T, rc *rest.Config, doc string,
	registry framework.Registry) (stop func()) {
	t.Helper()
	cfg, err := scheduler.DecodeConfigFor([]byte(doc), gangGates)
	require.NoError(t, err)
	svc, err := scheduler.New(ctx, cfg, rc, scheduler.WithFeatureGates(gangGates),
		scheduler.WithOutOfTreeRegistry(registry))
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	return runUntilStopped(t, runCtx, cancel, svc)
}

// gangNamespace creates namespace ns, deleted when the test ends, and
// nodes named <ns>-node<i>, each with one CPU and the label group=ns.
func gangNamespace(ctx context.Context, t *testing.T, client kubernetes.Interface, ns string, nodes int) *scenario.Env {
	t.Helper()
	_, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	env := &scenario.Env{Client: client, Namespace: ns, SchedulerName: ns, Attempts: scenario.NewAttemptLog()}
	for i := range nodes {
		addGangNode(ctx, t, env, fmt.Sprintf("%s-node%d", ns, i))
	}
	return env
}

// addGangNode creates a node with one CPU in env's group, deleted when the
// test ends.
func addGangNode(ctx context.Context, t *testing.T, env *scenario.Env, name string) {
	t.Helper()
	require.NoError(t, env.CreateNodes(ctx, scenario.MakeNode(name).Label("group", env.Namespace).Capacity(
		map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourcePods: "10"}).Obj()))
	t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// gangMember is a pod of group asking for one CPU, on env's nodes only.
func gangMember(env *scenario.Env, name, group string) *v1.Pod {
	return scenario.MakePod(name).PodGroup(group).NodeSelector("group", env.Namespace).
		Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
}

// podGroupConditionIs waits until the PodGroup's PodGroupInitiallyScheduled
// condition has status and reason, and returns its message.
func podGroupConditionIs(ctx context.Context, t *testing.T, env *scenario.Env, name string,
	status metav1.ConditionStatus, reason string) string {
	t.Helper()
	var last *metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, scenario.DefaultWait, true,
		func(ctx context.Context) (bool, error) {
			c, err := env.PodGroupCondition(ctx, name)
			if err != nil {
				return false, err
			}
			last = c
			return c != nil && c.Status == status && c.Reason == reason, nil
		})
	if err != nil {
		t.Fatalf("PodGroup %s: no condition %s/%s (last: %+v): %v", name, status, reason, last, err)
	}
	return last.Message
}

// TestGangMembersMustAgree: members whose priority or schedulerName differ
// from the group's fail with kube-scheduler's SchedulerError, each of them,
// and so does the PodGroup's condition.
func TestGangMembersMustAgree(t *testing.T) {
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(testEnv.Config)
	for name, value := range map[string]int32{"gang-agree-low": 20, "gang-agree-high": 1000} {
		_, err := client.SchedulingV1().PriorityClasses().Create(ctx,
			&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = client.SchedulingV1().PriorityClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	tests := []struct {
		name string
		// second changes the second member.
		second func(p *v1.Pod)
		// profiles are the configuration's scheduler names beside ns.
		profiles []string
		want     string
	}{
		{name: "priority", second: func(p *v1.Pod) { p.Spec.PriorityClassName = "gang-agree-low" },
			want: "all pods in a single pod group should have the same priority as the pod group's priority, " +
				"got 20 and 1000"},
		{name: "scheduler name", second: func(p *v1.Pod) { p.Spec.SchedulerName = "gang-agree-other" },
			profiles: []string{"gang-agree-other"},
			want:     `all pods in a single pod group should have the same .spec.schedulerName set, got: "gang-agree-other" and "gang-agree-1"`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := fmt.Sprintf("gang-agree-%d", i)
			env := gangNamespace(ctx, t, client, ns, 2)
			doc := electionConfig(ns, "unused", false)
			for _, p := range tt.profiles {
				doc += "- schedulerName: " + p + "\n"
			}
			startGangScheduler(ctx, t, testEnv.Config, doc, nil)
			pg := scenario.MakePodGroup("g").Gang(2).PriorityClassName("gang-agree-high").Obj()
			require.NoError(t, env.CreatePodGroups(ctx, pg))
			a, b := gangMember(env, "a", "g"), gangMember(env, "b", "g")
			a.Spec.PriorityClassName, b.Spec.PriorityClassName = "gang-agree-high", "gang-agree-high"
			tt.second(b)
			require.NoError(t, env.CreatePods(ctx, a))
			require.NoError(t, env.CreatePods(ctx, b))
			for _, p := range []string{"a", "b"} {
				cond := waitPodScheduledFalse(ctx, t, env, p)
				if cond.Reason != v1.PodReasonSchedulerError || cond.Message != tt.want {
					t.Errorf("%s: %s %q, want SchedulerError %q", p, cond.Reason, cond.Message, tt.want)
				}
			}
			if msg := podGroupConditionIs(ctx, t, env, "g", metav1.ConditionFalse, "SchedulerError"); msg != tt.want {
				t.Errorf("PodGroup g: %q, want %q", msg, tt.want)
			}
		})
	}
}

// waitPodScheduledFalse waits for the pod's PodScheduled=False condition.
func waitPodScheduledFalse(ctx context.Context, t *testing.T, env *scenario.Env, name string) v1.PodCondition {
	t.Helper()
	var got v1.PodCondition
	err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, scenario.DefaultWait, true,
		func(ctx context.Context) (bool, error) {
			p, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
					got = c
					return true, nil
				}
			}
			return false, nil
		})
	if err != nil {
		t.Fatalf("%s: no PodScheduled=False: %v", name, err)
	}
	return got
}

// TestGangPodGroupChanges: the PodGroup deleted while its members wait
// sends them back to waiting, silently, for a PodGroup: room appearing
// does not place them, the PodGroup coming back does. minCount raised
// above the members there are gates them; lowered to what there is lets
// them in.
func TestGangPodGroupChanges(t *testing.T) {
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(testEnv.Config)
	t.Run("deleted while waiting", func(t *testing.T) {
		const ns = "gang-deleted"
		env := gangNamespace(ctx, t, client, ns, 1)
		startGangScheduler(ctx, t, testEnv.Config, electionConfig(ns, "unused", false), nil)
		require.NoError(t, env.CreatePodGroups(ctx, scenario.MakePodGroup("g").Gang(2).Obj()))
		require.NoError(t, env.CreatePods(ctx, gangMember(env, "a", "g"), gangMember(env, "b", "g")))
		podGroupConditionIs(ctx, t, env, "g", metav1.ConditionFalse, "Unschedulable")
		deletePodGroup(ctx, t, env, "g")
		// A second node would make room; the members must not take it
		// without their PodGroup. A pod in no group, created after it,
		// is bound only after the scheduler has seen the node.
		addGangNode(ctx, t, env, ns+"-node1")
		require.NoError(t, env.CreatePods(ctx, scenario.MakePod("probe").NodeSelector("group", ns).Obj()))
		_, err := env.WaitForPodBound(ctx, "probe", scenario.DefaultWait)
		require.NoError(t, err)
		// probe took no CPU: the members would fit, but wait.
		for _, p := range []string{"a", "b"} {
			got, err := env.Client.CoreV1().Pods(ns).Get(ctx, p, metav1.GetOptions{})
			require.NoError(t, err)
			if got.Spec.NodeName != "" {
				t.Fatalf("%s was bound to %s without its PodGroup", p, got.Spec.NodeName)
			}
		}
		require.NoError(t, env.CreatePodGroups(ctx, scenario.MakePodGroup("g").Gang(2).Obj()))
		_, err = env.WaitForPodsBound(ctx, []string{"a", "b"})
		require.NoError(t, err)
	})
	t.Run("minCount raised, then lowered", func(t *testing.T) {
		const ns = "gang-mincount"
		env := gangNamespace(ctx, t, client, ns, 3)
		startGangScheduler(ctx, t, testEnv.Config, electionConfig(ns, "unused", false), nil)
		require.NoError(t, env.CreatePodGroups(ctx, scenario.MakePodGroup("g").Gang(4).Obj()))
		require.NoError(t, env.CreatePods(ctx, gangMember(env, "a", "g"), gangMember(env, "b", "g")))
		// Raised further: still too few members; nothing is tried.
		patchMinCount(ctx, t, env, "g", 5)
		require.NoError(t, env.CreatePods(ctx, gangMember(env, "c", "g")))
		// Lowered to the three there are: GangScheduling's hint for a
		// lowered minCount lets the group in.
		patchMinCount(ctx, t, env, "g", 3)
		_, err := env.WaitForPodsBound(ctx, []string{"a", "b", "c"})
		require.NoError(t, err)
		for _, p := range []string{"a", "b", "c"} {
			if n := len(env.Attempts.Of(ns, p)); n > 1 {
				t.Errorf("%s was tried %d times; a gated member is never tried", p, n)
			}
		}
	})
}

// deletePodGroup deletes the PodGroup and waits until it is gone. Its pods
// still name it, so the protection controller would keep it: the test
// lifts the finalizer itself, as an operator forcing the deletion would.
func deletePodGroup(ctx context.Context, t *testing.T, env *scenario.Env, name string) {
	t.Helper()
	groups := env.Client.SchedulingV1beta1().PodGroups(env.Namespace)
	_, err := groups.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`),
		metav1.PatchOptions{})
	require.NoError(t, err)
	require.NoError(t, groups.Delete(ctx, name, metav1.DeleteOptions{}))
	err = wait.PollUntilContextTimeout(ctx, scenario.PollInterval, scenario.DefaultWait, true,
		func(ctx context.Context) (bool, error) {
			_, err := groups.Get(ctx, name, metav1.GetOptions{})
			return err != nil, nil
		})
	require.NoError(t, err)
}

// patchMinCount sets the gang's minCount.
func patchMinCount(ctx context.Context, t *testing.T, env *scenario.Env, name string, minCount int) {
	t.Helper()
	_, err := env.Client.SchedulingV1beta1().PodGroups(env.Namespace).Patch(ctx, name, types.MergePatchType,
		fmt.Appendf(nil, `{"spec":{"schedulingPolicy":{"gang":{"minCount":%d}}}}`, minCount), metav1.PatchOptions{})
	require.NoError(t, err)
}

// holdAtPermit is a Permit plugin that holds every pod for an hour: the
// scheduler that runs it is killed while the gang waits.
type holdAtPermit struct{ held chan<- string }

func (h *holdAtPermit) Name() string { return "HoldAtPermit" }

func (h *holdAtPermit) Permit(_ context.Context, _ *framework.CycleState, pod *v1.Pod, _ string) (*framework.Status,
	time.Duration) {
	h.held <- pod.Name
	return framework.NewStatus(framework.Wait, "held by the test"), time.Hour
}

// TestGangSchedulerKilledAtPermit: a leader killed while a gang's members
// wait at Permit has bound none of them; the next leader places the gang
// whole, and none of its members was ever bound alone.
func TestGangSchedulerKilledAtPermit(t *testing.T) {
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(testEnv.Config)
	const ns = "gang-killed"
	env := gangNamespace(ctx, t, client, ns, 3)
	held := make(chan string, 3)
	registry := framework.Registry{"HoldAtPermit": func(context.Context, *runtime.RawExtension, framework.Handle) (
		framework.Plugin, error) {
		return &holdAtPermit{held: held}, nil
	}}
	first := electionConfig(ns, "gang-killed", true) +
		"  plugins:\n    permit:\n      enabled:\n      - name: HoldAtPermit\n"
	stopFirst := startGangScheduler(ctx, t, testEnv.Config, first, registry)
	require.NoError(t, env.CreatePodGroups(ctx, scenario.MakePodGroup("g").Gang(3).Obj()))
	members := []string{"a", "b", "c"}
	for _, m := range members {
		require.NoError(t, env.CreatePods(ctx, gangMember(env, m, "g")))
	}
	// Watch for a member bound before the next leader runs.
	boundEarly := watchBinds(ctx, t, env)
	for range members {
		select {
		case <-held:
		case <-time.After(scenario.DefaultWait):
			t.Fatal("the gang's members did not all reach Permit")
		}
	}
	stopFirst()
	if got := boundEarly(); len(got) > 0 {
		t.Fatalf("members bound by the killed leader: %v", got)
	}
	startGangScheduler(ctx, t, testEnv.Config, electionConfig(ns, "gang-killed", true), nil)
	nodes, err := env.WaitForPodsBound(ctx, members)
	require.NoError(t, err)
	t.Logf("the next leader bound a, b, c to %v", nodes)
	podGroupConditionIs(ctx, t, env, "g", metav1.ConditionTrue, "Scheduled")
}

// watchBinds watches env's pods from now and returns what reports the
// pods seen bound so far.
func watchBinds(ctx context.Context, t *testing.T, env *scenario.Env) func() []string {
	t.Helper()
	w, err := env.Client.CoreV1().Pods(env.Namespace).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	bound := make(chan string, 16)
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*v1.Pod); ok && p.Spec.NodeName != "" {
				bound <- p.Name
			}
		}
	}()
	return func() []string {
		var out []string
		for {
			select {
			case p := <-bound:
				out = append(out, p)
			default:
				return out
			}
		}
	}
}
