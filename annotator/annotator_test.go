// Integration tests of the annotator against a real apiserver (envtest):
// load values from a real Prometheus server onto nodes, and hot values from
// Scheduled events.
package annotator_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/minisched/minisched/annotator"
	"github.com/minisched/minisched/plugins/dynamic"
	"github.com/minisched/minisched/testenv"
)

// testEnv is one apiserver shared by the tests.
var testEnv *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithEnvironment(m.Run, &testEnv, nil))
}

// waitTimeout bounds every wait for the annotator.
const waitTimeout = 30 * time.Second

func newClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	client, err := kubernetes.NewForConfig(testEnv.Config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// createNode creates a node with the given InternalIP ("" for none).
func createNode(ctx context.Context, t *testing.T, client kubernetes.Interface, name, ip string) {
	t.Helper()
	n, err := client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if ip == "" {
		return
	}
	n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// startAnnotator runs a controller until the test ends.
func startAnnotator(t *testing.T, client kubernetes.Interface, metrics annotator.MetricSource,
	policy *dynamic.DynamicSchedulerPolicy) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := annotator.NewController(ctx, client, factory, metrics, policy, annotator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		factory.Shutdown()
	})
}

// waitForAnnotations polls until every node's annotation key holds the
// wanted value (a fresh one: timestamp within the last minute).
func waitForAnnotations(ctx context.Context, t *testing.T, client kubernetes.Interface, key string,
	want map[string]float64) {
	t.Helper()
	loc := dynamic.TimestampLocation()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		for node, w := range want {
			n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			s, ok := n.Annotations[key]
			if !ok {
				last = fmt.Sprintf("node %s has no %s annotation", node, key)
				return false, nil
			}
			value, ts, err := dynamic.ParseAnnotation(s, loc)
			if err != nil {
				return false, fmt.Errorf("node %s: %w", node, err)
			}
			if age := time.Since(ts); age > time.Minute || age < -time.Minute {
				return false, fmt.Errorf("node %s: %s=%q is %v old", node, key, s, age)
			}
			if value != w {
				last = fmt.Sprintf("node %s: %s=%q, want value %v", node, key, s, w)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last seen: %s)", key, err, last)
	}
}

func policyOf(t *testing.T, yaml string) *dynamic.DynamicSchedulerPolicy {
	t.Helper()
	p, err := dynamic.ParsePolicy([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// exporter serves per-node CPU and memory percentages in Prometheus's text
// format, with the node in the instance label (Prometheus keeps it: the
// scrape honours labels).
type exporter struct {
	mu  sync.Mutex
	cpu map[string]float64
	mem map[string]float64
}

func (e *exporter) set(instance string, cpu float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cpu[instance] = cpu
}

func (e *exporter) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintln(w, "# TYPE test_cpu_percent gauge")
	for inst, v := range e.cpu {
		fmt.Fprintf(w, "test_cpu_percent{instance=%q} %g\n", inst, v)
	}
	fmt.Fprintln(w, "# TYPE test_mem_percent gauge")
	for inst, v := range e.mem {
		fmt.Fprintf(w, "test_mem_percent{instance=%q} %g\n", inst, v)
	}
}

// startPrometheus runs the prometheus binary on a free loopback port,
// scraping target every second and recording the policy's metric names
// from the exporter's gauges, as crane's rules do from node-exporter's.
// It returns the server's URL once it is ready.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (make prometheus, or apt-get install prometheus): skipping the test " +
			"against a real Prometheus server")
	}
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [rules.yaml]
scrape_configs:
- job_name: nodes
  honor_labels: true
  static_configs:
  - targets: [%q]
`, target)
	rules := `groups:
- name: usage
  interval: 1s
  rules:
  - record: cpu_usage_avg_5m
    expr: max by (instance) (test_cpu_percent)
  - record: mem_usage_avg_5m
    expr: max by (instance) (test_mem_percent)
`
	for name, content := range map[string]string{"prometheus.yaml": config, "rules.yaml": rules} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := freePort(t)
	var logs strings.Builder
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yaml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus output:\n%s", logs.String())
		}
	})
	url := "http://" + addr
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true,
		func(context.Context) (bool, error) {
			resp, err := http.Get(url + "/-/ready")
			if err != nil {
				return false, nil
			}
			_ = resp.Body.Close()
			return resp.StatusCode == http.StatusOK, nil
		})
	if err != nil {
		t.Fatalf("prometheus at %s did not become ready: %v", url, err)
	}
	return url
}

// freePort returns a loopback address nobody listens on right now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

const usagePolicy = `apiVersion: scheduler.policy.crane.io/v1alpha1
kind: DynamicSchedulerPolicy
spec:
  syncPolicy:
  - {name: cpu_usage_avg_5m, period: 1s}
  - {name: mem_usage_avg_5m, period: 1s}
  hotValue:
  - {timeRange: 5m, count: 5}
  - {timeRange: 1m, count: 2}
