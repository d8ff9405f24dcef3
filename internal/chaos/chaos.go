// This file is a chaos run: its set-up, the loop that draws and applies
// operations, and the waits for the scheduler to settle. The operations
// are in operations.go (nodes and pods), gangs.go (pod groups), volumes.go
// and devices.go, the faults in faults.go, the invariants in invariants.go
// and beside each area's operations.

package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/cache/debugger"
	"github.com/minisched/minisched/examples/dradriver"
	"github.com/minisched/minisched/minisched"
	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/queue"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/testenv"
)

// Config says what a Run does.
type Config struct {
	// Seed determines the operations and their arguments.
	Seed uint64
	// Ops is how many operations to apply; TimeLimit stops the run sooner
	// if applying them takes longer.
	Ops       int
	TimeLimit time.Duration
	// CheckEvery is how many operations pass between two checks of the
	// invariants (they are checked at the end too).
	CheckEvery int
	// InitialNodes is how many nodes exist before the first operation.
	InitialNodes int
	// Namespace holds the run's pods (Start creates it); SchedulerName is
	// the profile they ask for.
	Namespace, SchedulerName string
	// Logf narrates the run: every operation and what came of it.
	Logf func(format string, args ...any)

	// Scheduler configures the scheduler under test, which talks to the
	// apiserver of RestConfig; SchedulerOptions are more options for
	// scheduler.New (feature gates, say). The run starts it, and starts it
	// again the same way after each kill (faults.go).
	Scheduler        *configv1.KubeSchedulerConfiguration
	RestConfig       *rest.Config
	SchedulerOptions []scheduler.Option
	// Env is the apiserver's environment, which restartAPIServer kills
	// and starts again.
	Env *testenv.Environment
	// Faults lets the run draw the fault operations: scheduler kills,
	// apiserver restarts and injected API errors.
	Faults bool
	// Only, if not empty, names the operations the run draws from (see
	// OperationNames); the initial nodes are made all the same.
	Only []string
}

// OperationNames lists every operation a run may draw, fault operations
// included: what Config.Only may name.
func OperationNames() []string {
	var names []string
	for _, op := range slices.Concat(operations, groupOperations, volumeOperations, deviceOperations, faultOperations) {
		names = append(names, op.name)
	}
	return names
}

// Waits bound how long a run waits for the scheduler.
const (
	// settleTimeout bounds a wait for the scheduler's cache to take in a
	// change (a node deleted, a pod bound by another client).
	settleTimeout = 30 * time.Second
	// quiescenceTimeout bounds the final wait for every pending pod that
	// fits somewhere to be bound: far more than the backoff (2s at most)
	// and far less than the 5 minutes after which the queue retries
	// unschedulable pods anyway, so that a pod no event woke up is caught.
	quiescenceTimeout = 60 * time.Second
	pollInterval      = 100 * time.Millisecond
	// reflectorBackoffMax and reflectorBackoffReset are client-go's
	// reflector backoff (tools/cache/reflector.go, defaultBackoffMax with
	// its jitter of 1.0, and defaultBackoffReset): after an apiserver
	// restart an informer lists and watches again only when its backoff
	// says so, which doubles from 0.8s on each failed attempt up to
	// [30s, 60s), and starts again from 0.8s only after two minutes
	// without a failure. kube-controller-manager's informers are among
	// them (its pod watch was back 3-16s after the apiserver died, in chaos
	// runs on a quiet machine, the longest after a second restart), and a
	// controller cannot act on what its informers have not brought.
	reflectorBackoffMax   = 60 * time.Second
	reflectorBackoffReset = 2 * time.Minute
)

// The priority classes of the run's pods, lowest first. Start creates them.
var priorityClasses = []schedulingv1.PriorityClass{
	{ObjectMeta: metav1.ObjectMeta{Name: "chaos-low"}, Value: 10},
	{ObjectMeta: metav1.ObjectMeta{Name: "chaos-mid"}, Value: 100},
	{ObjectMeta: metav1.ObjectMeta{Name: "chaos-high"}, Value: 1000},
}

