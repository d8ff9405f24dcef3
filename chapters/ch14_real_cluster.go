// This file holds chapter 14's scenario, running on a real cluster: two
// replicas of the scheduler, as a Deployment would run them, electing a
// leader through a Lease. Only the leader schedules; the standby keeps its
// cache warm and takes over when the leader goes.

package scenario

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched"
	"github.com/minisched/minisched/scheduler"
)

// electionLease is the Lease the replicas of ch14-leader-election compete
// for, in the scenario's namespace.
const electionLease = "minisched"

func leaderElectionScenarios() []Scenario {
	return []Scenario{
		{
			Name: "ch14-leader-election", Chapter: 14, StartsSchedulers: true,
			Description: "two replicas elect a leader through a Lease: only the leader binds pods, the standby's " +
				"/metrics count none; the leader stops, releases the Lease, and the standby takes over and binds the " +
				"next pods",
			Run: runLeaderElection,
		},
	}
}

// electionConfig is the configuration both replicas run with, as a reader
// would write it: the default profile, leader election on, with a Lease of
// its own and durations short enough for a story (kube-scheduler's defaults
// are 15 s, 10 s and 2 s). Profiling is off: contention profiling, once on,
// would slow down every later scenario of the process.
func electionConfig(namespace string) (*configv1.KubeSchedulerConfiguration, error) {
	return configYAML(fmt.Sprintf(`leaderElection:
  leaderElect: true
  resourceNamespace: %s
  resourceName: %s
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 500ms
enableProfiling: false
`, namespace, electionLease))()
}

// replica is one scheduler process of the story, with what it scheduled.
type replica struct {
	name string
	svc  *scheduler.Service
	// metricsURL is its /metrics.
	metricsURL string
	stop       context.CancelFunc
	// done receives what Run returned; shutDown takes it into runErr.
	done     chan error
	stopOnce sync.Once
	runErr   error

	mu sync.Mutex
	// scheduled lists the pods this replica bound, in order.
	scheduled []string
}

// startReplica builds a scheduler Service from cfg, serves its metrics on a
// free loopback port and runs it until stop; its attempts also go to the
// scenario's log.
func (e *Env) startReplica(ctx context.Context, name string, cfg *configv1.KubeSchedulerConfiguration) (*replica, error) {
	r := &replica{name: name, done: make(chan error, 1)}
	observe := func(a minisched.Attempt) {
		e.Attempts.Record(a)
		if a.Result == minisched.Scheduled {
			r.mu.Lock()
			r.scheduled = append(r.scheduled, a.Name)
			r.mu.Unlock()
		}
	}
	svc, err := scheduler.New(ctx, cfg, e.RestConfig, scheduler.WithObserver(observe), scheduler.WithSeed(42))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r.svc = svc
	// Its log lines are one verbosity level quieter, as the runner's
	// scheduler's are, and named after the replica.
	runCtx, stop := context.WithCancel(klog.NewContext(ctx, klog.Background().WithName(name).V(1)))
	r.stop = stop
	addr, err := svc.Serve(runCtx, "127.0.0.1:0")
	if err != nil {
		stop()
		return nil, err
	}
	r.metricsURL = "http://" + addr.String() + "/metrics"
	go func() { r.done <- svc.Run(runCtx) }()
	return r, nil
}

// bound returns the pods the replica bound so far.
func (r *replica) bound() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.scheduled...)
}

// shutDown stops the replica, waits for its Run to return and returns what
// it returned; called again, it returns the same.
func (r *replica) shutDown() error {
	r.stopOnce.Do(func() {
		r.stop()
		r.runErr = <-r.done
	})
	return r.runErr
}

