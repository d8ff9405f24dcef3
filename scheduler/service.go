package scheduler

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/cache/debugger"
	"github.com/minisched/minisched/minisched"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/minisched/metrics"
	"github.com/minisched/minisched/plugins"
	"github.com/minisched/minisched/plugins/dynamicresources/dramanager"
	"github.com/minisched/minisched/queue"
	"github.com/minisched/minisched/web"
)

// APIServerTimeout bounds how long Run waits for an unreachable apiserver
// before giving up with an error.
const APIServerTimeout = 30 * time.Second

// Service is a minisched.Scheduler with everything it needs to run against
// an apiserver: the configuration it was built from, the clients, the
// informers that feed it and the event broadcaster its profiles write to.
// New builds one from a configuration; Run starts it.
type Service struct {
	// Config is the defaulted, validated configuration it runs with.
	Config *configv1.KubeSchedulerConfiguration
	// Client is the clientset, with the configuration's QPS and burst.
	Client kubernetes.Interface
	// Scheduler is the scheduler being served: the queue, the cache, the
	// profiles and the scheduling loop.
	Scheduler *minisched.Scheduler
	// Debugger compares the Scheduler's cache with its informers and dumps
	// the cache and the queue; Run makes SIGUSR2 trigger both.
	Debugger *debugger.CacheDebugger
	// Metrics is what the scheduler, its queue and its profiles record,
	// under kube-scheduler's names; Serve exposes it.
	Metrics *metrics.Metrics

	// ready is set once the informers have synced (/readyz): a standby
	// replica is ready too, its cache warm for the moment it leads.
	ready atomic.Bool
	// leading is set while this replica schedules (IsLeader).
	leading atomic.Bool
	// identity is the name this replica competes for the Lease under
	// (Identity); set when Run starts electing.
	identity atomic.Pointer[string]
	// restConfig is the clients' configuration; leader election builds a
	// client of its own from it.
	restConfig *rest.Config

	// host is the apiserver's address, for messages.
	host string
	// factory feeds the scheduler's event handlers and the plugins' listers.
	factory informers.SharedInformerFactory
	// broadcaster sends the profiles' events to events.k8s.io/v1.
	broadcaster events.EventBroadcaster
	// draManager is the DRA state the profiles share.
	draManager *dramanager.Manager
	// view, if set, shows the scheduler while Run runs.
	view *web.View
}

// Option adjusts New.
type Option func(*options)

type options struct {
	registry framework.Registry
	observer minisched.Observer
	seed     uint64
	// recordAttempts writes each pod's last attempt to it.
	recordAttempts bool
	// view is the live view to show the scheduler in.
	view *web.View
	// gates are the feature gates it runs with.
	gates features.Gates
	// stepper is told each step of each cycle (WithStepper).
	stepper framework.Stepper
}

// WithFeatureGates runs the scheduler with gates (kube-scheduler's
// --feature-gates, parsed by features.Parse); without it, with
// kube-scheduler v1.37.1's defaults. The configuration must have been
// defaulted with the same gates.
func WithFeatureGates(gates features.Gates) Option { return func(o *options) { o.gates = gates } }

// WithOutOfTreeRegistry adds plugins beyond the in-tree set.
func WithOutOfTreeRegistry(r framework.Registry) Option {
	return func(o *options) { o.registry = r }
}

// WithObserver reports every scheduling attempt to fn.
func WithObserver(fn minisched.Observer) Option { return func(o *options) { o.observer = fn } }

// WithLiveView shows the scheduler in view while Run runs: view is told of
// the attempts made while a page is open (minisched.Watcher), and reads the
// queue. Serve the view yourself (web.View.Serve); one view may show
// several schedulers in turn.
func WithLiveView(view *web.View) Option { return func(o *options) { o.view = view } }

// WithAttemptRecords writes the record of each pod's last scheduling attempt
// to the pod, as the annotation attempt.Annotation, for
// `minisched explain` (the scheduler then needs to patch pods).
func WithAttemptRecords() Option { return func(o *options) { o.recordAttempts = true } }