// Run is one chaos run against an apiserver and a scheduler running in the
// same process. Create it with New, pass Observe to the scheduler, then
// Start, Apply and Finish.
type Run struct {
	cfg    Config
	client kubernetes.Interface
	// sched is the scheduler under test now (current): the run waits for
	// its cache to take in some changes, and compares that cache with its
	// informers at the end. schedulers counts those started; dead are the
	// killed ones, whose Run Close waits for.
	sched      atomic.Pointer[instance]
	schedulers int
	dead       []*instance
	// groups are the pod groups the run created and did not delete,
	// deletedGroups those it deleted (with members left); gangs says which
	// may be left below minCount (gangs.go).
	groups, deletedGroups []*group
	groupSeq              int
	gangs                 *gangExcuses
	// driver is the example DRA driver (devices.go); claims and volumes
	// are the PVCs and static PVs the run made and did not delete
	// (volumes.go); claimSeq names both PVCs and ResourceClaims.
	driver          *dradriver.Driver
	claims, volumes []string
	claimSeq        int
	// faults answers a share of the scheduler's writes with errors for
	// faultOpsLeft more operations (faults.go).
	faults       *faultInjector
	faultOpsLeft int
	// disturbed is set when the apiserver restarts or errors are injected,
	// and cleared once the scheduler settles.
	disturbed bool
	// restartedAt is when the apiserver was last restarted (zero if never).
	restartedAt time.Time
	// statusLost are the pods found held as unschedulable without a reason
	// once the run was disturbed (see settle).
	statusLost map[types.UID]bool
	// env holds the scenarios' helpers (creating nodes, cordoning).
	env *scenario.Env
	rng *rand.Rand

	// The run's own bookkeeping, changed only by operations as they are
	// drawn, so that which operations can be drawn depends on the seed
	// alone. nodes and pods are what the run created and did not delete
	// (a pod in pods may have been preempted since).
	nodes, pods      []string
	nodeSeq, podSeq  int
	createdNodes     map[string]bool
	deletions        map[string]nodeDeletion
	racesReported    map[types.UID]bool
	watch            *bindingWatch
	scheduledReports *scheduledReports
}

// nodeDeletion brackets the deletion of a node in resource versions: before
// it, and once the scheduler's cache had dropped the node, no pod was
// assumed on it any more and the pods it was trying then were done with
// (settled). A pod bound to the node after settled
// is a bug; one bound between the two is a binding that was in flight when
// the node went, which kube-scheduler lets through too.
type nodeDeletion struct {
	before, settled uint64
}

// New prepares a run; nothing talks to the apiserver until Start.
func New(cfg Config, client kubernetes.Interface) *Run {
	return &Run{
		cfg:              cfg,
		client:           client,
		env:              &scenario.Env{Client: client, Namespace: cfg.Namespace, SchedulerName: cfg.SchedulerName},
		rng:              rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed5eed5eed5eed)),
		createdNodes:     map[string]bool{},
		statusLost:       map[types.UID]bool{},
		deletions:        map[string]nodeDeletion{},
		racesReported:    map[types.UID]bool{},
		watch:            &bindingWatch{first: map[types.UID]binding{}},
		scheduledReports: &scheduledReports{nodes: map[types.UID]string{}},
		faults:           &faultInjector{rng: rand.New(rand.NewPCG(cfg.Seed, 0xfa017))},
		gangs:            &gangExcuses{reasons: map[string]string{}, erred: map[string]bool{}},
	}
}

// Observe is a minisched.Observer: pass it to the scheduler under test so
// that the run can check that every pod it reports Scheduled is bound where
// it says.
func (r *Run) Observe(a minisched.Attempt) {
	switch a.Result {
	case attempt.Scheduled:
		r.scheduledReports.record(a.UID, a.Node)
	case attempt.SchedulerError:
		r.gangs.errored(a.Name)
	}
}

