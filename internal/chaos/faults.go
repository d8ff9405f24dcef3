// This file holds the run's faults: the scheduler under test killed at a
// drawn point of a cycle and the next one started at once, the apiserver
// killed and started again on the same etcd, and the scheduler's writes
// answered 409 or 500 for a while.
//
// A kill is what a killed process does, in process: from the moment the
// point is reached, every request the scheduler makes fails before it
// leaves (its transport is dead, so no Unreserve, no status patch, no
// event reaches the apiserver), then its context is cancelled and the next
// scheduler starts with a fresh cache and fresh informers. Whatever the
// dead one had written so far stays written, as it would.

package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/scheduler"
)

// The points at which a kill can be armed: before a step of a cycle
// (framework.StepPoints), or during PreBind's writes.
const (
	// killBeforePreBind kills between Reserve and PreBind: the pod is
	// assumed, its claims and volumes reserved in memory, nothing written.
	killBeforePreBind = "before PreBind"
	// killInPreBind kills after PreBind's first write for a pod and before
	// its next: a claim allocated but not reserved, a PV's claimRef
	// written but not the pod bound.
	killInPreBind = "during PreBind's writes"
	// killAtPermitWait kills while a member of a pod group waits at Permit
	// for the rest of its gang.
	killAtPermitWait = "while a gang member waits on Permit"
	// killBeforeBind kills after PreBind, before the binding is written.
	killBeforeBind = "before Bind"
	// killNow kills at once, wherever the scheduler is.
	killNow = "at once"
)

// killPoints are the points drawn, killNow last: it is also what a kill
// whose point is not reached in time becomes.
var killPoints = []string{killBeforePreBind, killInPreBind, killAtPermitWait, killBeforeBind, killNow}

// killWait bounds how long a kill waits for a pod to reach its point
// before it kills at once.
const killWait = 15 * time.Second

// errKilled is what every request of a killed scheduler fails with.
var errKilled = errors.New("connection refused (the chaos run killed this scheduler)")

// instance is one scheduler under test: a scheduler.Service, its Run, and
// what kills it.
type instance struct {
	// n counts the schedulers of the run, from 1.
	n      int
	svc    *scheduler.Service
	cancel context.CancelFunc
	// done receives Run's result.
	done chan error
	// dead is set when the scheduler is killed: its transport fails every
	// request from then on.
	dead atomic.Bool
	// killed is closed once it is dead.
	killed chan struct{}
	once   sync.Once
	// armed is the point a kill waits for ("" when none); while it is
	// killInPreBind, inPreBindKey marks the contexts of PreBind steps.
	mu    sync.Mutex
	armed string
	// permits counts the Permit steps of each pod group's members while
	// killAtPermitWait is armed (secondPermit).
	permits map[string]int
	// faults are the run's injected API errors.
	faults *faultInjector
}

// startScheduler starts the next scheduler under test and waits until its
// informers have synced.
func (r *Run) startScheduler(ctx context.Context) (*instance, error) {
	in := &instance{n: r.schedulers + 1, done: make(chan error, 1), killed: make(chan struct{}), faults: r.faults}
	rc := rest.CopyConfig(r.cfg.RestConfig)
	rc.WrapTransport = in.wrap
	runCtx, cancel := context.WithCancel(ctx)
	opts := append([]scheduler.Option{scheduler.WithStepper(in), scheduler.WithObserver(r.Observe),
		scheduler.WithSeed(r.cfg.Seed + uint64(in.n))}, r.cfg.SchedulerOptions...)
	svc, err := scheduler.New(runCtx, r.cfg.Scheduler, rc, opts...)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("creating scheduler %d: %w", in.n, err)
	}
	in.svc, in.cancel = svc, cancel
	go func() { in.done <- svc.Run(runCtx) }()
	err = wait.PollUntilContextTimeout(ctx, pollInterval/10, settleTimeout, true, func(context.Context) (bool, error) {
		select {
		case err := <-in.done:
			return false, fmt.Errorf("scheduler %d stopped while starting: %v", in.n, err)
		default:
		}
		return svc.Ready(), nil
	})
	if err != nil {
		in.kill()
		return nil, fmt.Errorf("scheduler %d did not start: %w", in.n, err)
	}
	r.schedulers++
	r.sched.Store(in)
	return in, nil
}

// kill kills the scheduler (once): its requests fail from now on, then its
// Run is cancelled. It does not wait for Run to return (see reap).
func (in *instance) kill() {
	in.once.Do(func() {
		in.dead.Store(true)
		in.cancel()
		close(in.killed)
	})
}

