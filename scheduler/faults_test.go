package scheduler_test

// Faults of the apiserver, of other clients and of the scheduler itself: a
// bind that loses to another scheduler, an apiserver that goes away in the
// middle of a backlog and comes back on the same etcd, and a scheduler
// stopped half way through binding a pod's volume or its device claims.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/stretchr/testify/require"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/examples/dradriver"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/testenv"
)

// runService starts a Service built from cfg and rc, which reports its
// attempts to the log returned, and stops it when the test ends: Run must
// then return nil within a minute.
func runService(t *testing.T, cfg *configv1.KubeSchedulerConfiguration, rc *rest.Config,
	opts ...scheduler.Option) (*scheduler.Service, *scenario.AttemptLog) {
	t.Helper()
	svc, attemptLog, _ := startService(t, cfg, rc, opts...)
	return svc, attemptLog
}

// startService is runService that also returns stop, which stops the
// Service before the test ends, wherever it is (in the middle of a binding
// cycle, say), and waits for Run to return. Calling it again does nothing.
func startService(t *testing.T, cfg *configv1.KubeSchedulerConfiguration, rc *rest.Config,
	opts ...scheduler.Option) (*scheduler.Service, *scenario.AttemptLog, func()) {
	t.Helper()
	attemptLog := scenario.NewAttemptLog()
	ctx, cancel := context.WithCancel(context.Background())
	svc, err := scheduler.New(ctx, cfg, rc, append(opts, scheduler.WithObserver(attemptLog.Record))...)
	require.NoError(t, err)
	stop := runUntilStopped(t, ctx, cancel, svc)
	return svc, attemptLog, stop
}

// holder is a PreBind plugin that holds every pod labelled hold=true until
// the test releases it: the binding cycle is then past Permit, where a
// pod bound by someone else would have been rejected.
type holder struct {
	held    chan string
	release chan struct{}
}

func (h *holder) Name() string { return "Holder" }
func (h *holder) PreBindPreFlight(_ context.Context, _ *framework.CycleState, p *v1.Pod, _ string) *framework.Status {
	if p.Labels["hold"] != "true" {
		return framework.NewStatus(framework.Skip)
	}
	return nil
}
func (h *holder) PreBind(ctx context.Context, _ *framework.CycleState, p *v1.Pod, _ string) *framework.Status {
	h.held <- p.Name
	select {
	case <-h.release:
		return nil
	case <-ctx.Done():
		return framework.AsStatus(ctx.Err())
	}
}

