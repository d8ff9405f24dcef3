// Leader election, as kube-scheduler runs it: every replica starts its
// informers, so a standby has a warm cache, but only the replica that holds
// the Lease named by leaderElection schedules.
//
//	Run ── informers synced ──▶ elector: acquire (retry every retryPeriod)
//	                               │ acquired: OnStartedLeading ─▶ Scheduler.Run
//	                               │ renew every retryPeriod, give up after renewDeadline
//	   ctx cancelled ─▶ stop scheduling, let binding cycles finish ─▶ release the lease ─▶ nil
//	   renewal failed ─▶ stop scheduling at once ─────────────────────────────────────────▶ ErrLostLease

package scheduler

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// ErrLostLease is what Run returns when this replica stopped holding the
// leader election Lease without being asked to stop: it could not renew it
// within renewDeadline, or another replica holds it now. Scheduling has
// stopped; the process should exit (non-zero) and be restarted clean, as
// kube-scheduler does, rather than schedule from a cache another leader may
// have moved on from.
var ErrLostLease = errors.New("lost the leader election lease")

// IsLeader reports whether this replica schedules: it holds the Lease, or
// leader election is off and Run is scheduling.
func (s *Service) IsLeader() bool { return s.leading.Load() }

// Identity returns the name this replica competes for the Lease under,
// hostname_uuid as in kube-scheduler (a unique suffix, so two processes on
// one host never both lead). It is empty until Run starts electing, and when
// leader election is off.
func (s *Service) Identity() string {
	if id := s.identity.Load(); id != nil {
		return *id
	}
	return ""
}

// schedule runs the scheduler until ctx ends, marking this replica as the
// one that schedules meanwhile.
func (s *Service) schedule(ctx context.Context) error {
	s.leading.Store(true)
	defer s.leading.Store(false)
	return s.Scheduler.Run(ctx)
}

