package scheduler_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/stretchr/testify/require"

	"github.com/minisched/minisched/minisched"
	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/queue"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/testenv"
)

var testEnv *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithEnvironment(m.Run, &testEnv, nil))
}

// calls records which plugin hooks ran, per pod.
type calls struct {
	mu sync.Mutex
	m  map[string][]string
}

func (c *calls) add(pod, what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[pod] = append(c.m[pod], what)
}

func (c *calls) of(pod string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.m[pod]...)
}

// recorder is a Reserve plugin that only records.
type recorder struct{ c *calls }

func (r *recorder) Name() string { return "Recorder" }
func (r *recorder) Reserve(_ context.Context, _ *framework.CycleState, p *v1.Pod, _ string) *framework.Status {
	r.c.add(p.Name, "Reserve")
	return nil
}
func (r *recorder) Unreserve(_ context.Context, _ *framework.CycleState, p *v1.Pod, _ string) {
	r.c.add(p.Name, "Unreserve")
}

// flakyBinder fails the bind of pods labelled fail-binds=N the first N
// times, then leaves them to the next binder.
type flakyBinder struct {
	mu    sync.Mutex
	tries map[string]int
}

func (f *flakyBinder) Name() string { return "FlakyBinder" }
func (f *flakyBinder) Bind(_ context.Context, _ *framework.CycleState, p *v1.Pod, _ string) *framework.Status {
	var n int
	if _, err := fmt.Sscan(p.Labels["fail-binds"], &n); err != nil {
		return framework.NewStatus(framework.Skip)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tries[p.Name]++
	if f.tries[p.Name] <= n {
		return framework.AsStatus(fmt.Errorf("injected bind failure %d", f.tries[p.Name]))
	}
	return framework.NewStatus(framework.Skip)
}

// gatekeeper is a Permit plugin: it rejects pods labelled reject=true and
// makes pods labelled wait=<duration> wait that long before allowing them.
type gatekeeper struct{ h framework.Handle }

func (g *gatekeeper) Name() string { return "Gatekeeper" }
func (g *gatekeeper) Permit(_ context.Context, _ *framework.CycleState, p *v1.Pod,
	_ string) (*framework.Status, time.Duration) {
	if p.Labels["reject"] == "true" {
		return framework.NewStatus(framework.Unschedulable, "rejected by Gatekeeper"), 0
	}
	if d, err := time.ParseDuration(p.Labels["wait"]); err == nil {
		uid := p.UID
		time.AfterFunc(d, func() {
			if wp := g.h.GetWaitingPod(uid); wp != nil {
				wp.Allow(g.Name())
			}
		})
		return framework.NewStatus(framework.Wait), time.Minute
	}
	return nil, 0
}

type harness struct {
	client   kubernetes.Interface
	env      *scenario.Env
	calls    *calls
	stop     context.CancelFunc
	runErr   chan error
	attempts *scenario.AttemptLog
	// svc is the scheduler under test, for a look into its queue.
	svc *scheduler.Service
}

func startHarness(t *testing.T, ns string) *harness {
	t.Helper()
	ctx := context.Background()
	client, err := kubernetes.NewForConfig(testEnv.Config)
	require.NoError(t, err)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h := &harness{
		client:   client,
		calls:    &calls{m: map[string][]string{}},
		runErr:   make(chan error, 1),
		attempts: scenario.NewAttemptLog(),
	}
	registry := framework.Registry{
		"Recorder": func(context.Context, *runtime.RawExtension, framework.Handle) (framework.Plugin, error) {
			return &recorder{c: h.calls}, nil
		},
		"FlakyBinder": func(context.Context, *runtime.RawExtension, framework.Handle) (framework.Plugin, error) {
			return &flakyBinder{tries: map[string]int{}}, nil
		},
		"Gatekeeper": func(_ context.Context, _ *runtime.RawExtension, fh framework.Handle) (framework.Plugin, error) {
			return &gatekeeper{h: fh}, nil
		},
	}
	doc := `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 1
profiles:
- schedulerName: ` + ns + `
  plugins:
    multiPoint:
      enabled:
      - name: Recorder
      - name: Gatekeeper
      - name: FlakyBinder
    bind:
      enabled:
      - name: FlakyBinder
      - name: DefaultBinder
`
	cfg, err := scheduler.DecodeConfig([]byte(doc))
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	s, err := scheduler.New(runCtx, cfg, testEnv.Config, scheduler.WithOutOfTreeRegistry(registry),
		scheduler.WithObserver(h.attempts.Record))
	require.NoError(t, err)
	h.stop = stop
	h.svc = s
	go func() { h.runErr <- s.Run(runCtx) }()
	h.env = &scenario.Env{Client: client, Namespace: ns, SchedulerName: ns, Attempts: h.attempts}
	t.Cleanup(func() { h.shutdown(t) })
	return h
}

func (h *harness) shutdown(t *testing.T) {
	if h.stop == nil {
		return
	}
	h.stop()
	h.stop = nil
	select {
	case err := <-h.runErr:
		if err != nil {
			t.Errorf("Run returned %v, want nil on a clean stop", err)
		}
	case <-time.After(time.Minute):
		t.Errorf("Run did not return within a minute of being stopped")
	}
}

func results(as []minisched.Attempt) []string {
	var out []string
	for _, a := range as {
		out = append(out, string(a.Result))
	}
	return out
}

func TestFailurePaths(t *testing.T) {
	ctx := context.Background()
	h := startHarness(t, "failures")
	node := scenario.MakeNode("failures-node").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Obj()
	require.NoError(t, h.env.CreateNodes(ctx, node))
	cpu1 := map[v1.ResourceName]string{v1.ResourceCPU: "1"}

	t.Run("a failed bind unreserves, forgets and requeues until it binds", func(t *testing.T) {
		p := scenario.MakePod("flaky").Req(cpu1).Obj()
		p.Labels = map[string]string{"fail-binds": "2"}
		require.NoError(t, h.env.CreatePods(ctx, p))
		if _, err := h.env.WaitForPodBound(ctx, "flaky", scenario.DefaultWait); err != nil {
			t.Fatal(err)
		}
		// The binding goroutine reports the attempt just after the bind.
		attempts, err := h.env.WaitForAttempts(ctx, "flaky", 3, scenario.DefaultWait)
		require.NoError(t, err)
		got := strings.Join(results(attempts), ",")
		if want := "SchedulerError,SchedulerError,Scheduled"; got != want {
			t.Errorf("attempts = %s, want %s", got, want)
		}
		got = strings.Join(h.calls.of("flaky"), ",")
		if want := "Reserve,Unreserve,Reserve,Unreserve,Reserve"; got != want {
			t.Errorf("calls = %s, want %s", got, want)
		}
	})

	t.Run("a pod released from its scheduling gate whose bind fails backs off, not parked", func(t *testing.T) {
		p := scenario.MakePod("ungated").Req(cpu1).Obj()
		p.Labels = map[string]string{"fail-binds": "1"}
		p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/hold"}}
		require.NoError(t, h.env.CreatePods(ctx, p))
		created, err := h.client.CoreV1().Pods("failures").Get(ctx, "ungated", metav1.GetOptions{})
		require.NoError(t, err)
		// Wait until the queue holds it gated: SchedulingGates is then
		// among its rejecting plugins.
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, scenario.DefaultWait, true,
			func(context.Context) (bool, error) {
				return h.svc.Scheduler.Queue.Locate(created.UID) == queue.UnschedulablePods, nil
			}))
		created.Spec.SchedulingGates = nil
		_, err = h.client.CoreV1().Pods("failures").Update(ctx, created, metav1.UpdateOptions{})
		require.NoError(t, err)
		// The first bind fails with an error: the retry must come after the
		// one-second backoff, not after an event for SchedulingGates.
		if _, err := h.env.WaitForPodBound(ctx, "ungated", 5*time.Second); err != nil {
			t.Fatalf("not bound within 5s of a failed bind: %v", err)
		}
		require.NoError(t, h.env.DeletePod(ctx, "ungated"))
	})

	t.Run("forgotten assumptions left no trace: the other cpu still fits", func(t *testing.T) {
		require.NoError(t, h.env.CreatePods(ctx, scenario.MakePod("fits").Req(cpu1).Obj()))
		if _, err := h.env.WaitForPodBound(ctx, "fits", scenario.DefaultWait); err != nil {
			t.Fatal(err)
		}
		require.NoError(t, h.env.DeletePod(ctx, "fits"))
	})

	t.Run("a Permit rejection unreserves and leaves the pod unschedulable", func(t *testing.T) {
		p := scenario.MakePod("rejected").Req(cpu1).Obj()
		p.Labels = map[string]string{"reject": "true"}
		require.NoError(t, h.env.CreatePods(ctx, p))
		msg, err := h.env.WaitForPodUnschedulable(ctx, "rejected", scenario.DefaultWait)
		require.NoError(t, err)
		if want := "0/1 nodes are available: 1 rejected by Gatekeeper."; msg != want {
			t.Errorf("message = %q, want %q", msg, want)
		}
		if got, want := strings.Join(h.calls.of("rejected"), ","), "Reserve,Unreserve"; got != want {
			t.Errorf("calls = %s, want %s", got, want)
		}
		notes, err := h.env.WaitForEvent(ctx, "rejected", "FailedScheduling", scenario.DefaultWait)
		require.NoError(t, err)
		if notes[0] != msg {
			t.Errorf("FailedScheduling event says %q, want the condition's message %q", notes[0], msg)
		}
		require.NoError(t, h.env.DeletePod(ctx, "rejected"))
	})

	t.Run("a pod deleted while waiting on Permit is not requeued", func(t *testing.T) {
		p := scenario.MakePod("doomed").Req(cpu1).Obj()
		p.Labels = map[string]string{"wait": "1h"}
		require.NoError(t, h.env.CreatePods(ctx, p))
		// Wait until it is reserved (and so waiting on Permit).
		require.NoError(t, pollCalls(ctx, h.calls, "doomed", "Reserve"))
		require.NoError(t, h.env.DeletePod(ctx, "doomed"))
		require.NoError(t, pollCalls(ctx, h.calls, "doomed", "Reserve,Unreserve"))
		attempts, err := h.env.WaitForAttempts(ctx, "doomed", 1, scenario.DefaultWait)
		require.NoError(t, err)
		require.NoError(t, h.env.ExpectNoNewAttempts(ctx, "doomed", 2*time.Second))
		if len(attempts) != 1 || attempts[0].Result != attempt.Unschedulable {
			t.Errorf("attempts = %v, want one Unschedulable", results(attempts))
		}
	})

	t.Run("pods of other schedulers are left alone", func(t *testing.T) {
		require.NoError(t, h.env.CreatePods(ctx, scenario.MakePod("foreign").SchedulerName("someone-else").Obj()))
		require.NoError(t, h.env.ExpectNoNewAttempts(ctx, "foreign", 2*time.Second))
		p, err := h.client.CoreV1().Pods("failures").Get(ctx, "foreign", metav1.GetOptions{})
		require.NoError(t, err)
		if p.Spec.NodeName != "" || len(p.Status.Conditions) != 0 || len(h.env.PodAttempts("foreign")) != 0 {
			t.Errorf("foreign pod was touched: node %q, conditions %v", p.Spec.NodeName, p.Status.Conditions)
		}
	})

	t.Run("stopping lets a binding cycle in flight finish", func(t *testing.T) {
		p := scenario.MakePod("inflight").Obj()
		p.Labels = map[string]string{"wait": "2s"}
		require.NoError(t, h.env.CreatePods(ctx, p))
		require.NoError(t, pollCalls(ctx, h.calls, "inflight", "Reserve"))
		h.shutdown(t) // returns only after the binding cycle ended
		got, err := h.client.CoreV1().Pods("failures").Get(ctx, "inflight", metav1.GetOptions{})
		require.NoError(t, err)
		if got.Spec.NodeName == "" {
			t.Errorf("the pod waiting on Permit during shutdown was not bound")
		}
	})
}