// TestPodBoundByAnotherClient: another scheduler binds a pod while
// minisched is still binding it. Either way it ends on the other client's
// node, is not tried again, and the node minisched chose is free again.
func TestPodBoundByAnotherClient(t *testing.T) {
	ctx := context.Background()
	const ns = "bound-elsewhere"
	client, err := kubernetes.NewForConfig(testEnv.Config)
	require.NoError(t, err)
	_, err = client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	hold := &holder{held: make(chan string, 1), release: make(chan struct{})}
	calls := &calls{m: map[string][]string{}}
	registry := framework.Registry{
		"Holder": func(context.Context, *runtime.RawExtension, framework.Handle) (framework.Plugin, error) {
			return hold, nil
		},
		"Recorder": func(context.Context, *runtime.RawExtension, framework.Handle) (framework.Plugin, error) {
			return &recorder{c: calls}, nil
		},
		"Gatekeeper": func(_ context.Context, _ *runtime.RawExtension, fh framework.Handle) (framework.Plugin, error) {
			return &gatekeeper{h: fh}, nil
		},
	}
	cfg, err := scheduler.DecodeConfig([]byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 1
profiles:
- schedulerName: ` + ns + `
  plugins:
    multiPoint:
      enabled:
      - name: Recorder
      - name: Gatekeeper
      - name: Holder
`))
	require.NoError(t, err)
	_, attemptLog := runService(t, cfg, testEnv.Config, scheduler.WithOutOfTreeRegistry(registry))
	env := &scenario.Env{Client: client, Namespace: ns, SchedulerName: ns, Attempts: attemptLog}
	cpu2 := map[v1.ResourceName]string{v1.ResourceCPU: "2"}
	// Other tests' nodes share the apiserver: this test's pods go only to
	// this test's nodes.
	const testLabel = "minisched.test/bound-elsewhere"
	node := func(name string) *v1.Node {
		return scenario.MakeNode(name).Capacity(cpu2).Label(testLabel, "yes").Obj()
	}
	pod := func(name string) *v1.Pod {
		return scenario.MakePod(name).Req(cpu2).NodeSelector(testLabel, "yes").Obj()
	}
	bindElsewhere := func(podName, nodeName string) {
		t.Helper()
		require.NoError(t, env.CreateNodes(ctx, node(nodeName)))
		require.NoError(t, client.CoreV1().Pods(ns).Bind(ctx, &v1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: podName},
			Target:     v1.ObjectReference{Kind: "Node", Name: nodeName},
		}, metav1.CreateOptions{}))
	}
	// expectFreed checks that the node minisched chose holds nothing: a pod
	// that needs all of it is bound there.
	expectFreed := func(filler, nodeName string) {
		t.Helper()
		require.NoError(t, env.CreatePods(ctx, pod(filler)))
		bound, err := env.WaitForPodBound(ctx, filler, scenario.DefaultWait)
		require.NoError(t, err)
		if bound.Spec.NodeName != nodeName {
			t.Errorf("%s on %q, want %q, the node freed", filler, bound.Spec.NodeName, nodeName)
		}
	}
	expectOn := func(podName, nodeName string) {
		t.Helper()
		require.NoError(t, env.ExpectNoNewAttempts(ctx, podName, 3*time.Second), "the pod was tried again")
		got, err := client.CoreV1().Pods(ns).Get(ctx, podName, metav1.GetOptions{})
		require.NoError(t, err)
		if got.Spec.NodeName != nodeName {
			t.Errorf("%s on %q, want %q where the other client bound it", podName, got.Spec.NodeName, nodeName)
		}
		if got := calls.of(podName); len(got) != 2 || got[1] != "Unreserve" {
			t.Errorf("calls = %v, want Reserve then Unreserve", got)
		}
	}

	t.Run("while it waits in Permit: the waiting pod is rejected", func(t *testing.T) {
		require.NoError(t, env.CreateNodes(ctx, node("permit-chosen")))
		p := pod("permit-contested")
		p.Labels = map[string]string{"wait": "1h"} // the Gatekeeper holds it in Permit
		require.NoError(t, env.CreatePods(ctx, p))
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, scenario.DefaultWait, true,
			func(context.Context) (bool, error) { return len(calls.of("permit-contested")) > 0, nil }))
		bindElsewhere("permit-contested", "permit-other")
		attempts, err := env.WaitForAttempts(ctx, "permit-contested", 1, scenario.DefaultWait)
		require.NoError(t, err)
		// As kube-scheduler: the update that shows the pod bound rejects it
		// in Permit ("removed"), and the pod, now bound, is not requeued.
		if a := attempts[0]; a.Result != "Unschedulable" || a.Message != "0/1 nodes are available: 1 removed." {
			t.Errorf("attempt = %s (%s), want Unschedulable (0/1 nodes are available: 1 removed.)", a.Result, a.Message)
		}
		expectOn("permit-contested", "permit-other")
		expectFreed("permit-filler", "permit-chosen")
	})

	t.Run("past Permit: the bind is answered 409 Conflict", func(t *testing.T) {
		require.NoError(t, env.CreateNodes(ctx, node("bind-chosen")))
		p := pod("bind-contested")
		p.Labels = map[string]string{"hold": "true"}
		require.NoError(t, env.CreatePods(ctx, p))
		select {
		case <-hold.held:
		case <-time.After(scenario.DefaultWait):
			t.Fatal("the pod never reached PreBind")
		}
		bindElsewhere("bind-contested", "bind-other")
		close(hold.release)
		attempts, err := env.WaitForAttempts(ctx, "bind-contested", 1, scenario.DefaultWait)
		require.NoError(t, err)
		if a := attempts[0]; a.Result != "SchedulerError" || !strings.Contains(a.Message, "already assigned") {
			t.Errorf("attempt = %s (%s), want SchedulerError with the apiserver's 409", a.Result, a.Message)
		}
		expectOn("bind-contested", "bind-other")
		expectFreed("bind-filler", "bind-chosen")
	})
}

// TestAPIServerRestart stops kube-apiserver (etcd stays) while minisched
// works through a backlog that exactly fills the nodes, and starts it again.
// Every pod must end bound and no node overcommitted: a binding lost in the
// outage must have been forgotten (else its room stays taken and the last
// pods do not fit), and nothing may be bound twice.
func TestAPIServerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an apiserver of its own")
	}
	env, err := testenv.StartEnvironment()
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	client, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)

	const nodes, podsPerNode = 10, 20
	e := &scenario.Env{Client: client, Namespace: "restart", SchedulerName: "restart"}
	_, err = client.CoreV1().Namespaces().Create(ctx,
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.Namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for i := range nodes {
		require.NoError(t, e.CreateNodes(ctx, scenario.MakeNode(fmt.Sprintf("restart-%d", i)).
			Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "2", v1.ResourcePods: "110"}).Obj()))
	}
	// 100m each: the pods fill every node's 2 CPUs exactly.
	for i := range nodes * podsPerNode {
		require.NoError(t, e.CreatePods(ctx, scenario.MakePod(fmt.Sprintf("p-%03d", i)).
			Req(map[v1.ResourceName]string{v1.ResourceCPU: "100m"}).Obj()))
	}

	// A slow client (20 requests a second) keeps the backlog going long
	// enough to cut the apiserver off in the middle of it.
	cfg, err := scheduler.DecodeConfig([]byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  qps: 20
  burst: 20
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 2
profiles:
- schedulerName: restart
`))
	require.NoError(t, err)
	svc, _ := runService(t, cfg, env.Config)

	boundCount := func() (int, error) {
		list, err := client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		n := 0
		for _, p := range list.Items {
			if p.Spec.NodeName != "" {
				n++
			}
		}
		return n, nil
	}
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) { n, err := boundCount(); return n >= 30, err }))
	before, err := boundCount()
	require.NoError(t, err)
	if before == nodes*podsPerNode {
		t.Fatalf("the backlog was done before the apiserver stopped; slow the client down")
	}

	require.NoError(t, env.CrashAPIServer())
	// While it is away, minisched's requests and watches fail; give it
	// several backoff periods to retry into the void.
	outage := time.NewTimer(5 * time.Second)
	<-outage.C
	require.NoError(t, env.StartAPIServer())
	t.Logf("%d of %d pods were bound when the apiserver stopped", before, nodes*podsPerNode)

	require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true,
		func(context.Context) (bool, error) { n, err := boundCount(); return n == nodes*podsPerNode, err }),
		"not every pod was bound after the apiserver came back")

	// The cache agrees with the informers again: no assumed pod left over
	// from a binding lost in the outage, no pod counted twice.
	var diff string
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, scenario.DefaultWait, true,
		func(context.Context) (bool, error) {
			c, err := svc.Debugger.Comparer.Compare()
			if err != nil {
				return false, err
			}
			diff = c.String()
			return c.IsEmpty() && len(c.AssumedPods) == 0, nil
		}); err != nil {
		t.Errorf("the cache differs from the informers after the restart: %s", diff)
	}

	list, err := client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	perNode := map[string]*resource.Quantity{}
	for _, p := range list.Items {
		q, ok := perNode[p.Spec.NodeName]
		if !ok {
			q = resource.NewMilliQuantity(0, resource.DecimalSI)
			perNode[p.Spec.NodeName] = q
		}
		q.Add(p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU])
	}
	for node, q := range perNode {
		if q.MilliValue() > 2000 {
			t.Errorf("node %s: %dm CPU requested by its pods, allocatable 2000m", node, q.MilliValue())
		}
	}
}