func runLeaderElection(ctx context.Context, env *Env) (err error) {
	cfg, err := electionConfig(env.Namespace)
	if err != nil {
		return err
	}
	leases := env.Client.CoordinationV1().Leases(env.Namespace)
	// A Lease left by an earlier run would make the replicas wait for it to
	// expire.
	if err := leases.Delete(ctx, electionLease, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := env.CreateNodes(ctx, nodes(numbered("node", 0, 2)...)...); err != nil {
		return err
	}

	// 1. replica-a starts and takes the free Lease; replica-b starts, finds
	// it held, and stands by.
	var replicas []*replica
	defer func() {
		for _, r := range replicas {
			if stopErr := r.shutDown(); stopErr != nil && err == nil {
				err = fmt.Errorf("%s: %w", r.name, stopErr)
			}
		}
	}()
	var leader, standby *replica
	for _, name := range []string{"replica-a", "replica-b"} {
		r, err := env.startReplica(ctx, name, cfg)
		if err != nil {
			return err
		}
		replicas = append(replicas, r)
		if leader == nil {
			if leader, err = waitForLeader(ctx, replicas); err != nil {
				return err
			}
		} else {
			standby = r
		}
	}
	holder, err := env.leaseHolder(ctx)
	if err != nil {
		return err
	}
	env.Logf("%s leads: Lease %s/%s is held by %s", leader.name, env.Namespace, electionLease, holder)
	if holder != leader.svc.Identity() {
		return fmt.Errorf("the Lease is held by %q, but %s, which schedules, is %q", holder, leader.name,
			leader.svc.Identity())
	}
	if err := waitReady(ctx, standby); err != nil {
		return err
	}
	if standby.svc.IsLeader() {
		return fmt.Errorf("%s schedules too, while %s holds the Lease", standby.name, leader.name)
	}
	env.Logf("%s stands by: /readyz ok (its informers synced, its cache warm), not scheduling", standby.name)

	// 2. Only the leader schedules.
	first := numbered("pod", 0, 2)
	if err := env.createAndWaitBound(ctx, first); err != nil {
		return err
	}
	if err := env.expectScheduledBy(leader, standby, first); err != nil {
		return err
	}
	if err := env.reportAttempts(ctx, leader, standby); err != nil {
		return err
	}

	// 3. The leader stops: it lets its binding cycles finish, then releases
	// the Lease, and the standby need not wait for it to expire.
	stopped := time.Now()
	if err := leader.shutDown(); err != nil {
		return fmt.Errorf("%s did not stop cleanly: %w", leader.name, err)
	}
	if _, err := waitForLeader(ctx, []*replica{standby}); err != nil {
		return err
	}
	took := time.Since(stopped)
	holder, err = env.leaseHolder(ctx)
	if err != nil {
		return err
	}
	env.Logf("%s stopped and released the Lease; %s took over %.1fs later (the Lease lasts 4s) and holds it: %s",
		leader.name, standby.name, took.Seconds(), holder)
	if holder != standby.svc.Identity() {
		return fmt.Errorf("after the takeover the Lease is held by %q, want %s's %q", holder, standby.name,
			standby.svc.Identity())
	}

	// 4. The new leader schedules the next pods.
	next := numbered("pod", 3, 5)
	if err := env.createAndWaitBound(ctx, next); err != nil {
		return err
	}
	if err := env.expectScheduledBy(standby, leader, next); err != nil {
		return err
	}
	if err := env.reportAttempts(ctx, standby); err != nil {
		return err
	}
	notes, err := env.waitForNotes(ctx, electionLease, "LeaderElection", 2)
	if err != nil {
		return err
	}
	env.Logf("events on the Lease: %s", strings.Join(notes, "; "))
	return nil
}

// waitForLeader polls until exactly one of the replicas schedules, and
// returns it.
func waitForLeader(ctx context.Context, replicas []*replica) (*replica, error) {
	var leader *replica
	err := wait.PollUntilContextTimeout(ctx, pollInterval, DefaultWait, true, func(context.Context) (bool, error) {
		leader = nil
		for _, r := range replicas {
			if r.svc.IsLeader() {
				if leader != nil {
					return false, fmt.Errorf("%s and %s both schedule", leader.name, r.name)
				}
				leader = r
			}
		}
		return leader != nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("no replica became the leader within %v: %w", DefaultWait, err)
	}
	return leader, nil
}

// waitReady polls the replica's /readyz until it answers ok.
func waitReady(ctx context.Context, r *replica) error {
	url := strings.TrimSuffix(r.metricsURL, "/metrics") + "/readyz"
	err := wait.PollUntilContextTimeout(ctx, pollInterval, DefaultWait, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil // not listening yet
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("%s's /readyz did not answer ok within %v: %w", r.name, DefaultWait, err)
	}
	return nil
}

// leaseHolder returns the identity holding the scenario's Lease.
func (e *Env) leaseHolder(ctx context.Context) (string, error) {
	lease, err := e.Client.CoordinationV1().Leases(e.Namespace).Get(ctx, electionLease, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the Lease: %w", err)
	}
	return ptr.Deref(lease.Spec.HolderIdentity, ""), nil
}

// createAndWaitBound creates the pods and waits for each to be bound.
func (e *Env) createAndWaitBound(ctx context.Context, names []string) error {
	for _, name := range names {
		if err := e.CreatePods(ctx, MakePod(name).Obj()); err != nil {
			return err
		}
	}
	_, err := e.boundNodes(ctx, names)
	return err
}

// expectScheduledBy checks that by bound every one of the pods, and other
// none of them.
func (e *Env) expectScheduledBy(by, other *replica, pods []string) error {
	got := map[string]bool{}
	for _, p := range by.bound() {
		got[p] = true
	}
	for _, p := range other.bound() {
		if slices.Contains(pods, p) {
			return fmt.Errorf("%s, which does not lead, bound %s", other.name, p)
		}
	}
	var missing []string
	for _, p := range pods {
		if !got[p] {
			missing = append(missing, p)
		}
	}
	e.Logf("%s bound %s; %s bound none of them", by.name, strings.Join(pods, ", "), other.name)
	if len(missing) > 0 {
		return errors.New(by.name + " did not bind " + strings.Join(missing, ", "))
	}
	return nil
}

// reportAttempts scrapes each replica's /metrics and prints its count of
// scheduled attempts; a replica that does not lead must have none.
func (e *Env) reportAttempts(ctx context.Context, replicas ...*replica) error {
	for _, r := range replicas {
		m, err := Scrape(ctx, r.metricsURL)
		if err != nil {
			return err
		}
		n := m.Value("scheduler_schedule_attempts_total", map[string]string{"result": "scheduled"})
		e.Logf("%s's /metrics: scheduler_schedule_attempts_total{result=\"scheduled\"} %v (leading: %t)",
			r.name, n, r.svc.IsLeader())
		if !r.svc.IsLeader() && n != 0 {
			return fmt.Errorf("%s does not lead, yet its /metrics count %v scheduled attempts", r.name, n)
		}
		if r.svc.IsLeader() && n == 0 {
			return fmt.Errorf("%s leads, yet its /metrics count no scheduled attempt", r.name)
		}
	}
	return nil
}

// waitForNotes polls until there are at least n events with reason about
// the named object, and returns their notes.
func (e *Env) waitForNotes(ctx context.Context, name, reason string, n int) ([]string, error) {
	var notes []string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, DefaultWait, true, func(ctx context.Context) (bool, error) {
		var err error
		notes, err = e.EventMessages(ctx, name, reason)
		return len(notes) >= n, err
	})
	if err != nil {
		return nil, fmt.Errorf("%d %s events about %s within %v, want %d: %w", len(notes), reason, name,
			DefaultWait, n, err)
	}
	return notes, nil
}