// Start starts the scheduler under test, creates the namespace, the
// priority classes and the initial nodes, and starts watching every pod of
// the namespace for bindings. Close stops the scheduler.
func (r *Run) Start(ctx context.Context) error {
	if _, err := r.startScheduler(ctx); err != nil {
		return err
	}
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.cfg.Namespace}}
	if _, err := r.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", r.cfg.Namespace, err)
	}
	for i := range priorityClasses {
		pc := priorityClasses[i]
		_, err := r.client.SchedulingV1().PriorityClasses().Create(ctx, &pc, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating priority class %s: %w", pc.Name, err)
		}
	}
	if err := r.watch.start(ctx, r.client, r.cfg.Namespace); err != nil {
		return err
	}
	if err := r.startVolumes(ctx); err != nil {
		return err
	}
	if err := r.startDevices(ctx); err != nil {
		return err
	}
	for range r.cfg.InitialNodes {
		s := addNode.draw(r)
		outcome, err := s.apply(ctx)
		if err != nil {
			return fmt.Errorf("initial node: %w", err)
		}
		r.cfg.Logf("setup: %s → %s", s.what, outcome)
	}
	return nil
}

// Apply draws and applies the operations, checking the invariants every
// CheckEvery operations. It stops at the first error or broken invariant,
// after Ops operations, or when TimeLimit has passed.
func (r *Run) Apply(ctx context.Context) error {
	start := time.Now()
	for i := 1; i <= r.cfg.Ops; i++ {
		if elapsed := time.Since(start); elapsed > r.cfg.TimeLimit {
			r.cfg.Logf("time limit %v reached after %d of %d operations", r.cfg.TimeLimit, i-1, r.cfg.Ops)
			break
		}
		s := r.pick().draw(r)
		outcome, err := s.apply(ctx)
		if err != nil {
			return fmt.Errorf("op %d (%s): %w", i, s.what, err)
		}
		r.cfg.Logf("op %d: %s → %s", i, s.what, outcome)
		r.tickFaults()
		if i%r.cfg.CheckEvery == 0 {
			if err := r.CheckInvariants(ctx); err != nil {
				return fmt.Errorf("after op %d: %w", i, err)
			}
		}
	}
	r.cfg.Logf("applied the operations in %v", time.Since(start).Round(time.Millisecond))
	return nil
}

// pick draws an operation among those that can apply now, by weight.
func (r *Run) pick() operation {
	ops := slices.Concat(operations, groupOperations, volumeOperations, deviceOperations)
	if r.cfg.Faults {
		ops = append(ops, faultOperations...)
	}
	if len(r.cfg.Only) > 0 {
		ops = slices.DeleteFunc(ops, func(op operation) bool { return !slices.Contains(r.cfg.Only, op.name) })
	}
	total := 0
	for _, op := range ops {
		if op.applies(r) {
			total += op.weight
		}
	}
	if total == 0 {
		// Only named none that can apply now: add a node, which makes most
		// of them apply.
		return addNode
	}
	x := r.rng.IntN(total)
	for _, op := range ops {
		if !op.applies(r) {
			continue
		}
		if x < op.weight {
			return op
		}
		x -= op.weight
	}
	panic("unreachable: weights add up to total")
}

// Finish ends any injected faults, lets the scheduler settle, then checks
// what must hold once it has (settle): every pending pod that fits on some
// node (its claims and volumes included) is bound, every other pending pod
// carries PodScheduled=False with a reason, the scheduler's cache equals
// its informers, and the invariants hold, those that wait for the
// controllers too.
func (r *Run) Finish(ctx context.Context) error {
	if r.faultOpsLeft > 0 {
		r.faultOpsLeft = 1
		r.tickFaults()
	}
	return r.settle(ctx)
}

