// Leader election against the shared envtest apiserver: replicas hand the
// Lease over without binding a pod twice, a replica that loses the Lease
// stops scheduling and says so, and with election off no Lease is touched.
// Each test has its own namespace, Lease and nodes.

package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
)

// leaseRequests counts the requests made to Leases through the clients of
// the rest configs it wraps.
type leaseRequests struct{ n atomic.Int64 }

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (l *leaseRequests) wrap(rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if strings.Contains(r.URL.Path, "/leases") {
				l.n.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	return rc
}

// replica is one Service of an election, running until stopped.
type replica struct {
	name     string
	svc      *scheduler.Service
	attempts *scenario.AttemptLog
	stop     context.CancelFunc
	// done receives Run's result once.
	done chan error
	// err is Run's result, once wait returned.
	err error
}

// wait returns Run's result, failing the test if Run has not returned
// within timeout.
func (r *replica) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	if r.done == nil {
		return r.err
	}
	select {
	case r.err = <-r.done:
		r.done = nil
		return r.err
	case <-time.After(timeout):
		t.Fatalf("%s: Run did not return within %v", r.name, timeout)
		return nil
	}
}

// electionConfig is a configuration with one profile named after ns, the
// short durations the tests use, and the Lease ns/lease. Its client is
// slowed to 20 requests a second so that a backlog takes seconds to bind.
func electionConfig(ns, lease string, elect bool) string {
	return fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  qps: 20
  burst: 20
leaderElection:
  leaderElect: %t
  leaseDuration: 2s
  renewDeadline: 1500ms
  retryPeriod: 300ms
  resourceNamespace: %s
  resourceName: %s
profiles:
- schedulerName: %s
`, elect, ns, lease, ns)
}

// startReplica builds a Service from doc and runs it; the test's cleanup
// stops it and checks that Run returned nil (unless the test looked at Run's
// result itself).
func startReplica(ctx context.Context, t *testing.T, name, doc string, rc *rest.Config) *replica {
	t.Helper()
	cfg, err := scheduler.DecodeConfig([]byte(doc))
	if err != nil {
		t.Fatalf("DecodeConfig: %v", err)
	}
	ctx, stop := context.WithCancel(ctx)
	r := &replica{name: name, attempts: scenario.NewAttemptLog(), stop: stop, done: make(chan error, 1)}
	r.svc, err = scheduler.New(ctx, cfg, rc, scheduler.WithObserver(r.attempts.Record))
	if err != nil {
		stop()
		t.Fatalf("New: %v", err)
	}
	go func() { r.done <- r.svc.Run(ctx) }()
	t.Cleanup(func() {
		waited := r.done == nil
		r.stop()
		if err := r.wait(t, time.Minute); err != nil && !waited {
			t.Errorf("%s: Run returned %v on a clean stop, want nil", r.name, err)
		}
	})
	return r
}

// setUpNamespace creates ns and n nodes with 4 cpu each, labelled group=ns,
// deleted when the test ends.
func setUpNamespace(t *testing.T, client kubernetes.Interface, ns string, n int) *scenario.Env {
	t.Helper()
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env := &scenario.Env{Client: client, Namespace: ns, SchedulerName: ns, Attempts: scenario.NewAttemptLog()}
	for i := range n {
		name := fmt.Sprintf("%s-node%d", ns, i)
		if err := env.CreateNodes(ctx, scenario.MakeNode(name).Label("group", ns).Obj()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	return env
}

// leaders returns the replicas that say they lead.
func leaders(rs []*replica) []*replica {
	var out []*replica
	for _, r := range rs {
		if r.svc.IsLeader() {
			out = append(out, r)
		}
	}
	return out
}

// watchLeaders samples the replicas until the test ends and reports the
// largest number seen leading at once.
func watchLeaders(t *testing.T, rs []*replica) func() int {
	var most atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = wait.PollUntilContextCancel(ctx, 5*time.Millisecond, true, func(context.Context) (bool, error) {
			if n := int64(len(leaders(rs))); n > most.Load() {
				most.Store(n)
			}
			return false, nil
		})
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return func() int { return int(most.Load()) }
}

// boundPods lists the namespace's pods and returns them by name with the
// number bound.
func boundPods(ctx context.Context, client kubernetes.Interface, ns string) (map[string]*v1.Pod, int, error) {
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, 0, err
	}
	pods, bound := map[string]*v1.Pod{}, 0
	for i := range list.Items {
		p := &list.Items[i]
		pods[p.Name] = p
		if p.Spec.NodeName != "" {
			bound++
		}
	}
	return pods, bound, nil
}

// waitForBound polls until at least n of the namespace's pods are bound.
func waitForBound(ctx context.Context, client kubernetes.Interface, ns string, n int, timeout time.Duration) error {
	var bound int
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		_, bound, err = boundPods(ctx, client, ns)
		return bound >= n, err
	})
	if err != nil {
		return fmt.Errorf("%d pods bound, want at least %d: %w", bound, n, err)
	}
	return nil
}

// leaseHolder returns the Lease's holder ("" when released).
func leaseHolder(ctx context.Context, client kubernetes.Interface, ns, name string) (string, error) {
	lease, err := client.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return ptr.Deref(lease.Spec.HolderIdentity, ""), nil
}

// TestLeaderElectionHandover runs three replicas on one Lease with a
// backlog of 60 pods. Exactly one leads at any time; the leader is stopped
// mid-backlog, finishes its binding cycles and releases the Lease; another
// replica takes over and binds the rest. In the end each pod was scheduled
// exactly once, by one replica, onto the node it is bound to, and no node
// holds more cpu than it has.
func TestLeaderElectionHandover(t *testing.T) {
	ctx := context.Background()
	const ns, lease, pods, nodes = "le-handover", "le-handover-lease", 60, 4
	client, err := kubernetes.NewForConfig(testEnv.Config)
	if err != nil {
		t.Fatal(err)
	}
	setUpNamespace(t, client, ns, nodes)
	var requests leaseRequests
	rc := requests.wrap(testEnv.Config)
	doc := electionConfig(ns, lease, true)
	var rs []*replica
	for i := range 3 {
		rs = append(rs, startReplica(ctx, t, fmt.Sprintf("replica%d", i), doc, rc))
	}
	mostLeaders := watchLeaders(t, rs)

	var first *replica
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) {
			if l := leaders(rs); len(l) == 1 {
				first = l[0]
			}
			return first != nil, nil
		}); err != nil {
		t.Fatalf("no replica leads: %v", err)
	}
	holder, err := leaseHolder(ctx, client, ns, lease)
	if err != nil || holder != first.svc.Identity() {
		t.Fatalf("Lease holder = %q (%v), want the leader %s's identity %q", holder, err, first.name,
			first.svc.Identity())
	}
	t.Logf("%s leads as %s", first.name, holder)

	// The backlog arrives at 20 pods a second while the leader binds about
	// 10 a second (a bind and an event each, at 20 requests a second): when
	// it is stopped it has binding cycles in flight and pods not yet popped.
	// 250m each: 60 pods need 15 of the 16 cpus.
	creatorConfig := rest.CopyConfig(testEnv.Config)
	creatorConfig.QPS, creatorConfig.Burst = 20, 1
	creatorClient, err := kubernetes.NewForConfig(creatorConfig)
	if err != nil {
		t.Fatal(err)
	}
	creator := &scenario.Env{Client: creatorClient, Namespace: ns, SchedulerName: ns}
	created := make(chan error, 1)
	go func() {
		for i := range pods {
			p := scenario.MakePod(fmt.Sprintf("pod%02d", i)).NodeSelector("group", ns).
				Req(map[v1.ResourceName]string{v1.ResourceCPU: "250m"}).Obj()
			if err := creator.CreatePods(ctx, p); err != nil {
				created <- err
				return
			}
		}
		created <- nil
	}()
	if err := waitForBound(ctx, client, ns, 10, time.Minute); err != nil {
		t.Fatal(err)
	}
	first.stop()
	if err := first.wait(t, time.Minute); err != nil {
		t.Fatalf("%s: Run returned %v on a clean stop, want nil", first.name, err)
	}
	_, boundByFirst, err := boundPods(ctx, client, ns)
	if err != nil {
		t.Fatal(err)
	}
	if boundByFirst == pods {
		t.Fatalf("the first leader bound all %d pods before it stopped: nothing was left to hand over", pods)
	}
	// Run returns after the Lease is released (or already taken over).
	if holder, err := leaseHolder(ctx, client, ns, lease); err != nil || holder == first.svc.Identity() {
		t.Fatalf("after the leader stopped, Lease holder = %q (%v), want it released", holder, err)
	}
	t.Logf("%s stopped with %d of %d pods bound", first.name, boundByFirst, pods)

	if err := <-created; err != nil {
		t.Fatal(err)
	}
	if err := waitForBound(ctx, client, ns, pods, time.Minute); err != nil {
		t.Fatal(err)
	}
	final, _, err := boundPods(ctx, client, ns)
	if err != nil {
		t.Fatal(err)
	}
	scheduledBy := map[string]int{}
	for name, p := range final {
		var scheduled []string
		for _, r := range rs {
			for _, a := range r.attempts.Of(ns, name) {
				switch a.Result {
				case attempt.Scheduled:
					scheduled = append(scheduled, r.name+"→"+a.Node)
					scheduledBy[r.name]++
					if a.Node != p.Spec.NodeName {
						t.Errorf("%s scheduled %s to %s, but it is bound to %s", r.name, name, a.Node, p.Spec.NodeName)
					}
				case attempt.SchedulerError:
					t.Errorf("%s: scheduling %s failed: %s", r.name, name, a.Message)
				}
			}
		}
		if len(scheduled) != 1 {
			t.Errorf("%s was scheduled %d times (%v), want once", name, len(scheduled), scheduled)
		}
	}
	if scheduledBy[first.name] == 0 || len(scheduledBy) != 2 {
		t.Errorf("pods scheduled per replica = %v, want the first leader and one successor", scheduledBy)
	}
	cpu := map[string]*resource.Quantity{}
	for _, p := range final {
		if cpu[p.Spec.NodeName] == nil {
			cpu[p.Spec.NodeName] = resource.NewQuantity(0, resource.DecimalSI)
		}
		cpu[p.Spec.NodeName].Add(p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU])
	}
	for node, q := range cpu {
		if q.Cmp(resource.MustParse("4")) > 0 {
			t.Errorf("node %s holds %s cpu of 4", node, q)
		}
	}
	if n := mostLeaders(); n != 1 {
		t.Errorf("at most %d replicas led at once, want 1", n)
	}
	if requests.n.Load() == 0 {
		t.Errorf("no request reached a Lease: the probe TestLeaderElectionOff relies on sees nothing")
	}
}

// TestLeaderElectionLostLease takes the Lease from a leader, as another
// replica would once the leader stopped renewing: the leader must stop
// scheduling and Run must return ErrLostLease within the renew deadline, and
// must not write the Lease on its way out.
func TestLeaderElectionLostLease(t *testing.T) {
	ctx := context.Background()
	const ns, lease = "le-lost", "le-lost-lease"
	client, err := kubernetes.NewForConfig(testEnv.Config)
	if err != nil {
		t.Fatal(err)
	}
	env := setUpNamespace(t, client, ns, 1)
	r := startReplica(ctx, t, "replica", electionConfig(ns, lease, true), testEnv.Config)
	env.Attempts = r.attempts
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return r.svc.IsLeader(), nil }); err != nil {
		t.Fatalf("the only replica does not lead: %v", err)
	}
	pod := func(name string) *v1.Pod { return scenario.MakePod(name).NodeSelector("group", ns).Obj() }
	if err := env.CreatePods(ctx, pod("before")); err != nil {
		t.Fatal(err)
	}
	if _, err := env.WaitForPodBound(ctx, "before", scenario.DefaultWait); err != nil {
		t.Fatal(err)
	}

	const usurper = "usurper"
	taken := time.Now()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := client.CoordinationV1().Leases(ns).Get(ctx, lease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		l.Spec.HolderIdentity = ptr.To(usurper)
		l.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		_, err = client.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("taking the Lease: %v", err)
	}
	err = r.wait(t, time.Minute)
	if !errors.Is(err, scheduler.ErrLostLease) {
		t.Fatalf("Run returned %v, want ErrLostLease", err)
	}
	// The leader gives up after renewDeadline (1.5s); allow for a slow,
	// shared machine, not for a full lease or grace period more.
	if took := time.Since(taken); took > 10*time.Second {
		t.Errorf("Run returned %v after the Lease was taken, want about the renew deadline (1.5s)", took)
	} else {
		t.Logf("Run returned %v after the Lease was taken", took.Round(time.Millisecond))
	}
	if r.svc.IsLeader() {
		t.Errorf("IsLeader() = true after the Lease was lost")
	}
	if holder, err := leaseHolder(ctx, client, ns, lease); err != nil || holder != usurper {
		t.Errorf("Lease holder = %q (%v), want %q untouched", holder, err, usurper)
	}
	if err := env.CreatePods(ctx, pod("after")); err != nil {
		t.Fatal(err)
	}
	if err := env.ExpectNoNewAttempts(ctx, "after", 2*time.Second); err != nil {
		t.Error(err)
	}
	if p, err := client.CoreV1().Pods(ns).Get(ctx, "after", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Errorf("a pod created after the Lease was lost got bound to %q (%v)", p.Spec.NodeName, err)
	}
}

// TestLeaderElectionOff: with leaderElect false the Service schedules at
// once, calls itself the leader, and sends no request to any Lease.
func TestLeaderElectionOff(t *testing.T) {
	ctx := context.Background()
	const ns, lease = "le-off", "le-off-lease"
	client, err := kubernetes.NewForConfig(testEnv.Config)
	if err != nil {
		t.Fatal(err)
	}
	env := setUpNamespace(t, client, ns, 1)
	var requests leaseRequests
	r := startReplica(ctx, t, "replica", electionConfig(ns, lease, false), requests.wrap(testEnv.Config))
	if err := env.CreatePods(ctx, scenario.MakePod("pod").NodeSelector("group", ns).Obj()); err != nil {
		t.Fatal(err)
	}
	if _, err := env.WaitForPodBound(ctx, "pod", scenario.DefaultWait); err != nil {
		t.Fatal(err)
	}
	if !r.svc.IsLeader() || r.svc.Identity() != "" {
		t.Errorf("IsLeader() = %v, Identity() = %q; want true and none", r.svc.IsLeader(), r.svc.Identity())
	}
	r.stop()
	if err := r.wait(t, time.Minute); err != nil {
		t.Fatalf("Run returned %v on a clean stop, want nil", err)
	}
	if n := requests.n.Load(); n != 0 {
		t.Errorf("%d requests reached Leases, want none", n)
	}
	if _, err := client.CoordinationV1().Leases(ns).Get(ctx, lease, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("getting Lease %s/%s: %v, want NotFound", ns, lease, err)
	}
}

// TestLeaderElectionWarnsOnKubeSchedulersLease: on kube-scheduler's own
// Lease (the default), held by someone else, a replica warns, naming the
// holder and the setting to change, and stands by.
func TestLeaderElectionWarnsOnKubeSchedulersLease(t *testing.T) {
	const ns, holder = "le-warn", "kube-scheduler-elsewhere"
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx := klog.NewContext(context.Background(), logger)
	client, err := kubernetes.NewForConfig(testEnv.Config)
	if err != nil {
		t.Fatal(err)
	}
	setUpNamespace(t, client, ns, 0)
	// Other tests run on the default Lease, released between them: take it
	// over for this test only.
	leases := client.CoordinationV1().Leases(scheduler.DefaultResourceNamespace)
	if err := leases.Delete(ctx, scheduler.DefaultResourceName, metav1.DeleteOptions{}); err != nil &&
		!apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	held := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: scheduler.DefaultResourceName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](3600),
			RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}
	if _, err := leases.Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = leases.Delete(context.Background(), scheduler.DefaultResourceName, metav1.DeleteOptions{}) })

	doc := strings.Replace(electionConfig(ns, "unused", true),
		"  resourceNamespace: "+ns+"\n  resourceName: unused\n", "", 1)
	r := startReplica(ctx, t, "replica", doc, testEnv.Config)
	buffer := logger.GetSink().(ktesting.Underlier).GetBuffer()
	want := []string{
		"the leader election Lease is kube-scheduler's own and someone else holds it",
		"must name its own lease (leaderElection.resourceName)",
		`holder="` + holder + `"`,
		"Another replica leads; standing by",
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) {
			for _, w := range want {
				if !strings.Contains(buffer.String(), w) {
					return false, nil
				}
			}
			return true, nil
		}); err != nil {
		t.Fatalf("the log does not say %q:\n%s", want, buffer.String())
	}
	if r.svc.IsLeader() {
		t.Errorf("IsLeader() = true while %s holds the Lease", holder)
	}
}