// faultyTransport answers some requests itself, as a failing apiserver (or
// network) would: binding POSTs of the pods named in bindFaults and status
// patches of those named in statusFaults get the fault listed, once per
// entry, and every request to the events API gets a 500.
type faultyTransport struct {
	next http.RoundTripper
	mu   sync.Mutex
	// bindFaults maps a pod name to the faults its binding POSTs get, in
	// order: "500" or "timeout"; statusFaults to those its status patches
	// get: "409".
	bindFaults, statusFaults map[string][]string
	// eventWrites counts the event requests refused.
	eventWrites int
}

// timeoutError is what a client sees when a request times out on the wire.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout (injected)" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func (f *faultyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	internalError := func() *http.Response {
		body := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected","reason":"InternalError","code":500}`
		return &http.Response{StatusCode: http.StatusInternalServerError, Status: "500 Internal Server Error",
			Header: http.Header{"Content-Type": []string{"application/json"}}, Request: req,
			Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
	}
	conflict := func() *http.Response {
		body := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected","reason":"Conflict","code":409}`
		return &http.Response{StatusCode: http.StatusConflict, Status: "409 Conflict",
			Header: http.Header{"Content-Type": []string{"application/json"}}, Request: req,
			Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
	}
	if parts := strings.Split(req.URL.Path, "/"); req.Method == http.MethodPatch && len(parts) == 8 &&
		parts[5] == "pods" && parts[7] == "status" {
		if faults := f.statusFaults[parts[6]]; len(faults) > 0 {
			f.statusFaults[parts[6]] = faults[1:]
			return conflict(), nil
		}
	}
	if strings.HasPrefix(req.URL.Path, "/apis/events.k8s.io/") {
		f.eventWrites++
		return internalError(), nil
	}
	if parts := strings.Split(req.URL.Path, "/"); req.Method == http.MethodPost && len(parts) == 8 &&
		parts[5] == "pods" && parts[7] == "binding" {
		if faults := f.bindFaults[parts[6]]; len(faults) > 0 {
			f.bindFaults[parts[6]] = faults[1:]
			if faults[0] == "timeout" {
				return nil, timeoutError{}
			}
			return internalError(), nil
		}
	}
	return f.next.RoundTrip(req)
}