// settle waits for the scheduler to settle and checks what must hold then
// (see Finish): beyond CheckInvariants, that no gang is left below its
// minCount but where kube-scheduler would leave it so (checkGangs), and
// what claims and volumes must be once the controllers have acted
// (checkVolumes, checkDevices).
func (r *Run) settle(ctx context.Context) error {
	start := time.Now()
	var stuck []string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, quiescenceTimeout, true, func(ctx context.Context) (bool, error) {
		c, err := r.readCluster(ctx)
		if err != nil {
			return false, err
		}
		stuck = c.pendingThatFit()
		return len(stuck) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%d pending pods fit on a node but were not bound within %v: %v: %w",
			len(stuck), quiescenceTimeout, stuck, err)
	}
	r.cfg.Logf("no pending pod fits on any node after %v", time.Since(start).Round(time.Millisecond))

	var unexplained []*v1.Pod
	waitForReasons := func() error {
		return wait.PollUntilContextTimeout(ctx, pollInterval, settleTimeout, true, func(ctx context.Context) (bool, error) {
			c, err := r.readCluster(ctx)
			if err != nil {
				return false, err
			}
			unexplained = c.pendingWithoutReason()
			return len(unexplained) == 0, nil
		})
	}
	err = waitForReasons()
	if err != nil && r.disturbed {
		// A status patch sent while the apiserver restarted can fail in a
		// way no scheduler retries (kube-scheduler's PatchPodStatus retries
		// 500, 503, a refused connection and 409; not a connection cut in
		// the middle), and four 409s in a row can end the retries: the
		// pod then says why at its next attempt, which an event brings.
		// Here the event is a label changed on the pod.
		r.cfg.Logf("pods without a reason since the apiserver restarted or answered with errors: %s; changing a label "+
			"on each, so that they are tried again", describePods(unexplained))
		for _, p := range unexplained {
			patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"%d"}}}`, revLabel, time.Now().UnixNano())
			_, err := r.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, []byte(patch),
				metav1.PatchOptions{})
			if err := ignoreNotFound(err); err != nil {
				return fmt.Errorf("patching pod %s: %w", p.Name, err)
			}
		}
		err = waitForReasons()
	}
	// The label change wakes only a pod whose unschedulable plugins register
	// pod label updates: kube-scheduler's queue asks their hints about the
	// update (scheduling_queue.go, Update) and leaves the pod where it is
	// otherwise, until an event that may help it or the flush after 5
	// minutes (podMaxInUnschedulablePodsDuration). A pod the scheduler holds
	// as unschedulable has had its attempt, and only its status write was
	// lost: kube-scheduler leaves it so, at this settle and the next ones.
	if err != nil {
		var held []string
		unexplained = slices.DeleteFunc(unexplained, func(p *v1.Pod) bool {
			if (r.disturbed || r.statusLost[p.UID]) && r.current().Queue.Locate(p.UID) == queue.UnschedulablePods {
				r.statusLost[p.UID] = true
				held = append(held, p.Name)
				return true
			}
			return false
		})
		if len(unexplained) == 0 {
			r.cfg.Logf("pods %v are held as unschedulable without a reason on them, as kube-scheduler leaves them "+
				"when the status write was lost and no event since may help them", held)
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("pending pods without PodScheduled=False and a reason after %v: %s: %w",
			settleTimeout, describePods(unexplained), err)
	}
	r.disturbed = false

	var diff *debugger.CacheComparison
	err = wait.PollUntilContextTimeout(ctx, pollInterval, settleTimeout, true, func(context.Context) (bool, error) {
		var err error
		diff, err = r.sched.Load().svc.Debugger.Comparer.Compare()
		return err == nil && diff.IsEmpty(), err
	})
	if err != nil {
		return fmt.Errorf("the scheduler's cache differs from its informers for %v: %v: %w", settleTimeout, diff, err)
	}
	if err := r.CheckInvariants(ctx); err != nil {
		return err
	}
	// The controllers act on what the scheduler did last (the resourceclaim
	// controller frees the claims of pods gone, the provisioner makes the
	// volumes of claims selected for a node): what must hold once they have
	// settled is given settleTimeout to, and as long again as an informer's
	// backoff may last if the apiserver restarted within its reset period.
	controllersTimeout := settleTimeout
	if !r.restartedAt.IsZero() && time.Since(r.restartedAt) < reflectorBackoffReset {
		controllersTimeout += reflectorBackoffMax
	}
	var c *cluster
	var broken []string
	err = wait.PollUntilContextTimeout(ctx, pollInterval, controllersTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		if c, err = r.readCluster(ctx); err != nil {
			return false, err
		}
		broken = slices.Concat(r.checkGangs(c), r.checkVolumes(c, true), r.checkDevices(c, true))
		return len(broken) == 0, nil
	})
	if len(broken) > 0 {
		return fmt.Errorf("invariants broken once settled, for %v:\n\t%s%s", controllersTimeout, strings.Join(broken, "\n\t"),
			c.devices.writers(broken))
	}
	if err != nil {
		return err
	}
	r.cfg.Logf("settled: %s; cache: %s", c.summary(), diff)
	if odd := c.boundNotScheduled(); len(odd) > 0 {
		// Not an invariant: kube-scheduler does the same (see
		// boundNotScheduled).
		r.cfg.Logf("bound pods whose PodScheduled is not True: %v", odd)
	}
	return nil
}

// Close stops the scheduler under test and waits for its Run, and for
// those of the schedulers killed before it.
func (r *Run) Close() error {
	var errs []error
	if in := r.sched.Load(); in != nil {
		in.cancel()
		select {
		case err := <-in.done:
			if err != nil {
				errs = append(errs, fmt.Errorf("scheduler %d's Run returned %w, want nil on a clean stop", in.n, err))
			}
		case <-time.After(time.Minute):
			errs = append(errs, fmt.Errorf("scheduler %d did not stop within a minute", in.n))
		}
	}
	for _, in := range r.dead {
		if err := in.reap(time.Minute); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// listRV returns the apiserver's current resource version, as a quorum list
// of the namespace's pods reports it.
func (r *Run) listRV(ctx context.Context) (uint64, error) {
	list, err := r.client.CoreV1().Pods(r.cfg.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing pods: %w", err)
	}
	return parseRV(list.ResourceVersion)
}

// parseRV reads a resource version as a number. Resource versions are
// opaque to clients, but an apiserver on etcd gives them as etcd's
// revision, which only grows: that is what lets the run order a binding and
// a node deletion.
func parseRV(rv string) (uint64, error) {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("resource version %q is not a number: %w", rv, err)
	}
	return n, nil
}

// binding is a pod's binding as the watch first saw it.
type binding struct {
	pod, node string
	// rv is the resource version of the first sighting: the binding's own
	// write, unless the watch missed it.
	rv uint64
}

// bindingWatch watches the run's pods and records, per pod UID, the node
// it was first seen bound to; a pod later seen on another node was bound
// twice.
type bindingWatch struct {
	mu         sync.Mutex
	first      map[types.UID]binding
	violations []string
}

// start runs an informer of its own (not the scheduler's) on the
// namespace's pods and waits for its first list.
func (w *bindingWatch) start(ctx context.Context, client kubernetes.Interface, namespace string) error {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	inf := factory.Core().V1().Pods().Informer()
	observe := func(obj any) {
		if p, ok := obj.(*v1.Pod); ok {
			w.observe(p)
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
	}); err != nil {
		return fmt.Errorf("watching pods: %w", err)
	}
	factory.Start(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return errors.New("the pod watch did not sync")
	}
	return nil
}

func (w *bindingWatch) observe(p *v1.Pod) {
	if p.Spec.NodeName == "" {
		return
	}
	rv, err := parseRV(p.ResourceVersion)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.violations = append(w.violations, err.Error())
		return
	}
	prev, ok := w.first[p.UID]
	switch {
	case !ok:
		w.first[p.UID] = binding{pod: p.Name, node: p.Spec.NodeName, rv: rv}
	case prev.node != p.Spec.NodeName:
		w.violations = append(w.violations, fmt.Sprintf("pod %s (uid %s) was bound to %s, then to %s",
			p.Name, p.UID, prev.node, p.Spec.NodeName))
	}
}

// snapshot returns a copy of the bindings seen and of the violations.
func (w *bindingWatch) snapshot() (map[types.UID]binding, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	first := make(map[types.UID]binding, len(w.first))
	for uid, b := range w.first {
		first[uid] = b
	}
	return first, append([]string(nil), w.violations...)
}

// scheduledReports records the node of every Scheduled attempt the
// scheduler reported, per pod UID.
type scheduledReports struct {
	mu    sync.Mutex
	nodes map[types.UID]string
}

func (s *scheduledReports) record(uid types.UID, node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes[uid] = node
}

func (s *scheduledReports) snapshot() map[types.UID]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[types.UID]string, len(s.nodes))
	for uid, n := range s.nodes {
		out[uid] = n
	}
	return out
}
