package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/stretchr/testify/require"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/podstatus"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/testenv"
)

// TestWorkloadAPIMissing: with GenericWorkload on, against an apiserver
// that does not serve PodGroups, minisched says which kube-apiserver flags
// are missing (kube-scheduler schedules nothing and says nothing) and still
// schedules a pod that is in no group. Against one that serves them, it
// says nothing of the kind, and its PodGroup informer syncs.
func TestWorkloadAPIMissing(t *testing.T) {
	tests := []struct {
		name   string
		served bool
	}{
		{name: "served", served: true},
		{name: "not served"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := testEnv.Config
			if !tt.served {
				env, err := testenv.StartEnvironmentWith(testenv.Options{WithoutWorkloads: true})
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, env.Stop()) })
				rc = env.Config
			}
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
			ctx := klog.NewContext(t.Context(), logger)
			const ns = "workload-api"
			client := kubernetes.NewForConfigOrDie(rc)
			env := runWithGates(ctx, t, rc, ns, features.Gates{GenericWorkload: true})
			if err := env.CreateNodes(ctx, scenario.MakeNode(ns+"-node").Obj()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), ns+"-node", metav1.DeleteOptions{}) })
			if err := env.CreatePods(ctx, scenario.MakePod("alone").Obj()); err != nil {
				t.Fatal(err)
			}
			if _, err := env.WaitForPodBound(ctx, "alone", scenario.DefaultWait); err != nil {
				t.Fatalf("a pod in no group: %v", err)
			}
			said := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
			told := strings.Contains(said, "The apiserver does not serve PodGroups") &&
				strings.Contains(said, scheduler.WorkloadAPIServerFlags)
			if told == tt.served {
				t.Errorf("said the flags are missing: %t, want %t; the log:\n%s", told, !tt.served, said)
			}
		})
	}
}

// runWithGates runs the default profile, named ns, with gates against rc,
// in a new namespace ns, until the test ends.
func runWithGates(ctx context.Context, t *testing.T, rc *rest.Config, ns string, gates features.Gates) *scenario.Env {
	t.Helper()
	client := kubernetes.NewForConfigOrDie(rc)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	cfg, err := scheduler.DecodeConfigFor([]byte(electionConfig(ns, "unused", false)), gates)
	require.NoError(t, err)
	svc, err := scheduler.New(ctx, cfg, rc, scheduler.WithFeatureGates(gates))
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	runUntilStopped(t, runCtx, cancel, svc)
	return &scenario.Env{Client: client, Namespace: ns, SchedulerName: ns, Attempts: scenario.NewAttemptLog()}
}

// runUntilStopped runs svc on runCtx until stop, which the end of the test
// calls too: stop cancels runCtx (with cancel) and checks that Run returned
// nil within a minute. Calling it again does nothing.
func runUntilStopped(t *testing.T, runCtx context.Context, cancel context.CancelFunc,
	svc *scheduler.Service) (stop func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- svc.Run(runCtx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run = %v, want nil on a clean stop", err)
				}
			case <-time.After(time.Minute):
				t.Errorf("Run did not return within a minute of being stopped")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// createCPUNode creates a node of one CPU and ten pods, labelled
// key=value, and deletes it when the test ends (the apiserver is shared).
func createCPUNode(ctx context.Context, t *testing.T, env *scenario.Env, name, key, value string) {
	t.Helper()
	if err := env.CreateNodes(ctx, scenario.MakeNode(name).Label(key, value).Capacity(
		map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourcePods: "10"}).Obj()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// TestGangAllOrNothing: with GenericWorkload, a gang whose members all fit
// is bound whole and its PodGroup says Scheduled; a gang one node short is
// not bound at all, each member saying why in its shape, and its PodGroup
// says Unschedulable, with what its PodGroupPostFilter plugins did
// appended (DynamicResources' words first: it comes before
// DefaultPreemption). The node's capacity is one member's.
func TestGangAllOrNothing(t *testing.T) {
	tests := []struct {
		name  string
		nodes int
		// wantBound says every member is bound; otherwise none is.
		wantBound bool
		// wantMessages are each member's PodScheduled message prefixes
		// (a and b placed in the simulation, c fitting nowhere).
		wantMessages  map[string]string
		wantCondition string
	}{
		{name: "fits", nodes: 3, wantBound: true},
		// DynamicResources' "deallocation and deletion of ResourceClaims
		// completed" is not in the messages: DefaultPreemption, the next
		// PodGroupPostFilter plugin, finds no victims and says so with
		// UnschedulableAndUnresolvable, whose status alone the runner
		// returns, as kube-scheduler's does (conformance case
		// gang-one-node-short).
		{name: "one node short", nodes: 2,
			wantMessages: map[string]string{
				"a": "pod group is unschedulable, minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, " +
					"pod group preemption: No preemption victims found for incoming preemptor",
				"b": "pod group is unschedulable, minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, " +
					"pod group preemption: No preemption victims found for incoming preemptor",
				// Other tests' nodes share the apiserver: c's message counts
				// them too, after its own two.
				"c": "0/",
			},
			wantCondition: "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, " +
				"pod group preemption: No preemption victims found for incoming preemptor"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			ns := fmt.Sprintf("gang-%d", i)
			env := runWithGates(ctx, t, testEnv.Config, ns, features.Gates{GenericWorkload: true})
			for n := range tt.nodes {
				createCPUNode(ctx, t, env, fmt.Sprintf("%s-node%d", ns, n), "group", ns)
			}
			pg := builders.MakePodGroup().Name("gang").Namespace(ns).Gang(3).Obj()
			if _, err := env.Client.SchedulingV1beta1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			members := []string{"a", "b", "c"}
			for _, m := range members {
				pod := scenario.MakePod(m).PodGroup("gang").NodeSelector("group", ns).
					Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
				if err := env.CreatePods(ctx, pod); err != nil {
					t.Fatal(err)
				}
			}
			if tt.wantBound {
				if _, err := env.WaitForPodsBound(ctx, members); err != nil {
					t.Fatal(err)
				}
			} else {
				for _, m := range members {
					msg, err := env.WaitForPodUnschedulable(ctx, m, scenario.DefaultWait)
					if err != nil {
						t.Fatal(err)
					}
					t.Logf("%s: %s", m, msg)
					if !strings.HasPrefix(msg, tt.wantMessages[m]) || m == "c" && !strings.Contains(msg, "2 Insufficient cpu") {
						t.Errorf("%s: PodScheduled message %q, want it to start with %q", m, msg, tt.wantMessages[m])
					}
				}
			}
			var cond *metav1.Condition
			err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, scenario.DefaultWait, true,
				func(ctx context.Context) (bool, error) {
					got, err := env.Client.SchedulingV1beta1().PodGroups(ns).Get(ctx, "gang", metav1.GetOptions{})
					if err != nil {
						return false, err
					}
					cond = apimeta.FindStatusCondition(got.Status.Conditions, "PodGroupInitiallyScheduled")
					return cond != nil, nil
				})
			if err != nil {
				t.Fatalf("no PodGroupInitiallyScheduled condition: %v", err)
			}
			wantStatus, wantReason := metav1.ConditionTrue, "Scheduled"
			if !tt.wantBound {
				wantStatus, wantReason = metav1.ConditionFalse, "Unschedulable"
			}
			t.Logf("PodGroupInitiallyScheduled: %s/%s %q", cond.Status, cond.Reason, cond.Message)
			if cond.Status != wantStatus || cond.Reason != wantReason || !strings.HasPrefix(cond.Message, tt.wantCondition) {
				t.Errorf("condition %s/%s %q, want %s/%s starting %q", cond.Status, cond.Reason, cond.Message,
					wantStatus, wantReason, tt.wantCondition)
			}
		})
	}
}