// reap waits for a killed scheduler's Run to return. What it returns does
// not matter (a killed scheduler may fail to stop cleanly, its requests
// refused); only a Run that hangs does.
func (in *instance) reap(timeout time.Duration) error {
	select {
	case <-in.done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("killed scheduler %d's Run did not return within %v", in.n, timeout)
	}
}

// arm makes the next pod that reaches point kill the scheduler.
func (in *instance) arm(point string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.armed = point
}

// inPreBindKey marks the context of a PreBind step while killInPreBind is
// armed: the transport lets that step's first write through, then kills.
type inPreBindKey struct{}

// Before is the instance's framework.Stepper: it kills the scheduler when
// a cycle reaches the armed point.
func (in *instance) Before(ctx context.Context, step framework.Step) context.Context {
	if in.dead.Load() {
		return ctx
	}
	in.mu.Lock()
	armed := in.armed
	in.mu.Unlock()
	switch {
	case armed == killBeforePreBind && step.Point == "PreBind",
		armed == killBeforeBind && step.Point == "Bind",
		armed == killAtPermitWait && step.Point == "WaitOnPermit" && step.Pod.Spec.SchedulingGroup != nil &&
			len(step.Waiting) > 0,
		armed == killAtPermitWait && in.secondPermit(step):
		in.kill()
	case armed == killInPreBind && step.Point == "PreBind":
		return context.WithValue(ctx, inPreBindKey{}, new(atomic.Int32))
	case armed == killInPreBind && ctx.Value(inPreBindKey{}) != nil:
		// A step's context goes on to the next step: Bind's write is not
		// PreBind's.
		return context.WithValue(ctx, inPreBindKey{}, (*atomic.Int32)(nil))
	}
	return ctx
}

// secondPermit reports whether step is the Permit of a pod group's member
// after another member of the group went through Permit (members placed
// by their group's cycle go through Permit one after the other): that one
// waits there, unless the gang's quorum was met already.
// A member's own binding cycle often reaches WaitOnPermit only after the
// last member's Permit let the gang go, so this is where a kill finds
// members waiting.
func (in *instance) secondPermit(step framework.Step) bool {
	if step.Point != "Permit" || step.Pod.Spec.SchedulingGroup == nil {
		return false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.permits == nil {
		in.permits = map[string]int{}
	}
	key := step.Pod.Namespace + "/" + groupOf(step.Pod)
	in.permits[key]++
	return in.permits[key] >= 2
}

// FilterResult is part of framework.Stepper; a kill does not need it.
func (in *instance) FilterResult(*framework.CycleState, string, *framework.Status) {}

// ScoreResult is part of framework.Stepper; a kill does not need it.
func (in *instance) ScoreResult(*framework.CycleState, string, int64) {}

// wrap is the scheduler's transport: dead once killed, counting PreBind's
// writes while killInPreBind is armed, and failing the writes the fault
// injector draws.
func (in *instance) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if in.dead.Load() {
			return nil, errKilled
		}
		write := req.Method != http.MethodGet && req.Method != http.MethodHead
		if !write {
			return next.RoundTrip(req)
		}
		if resp := in.faults.draw(req); resp != nil {
			return resp, nil
		}
		resp, err := next.RoundTrip(req)
		if writes, _ := req.Context().Value(inPreBindKey{}).(*atomic.Int32); writes != nil && writes.Add(1) == 1 {
			// The first write of the PreBind step went out: the process dies
			// before the next.
			in.kill()
		}
		return resp, err
	})
}

// roundTripper is a function as an http.RoundTripper.
type roundTripper func(*http.Request) (*http.Response, error)

// RoundTrip calls the function.
func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// faultInjector answers a share of the scheduler's writes itself, as a
// failing apiserver would: 409 Conflict for bindings and pod status
// writes, 500 for the rest. The share is set by the faults operation and
// lasts a drawn number of operations.
type faultInjector struct {
	mu sync.Mutex
	// share is the fraction of writes answered with an error; 0 when off.
	share float64
	rng   *rand.Rand
	// injected counts the errors answered.
	injected int
}

// set turns the injector on at share (0 turns it off).
func (f *faultInjector) set(share float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.share = share
}

// draw returns the error response for req, or nil to let it through.
func (f *faultInjector) draw(req *http.Request) *http.Response {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.share == 0 || f.rng.Float64() >= f.share {
		return nil
	}
	f.injected++
	code, reason := http.StatusInternalServerError, "InternalError"
	if isPodWrite(req.URL.Path) {
		code, reason = http.StatusConflict, "Conflict"
	}
	body := fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected by the chaos run",`+
		`"reason":%q,"code":%d}`, reason, code)
	return &http.Response{StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Header: http.Header{"Content-Type": []string{"application/json"}}, Request: req,
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
}