// TestAPIErrorsBackOff: a bind answered 500 is sent again, as
// kube-scheduler's DefaultBinder does (util.BindPod: retry.DefaultBackoff,
// four tries, on 500, 503 and a refused connection); once the tries are
// used up, or when the bind times out, the attempt fails (Unreserve,
// forget) and the pod is tried again after its backoff. A status patch
// answered 409 is sent again too (util.PatchPodStatus retries conflicts as
// well), so an unschedulable pod still says why. An events API that
// refuses every write holds nothing up.
func TestAPIErrorsBackOff(t *testing.T) {
	ctx := context.Background()
	const ns = "api-errors"
	client, err := kubernetes.NewForConfig(testEnv.Config)
	require.NoError(t, err)
	_, err = client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	faults := &faultyTransport{bindFaults: map[string][]string{
		"five-hundred":    {"500", "500"},
		"five-hundred-4x": {"500", "500", "500", "500"},
		"timeout":         {"timeout"},
	}, statusFaults: map[string][]string{
		"status-conflicted": {"409", "409"},
	}}
	rc := rest.CopyConfig(testEnv.Config)
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { faults.next = rt; return faults }
	cfg, err := scheduler.DecodeConfig([]byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 10
profiles:
- schedulerName: ` + ns + `
`))
	require.NoError(t, err)
	_, attemptLog := runService(t, cfg, rc)
	env := &scenario.Env{Client: client, Namespace: ns, SchedulerName: ns, Attempts: attemptLog}
	require.NoError(t, env.CreateNodes(ctx, scenario.MakeNode("api-errors-node").Obj()))

	tests := []struct {
		pod  string
		want []string
		// minGaps are the shortest waits between consecutive attempts: the
		// backoff doubles from podInitialBackoffSeconds.
		minGaps []time.Duration
	}{
		// Two 500s: the third try of the same Bind binds.
		{pod: "five-hundred", want: []string{"Scheduled"}},
		// Four 500s use up the tries: the next attempt binds.
		{pod: "five-hundred-4x", want: []string{"SchedulerError", "Scheduled"},
			minGaps: []time.Duration{time.Second}},
		{pod: "timeout", want: []string{"SchedulerError", "Scheduled"}, minGaps: []time.Duration{time.Second}},
		{pod: "plain", want: []string{"Scheduled"}},
	}
	for _, tt := range tests {
		require.NoError(t, env.CreatePods(ctx, scenario.MakePod(tt.pod).Obj()))
	}
	for _, tt := range tests {
		t.Run(tt.pod, func(t *testing.T) {
			if _, err := env.WaitForPodBound(ctx, tt.pod, scenario.DefaultWait); err != nil {
				t.Fatal(err)
			}
			attempts, err := env.WaitForAttempts(ctx, tt.pod, len(tt.want), scenario.DefaultWait)
			require.NoError(t, err)
			if got := results(attempts); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("attempts = %v, want %v", got, tt.want)
			}
			// Measured from the end of one attempt to the end of the next,
			// which includes the next one's own cycle: at least the backoff.
			for i, gap := range tt.minGaps {
				if d := attempts[i+1].Time.Sub(attempts[i].Time); d < gap-100*time.Millisecond {
					t.Errorf("attempt %d came %v after attempt %d, want a backoff of at least %v", i+2, d, i+1, gap)
				}
			}
		})
	}
	t.Run("status-conflicted", func(t *testing.T) {
		// It fits nowhere; its first two status patches are refused.
		require.NoError(t, env.CreatePods(ctx, scenario.MakePod("status-conflicted").
			Req(map[v1.ResourceName]string{v1.ResourceCPU: "1000"}).Obj()))
		msg, err := env.WaitForPodUnschedulable(ctx, "status-conflicted", scenario.DefaultWait)
		require.NoError(t, err)
		t.Logf("status-conflicted: %s", msg)
		faults.mu.Lock()
		defer faults.mu.Unlock()
		if left := faults.statusFaults["status-conflicted"]; len(left) > 0 {
			t.Errorf("%d of the status faults were not used", len(left))
		}
	})
	faults.mu.Lock()
	defer faults.mu.Unlock()
	if faults.eventWrites == 0 {
		t.Errorf("no event was written (and refused): the events API was not exercised")
	}
}

// storageCluster is an apiserver of a storage test's own, with a namespace
// of the same name as the test's scheduler profile. Of its own because
// kube-controller-manager's PV binder acts on every claim and volume of its
// apiserver, and because, without other tests' nodes, the messages are
// exactly kube-scheduler's ("0/1 nodes are available: ...").
type storageCluster struct {
	env    *testenv.Environment
	client kubernetes.Interface
	name   string
}

// startStorageCluster starts the apiserver, stopped when the test ends.
func startStorageCluster(t *testing.T, name string) *storageCluster {
	t.Helper()
	env, err := testenv.StartEnvironment()
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	client, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	_, err = client.CoreV1().Namespaces().Create(context.Background(),
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return &storageCluster{env: env, client: client, name: name}
}

// startControllerManager starts kube-controller-manager's storage
// controllers, stopped when the test ends or by the function returned
// (once).
func (c *storageCluster) startControllerManager(t *testing.T) func() {
	t.Helper()
	return c.startControllers(t, testenv.StorageControllers...)
}

// startControllers is startControllerManager with the controllers named
// (testenv.DRAControllers for a DRA test, whose cluster is a storageCluster
// too: of its own for the same reasons).
func (c *storageCluster) startControllers(t *testing.T, controllers ...string) func() {
	t.Helper()
	kcm, err := c.env.StartControllerManager(controllers...)
	require.NoError(t, err)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if err := kcm.Stop(); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// startScheduler starts a scheduler whose one profile, named after the
// cluster, has kube-scheduler's default plugins and the given pluginConfig
// (YAML, indented for the profile; "" for none). It returns the scenario
// environment that sees its attempts, and a stop like startService's.
func (c *storageCluster) startScheduler(t *testing.T, pluginConfig string) (*scenario.Env, func()) {
	t.Helper()
	cfg, err := scheduler.DecodeConfig([]byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: ` + c.name + "\n" + pluginConfig))
	require.NoError(t, err)
	_, attemptLog, stop := startService(t, cfg, c.env.Config)
	return &scenario.Env{Client: c.client, Namespace: c.name, SchedulerName: c.name, Attempts: attemptLog}, stop
}

