package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/testenv"
	"github.com/minisched/minisched/web"
)

// testEnv is one apiserver shared by the tests; each test has a profile,
// a namespace and nodes of its own.
var testEnv *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithEnvironment(m.Run, &testEnv, nil))
}

// runs counts the harnesses made, to name each anew.
var runs atomic.Int32

// holdLabel marks a pod whose scheduling cycle the Hold plugin holds in
// PreFilter until the test releases it (the label's value names the hold):
// while it is held, the pods that come after it wait in activeQ or
// backoffQ, where a test can look at them.
const holdLabel = "web-test/hold"

// hold is the Hold plugin: a PreFilter that blocks pods with holdLabel
// until their hold is released.
type hold struct {
	mu    sync.Mutex
	holds map[string]chan struct{}
}

func (*hold) Name() string { return "Hold" }

func (h *hold) PreFilter(ctx context.Context, _ *framework.CycleState, pod *v1.Pod,
	_ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	if name, ok := pod.Labels[holdLabel]; ok {
		select {
		case <-h.get(name):
		case <-ctx.Done():
		}
	}
	return nil, nil
}

// get returns the channel whose closing releases the hold name.
func (h *hold) get(name string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.holds[name] == nil {
		h.holds[name] = make(chan struct{})
	}
	return h.holds[name]
}

// release lets every pod held by name go on, now and later.
func (h *hold) release(name string) {
	ch := h.get(name)
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// releaseAll releases every hold, for the end of a test.
func (h *hold) releaseAll() {
	h.mu.Lock()
	var names []string
	for name := range h.holds {
		names = append(names, name)
	}
	h.mu.Unlock()
	for _, name := range names {
		h.release(name)
	}
}

func (*hold) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// harness is a scheduler with a live view, on the shared apiserver.
type harness struct {
	client kubernetes.Interface
	env    *scenario.Env
	view   *web.View
	// url is the view's root, http://127.0.0.1:PORT.
	url string
	// hold is the profile's Hold plugin.
	hold *hold
}

// newHarness starts a scheduler whose profile (name, numbered) has
// the Hold plugin and an 8-second backoff (a pod a node event moves after
// a failure waits in backoffQ long enough to be seen there), with the
// feature gates (and the profile's plugins they bring), and serves a view
// of it. Both stop when the test ends.
func newHarness(t *testing.T, name string, gates features.Gates) *harness {
	t.Helper()
	return newHarnessWith(t, name, gates, web.New())
}

// newHarnessWith is newHarness with the view to serve (one that steps,
// say).
func newHarnessWith(t *testing.T, name string, gates features.Gates, view *web.View) *harness {
	t.Helper()
	// -count=N runs a test again on the same apiserver: a new name each time.
	name = fmt.Sprintf("%s-%d", name, runs.Add(1))
	ctx, cancel := context.WithCancel(context.Background())
	client, err := kubernetes.NewForConfig(testEnv.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := scheduler.DecodeConfigFor([]byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
podInitialBackoffSeconds: 8
podMaxBackoffSeconds: 8
profiles:
- schedulerName: %s
  plugins:
    preFilter:
      enabled: [{name: Hold}]
`, name)), gates)
	if err != nil {
		t.Fatal(err)
	}
	holdPlugin := &hold{holds: map[string]chan struct{}{}}
	registry := framework.Registry{"Hold": func(context.Context, *runtime.RawExtension, framework.Handle) (framework.Plugin, error) {
		return holdPlugin, nil
	}}
	svc, err := scheduler.New(ctx, cfg, testEnv.Config, scheduler.WithOutOfTreeRegistry(registry),
		scheduler.WithLiveView(view), scheduler.WithAttemptRecords(), scheduler.WithFeatureGates(gates))
	if err != nil {
		t.Fatal(err)
	}
	addr, err := view.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- svc.Run(ctx) }()
	h := &harness{client: client, view: view, url: "http://" + addr.String(), hold: holdPlugin,
		env: &scenario.Env{Client: client, Namespace: name, SchedulerName: name, Attempts: scenario.NewAttemptLog()}}
	t.Cleanup(func() {
		holdPlugin.releaseAll()
		cancel()
		if err := <-runErr; err != nil {
			t.Errorf("Run: %v", err)
		}
		// Later tests' pods would find these nodes and NodeAffinity
		// reject them, which their checks do not expect.
		if err := client.CoreV1().Nodes().DeleteCollection(context.Background(), metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: "web-test=" + name}); err != nil {
			t.Errorf("deleting the test's nodes: %v", err)
		}
	})
	// The scheduler attaches to the view once its informers have synced.
	poll(t, "the scheduler attaches to the view", stepTimeout, func() error {
		var q struct {
			Scheduler bool `json:"scheduler"`
		}
		if err := h.get(ctx, "/api/queue", &q); err != nil {
			return err
		}
		if !q.Scheduler {
			return fmt.Errorf("no scheduler attached")
		}
		return nil
	})
	return h
}

// heldPod is a pod whose scheduling cycle waits in PreFilter until the
// hold named after it is released.
func (h *harness) heldPod(name string) *v1.Pod {
	p := h.pod(name, "100m")
	p.Labels = map[string]string{holdLabel: name}
	return p
}

// member is a pod of the test's profile requesting cpu, a member of the
// PodGroup group.
func (h *harness) member(name, group, cpu string) *v1.Pod {
	p := h.pod(name, cpu)
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
	return p
}

// node is a node of the test's with cpu cores.
func (h *harness) node(name, cpu string) *v1.Node {
	return scenario.MakeNode(h.env.Namespace+"-"+name).Label("web-test", h.env.Namespace).
		Capacity(map[v1.ResourceName]string{v1.ResourceCPU: cpu, v1.ResourcePods: "10"}).Obj()
}

// pod is a pod of the test's profile requesting cpu, kept to the test's
// nodes.
func (h *harness) pod(name, cpu string) *v1.Pod {
	return scenario.MakePod(name).NodeSelector("web-test", h.env.Namespace).
		Req(map[v1.ResourceName]string{v1.ResourceCPU: cpu}).Obj()
}

// get reads the JSON document at path into doc.
func (h *harness) get(ctx context.Context, path string, doc any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(doc)
}

// poll calls check every 100ms until it returns nil, and fails the test
// with check's last error after timeout.
func poll(t *testing.T, what string, timeout time.Duration, check func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) {
			last = check()
			return last == nil, nil
		})
	if err != nil {
		t.Fatalf("%s: not within %v: %v", what, timeout, last)
	}
}