`

// TestAnnotateFromPrometheus: node-a's series carry its name, node-b's its
// InternalIP with the exporter's port; the annotator finds both, writes
// fractions, and follows a change of load.
func TestAnnotateFromPrometheus(t *testing.T) {
	exp := &exporter{
		cpu: map[string]float64{"node-a": 42, "10.0.0.7:9100": 87.5},
		mem: map[string]float64{"node-a": 12.5, "10.0.0.7:9100": 50},
	}
	srv := httptest.NewServer(exp)
	defer srv.Close()
	url := startPrometheus(t, strings.TrimPrefix(srv.URL, "http://"))

	ctx := context.Background()
	client := newClient(t)
	createNode(ctx, t, client, "node-a", "")
	createNode(ctx, t, client, "node-b", "10.0.0.7")
	prom, err := annotator.NewPrometheus(url)
	if err != nil {
		t.Fatal(err)
	}
	startAnnotator(t, client, prom, policyOf(t, usagePolicy))

	waitForAnnotations(ctx, t, client, "cpu_usage_avg_5m", map[string]float64{"node-a": 0.42, "node-b": 0.875})
	waitForAnnotations(ctx, t, client, "mem_usage_avg_5m", map[string]float64{"node-a": 0.125, "node-b": 0.5})
	waitForAnnotations(ctx, t, client, dynamic.HotValueKey, map[string]float64{"node-a": 0, "node-b": 0})

	exp.set("node-a", 90)
	waitForAnnotations(ctx, t, client, "cpu_usage_avg_5m", map[string]float64{"node-a": 0.9, "node-b": 0.875})
}

// noMetrics is a MetricSource with no data: only hot values get written.
type noMetrics struct{}

func (noMetrics) NodeMetric(_ context.Context, metric string, node *v1.Node) (string, error) {
	return "", errors.New("no metrics in this test")
}

// TestHotValueFromScheduledEvents: five pods bound to node-c within the
// last minute (events.k8s.io events, as minisched and kube-scheduler write
// them) and one to node-d (a legacy core/v1 event), plus one to node-d ten
// minutes ago. Crane's hotValue policy gives node-c ⌊5/2⌋ + ⌊5/5⌋ = 3 and
// node-d ⌊1/2⌋ + ⌊1/5⌋ = 0.
func TestHotValueFromScheduledEvents(t *testing.T) {
	ctx := context.Background()
	client := newClient(t)
	createNode(ctx, t, client, "node-c", "")
	createNode(ctx, t, client, "node-d", "")
	startAnnotator(t, client, noMetrics{}, policyOf(t, usagePolicy))

	now := time.Now()
	for i := range 5 {
		createScheduledEvent(ctx, t, client, fmt.Sprintf("c%d", i), "node-c", now)
	}
	createLegacyScheduledEvent(ctx, t, client, "d0", "node-d", now)
	createLegacyScheduledEvent(ctx, t, client, "d-old", "node-d", now.Add(-10*time.Minute))

	waitForAnnotations(ctx, t, client, dynamic.HotValueKey, map[string]float64{"node-c": 3, "node-d": 0})
}

// createScheduledEvent writes an events.k8s.io Scheduled event, as the
// scheduler does.
func createScheduledEvent(ctx context.Context, t *testing.T, client kubernetes.Interface, pod, node string,
	at time.Time) {
	t.Helper()
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: pod + ".scheduled", Namespace: metav1.NamespaceDefault},
		EventTime:           metav1.NewMicroTime(at),
		ReportingController: "minisched", ReportingInstance: "minisched-test",
		Action: "Binding", Reason: "Scheduled", Type: v1.EventTypeNormal,
		Regarding: v1.ObjectReference{Kind: "Pod", Namespace: metav1.NamespaceDefault, Name: pod},
		Note:      fmt.Sprintf("Successfully assigned %s/%s to %s", metav1.NamespaceDefault, pod, node),
	}
	if _, err := client.EventsV1().Events(metav1.NamespaceDefault).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createLegacyScheduledEvent writes a core/v1 Scheduled event with a count,
// as older schedulers did.
func createLegacyScheduledEvent(ctx context.Context, t *testing.T, client kubernetes.Interface, pod, node string,
	at time.Time) {
	t.Helper()
	ev := &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: pod + ".scheduled", Namespace: metav1.NamespaceDefault},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: metav1.NamespaceDefault, Name: pod},
		Reason:         "Scheduled", Type: v1.EventTypeNormal, Count: 1,
		Message:        fmt.Sprintf("Successfully assigned %s/%s to %s", metav1.NamespaceDefault, pod, node),
		FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at),
		Source: v1.EventSource{Component: "default-scheduler"},
	}
	if _, err := client.CoreV1().Events(metav1.NamespaceDefault).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