// WithStepper tells st each step of each cycle (framework.Stepper) without
// a live view: a test's hook, as the chaos run's scheduler kills are. With
// a live view in step mode, the view's Stepper is used instead.
func WithStepper(st framework.Stepper) Option { return func(o *options) { o.stepper = st } }

// WithSeed makes the random tie-breakers of nodes that extenders scored
// reproducible.
func WithSeed(seed uint64) Option { return func(o *options) { o.seed = seed } }

// RestConfigFromKubeconfig loads the kubeconfig at path, else the one named
// by the configuration's clientConnection.kubeconfig, else the in-cluster
// configuration. New applies the client settings (QPS, burst, content type).
func RestConfigFromKubeconfig(path string, cfg *configv1.KubeSchedulerConfiguration) (*rest.Config, error) {
	if path == "" {
		path = cfg.ClientConnection.Kubeconfig
	}
	if path == "" {
		// In a pod (deploy/): the service account's token and the cluster's
		// CA, without clientcmd's warning that no kubeconfig was given.
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no kubeconfig (--kubeconfig or clientConnection.kubeconfig) "+
				"and not in a cluster: %w", err)
		}
		return rc, nil
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %q: %w", path, err)
	}
	return rc, nil
}

// New turns a defaulted, validated configuration into a Service: clients
// with the configured QPS/burst, one framework per profile sharing one
// snapshot, the queue and the cache, and a minisched.Scheduler with its
// event handlers registered. Nothing talks to the apiserver until Run, but
// for one question: with the GenericWorkload gate, New asks whether the
// apiserver serves PodGroups (workloads.go), since the informers it builds
// depend on the answer.
func New(ctx context.Context, cfg *configv1.KubeSchedulerConfiguration, restConfig *rest.Config,
	opts ...Option) (*Service, error) {
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	rc := rest.CopyConfig(restConfig)
	rc.QPS = cfg.ClientConnection.QPS
	rc.Burst = int(cfg.ClientConnection.Burst)
	rc.ContentType = cfg.ClientConnection.ContentType
	rc.AcceptContentTypes = cfg.ClientConnection.AcceptContentTypes
	rc = rest.AddUserAgent(rc, "minisched")
	// Step mode (web.Stepper) also shows what the binding cycle wrote.
	stepper := o.stepper
	if st := stepperOf(o.view); st != nil {
		stepper, rc.WrapTransport = st, st.WrapTransport
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}

	registry := plugins.NewInTreeRegistry()
	if o.registry != nil {
		if err := registry.Merge(o.registry); err != nil {
			return nil, err
		}
	}

	factory := informers.NewSharedInformerFactory(client, 0)
	factory.InformerFor(&v1.Pod{}, newPodInformer)
	podGroupInformer, err := podGroupInformer(ctx, client, rc.Host, factory, o.gates)
	if err != nil {
		return nil, err
	}
	// Events go to events.k8s.io/v1, reported by each profile's schedulerName,
	// as kube-scheduler does. Writing them never blocks scheduling.
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})

	extenders, ignoredResources, err := buildExtenders(cfg.Extenders)
	if err != nil {
		return nil, err
	}

	m := metrics.New()
	snapshot := cache.NewEmptySnapshot()
	// Assumed pods never expire, as in kube-scheduler v1.37
	// (durationToExpireAssumedPod = 0): the informer confirms them, or a
	// failed bind forgets them. With GenericWorkload it keeps each pod
	// group's state, which GangScheduling reads (WithPodGroupManager).
	var cacheOpts []cache.Option
	queueOpts := []queue.Option{
		queue.WithPodLister(factory.Core().V1().Pods().Lister()),
		queue.WithPodInitialBackoffDuration(time.Duration(*cfg.PodInitialBackoffSeconds) * time.Second),
		queue.WithPodMaxBackoffDuration(time.Duration(*cfg.PodMaxBackoffSeconds) * time.Second),
		queue.WithMetrics(m),
	}
	if o.gates.GenericWorkload {
		cacheOpts = append(cacheOpts, cache.WithPodGroups())
		queueOpts = append(queueOpts, queue.WithPodGroups())
		// kube-scheduler's pod-group and workload-preemption metrics exist
		// only with the gate.
		m.RegisterPodGroups()
		m.RegisterWorkloadPreemption()
	}
	c := cache.New(0, cacheOpts...)
	var podGroupManager framework.PodGroupManager
	if o.gates.GenericWorkload {
		podGroupManager = c
	}
	// One DRA state for all profiles; it starts its informers only if a
	// plugin asks for it, and the Scheduler stops it.
	draManager := dramanager.New(klog.FromContext(ctx), factory, client)
	profiles := map[string]*framework.Framework{}
	queueProfiles := map[string]queue.Profile{}
	profilePercentage := map[string]*int32{}
	var queueSort framework.LessFunc
	queueSortName := ""
	for i := range cfg.Profiles {
		p, err := withIgnoredResources(&cfg.Profiles[i], ignoredResources)
		if err != nil {
			return nil, fmt.Errorf("profiles[%d]: %w", i, err)
		}
		name := *p.SchedulerName
		schedFramework, err := framework.NewFramework(ctx, registry, p,
			framework.WithExtenders(extenders),
			framework.WithMetrics(m),
			framework.WithClientSet(client),
			framework.WithEventRecorder(broadcaster.NewRecorder(scheme.Scheme, name)),
			framework.WithSnapshotSharedLister(snapshot),
			framework.WithInformerFactory(factory),
			framework.WithSharedDRAManager(draManager),
			framework.WithParallelism(int(*cfg.Parallelism)),
			framework.WithFeatureGates(o.gates),
			framework.WithPodGroupManager(podGroupManager),
		)
		if err != nil {
			return nil, fmt.Errorf("profiles[%d]: %w", i, err)
		}
		// All profiles share one queue, so they must order it the same way.
		if queueSort == nil {
			queueSort, queueSortName = schedFramework.QueueSortFunc(), schedFramework.QueueSortPluginName()
		} else if schedFramework.QueueSortPluginName() != queueSortName {
			return nil, fmt.Errorf("profiles[%d].plugins.queueSort: queueSort must be the same for all profiles: "+
				"%q uses %q, the first profile %q",
				i, name, schedFramework.QueueSortPluginName(), queueSortName)
		}
		profiles[name] = schedFramework
		queueProfiles[name] = schedFramework
		profilePercentage[name] = p.PercentageOfNodesToScore
	}

	q := queue.New(queueSort, queueProfiles, queueOpts...)
	m.RegisterQueue(q)
	if o.gates.TopologyAwareWorkloadScheduling {
		m.RegisterPlacement()
	}

	sched, err := minisched.New(ctx, factory, minisched.Options{
		Client:                   client,
		Cache:                    c,
		Queue:                    q,
		Snapshot:                 snapshot,
		Profiles:                 profiles,
		PercentageOfNodesToScore: *cfg.PercentageOfNodesToScore,
		ProfilePercentage:        profilePercentage,
		Observer:                 o.observer,
		RecordAttempts:           o.recordAttempts,
		Watcher:                  watcher(o.view),
		Stepper:                  stepper,
		Seed:                     o.seed,
		Metrics:                  m,
		DRAManager:               draManager,
		Gates:                    o.gates,
		PodGroupInformer:         podGroupInformer,
	})
	if err != nil {
		return nil, err
	}
	// The debugger reads the informers whose events fill the cache and the
	// queue, so that what it finds different is what the handlers missed.
	dbg := debugger.New(factory.Core().V1().Nodes().Lister(), factory.Core().V1().Pods().Lister(), c, q)
	return &Service{Config: cfg, Client: client, Scheduler: sched, Debugger: dbg, Metrics: m, host: rc.Host,
		factory: factory, broadcaster: broadcaster, restConfig: rc, draManager: draManager, view: o.view}, nil
}

