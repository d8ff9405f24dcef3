package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/stretchr/testify/require"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/testenv"
)

// TestPodGroupMetrics scrapes /metrics of a scheduler with GenericWorkload
// as a gang that fits and one that does not are tried: each attempt is
// counted once, for the group, under its result, and timed; the queue
// reports the waiting group as one entity of three pods. Without the gate,
// the pod-group metrics are not served.
func TestPodGroupMetrics(t *testing.T) {
	t.Run("gate off: not served", func(t *testing.T) {
		base := servedScheduler(t.Context(), t, "podgroup-metrics-off", features.Gates{})
		families, err := testenv.Scrape(t.Context(), base+"/metrics")
		require.NoError(t, err)
		for _, name := range []string{"scheduler_podgroup_schedule_attempts_total",
			"scheduler_podgroup_scheduling_attempt_duration_seconds",
			"scheduler_podgroup_scheduling_algorithm_duration_seconds"} {
			if families[name] != nil {
				t.Errorf("%s is served without GenericWorkload", name)
			}
		}
		if got := families.Value("scheduler_queued_entities", map[string]string{"type": "podgroup"}); got != 0 ||
			len(families["scheduler_queued_entities"].GetMetric()) != 4 {
			t.Errorf("scheduler_queued_entities: %v, want the four queues of pods only",
				families["scheduler_queued_entities"].GetMetric())
		}
	})

	t.Run("gate on", func(t *testing.T) {
		ctx := t.Context()
		const ns = "podgroup-metrics"
		base := servedScheduler(ctx, t, ns, features.Gates{GenericWorkload: true})
		env := &scenario.Env{Client: kubernetes.NewForConfigOrDie(testEnv.Config), Namespace: ns, SchedulerName: ns,
			Attempts: scenario.NewAttemptLog()}
		node := ns + "-node"
		require.NoError(t, env.CreateNodes(ctx, scenario.MakeNode(node).Label("group", ns).Capacity(
			map[v1.ResourceName]string{v1.ResourceCPU: "2", v1.ResourcePods: "10"}).Obj()))
		t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })
		gang := func(name string, members int) []string {
			pg := builders.MakePodGroup().Name(name).Namespace(ns).Gang(int32(members)).Obj()
			_, err := env.Client.SchedulingV1beta1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{})
			require.NoError(t, err)
			var names []string
			for i := range members {
				pod := scenario.MakePod(fmt.Sprintf("%s-%d", name, i)).PodGroup(name).NodeSelector("group", ns).
					Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
				require.NoError(t, env.CreatePods(ctx, pod))
				names = append(names, pod.Name)
			}
			return names
		}
		profile := map[string]string{"profile": ns}
		result := func(r string) map[string]string { return map[string]string{"profile": ns, "result": r} }

		fits := gang("fits", 2)
		_, err := env.WaitForPodsBound(ctx, fits)
		require.NoError(t, err)
		waitForMetrics(ctx, t, base, map[string]map[string]string{
			"scheduler_podgroup_schedule_attempts_total":               result("scheduled"),
			"scheduler_podgroup_scheduling_attempt_duration_seconds":   result("scheduled"),
			"scheduler_podgroup_scheduling_algorithm_duration_seconds": nil,
		}, 1)
		// Each bound member is a pod scheduled; the group's attempt is one.
		families, err := testenv.Scrape(ctx, base+"/metrics")
		require.NoError(t, err)
		if got := families.Value("scheduler_podgroup_schedule_attempts_total", profile); got != 1 {
			t.Errorf("pod-group attempts %v after one attempt, want 1", got)
		}

		tooBig := gang("too-big", 3)
		for _, name := range tooBig {
			_, err := env.WaitForPodUnschedulable(ctx, name, scenario.DefaultWait)
			require.NoError(t, err)
		}
		waitForMetrics(ctx, t, base, map[string]map[string]string{
			"scheduler_podgroup_schedule_attempts_total": result("unschedulable"),
			// The group waits in backoffQ, one entity of three pods.
			"scheduler_queued_entities": {"queue": "backoff", "type": "podgroup"},
		}, 1)
		waitForMetrics(ctx, t, base, map[string]map[string]string{
			"scheduler_pending_pods": {"queue": "backoff"},
		}, 3)
	})
}

// servedScheduler runs the default profile, named ns, with gates, serving
// its metrics, in a new namespace ns, until the test ends, and returns the
// metrics' base URL.
func servedScheduler(ctx context.Context, t *testing.T, ns string, gates features.Gates) string {
	t.Helper()
	client := kubernetes.NewForConfigOrDie(testEnv.Config)
	_, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	cfg, err := scheduler.DecodeConfigFor([]byte(electionConfig(ns, "unused", false)), gates)
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	svc, err := scheduler.New(runCtx, cfg, testEnv.Config, scheduler.WithFeatureGates(gates))
	require.NoError(t, err)
	addr, err := svc.Serve(runCtx, "127.0.0.1:0")
	require.NoError(t, err)
	runUntilStopped(t, runCtx, cancel, svc)
	return "http://" + addr.String()
}

// waitForMetrics scrapes base's /metrics until each family's samples with
// the labels add up to at least min.
func waitForMetrics(ctx context.Context, t *testing.T, base string, want map[string]map[string]string, min float64) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, scenario.DefaultWait, true,
		func(ctx context.Context) (bool, error) {
			families, err := testenv.Scrape(ctx, base+"/metrics")
			if err != nil {
				return false, err
			}
			for family, labels := range want {
				if got := families.Value(family, labels); got < min {
					last = fmt.Sprintf("%s%v = %v, want at least %v", family, labels, got, min)
					return false, nil
				}
			}
			return true, nil
		})
	require.NoError(t, err, last)
}