// runElected schedules only while this replica holds the Lease. The elector
// runs on a context of its own, cancelled only once scheduling has stopped:
// cancelling it releases the Lease (ReleaseOnCancel), and a successor must
// not start while this replica's binding cycles are still in flight.
func (s *Service) runElected(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	cfg := s.Config.LeaderElection
	hostname, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("leader election identity: %w", err)
	}
	id := hostname + "_" + string(uuid.NewUUID())
	s.identity.Store(&id)
	leaseClient, err := s.newLeaseClient()
	if err != nil {
		return err
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta: metav1.ObjectMeta{Namespace: cfg.ResourceNamespace, Name: cfg.ResourceName},
		Client:    leaseClient.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{
			Identity:      id,
			EventRecorder: leaseEventRecorder{s.broadcaster.NewRecorder(scheme.Scheme, "minisched")},
		},
	}
	warnOnKubeSchedulersLease(ctx, leaseClient, lock)

	// closed is set once Run stops: a leadership won after that does not
	// start scheduling. scheduling counts the scheduling runs that did start.
	var (
		mu         sync.Mutex
		closed     bool
		scheduling sync.WaitGroup
		schedErr   error
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   cfg.LeaseDuration.Duration,
		RenewDeadline:   cfg.RenewDeadline.Duration,
		RetryPeriod:     cfg.RetryPeriod.Duration,
		ReleaseOnCancel: true,
		Name:            "minisched",
		Callbacks: leaderelection.LeaderCallbacks{
			// leadCtx ends when the lease is lost; ctx, when Run is asked
			// to stop. Either stops scheduling.
			OnStartedLeading: func(leadCtx context.Context) {
				mu.Lock()
				if closed || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				scheduling.Add(1)
				mu.Unlock()
				defer scheduling.Done()
				schedCtx, stop := context.WithCancel(leadCtx)
				defer stop()
				defer context.AfterFunc(ctx, stop)()
				logger.Info("Started leading: scheduling", "lease", lock.Describe(), "identity", id)
				err := s.schedule(schedCtx)
				mu.Lock()
				schedErr = err
				mu.Unlock()
			},
			// Called whenever the elector returns, led or not; by then
			// scheduling has stopped, or is stopping (a lost lease).
			OnStoppedLeading: func() {
				if ctx.Err() != nil {
					logger.Info("Leaving the election: asked to stop", "lease", lock.Describe(), "identity", id)
					return
				}
				logger.Error(nil, "Lost the lease: scheduling stops", "lease", lock.Describe(), "identity", id)
			},
			OnNewLeader: func(leader string) {
				if leader != id {
					logger.Info("Another replica leads; standing by", "lease", lock.Describe(), "leader", leader)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leaderElection: %w", err)
	}
	electCtx, stopElecting := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElecting()
	electorDone := make(chan struct{})
	go func() {
		defer close(electorDone)
		elector.Run(electCtx)
	}()

	// Until we cancel electCtx, the elector returns only once it has
	// stopped renewing a lease it held.
	lost := false
	select {
	case <-ctx.Done():
	case <-electorDone:
		lost = ctx.Err() == nil
	}
	mu.Lock()
	closed = true
	mu.Unlock()
	scheduling.Wait() // binding cycles finish while we still hold the lease
	stopElecting()
	<-electorDone // the lease is released
	if lost {
		return ErrLostLease
	}
	mu.Lock()
	defer mu.Unlock()
	return schedErr
}

// newLeaseClient returns a client of its own for the Lease, as
// kube-scheduler's resourcelock.NewFromKubeconfig builds: its own rate
// limiter, so that a burst of binds cannot delay a renewal, and a request
// timeout of half the renew deadline (at least a second), so that one hung
// request cannot make the leader miss it.
func (s *Service) newLeaseClient() (kubernetes.Interface, error) {
	rc := rest.CopyConfig(s.restConfig)
	rc.Timeout = max(time.Second, s.Config.LeaderElection.RenewDeadline.Duration/2)
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(rc, "leader-election"))
	if err != nil {
		return nil, fmt.Errorf("creating the leader election client: %w", err)
	}
	return client, nil
}

// warnOnKubeSchedulersLease warns, once, when the lease is kube-scheduler's
// own (the default): beside a running kube-scheduler, the two would take
// turns at scheduling, and this replica would never lead while
// kube-scheduler lives. The warning says whether someone holds the Lease now.
func warnOnKubeSchedulersLease(ctx context.Context, client kubernetes.Interface, lock *resourcelock.LeaseLock) {
	meta := lock.LeaseMeta
	if meta.Namespace != DefaultResourceNamespace || meta.Name != DefaultResourceName {
		return
	}
	logger := klog.FromContext(ctx)
	const advice = "a scheduler running beside kube-scheduler must name its own lease (leaderElection.resourceName)"
	lease, err := client.CoordinationV1().Leases(meta.Namespace).Get(ctx, meta.Name, metav1.GetOptions{})
	switch {
	case err == nil && heldNow(lease, time.Now()):
		logger.Info("Warning: the leader election Lease is kube-scheduler's own and someone else holds it: "+
			"this replica will not schedule until it is free; "+advice,
			"lease", lock.Describe(), "holder", *lease.Spec.HolderIdentity)
	case err == nil || apierrors.IsNotFound(err):
		logger.Info("Warning: the leader election Lease is kube-scheduler's own (the default), free now; "+
			"if kube-scheduler runs in this cluster, only one of the two will schedule at a time; "+advice,
			"lease", lock.Describe())
	default:
		logger.Info("Warning: the leader election Lease is kube-scheduler's own (the default); "+
			"if kube-scheduler runs in this cluster, only one of the two will schedule at a time; "+advice,
			"lease", lock.Describe(), "lookupError", err.Error())
	}
}

// heldNow reports whether a holder renewed lease recently enough to still
// hold it at now.
func heldNow(lease *coordinationv1.Lease, now time.Time) bool {
	spec := lease.Spec
	if spec.HolderIdentity == nil || *spec.HolderIdentity == "" || spec.RenewTime == nil ||
		spec.LeaseDurationSeconds == nil {
		return false
	}
	return spec.RenewTime.Add(time.Duration(*spec.LeaseDurationSeconds) * time.Second).After(now)
}

// leaseEventRecorder gives the Lease lock the events.k8s.io recorder the
// profiles use: "<identity> became leader" and "<identity> stopped leading"
// are events on the Lease, as kube-scheduler records them.
type leaseEventRecorder struct{ recorder events.EventRecorder }

// Eventf records an event about the Lease.
func (r leaseEventRecorder) Eventf(obj runtime.Object, eventType, reason, message string, args ...interface{}) {
	r.recorder.Eventf(obj, nil, eventType, reason, "LeaderElection", message, args...)
}