// stepperOf is view's Stepper: nil without a view or without step mode.
func stepperOf(view *web.View) *web.Stepper {
	if view == nil {
		return nil
	}
	return view.Stepper()
}

// watcher is view as the scheduler's Watcher; none without a view (a nil
// *web.View in the interface would not be nil).
func watcher(view *web.View) minisched.Watcher {
	if view == nil {
		return nil
	}
	return view
}

// Run checks that the apiserver answers (giving up after APIServerTimeout),
// starts events and informers, and schedules until ctx is cancelled; then it
// lets binding cycles finish and stops everything. It returns nil on a clean
// stop; a stop asked for while it is still starting (checking the
// apiserver, waiting for the informers to list) is a clean stop too. With
// leaderElection.leaderElect, it schedules only while it holds the Lease
// (see leaderelection.go), releases the Lease on a clean stop, and returns
// ErrLostLease if the Lease was lost. Once the informers have synced, and
// until Run returns, the live view (WithLiveView) shows the scheduler. Run
// is called once.
func (s *Service) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	if err := waitForAPIServer(ctx, s.Client, s.host, APIServerTimeout); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while waiting: nothing was started
		}
		return err
	}
	if err := s.broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("starting event recording: %w", err)
	}
	defer s.broadcaster.Shutdown()
	// The informers stop when Run returns, whatever the reason: a lost
	// Lease returns while ctx still runs.
	informersCtx, stopInformers := context.WithCancel(ctx)
	s.factory.Start(informersCtx.Done())
	defer func() {
		stopInformers()
		s.factory.Shutdown()
		// Stopped by the Scheduler already when it ran; a replica that
		// never led stops it here.
		s.draManager.Stop()
	}()
	// Plugins' listers (namespaces, services...) must be filled before the
	// first cycle, like the pods and nodes the scheduler waits for itself.
	// They fail to sync only when ctx ends first: a stop, not a failure.
	for _, ok := range s.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			logger.Info("Stopped before the informers synced: nothing scheduled")
			return nil
		}
	}
	logger.Info("Starting minisched", "profiles", len(s.Config.Profiles), "apiserver", s.host)
	if s.view != nil {
		detach := s.view.Attach(web.Source{Scheduler: s.Scheduler, Pods: s.factory.Core().V1().Pods().Lister(),
			Client: s.Client, CSINodes: s.factory.Storage().V1().CSINodes().Lister()})
		defer detach()
	}
	// kill -USR2 <pid> logs how the cache compares with the informers, and
	// dumps it, as kube-scheduler's cache debugger does.
	s.Debugger.ListenForSignal(ctx)
	s.ready.Store(true)
	defer s.ready.Store(false)
	if *s.Config.LeaderElection.LeaderElect {
		return s.runElected(ctx)
	}
	return s.schedule(ctx)
}