func pollCalls(ctx context.Context, c *calls, pod, want string) error {
	ctx, cancel := context.WithTimeout(ctx, scenario.DefaultWait)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if strings.Join(c.of(pod), ",") == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("calls for %s = %v, want %s", pod, c.of(pod), want)
		case <-tick.C:
		}
	}
}

// TestRunAgainstUnreachableAPIServer checks for a clear error rather than a hang.
func TestRunAgainstUnreachableAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("takes the full apiserver timeout")
	}
	cfg := scheduler.DefaultConfig()
	rc := *testEnv.Config
	rc.Host = "https://127.0.0.1:1"
	ctx, cancel := context.WithTimeout(context.Background(), 2*scheduler.APIServerTimeout)
	defer cancel()
	s, err := scheduler.New(ctx, cfg, &rc)
	require.NoError(t, err)
	start := time.Now()
	err = s.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "cannot reach the apiserver at https://127.0.0.1:1") {
		t.Fatalf("Run() = %v, want a clear unreachable error", err)
	}
	if d := time.Since(start); d > scheduler.APIServerTimeout+10*time.Second {
		t.Errorf("gave up after %v, want about %v", d, scheduler.APIServerTimeout)
	}
}

// TestStoppedWhileStarting: a stop asked for before the scheduler
// schedules (while it checks the apiserver, starts its informers or waits
// for them to list) is a clean stop: Run returns nil, as it does for a stop
// later on.
func TestStoppedWhileStarting(t *testing.T) {
	tests := []struct {
		name string
		// elect runs it as a replica electing a leader.
		elect bool
		// started cancels after Run has begun rather than before it, at
		// whatever step it has reached: tries samples those steps.
		started bool
		tries   int
	}{
		{name: "before Run", tries: 1},
		{name: "as Run begins", started: true, tries: 20},
		{name: "electing, before Run", elect: true, tries: 1},
		{name: "electing, as Run begins", elect: true, started: true, tries: 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := scheduler.DefaultConfig()
			cfg.LeaderElection.LeaderElect = &tt.elect
			cfg.LeaderElection.ResourceNamespace = "default"
			cfg.LeaderElection.ResourceName = "stopped-while-starting"
			for try := range tt.tries {
				s, err := scheduler.New(t.Context(), cfg, testEnv.Config)
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(t.Context())
				runErr := make(chan error, 1)
				if !tt.started {
					cancel()
				}
				go func() { runErr <- s.Run(ctx) }()
				cancel()
				select {
				case err := <-runErr:
					if err != nil {
						t.Errorf("try %d: Run = %v, want nil on a stop before it scheduled", try, err)
					}
				case <-time.After(time.Minute):
					t.Fatalf("try %d: Run did not return within a minute of being stopped", try)
				}
			}
		})
	}
}
