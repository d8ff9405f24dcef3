// This file is the Scheduler: its parts, how New assembles them, and Run,
// the loop that calls scheduleOne until it is stopped.

package minisched

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/minisched/metrics"
	"github.com/minisched/minisched/plugins/dynamicresources/dramanager"
	"github.com/minisched/minisched/queue"
)

// bindingGracePeriod bounds how long Run lets binding cycles in flight finish
// after it is stopped, before it cancels them.
const bindingGracePeriod = 30 * time.Second

// Scheduler is the mini scheduler. One goroutine runs scheduling cycles, one
// pod at a time, so each cycle sees the decisions of the previous ones;
// binding runs in a goroutine per pod.
type Scheduler struct {
	// Cache holds the nodes and the pods on them as the scheduler believes
	// them, including pods assumed but not yet bound.
	Cache *cache.Cache
	// Queue holds the pods waiting to be scheduled.
	Queue *queue.PriorityQueue
	// Profiles maps a schedulerName to its runtime.
	Profiles map[string]*framework.Framework

	// snapshot is the cycle's frozen view of the cache; the profiles' plugins
	// read it through Handle.SnapshotSharedLister.
	snapshot *cache.Snapshot
	// client writes pod status (conditions, the nominated node); podLister
	// tells the failure handler whether a failed pod still exists and is
	// still pending.
	client    kubernetes.Interface
	podLister corelisters.PodLister
	// logger is for the event handlers, which have no context of their own.
	logger klog.Logger
	// informersSynced reports whether the informers delivered their initial
	// lists; Run waits for them before the first Pop, so that a backlog is
	// ordered by QueueSort.
	informersSynced []toolscache.InformerSynced

	// percentageOfNodesToScore is the global default; a profile may override.
	percentageOfNodesToScore int32
	profilePercentage        map[string]*int32
	// nextStartNodeIndex is where the next search for feasible nodes
	// starts, so that successive pods spread their Filter work over all nodes.
	nextStartNodeIndex int

	// bindings counts the binding goroutines, for a graceful stop.
	bindings sync.WaitGroup
	// bindSlots holds a token per Bind call in flight; its capacity is
	// maxConcurrentBinds.
	bindSlots chan struct{}

	// observer, if set, is told about every attempt; watcher, if set, about
	// those made while it watches (see observer.go).
	observer Observer
	watcher  Watcher
	// stepper, if set, holds each cycle before each extension point while
	// someone steps through it in the live view (step.go); stepsStop is
	// closed when Run stops, and lets the held cycles go on.
	stepper   framework.Stepper
	stepsStop chan struct{}
	// records, if set, writes each attempt's record to its pod (see
	// record.go and recordwriter.go).
	records *recordWriter
	// metrics records attempts, latencies and binding goroutines (nil:
	// nothing).
	metrics *metrics.Metrics
	// gates are the feature gates (Options.Gates).
	gates features.Gates
	// draManager is the DRA state every profile shares (nil: none). Its
	// claim, slice and class events feed the queue when some plugin uses
	// it; Run stops its slice tracker on the way out.
	draManager *dramanager.Manager

	// rng breaks ties between equally scored nodes that extenders scored,
	// and between a pod group's equally scored placements; rngMu guards
	// it (prioritizing extenders answer in parallel).
	rngMu sync.Mutex
	rng   *rand.Rand
}

// Options are what New needs beyond the informer factory.
type Options struct {
	// Client writes pod status and the attempt records (plugins have their
	// own, through Handle).
	Client kubernetes.Interface
	// Cache, Queue and Snapshot become the Scheduler's; the profiles'
	// plugins must read the same Snapshot.
	Cache    *cache.Cache
	Queue    *queue.PriorityQueue
	Snapshot *cache.Snapshot
	// Profiles maps each schedulerName to its framework.
	Profiles map[string]*framework.Framework
	// PercentageOfNodesToScore is the global setting (0 = adaptive);
	// ProfilePercentage holds per-profile overrides.
	PercentageOfNodesToScore int32
	ProfilePercentage        map[string]*int32
	// Observer, if set, is told about every scheduling attempt.
	Observer Observer
	// Watcher, if set, is told about the attempts made while it is
	// Watching (the live view, while a page is open).
	Watcher Watcher
	// Stepper, if set, is told before each extension point of each cycle
	// and may hold the cycle there (step mode of the live view, step.go).
	Stepper framework.Stepper
	// RecordAttempts writes the record of each pod's last attempt to the pod,
	// as the annotation attempt.Annotation (and its last preempting one as
	// attempt.PreemptionAnnotation; needs the permission to patch pods).
	// Off, attempts are recorded only for the Observer.
	RecordAttempts bool
	// Metrics, if set, records what kube-scheduler's metrics record; the
	// profiles and the queue should have the same.
	Metrics *metrics.Metrics
	// Seed makes the tie-breakers of nodes that extenders scored, and of
	// a pod group's placements, reproducible (0: random); other ties go by
	// the heap's order (see selectHost).
	Seed uint64
	// DRAManager is the DRA state the profiles were built with
	// (framework.WithSharedDRAManager), if any. The Scheduler registers
	// its event handlers and stops it when Run returns.
	DRAManager *dramanager.Manager
	// Gates are the feature gates. With GenericWorkload, pending members of
	// pod groups feed the cache's group states and a pending pod's add is
	// offered to the queue as an event (a member may complete a gang); the
	// Cache and the Queue must have been built WithPodGroups.
	Gates features.Gates
	// PodGroupInformer, if set, feeds PodGroups to the cache and the queue
	// (nil without GenericWorkload, or against an apiserver that does not
	// serve them: then members wait for a PodGroup they never see).
	PodGroupInformer toolscache.SharedIndexInformer
}

