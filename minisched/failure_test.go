package minisched

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	testingclock "k8s.io/utils/clock/testing"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/queue"
)

// brokenFilter fails every Filter call with an error, so every attempt
// ends in the failure handler as a SchedulerError.
type brokenFilter struct{}

func (brokenFilter) Name() string { return "BrokenFilter" }
func (brokenFilter) Filter(context.Context, *framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status {
	return framework.AsStatus(errors.New("injected Filter error"))
}

// TestFailedPodIsDoneBeforeTheAPICalls reproduces a failure handler whose
// status patch outlasts the pod's backoff: the pod is popped again while the
// handler still runs. The handler must have ended the first attempt's
// in-flight period when it put the pod back, not afterwards, or it ends the
// second attempt's (and, under -race, reads Attempts while Pop writes it).
func TestFailedPodIsDoneBeforeTheAPICalls(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logger := klog.Background()
	pod := st.MakePod().Namespace("ns").Name("p").UID("p-uid").SchedulerName(plugintesting.ProfileName).Obj()

	// The status patch blocks until the test lets it go.
	client := fake.NewClientset(pod)
	patching, release := make(chan struct{}), make(chan struct{})
	client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		close(patching)
		<-release
		return false, nil, nil
	})
	registry := plugins.NewInTreeRegistry()
	registry["BrokenFilter"] = func(context.Context, *runtime.RawExtension, framework.Handle) (framework.Plugin, error) {
		return brokenFilter{}, nil
	}
	clock := testingclock.NewFakeClock(time.Now())
	s := newLoopTestScheduler(ctx, t, client, pod, registry, &configv1.Plugins{
		QueueSort: plugintesting.Enable("PrioritySort"),
		Filter:    plugintesting.Enable("BrokenFilter"),
		Bind:      plugintesting.Enable("DefaultBinder"),
	}, queue.WithClock(clock))

	// Attempt 1 fails with an error; its handler blocks in the patch.
	firstDone := make(chan struct{})
	go func() {
		defer close(firstDone)
		s.scheduleOne(ctx, ctx)
	}()
	select {
	case <-patching:
	case <-time.After(30 * time.Second):
		t.Fatal("the failure handler never patched the pod's status")
	}
	// Meanwhile the backoff ends and attempt 2 pops the pod.
	clock.Step(time.Minute)
	s.Queue.FlushBackoffQCompleted(logger)
	second, err := s.Queue.Pop(logger)
	if err != nil {
		t.Fatal(err)
	}
	if n := second.Params().Attempts; n != 2 {
		t.Errorf("second Pop counted %d attempts, want 2", n)
	}
	close(release)
	<-firstDone

	if loc := s.Queue.Locate(pod.UID); loc != queue.InFlight {
		t.Errorf("after the first attempt's handler returned, the second attempt's pod is in %q, want %q",
			loc, queue.InFlight)
	}
}

// newLoopTestScheduler builds a Scheduler for tests that run scheduleOne:
// one profile (plugintesting.ProfileName) with the plugins given, a queue
// holding pod, a cache holding node-1, a pod lister that knows pod, and
// client for the API calls.
func newLoopTestScheduler(ctx context.Context, t *testing.T, client *fake.Clientset, pod *v1.Pod,
	registry framework.Registry, enabled *configv1.Plugins, queueOpts ...queue.Option) *Scheduler {
	t.Helper()
	logger := klog.Background()
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	if err := indexer.Add(pod); err != nil {
		t.Fatal(err)
	}
	snapshot := cache.NewEmptySnapshot()
	schedFramework, err := plugintesting.NewFramework(ctx, registry, enabled, nil,
		framework.WithSnapshotSharedLister(snapshot), framework.WithEventRecorder(events.NewFakeRecorder(10)))
	if err != nil {
		t.Fatal(err)
	}
	s := &Scheduler{
		Cache:     cache.New(0),
		Profiles:  map[string]*framework.Framework{plugintesting.ProfileName: schedFramework},
		snapshot:  snapshot,
		client:    client,
		podLister: corelisters.NewPodLister(indexer),
		logger:    logger,
		rng:       newTestScheduler().rng,
		bindSlots: make(chan struct{}, maxConcurrentBinds),
	}
	s.Queue = queue.New(schedFramework.QueueSortFunc(), map[string]queue.Profile{plugintesting.ProfileName: schedFramework}, queueOpts...)
	s.Cache.AddNode(logger, st.MakeNode().Name("node-1").Obj())
	s.Queue.Add(logger, pod)
	return s
}
