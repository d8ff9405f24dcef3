// A scheduler a story starts itself (OwnSchedulers): one of
// several replicas electing a leader, or a scheduler started only once its
// pods wait.

package scenario

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched"
	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/scheduler"
)

// Replica is one scheduler process of a story, with what it scheduled.
type Replica struct {
	// Name names it in the story and in its log lines.
	Name string
	// Service is the running scheduler.
	Service *scheduler.Service
	// MetricsURL is its /metrics.
	MetricsURL string

	stop context.CancelFunc
	// done receives what Run returned; ShutDown takes it into runErr.
	done     chan error
	stopOnce sync.Once
	runErr   error

	mu sync.Mutex
	// scheduled lists the pods this replica bound, in order.
	scheduled []string
}

// StartReplica builds a scheduler Service from cfg, with the scenario's
// feature gates (Scenario.FeatureGates: cfg must be defaulted for them,
// scheduler.DefaultConfigFor), serves its metrics on a free loopback port
// and runs it until ShutDown; its attempts also go to the scenario's log.
func (e *Env) StartReplica(ctx context.Context, name string, cfg *configv1.KubeSchedulerConfiguration) (*Replica, error) {
	r := &Replica{Name: name, done: make(chan error, 1)}
	observe := func(a minisched.Attempt) {
		e.Attempts.Record(a)
		if a.Result == attempt.Scheduled {
			r.record(a.Name)
		}
	}
	svc, err := scheduler.New(ctx, cfg, e.RestConfig, scheduler.WithObserver(observe), scheduler.WithSeed(42),
		scheduler.WithFeatureGates(e.featureGates))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r.Service = svc
	// Its log lines are one verbosity level quieter, as the runner's
	// scheduler's are, and named after the replica.
	runCtx, stop := context.WithCancel(klog.NewContext(ctx, klog.Background().WithName(name).V(1)))
	r.stop = stop
	addr, err := svc.Serve(runCtx, "127.0.0.1:0")
	if err != nil {
		stop()
		return nil, err
	}
	r.MetricsURL = "http://" + addr.String() + "/metrics"
	go func() { r.done <- svc.Run(runCtx) }()
	return r, nil
}

// record notes that the replica bound the pod.
func (r *Replica) record(pod string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scheduled = append(r.scheduled, pod)
}

// Bound returns the pods the replica bound so far.
func (r *Replica) Bound() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.scheduled...)
}

// WaitForBound waits, up to DefaultWait, until the replica has recorded
// binding each of the pods, and otherwise returns an error naming those it
// has not. A story that saw the pods bound in the API still waits here: the
// replica records a pod once its bind call has returned, a moment after the
// apiserver, and so the story's watch, has the pod's node.
func (r *Replica) WaitForBound(ctx context.Context, pods []string) error {
	var missing []string
	err := wait.PollUntilContextTimeout(ctx, PollInterval, DefaultWait, true, func(context.Context) (bool, error) {
		bound := r.Bound()
		missing = missing[:0]
		for _, p := range pods {
			if !slices.Contains(bound, p) {
				missing = append(missing, p)
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%s did not bind %s: %w", r.Name, strings.Join(missing, ", "), err)
	}
	return nil
}

// ShutDown stops the replica, waits for its Run to return and returns what
// it returned; called again, it returns the same.
func (r *Replica) ShutDown() error {
	r.stopOnce.Do(func() {
		r.stop()
		r.runErr = <-r.done
	})
	return r.runErr
}