// TestGangNoMemberTried: kube-scheduler's quirk, kept. A gang of three
// one node short fails, and backs off; one member is deleted meanwhile.
// The two left are tried again (backing off does not run PreEnqueue
// again), but PlacementFeasible stops the cycle before the first: no
// member's PreFilter ran, so DynamicResources' PodGroupPostFilter finds
// nothing recorded, and that Error fails the group and both members with
// its "not found".
func TestGangNoMemberTried(t *testing.T) {
	const want = `error in "DynamicResources" PodGroupPostFilter plugins: not found`
	ctx := t.Context()
	ns := "gang-untried"
	env := runWithGates(ctx, t, testEnv.Config, ns, features.Gates{GenericWorkload: true})
	for n := range 2 {
		name := fmt.Sprintf("%s-node%d", ns, n)
		if err := env.CreateNodes(ctx, scenario.MakeNode(name).Label("group", ns).Capacity(
			map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourcePods: "10"}).Obj()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	pg := builders.MakePodGroup().Name("gang").Namespace(ns).Gang(3).Obj()
	if _, err := env.Client.SchedulingV1beta1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"a", "b", "c"} {
		pod := scenario.MakePod(m).PodGroup("gang").NodeSelector("group", ns).
			Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
		if err := env.CreatePods(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	// The first attempt ended (its condition is written just before the
	// group goes to back off for a second): delete c at once.
	waitForPodGroupCondition(ctx, t, env, "gang", "Unschedulable")
	if err := env.Client.CoreV1().Pods(ns).Delete(ctx, "c", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		var cond *v1.PodCondition
		err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, scenario.DefaultWait, true,
			func(ctx context.Context) (bool, error) {
				p, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				cond = podstatus.Condition(&p.Status, v1.PodScheduled)
				return cond != nil && cond.Reason == "SchedulerError", nil
			})
		if err != nil {
			t.Fatalf("%s: no SchedulerError (last condition %+v): %v", name, cond, err)
		}
		if cond.Message != want {
			t.Errorf("%s: PodScheduled SchedulerError %q, want %q", name, cond.Message, want)
		}
	}
	cond := waitForPodGroupCondition(ctx, t, env, "gang", "SchedulerError")
	if cond.Status != metav1.ConditionFalse || cond.Reason != "SchedulerError" || cond.Message != want {
		t.Errorf("PodGroupInitiallyScheduled %s/%s %q, want False/SchedulerError %q", cond.Status, cond.Reason,
			cond.Message, want)
	}
}

// waitForPodGroupCondition waits for the PodGroup's
// PodGroupInitiallyScheduled condition, with reason unless that is "", and
// returns it.
func waitForPodGroupCondition(ctx context.Context, t *testing.T, env *scenario.Env, name, reason string) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, scenario.DefaultWait, true,
		func(ctx context.Context) (bool, error) {
			got, err := env.Client.SchedulingV1beta1().PodGroups(env.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			cond = apimeta.FindStatusCondition(got.Status.Conditions, "PodGroupInitiallyScheduled")
			return cond != nil && (reason == "" || cond.Reason == reason), nil
		})
	if err != nil {
		t.Fatalf("no PodGroupInitiallyScheduled condition (reason %q; last %+v): %v", reason, cond, err)
	}
	return cond
}
