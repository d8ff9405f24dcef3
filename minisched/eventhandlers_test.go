package minisched

import (
	"context"
	"testing"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/queue"
)

// newHandlerTestScheduler is a Scheduler with a real cache, queue and one
// profile (plugintesting.ProfileName), enough to drive its event handlers.
func newHandlerTestScheduler(t *testing.T) *Scheduler {
	t.Helper()
	ctx := context.Background()
	schedFramework, err := plugintesting.NewFramework(ctx, plugins.NewInTreeRegistry(), &configv1.Plugins{
		QueueSort: plugintesting.Enable("PrioritySort"),
		Bind:      plugintesting.Enable("DefaultBinder"),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Scheduler{
		Cache:    cache.New(0),
		Profiles: map[string]*framework.Framework{plugintesting.ProfileName: schedFramework},
		logger:   klog.Background(),
	}
	s.Queue = queue.New(schedFramework.QueueSortFunc(), map[string]queue.Profile{plugintesting.ProfileName: schedFramework})
	return s
}

// TestPodTombstones checks that a delete the watch missed, delivered as a
// DeletedFinalStateUnknown, reaches the cache and the queue whatever the
// stale object inside it says about the binding.
func TestPodTombstones(t *testing.T) {
	tests := []struct {
		name string
		// assume places the pod in the cache as assumed on node-1.
		assume bool
		// queue adds the pod to the scheduling queue.
		queue bool
		// boundInTombstone says the tombstone's object carries the binding.
		boundInTombstone bool
	}{
		{name: "assumed pod, tombstone from before the binding", assume: true},
		{name: "assumed pod, tombstone with the binding", assume: true, boundInTombstone: true},
		{name: "pending pod in the queue", queue: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newHandlerTestScheduler(t)
			logger := klog.Background()
			s.Cache.AddNode(logger, st.MakeNode().Name("node-1").Obj())
			pod := st.MakePod().Namespace("ns").Name("p").UID("p-uid").SchedulerName(plugintesting.ProfileName).Obj()
			if tt.assume {
				assumed := pod.DeepCopy()
				assumed.Spec.NodeName = "node-1"
				if err := s.Cache.AssumePod(logger, assumed); err != nil {
					t.Fatal(err)
				}
			}
			if tt.queue {
				s.Queue.Add(logger, pod)
			}
			stale := pod.DeepCopy()
			if tt.boundInTombstone {
				stale.Spec.NodeName = "node-1"
			}
			tombstone := toolscache.DeletedFinalStateUnknown{Key: "ns/p", Obj: stale}
			for _, h := range []toolscache.ResourceEventHandler{s.assignedPodHandler(), s.unassignedPodHandler()} {
				h.OnDelete(tombstone)
			}
			if _, err := s.Cache.GetPod(pod); err == nil {
				t.Errorf("the cache still holds the pod after its tombstone")
			}
			if loc := s.Queue.Locate(pod.UID); loc != queue.NotQueued {
				t.Errorf("the queue still holds the pod in %s after its tombstone", loc)
			}
		})
	}
}