// isPodWrite reports whether path is a pod's binding or status: where a
// real apiserver answers a scheduler 409 when another writer came first.
func isPodWrite(path string) bool {
	parts := strings.Split(path, "/")
	// /api/v1/namespaces/NS/pods/NAME/{binding,status}
	return len(parts) == 8 && parts[5] == "pods" && (parts[7] == "binding" || parts[7] == "status")
}

// faultOperations are the faults drawn among the other operations.
var faultOperations = []operation{
	{name: "killScheduler", weight: 3, applies: always, draw: drawKill},
	{name: "restartAPIServer", weight: 1, applies: always, draw: drawRestartAPIServer},
	{name: "injectFaults", weight: 2, applies: func(r *Run) bool { return r.faultOpsLeft == 0 }, draw: drawInjectFaults},
}

// drawKill draws a point, and what will reach it: a gang of two small
// members for killAtPermitWait, a small pod with a claim from the template
// for killInPreBind, a small pod for the other points.
func drawKill(r *Run) step {
	point := killPoints[r.rng.IntN(len(killPoints))]
	var trigger step
	switch point {
	case killNow:
	case killAtPermitWait:
		trigger = r.createGroup(true, 2, 2, "100m", priorityClasses[1].Name)
	default:
		p := podSpec{name: r.newPodName(), requests: map[v1.ResourceName]string{v1.ResourceCPU: "100m"},
			class: priorityClasses[1].Name}
		if point == killInPreBind {
			// DynamicResources' PreBind writes its claim twice (the
			// finalizer, then the allocation and reservation).
			p.claimTemplate = claimTemplate
		}
		trigger = r.createStep("create pod "+p.String(), p)
	}
	what := "kill the scheduler " + point
	if trigger.apply != nil {
		what += ", reached by: " + trigger.what
	}
	return step{what: what, apply: func(ctx context.Context) (string, error) {
		return r.killScheduler(ctx, point, trigger.apply)
	}}
}

// killScheduler arms point on the scheduler under test, applies the
// trigger, waits until a pod reaches the point (or killWait passes, when it
// kills at once), starts the next
// scheduler, and waits in the background for the dead one's Run.
func (r *Run) killScheduler(ctx context.Context, point string, trigger func(context.Context) (string, error)) (
	string, error) {
	old := r.sched.Load()
	outcome := "killed " + point
	if point != killNow {
		old.arm(point)
		if _, err := trigger(ctx); err != nil {
			return "", err
		}
		select {
		case <-old.killed:
		case <-time.After(killWait):
			outcome = fmt.Sprintf("no pod reached the point in %v: killed at once", killWait)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	old.kill()
	next, err := r.startScheduler(ctx)
	if err != nil {
		return "", err
	}
	r.dead = append(r.dead, old)
	if err := r.excuseHalfBound(ctx, "the scheduler was killed while binding its members"); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s; scheduler %d started", outcome, next.n), nil
}

func drawRestartAPIServer(r *Run) step {
	return step{what: "kill the apiserver and start it again on the same etcd", apply: r.restartAPIServer}
}

// restartAPIServer kills the apiserver and starts it again; the scheduler,
// the controllers and the run's own watch must find it again on their own.
func (r *Run) restartAPIServer(context.Context) (string, error) {
	r.disturbed = true
	if err := r.cfg.Env.CrashAPIServer(); err != nil {
		return "", err
	}
	if err := r.cfg.Env.StartAPIServer(); err != nil {
		return "", err
	}
	r.restartedAt = time.Now()
	return "restarted", nil
}

// The shares of writes and the spans (in operations) the faults operation
// draws from.
var (
	faultShares = []float64{0.1, 0.25, 0.5}
	faultSpans  = []int{5, 10, 20}
)

func drawInjectFaults(r *Run) step {
	share := faultShares[r.rng.IntN(len(faultShares))]
	span := faultSpans[r.rng.IntN(len(faultSpans))]
	r.faultOpsLeft = span
	return step{
		what: fmt.Sprintf("answer %.0f%% of the scheduler's writes 409 (bindings, pod status) or 500 for %d operations",
			share*100, span),
		apply: func(context.Context) (string, error) {
			r.disturbed = true
			r.faults.set(share)
			return "on", nil
		},
	}
}

// tickFaults counts down the injected faults' span after each operation,
// and turns them off when it ends.
func (r *Run) tickFaults() {
	if r.faultOpsLeft == 0 {
		return
	}
	r.faultOpsLeft--
	if r.faultOpsLeft == 0 {
		r.faults.set(0)
		r.cfg.Logf("the injected faults end (%d writes answered with an error so far)", r.faults.count())
	}
}

// count is how many errors were injected so far.
func (f *faultInjector) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected
}