// Ready reports whether Run's informers have synced (a standby replica is
// ready too): what /readyz answers.
func (s *Service) Ready() bool { return s.ready.Load() }

// waitForAPIServer polls /version until it answers or timeout passes.
func waitForAPIServer(ctx context.Context, client kubernetes.Interface, host string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		reqCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := client.Discovery().RESTClient().Get().AbsPath("/version").Do(reqCtx).Raw()
		cancel()
		if err == nil {
			return nil
		}
		lastErr = err
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cannot reach the apiserver at %s within %v: %w", host, timeout, lastErr)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// newPodInformer watches pods that are not finished: succeeded and failed
// pods hold no resources and need no scheduling.
func newPodInformer(cs kubernetes.Interface, resync time.Duration) toolscache.SharedIndexInformer {
	selector := fmt.Sprintf("status.phase!=%v,status.phase!=%v", v1.PodSucceeded, v1.PodFailed)
	inf := coreinformers.NewFilteredPodInformer(cs, metav1.NamespaceAll, resync, toolscache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = selector })
	// Managed fields are never read by the scheduler; drop them to save memory.
	_ = inf.SetTransform(func(obj interface{}) (interface{}, error) {
		if acc, err := meta.Accessor(obj); err == nil {
			acc.SetManagedFields(nil)
		}
		return obj, nil
	})
	return inf
}
