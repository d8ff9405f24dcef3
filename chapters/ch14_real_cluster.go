// Chapter 14's story (docs/14-real-cluster.md), running on a real cluster:
// two replicas of the scheduler, as a Deployment would run them, electing a
// leader through a Lease. Only the leader schedules; the standby keeps its
// cache warm and takes over when the leader goes.

package chapters

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/testenv"
)

// electionLease is the Lease the replicas of ch14-leader-election compete
// for, in the scenario's namespace.
const electionLease = "minisched"

// chapter14 is chapter 14's story.
func chapter14() []scenario.Scenario {
	return []scenario.Scenario{
		{
			Name: "ch14-leader-election", Chapter: 14, Parts: scenario.Parts{scenario.OwnSchedulers},
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
	return scenario.ConfigYAML(fmt.Sprintf(`leaderElection:
  leaderElect: true
  resourceNamespace: %s
  resourceName: %s
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 500ms
enableProfiling: false
`, namespace, electionLease))()
}

func runLeaderElection(ctx context.Context, env *scenario.Env) (err error) {
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
	if err := env.CreateNodes(ctx, scenario.Nodes(scenario.Numbered("node", 0, 2)...)...); err != nil {
		return err
	}

	// 1. replica-a starts and takes the free Lease; replica-b starts, finds
	// it held, and stands by.
	var replicas []*scenario.Replica
	defer func() {
		for _, r := range replicas {
			if stopErr := r.ShutDown(); stopErr != nil && err == nil {
				err = fmt.Errorf("%s: %w", r.Name, stopErr)
			}
		}
	}()
	var leader, standby *scenario.Replica
	for _, name := range []string{"replica-a", "replica-b"} {
		r, err := env.StartReplica(ctx, name, cfg)
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
	holder, err := leaseHolder(ctx, env)
	if err != nil {
		return err
	}
	env.Logf("%s leads: Lease %s/%s is held by %s", leader.Name, env.Namespace, electionLease, holder)
	if holder != leader.Service.Identity() {
		return fmt.Errorf("the Lease is held by %q, but %s, which schedules, is %q", holder, leader.Name,
			leader.Service.Identity())
	}
	if err := waitReady(ctx, standby); err != nil {
		return err
	}
	if standby.Service.IsLeader() {
		return fmt.Errorf("%s schedules too, while %s holds the Lease", standby.Name, leader.Name)
	}
	env.Logf("%s stands by: /readyz ok (its informers synced, its cache warm), not scheduling", standby.Name)

	// 2. Only the leader schedules.
	first := scenario.Numbered("pod", 0, 2)
	if err := createAndWaitBound(ctx, env, first); err != nil {
		return err
	}
	if err := expectScheduledBy(ctx, env, leader, standby, first); err != nil {
		return err
	}
	if err := reportAttempts(ctx, env, leader, standby); err != nil {
		return err
	}

	// 3. The leader stops: it lets its binding cycles finish, then releases
	// the Lease, and the standby need not wait for it to expire.
	stopped := time.Now()
	if err := leader.ShutDown(); err != nil {
		return fmt.Errorf("%s did not stop cleanly: %w", leader.Name, err)
	}
	if _, err := waitForLeader(ctx, []*scenario.Replica{standby}); err != nil {
		return err
	}
	took := time.Since(stopped)
	holder, err = leaseHolder(ctx, env)
	if err != nil {
		return err
	}
	env.Logf("%s stopped and released the Lease; %s took over %.1fs later (the Lease lasts 4s) and holds it: %s",
		leader.Name, standby.Name, took.Seconds(), holder)
	if holder != standby.Service.Identity() {
		return fmt.Errorf("after the takeover the Lease is held by %q, want %s's %q", holder, standby.Name,
			standby.Service.Identity())
	}

	// 4. The new leader schedules the next pods.
	next := scenario.Numbered("pod", 3, 5)
	if err := createAndWaitBound(ctx, env, next); err != nil {
		return err
	}
	if err := expectScheduledBy(ctx, env, standby, leader, next); err != nil {
		return err
	}
	if err := reportAttempts(ctx, env, standby); err != nil {
		return err
	}
	notes, err := waitForNotes(ctx, env, electionLease, "LeaderElection", 2)
	if err != nil {
		return err
	}
	env.Logf("events on the Lease: %s", strings.Join(notes, "; "))
	return nil
}

// waitForLeader polls until exactly one of the replicas schedules, and
// returns it.
func waitForLeader(ctx context.Context, replicas []*scenario.Replica) (*scenario.Replica, error) {
	var leader *scenario.Replica
	err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, scenario.DefaultWait, true, func(context.Context) (bool, error) {
		leader = nil
		for _, r := range replicas {
			if r.Service.IsLeader() {
				if leader != nil {
					return false, fmt.Errorf("%s and %s both schedule", leader.Name, r.Name)
				}
				leader = r
			}
		}
		return leader != nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("no replica became the leader within %v: %w", scenario.DefaultWait, err)
	}
	return leader, nil
}

// waitReady polls the replica's /readyz until it answers ok.
func waitReady(ctx context.Context, r *scenario.Replica) error {
	url := strings.TrimSuffix(r.MetricsURL, "/metrics") + "/readyz"
	err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, scenario.DefaultWait, true, func(ctx context.Context) (bool, error) {
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
		return fmt.Errorf("%s's /readyz did not answer ok within %v: %w", r.Name, scenario.DefaultWait, err)
	}
	return nil
}

// leaseHolder returns the identity holding the scenario's Lease.
func leaseHolder(ctx context.Context, e *scenario.Env) (string, error) {
	lease, err := e.Client.CoordinationV1().Leases(e.Namespace).Get(ctx, electionLease, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the Lease: %w", err)
	}
	return ptr.Deref(lease.Spec.HolderIdentity, ""), nil
}

// createAndWaitBound creates the pods and waits for each to be bound.
func createAndWaitBound(ctx context.Context, e *scenario.Env, names []string) error {
	for _, name := range names {
		if err := e.CreatePods(ctx, scenario.MakePod(name).Obj()); err != nil {
			return err
		}
	}
	_, err := e.WaitForPodsBound(ctx, names)
	return err
}

// expectScheduledBy checks that by bound every one of the pods (waiting for
// its records, which follow the API's by a moment), and other none of them.
func expectScheduledBy(ctx context.Context, e *scenario.Env, by, other *scenario.Replica, pods []string) error {
	if err := by.WaitForBound(ctx, pods); err != nil {
		return err
	}
	for _, p := range other.Bound() {
		if slices.Contains(pods, p) {
			return fmt.Errorf("%s, which does not lead, bound %s", other.Name, p)
		}
	}
	e.Logf("%s bound %s; %s bound none of them", by.Name, strings.Join(pods, ", "), other.Name)
	return nil
}

// reportAttempts scrapes each replica's /metrics and prints its count of
// scheduled attempts; a replica that does not lead must have none.
func reportAttempts(ctx context.Context, e *scenario.Env, replicas ...*scenario.Replica) error {
	for _, r := range replicas {
		m, err := testenv.Scrape(ctx, r.MetricsURL)
		if err != nil {
			return err
		}
		n := m.Value("scheduler_schedule_attempts_total", map[string]string{"result": "scheduled"})
		e.Logf("%s's /metrics: scheduler_schedule_attempts_total{result=\"scheduled\"} %v (leading: %t)",
			r.Name, n, r.Service.IsLeader())
		if !r.Service.IsLeader() && n != 0 {
			return fmt.Errorf("%s does not lead, yet its /metrics count %v scheduled attempts", r.Name, n)
		}
		if r.Service.IsLeader() && n == 0 {
			return fmt.Errorf("%s leads, yet its /metrics count no scheduled attempt", r.Name)
		}
	}
	return nil
}

// waitForNotes polls until there are at least n events with reason about
// the named object, and returns their notes.
func waitForNotes(ctx context.Context, e *scenario.Env, name, reason string, n int) ([]string, error) {
	var notes []string
	err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, e.WaitLimit(scenario.DefaultWait), true, func(ctx context.Context) (bool, error) {
		var err error
		notes, err = e.EventMessages(ctx, name, reason)
		return len(notes) >= n, err
	})
	if err != nil {
		return nil, fmt.Errorf("%d %s events about %s within %v, want %d: %w", len(notes), reason, name,
			scenario.DefaultWait, n, err)
	}
	return notes, nil
}