// New builds a Scheduler and registers its event handlers on the factory's
// pod and node informers; they log with ctx's logger. Start the factory
// after New.
func New(ctx context.Context, factory informers.SharedInformerFactory, o Options) (*Scheduler, error) {
	if len(o.Profiles) == 0 {
		return nil, errors.New("at least one profile is required")
	}
	seed := o.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	s := &Scheduler{
		Cache:                    o.Cache,
		Queue:                    o.Queue,
		Profiles:                 o.Profiles,
		snapshot:                 o.Snapshot,
		client:                   o.Client,
		podLister:                factory.Core().V1().Pods().Lister(),
		logger:                   klog.FromContext(ctx),
		percentageOfNodesToScore: o.PercentageOfNodesToScore,
		profilePercentage:        o.ProfilePercentage,
		observer:                 o.Observer,
		watcher:                  o.Watcher,
		stepper:                  o.Stepper,
		stepsStop:                make(chan struct{}),
		metrics:                  o.Metrics,
		draManager:               o.DRAManager,
		gates:                    o.Gates,
		rng:                      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		bindSlots:                make(chan struct{}, maxConcurrentBinds),
	}
	if o.RecordAttempts {
		s.records = newRecordWriter(o.Client)
	}
	// The queue is the profiles' nominator and activator; it needed the
	// profiles first, so it is wired in now.
	for _, schedFramework := range o.Profiles {
		schedFramework.SetPodNominator(o.Queue)
		schedFramework.SetPodActivator(o.Queue)
	}
	if err := s.addAllEventHandlers(factory, o.PodGroupInformer); err != nil {
		return nil, err
	}
	return s, nil
}

// Run schedules pods until ctx is cancelled. It waits for the informers'
// first lists, starts the queue's and the cache's background loops, then
// runs scheduleOne in a loop. On cancellation it stops popping, lets binding
// cycles in flight finish (bounded by the grace period) and returns nil.
// Cancelled before the informers have synced, it returns nil at once,
// having scheduled nothing.
func (s *Scheduler) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	// The tracker's goroutines end with the scheduler, whatever the
	// reason it stops.
	defer s.draManager.Stop()
	// The caches fail to sync only when ctx ends first: a stop asked for
	// before the first cycle, as clean as one asked for later.
	if !toolscache.WaitForCacheSync(ctx.Done(), s.informersSynced...) {
		logger.Info("Stopped before the informer caches synced: nothing scheduled")
		return nil
	}
	s.Queue.Run(ctx)
	s.Cache.Run(ctx)

	// Binding cycles get their own context so that a stop request lets them
	// finish instead of cutting their API calls short.
	bindCtx, cancelBindings := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancelBindings()
	// The record writer patches with bindCtx. It is stopped once the
	// binding cycles are done (Run waits for them before it returns), ahead
	// of the deferred cancel (deferred calls run last first); records still
	// queued then are dropped.
	if s.records != nil {
		s.records.start(bindCtx)
		defer s.records.stop()
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			s.scheduleOne(ctx, bindCtx)
		}
	}()
	<-ctx.Done()
	logger.Info("Stopping: no more pods will be popped")
	// A cycle held in step mode goes on, so that the binding cycles can
	// finish (step.go).
	if s.stepsStop != nil {
		close(s.stepsStop)
	}
	s.Queue.Close()
	<-done

	finished := make(chan struct{})
	go func() { s.bindings.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(bindingGracePeriod):
		logger.Info("Binding cycles still running after the grace period; cancelling them",
			"gracePeriod", bindingGracePeriod)
		cancelBindings()
		<-finished
	}
	logger.Info("Scheduler stopped")
	return nil
}

// frameworkForPod returns the profile named by the pod's schedulerName.
func (s *Scheduler) frameworkForPod(pod *v1.Pod) (*framework.Framework, error) {
	schedFramework, ok := s.Profiles[pod.Spec.SchedulerName]
	if !ok {
		return nil, fmt.Errorf("profile not found for scheduler name %q", pod.Spec.SchedulerName)
	}
	return schedFramework, nil
}

// responsibleForPod reports whether one of our profiles schedules pod.
func (s *Scheduler) responsibleForPod(pod *v1.Pod) bool {
	_, ok := s.Profiles[pod.Spec.SchedulerName]
	return ok
}

// randInt draws a tie-breaker for a node an extender scored, or for a pod
// group's placement.
func (s *Scheduler) randInt() int {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.Int()
}

// DRA returns the DRA state the profiles share (nil: none), for the live
// view's map. Its informers run only if a plugin asked for it (InUse).
func (s *Scheduler) DRA() *dramanager.Manager { return s.draManager }