// waitForClaimBound waits until the PV binder bound the claim (phase Bound)
// and returns it.
func waitForClaimBound(ctx context.Context, t *testing.T, env *scenario.Env, name string) *v1.PersistentVolumeClaim {
	t.Helper()
	var pvc *v1.PersistentVolumeClaim
	err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, scenario.DefaultWait, true,
		func(ctx context.Context) (bool, error) {
			var err error
			pvc, err = env.Client.CoreV1().PersistentVolumeClaims(env.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return pvc.Status.Phase == v1.ClaimBound, nil
		})
	require.NoError(t, err, "waiting for claim %s to be bound; it is %+v", name, pvc)
	return pvc
}

// TestSchedulerStoppedInVolumePreBind stops a scheduler after
// VolumeBinding's PreBind wrote a volume's claimRef and before the pod was
// bound: the PV controller is down, so PreBind waits for it until the
// scheduler stops. That leaves the volume half bound (it names the claim;
// the claim names no volume) and the pod pending, as a crash would; Unreserve
// undoes nothing in the apiserver. A new scheduler, with the PV controller
// back, must finish the job: the claim bound to that volume, the pod bound
// to the volume's node.
func TestSchedulerStoppedInVolumePreBind(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an apiserver and kube-controller-manager of its own")
	}
	ctx := context.Background()
	c := startStorageCluster(t, "prebind-stop")
	// The first scheduler gives up waiting after 5s (bindTimeoutSeconds),
	// so that stopping it does not wait out the 30s that binding cycles get
	// to finish: either way PreBind ends with the claimRef written and
	// nothing else.
	first, stopFirst := c.startScheduler(t, `  pluginConfig:
  - name: VolumeBinding
    args:
      bindTimeoutSeconds: 5
`)
	require.NoError(t, first.CreateNodes(ctx, scenario.MakeNode("n1").Obj(), scenario.MakeNode("n2").Obj()))
	// The only volume is on n2: the node is the volume's choice.
	require.NoError(t, first.CreateObjects(ctx,
		builders.MakeStorageClass().Name("static").WaitForFirstConsumer().Obj(),
		builders.MakePV().Name("pv").Class("static").Capacity("1Gi").NodeAffinityIn(v1.LabelHostname, "n2").Obj(),
		builders.MakePVC().Namespace(c.name).Name("data").Class("static").Req("1Gi").Obj()))
	volumes := c.client.CoreV1().PersistentVolumes()
	claims := c.client.CoreV1().PersistentVolumeClaims(c.name)
	// waitForVolume polls until the volume is as ok wants.
	waitForVolume := func(what string, ok func(*v1.PersistentVolume) bool) {
		t.Helper()
		var last *v1.PersistentVolume
		err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, scenario.DefaultWait, true,
			func(ctx context.Context) (bool, error) {
				var err error
				last, err = volumes.Get(ctx, "pv", metav1.GetOptions{})
				return err == nil && ok(last), err
			})
		require.NoError(t, err, "waiting for %s; the volume is %+v", what, last)
	}
	// Only an Available volume is matched to a claim, and the PV controller
	// is what makes a new one Available: it runs that long, and stops
	// before the pod comes.
	stopControllerManager := c.startControllerManager(t)
	waitForVolume("the PV controller to make the volume Available", func(pv *v1.PersistentVolume) bool {
		return pv.Status.Phase == v1.VolumeAvailable
	})
	stopControllerManager()

	require.NoError(t, first.CreatePods(ctx, scenario.MakePod("p").PVC("data").Obj()))
	waitForVolume("PreBind to write the volume's claimRef", func(pv *v1.PersistentVolume) bool {
		return pv.Spec.ClaimRef != nil
	})
	stopFirst()

	t.Run("the first scheduler left the volume half bound", func(t *testing.T) {
		pv, err := volumes.Get(ctx, "pv", metav1.GetOptions{})
		require.NoError(t, err)
		pvc, err := claims.Get(ctx, "data", metav1.GetOptions{})
		require.NoError(t, err)
		pod, err := c.client.CoreV1().Pods(c.name).Get(ctx, "p", metav1.GetOptions{})
		require.NoError(t, err)
		if ref := pv.Spec.ClaimRef; ref == nil || ref.Name != "data" || ref.UID != pvc.UID {
			t.Errorf("the volume's claimRef is %+v, want the claim data (uid %s)", ref, pvc.UID)
		}
		if pvc.Spec.VolumeName != "" || pvc.Status.Phase != v1.ClaimPending {
			t.Errorf("the claim has volume %q, phase %s; want none, Pending (no PV controller ran)",
				pvc.Spec.VolumeName, pvc.Status.Phase)
		}
		if pod.Spec.NodeName != "" {
			t.Errorf("the pod is bound to %s, want it pending", pod.Spec.NodeName)
		}
	})

	second, _ := c.startScheduler(t, "")
	c.startControllerManager(t)

	t.Run("a new scheduler and the PV controller finish the binding", func(t *testing.T) {
		pod, err := second.WaitForPodBound(ctx, "p", scenario.DefaultWait)
		require.NoError(t, err)
		if pod.Spec.NodeName != "n2" {
			t.Errorf("the pod is on %s, want n2, the volume's node", pod.Spec.NodeName)
		}
		_, err = second.WaitForScheduledAttempt(ctx, "p", scenario.DefaultWait)
		require.NoError(t, err, "the new scheduler bound the pod")
		pvc := waitForClaimBound(ctx, t, second, "data")
		if pvc.Spec.VolumeName != "pv" {
			t.Errorf("the claim is bound to %q, want pv", pvc.Spec.VolumeName)
		}
		pv, err := volumes.Get(ctx, "pv", metav1.GetOptions{})
		require.NoError(t, err)
		if ref := pv.Spec.ClaimRef; pv.Status.Phase != v1.VolumeBound || ref == nil || ref.UID != pvc.UID {
			t.Errorf("the volume is %s with claimRef %+v, want Bound to the claim (uid %s)", pv.Status.Phase, ref, pvc.UID)
		}
	})
}

