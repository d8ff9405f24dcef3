package scheduler_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/testenv"
)

// atLeast is a sample of family with labels whose value (a histogram's
// count) must be at least min.
type atLeast struct {
	family string
	labels map[string]string
	min    float64
}

// TestMetricsMove runs a scheduler with its metrics served, and checks that
// scraping /metrics shows the values move as a pod is scheduled, another is
// rejected, and a third preempts a fourth; and that the health endpoints
// answer.
func TestMetricsMove(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const profile, ns, nodeName = "metrics-test", "metrics-test", "metrics-node"
	client, err := kubernetes.NewForConfig(testEnv.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := scheduler.DecodeConfig([]byte("apiVersion: kubescheduler.config.k8s.io/v1\n" +
		"kind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: " + profile + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := scheduler.New(ctx, cfg, testEnv.Config)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := svc.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + addr.String()
	runErr := make(chan error, 1)
	go func() { runErr <- svc.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-runErr; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	env := &scenario.Env{Client: client, Namespace: ns, SchedulerName: profile, Attempts: scenario.NewAttemptLog()}
	if err := env.CreateNodes(ctx, scenario.MakeNode(nodeName).Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU: "2", v1.ResourcePods: "10"}).Obj()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), nodeName, metav1.DeleteOptions{}) })
	for name, value := range map[string]int32{"metrics-low": 10, "metrics-high": 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if _, err := client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Every pod is pinned to our node: other tests' nodes may still exist.
	pod := func(name, class, cpu string) *v1.Pod {
		p := scenario.MakePod(name).NodeSelector(v1.LabelHostname, nodeName).
			Req(map[v1.ResourceName]string{v1.ResourceCPU: cpu}).Obj()
		p.Spec.PriorityClassName = class
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		return p
	}

	steps := []struct {
		name string
		do   func() error
		want []atLeast
	}{
		{
			name: "a pod is scheduled",
			do: func() error {
				if err := env.CreatePods(ctx, pod("low", "metrics-low", "2")); err != nil {
					return err
				}
				_, err := env.WaitForPodBound(ctx, "low", scenario.DefaultWait)
				return err
			},
			want: []atLeast{
				{"scheduler_schedule_attempts_total", map[string]string{"result": "scheduled", "profile": profile}, 1},
				{"scheduler_scheduling_attempt_duration_seconds", map[string]string{"result": "scheduled", "profile": profile}, 1},
				{"scheduler_scheduling_algorithm_duration_seconds", nil, 1},
				{"scheduler_pod_scheduling_sli_duration_seconds", map[string]string{"attempts": "1"}, 1},
				{"scheduler_pod_scheduling_attempts", nil, 1},
				{"scheduler_queue_incoming_pods_total", map[string]string{"queue": "active", "event": "PodAdd"}, 1},
				{"scheduler_framework_extension_point_duration_seconds", map[string]string{"extension_point": "Filter", "status": "Success", "profile": profile}, 1},
				{"scheduler_framework_extension_point_duration_seconds", map[string]string{"extension_point": "Bind", "status": "Success", "profile": profile}, 1},
				{"scheduler_event_handling_duration_seconds", map[string]string{"event": "NodeAdd"}, 1},
				{"scheduler_event_handling_duration_seconds", map[string]string{"event": "AssignedPodAdd"}, 1},
			},
		},
		{
			name: "a pod is rejected",
			do: func() error {
				if err := env.CreatePods(ctx, pod("huge", "metrics-low", "3")); err != nil {
					return err
				}
				_, err := env.WaitForPodUnschedulable(ctx, "huge", scenario.DefaultWait)
				return err
			},
			want: []atLeast{
				{"scheduler_schedule_attempts_total", map[string]string{"result": "unschedulable", "profile": profile}, 1},
				{"scheduler_pending_pods", map[string]string{"queue": "unschedulable"}, 1},
				{"scheduler_unschedulable_pods", map[string]string{"plugin": "NodeResourcesFit", "profile": profile}, 1},
				{"scheduler_queue_incoming_pods_total", map[string]string{"queue": "unschedulable", "event": "ScheduleAttemptFailure"}, 1},
			},
		},
		{
			name: "a pod preempts another",
			do: func() error {
				if err := env.CreatePods(ctx, pod("high", "metrics-high", "1")); err != nil {
					return err
				}
				_, err := env.WaitForPodBound(ctx, "high", scenario.DefaultWait)
				return err
			},
			want: []atLeast{
				{"scheduler_preemption_attempts_total", nil, 1},
				{"scheduler_preemption_victims", nil, 1},
				{"scheduler_schedule_attempts_total", map[string]string{"result": "scheduled", "profile": profile}, 2},
				{"scheduler_framework_extension_point_duration_seconds", map[string]string{"extension_point": "PostFilter", "profile": profile}, 1},
				{"scheduler_event_handling_duration_seconds", map[string]string{"event": "AssignedPodDelete"}, 1},
			},
		},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if err := step.do(); err != nil {
				t.Fatal(err)
			}
			// Metrics are recorded around the API calls: poll until they
			// show what happened.
			var last string
			err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, scenario.DefaultWait, true, func(ctx context.Context) (bool, error) {
				families, err := testenv.Scrape(ctx, base+"/metrics")
				if err != nil {
					return false, err
				}
				for _, w := range step.want {
					if got := families.Value(w.family, w.labels); got < w.min {
						last = fmt.Sprintf("%s%v = %v, want at least %v", w.family, w.labels, got, w.min)
						return false, nil
					}
				}
				return true, nil
			})
			if err != nil {
				t.Fatalf("%v: %s", err, last)
			}
		})
	}

	t.Run("the binding goroutines and the Go runtime are reported", func(t *testing.T) {
		families, err := testenv.Scrape(ctx, base+"/metrics")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"scheduler_goroutines", "go_goroutines", "process_resident_memory_bytes"} {
			if families[name] == nil {
				t.Errorf("%s is missing", name)
			}
		}
	})
	t.Run("health endpoints", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/livez", "/readyz"} {
			resp, err := http.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(body) != "ok" {
				t.Errorf("GET %s = %s %q, want 200 ok", path, resp.Status, body)
			}
		}
		// enableProfiling defaults to true, as in kube-scheduler.
		resp, err := http.Get(base + "/debug/pprof/goroutine?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /debug/pprof/goroutine = %s, want 200", resp.Status)
		}
	})
}