// permitHolder is a Permit plugin that makes every pod labelled
// hold=permit wait (for ten minutes, longer than any test), and sends its
// name on waiting: the pod is then past Reserve, before PreBind.
type permitHolder struct{ waiting chan string }

func (p *permitHolder) Name() string { return "PermitHolder" }
func (p *permitHolder) Permit(_ context.Context, _ *framework.CycleState, pod *v1.Pod,
	_ string) (*framework.Status, time.Duration) {
	if pod.Labels["hold"] != "permit" {
		return nil, 0
	}
	p.waiting <- pod.Name
	return framework.NewStatus(framework.Wait), 10 * time.Minute
}

// TestSchedulerStoppedWithClaimsInFlight stops a scheduler with three pods
// half way through their claims: one waiting at Permit (its allocation
// only in flight, in the scheduler's memory, after Reserve), two in
// DynamicResources' PreBind, waiting for their devices' binding conditions
// after writing status.allocation and reservedFor. Stopping waits out the
// binding cycles' grace period and then cancels them, so that their
// Unreserve cannot write either: the claims stay as a crash leaves them.
// Nothing may leak: the claim of the pod stopped at Permit was never
// written; the claim of a pod deleted while no scheduler runs is freed by
// the resourceclaim controller; a new scheduler on the same apiserver binds
// the two others, each with its claim allocated and reserved for it.
func TestSchedulerStoppedWithClaimsInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an apiserver and kube-controller-manager of its own")
	}
	ctx := context.Background()
	c := startStorageCluster(t, "dra-stop")
	c.startControllers(t, testenv.DRAControllers...)
	const (
		node     = "n1"
		gpus     = "gpu.example.com"
		attached = "attach.example.com"
	)
	holder := &permitHolder{waiting: make(chan string, 1)}
	cfg, err := scheduler.DecodeConfig([]byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: ` + c.name + `
  plugins:
    multiPoint:
      enabled:
      - name: PermitHolder
`))
	require.NoError(t, err)
	_, _, stopFirst := startService(t, cfg, c.env.Config, scheduler.WithOutOfTreeRegistry(framework.Registry{
		"PermitHolder": func(context.Context, *runtime.RawExtension, framework.Handle) (framework.Plugin, error) {
			return holder, nil
		}}))
	env := &scenario.Env{Client: c.client, Namespace: c.name, SchedulerName: c.name, Attempts: scenario.NewAttemptLog()}
	require.NoError(t, env.CreateNodes(ctx, scenario.MakeNode(node).Obj()))
	slice := func(driver string, conditions ...string) *resourceapi.ResourceSlice {
		s := builders.MakeResourceSlice().Name(driver).Driver(driver).Node(node)
		for _, name := range []string{"dev-0", "dev-1"} {
			d := builders.MakeDevice(name)
			if len(conditions) > 0 {
				d.BindingConditions(conditions, []string{"attach-failed"})
			}
			s.Device(d)
		}
		return s.Obj()
	}
	require.NoError(t, env.CreateObjects(ctx, dradriver.DeviceClass(gpus, gpus), dradriver.DeviceClass(attached, attached),
		slice(gpus), slice(attached, "attached")))
	claims := c.client.ResourceV1().ResourceClaims(c.name)
	for name, class := range map[string]string{"held": gpus, "attaching": attached, "deleted": attached} {
		require.NoError(t, env.CreateObjects(ctx, builders.MakeResourceClaim().Namespace(c.name).Name(name).
			Request(builders.MakeDeviceRequest("dev", class)).Obj()))
	}
	require.NoError(t, env.CreatePods(ctx,
		scenario.MakePod("held").Label("hold", "permit").ResourceClaim("dev", "held").Obj(),
		scenario.MakePod("attaching").ResourceClaim("dev", "attaching").Obj(),
		scenario.MakePod("deleted").ResourceClaim("dev", "deleted").Obj()))
	// waitForClaim polls until the claim is as ok wants, and returns it.
	waitForClaim := func(t *testing.T, name, what string, ok func(*resourceapi.ResourceClaim) bool) *resourceapi.ResourceClaim {
		t.Helper()
		var last *resourceapi.ResourceClaim
		err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, scenario.DefaultWait, true,
			func(ctx context.Context) (bool, error) {
				var err error
				last, err = claims.Get(ctx, name, metav1.GetOptions{})
				return err == nil && ok(last), err
			})
		require.NoError(t, err, "waiting for %s; %s", what, scenario.DescribeClaim(last))
		return last
	}
	reservedFor := func(pod string) func(*resourceapi.ResourceClaim) bool {
		return func(c *resourceapi.ResourceClaim) bool {
			return c.Status.Allocation != nil && len(c.Status.ReservedFor) == 1 && c.Status.ReservedFor[0].Name == pod
		}
	}
	select {
	case name := <-holder.waiting:
		require.Equal(t, "held", name)
	case <-time.After(scenario.DefaultWait):
		t.Fatal("held did not reach Permit")
	}
	for _, pod := range []string{"attaching", "deleted"} {
		waitForClaim(t, pod, "PreBind to write claim "+pod, reservedFor(pod))
	}
	stopFirst()

	t.Run("the first scheduler left the claims as a crash would", func(t *testing.T) {
		claim, err := claims.Get(ctx, "held", metav1.GetOptions{})
		require.NoError(t, err)
		if claim.Status.Allocation != nil || len(claim.Status.ReservedFor) > 0 || len(claim.Finalizers) > 0 {
			t.Errorf("%s, finalizers %v; want it as created: Reserve writes nothing", scenario.DescribeClaim(claim),
				claim.Finalizers)
		}
		// Unreserve's patch was cancelled with its binding cycle.
		for _, pod := range []string{"attaching", "deleted"} {
			claim, err := claims.Get(ctx, pod, metav1.GetOptions{})
			require.NoError(t, err)
			if !reservedFor(pod)(claim) {
				t.Errorf("%s; want it allocated and reserved for %s, as PreBind wrote it", scenario.DescribeClaim(claim), pod)
			}
		}
		for _, pod := range []string{"held", "attaching", "deleted"} {
			p, err := c.client.CoreV1().Pods(c.name).Get(ctx, pod, metav1.GetOptions{})
			require.NoError(t, err)
			if p.Spec.NodeName != "" {
				t.Errorf("%s is bound to %s, want it pending", pod, p.Spec.NodeName)
			}
		}
	})

	t.Run("the claim of a pod deleted meanwhile is freed by the resourceclaim controller", func(t *testing.T) {
		require.NoError(t, env.DeletePod(ctx, "deleted"))
		// It drops the pod from reservedFor, and the allocation with the
		// last pod (one status update); then the finalizer (an update).
		waitForClaim(t, "deleted", "the claim to be freed and its finalizer removed", func(c *resourceapi.ResourceClaim) bool {
			return c.Status.Allocation == nil && len(c.Status.ReservedFor) == 0 && len(c.Finalizers) == 0
		})
	})

	second, _ := c.startScheduler(t, "")

	t.Run("a new scheduler binds the others, with their claims allocated and reserved", func(t *testing.T) {
		// The new PreBind waits for the device as the first did: the
		// driver attaches it now.
		waitForClaim(t, "attaching", "the new scheduler's PreBind", reservedFor("attaching"))
		require.NoError(t, dradriver.SetDeviceCondition(ctx, c.client, attached, c.name, "attaching",
			metav1.Condition{Type: "attached", Status: metav1.ConditionTrue, Reason: "Attached", Message: "by the test"}))
		for _, pod := range []string{"held", "attaching"} {
			bound, err := second.WaitForPodBound(ctx, pod, scenario.DefaultWait)
			require.NoError(t, err)
			require.Equal(t, node, bound.Spec.NodeName)
			_, err = second.WaitForScheduledAttempt(ctx, pod, scenario.DefaultWait)
			require.NoError(t, err, "the new scheduler bound %s", pod)
			claim := waitForClaim(t, pod, "claim "+pod+" reserved for its pod", reservedFor(pod))
			if claim.Status.ReservedFor[0].UID != bound.UID || !slices.Contains(claim.Finalizers, resourceapi.Finalizer) {
				t.Errorf("%s, reserved for uid %s, finalizers %v; want %s's uid and %s", scenario.DescribeClaim(claim),
					claim.Status.ReservedFor[0].UID, claim.Finalizers, pod, resourceapi.Finalizer)
			}
		}
	})
}
