// What the benchmarks in bench_test.go may call of the loop. They are an
// external test package (minisched_test) so that they can take the default
// profile from package scheduler, which imports this one.

package minisched

import (
	"context"
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/minisched/metrics"
	"github.com/minisched/minisched/queue"
)

// NewBenchScheduler is a Scheduler over c, q and snapshot with the one
// profile schedFramework, searching percentage of the nodes (0: adaptive),
// with a fixed tie-breaking seed and no informers; m (nil: none) records its
// metrics.
func NewBenchScheduler(c *cache.Cache, q *queue.PriorityQueue, snapshot *cache.Snapshot,
	schedFramework *framework.Framework, client kubernetes.Interface, percentage int32, m *metrics.Metrics) *Scheduler {
	return &Scheduler{
		Cache:                    c,
		Queue:                    q,
		Profiles:                 map[string]*framework.Framework{schedFramework.ProfileName(): schedFramework},
		snapshot:                 snapshot,
		client:                   client,
		logger:                   klog.Background(),
		percentageOfNodesToScore: percentage,
		rng:                      rand.New(rand.NewPCG(1, 2)),
		metrics:                  m,
	}
}

// ScheduleAndUndo runs one scheduling cycle of podInfo (snapshot refresh,
// PreFilter to Permit) with its CycleState and score arrays as
// scheduleOnePod has them, and undoes it (Unreserve, ForgetPod), so that
// the next call sees the same cluster. No plugin call is timed.
func (s *Scheduler) ScheduleAndUndo(ctx context.Context, schedFramework *framework.Framework,
	podInfo *framework.QueuedPodInfo) *framework.Status {
	state := s.newCycleState(podInfo)
	state.RecordPluginMetrics = false
	result, assumed, status := s.schedulingCycle(ctx, state, schedFramework, podInfo)
	releaseSeen(state, &result)
	if !status.IsSuccess() {
		return status
	}
	s.unreserveAndForget(ctx, state, schedFramework, assumed.Pod, result.suggestedHost)
	return nil
}

// FilterAndScore runs the search for feasible nodes and their ranking on
// the current snapshot, and returns how many nodes were feasible.
func (s *Scheduler) FilterAndScore(ctx context.Context, schedFramework *framework.Framework, pod *v1.Pod) (int, error) {
	state := framework.NewCycleState()
	feasible, _, _, err := s.findNodesThatFitPod(ctx, schedFramework, state, queuedPod(pod), 0)
	if err != nil {
		return 0, err
	}
	if _, _, err := s.prioritizeNodes(ctx, schedFramework, state, pod, feasible); err != nil {
		return 0, err
	}
	return len(feasible), nil
}

// queuedPod is pod as the queue would hand it to a cycle: signed by no
// profile, so never batched.
func queuedPod(pod *v1.Pod) *framework.QueuedPodInfo {
	return framework.NewQueuedPodInfo(pod, time.Now())
}

// ScheduleNext pops the next pod and runs its scheduling cycle, leaving it
// assumed on its node (no binding cycle): the next cycle sees it there, as
// the next cycle of a running scheduler does.
func (s *Scheduler) ScheduleNext(ctx context.Context, schedFramework *framework.Framework) *framework.Status {
	entity, err := s.Queue.Pop(klog.FromContext(ctx))
	if err != nil {
		return framework.AsStatus(err)
	}
	podInfo := entity.(*framework.QueuedPodInfo) // the benchmarks queue no pod group
	defer s.Queue.Done(podInfo.Pod.UID)
	state := s.newCycleState(podInfo)
	result, _, status := s.schedulingCycle(ctx, state, schedFramework, podInfo)
	releaseSeen(state, &result)
	return status
}

// SetWatcher sets the scheduler's Watcher, as Options.Watcher would.
func (s *Scheduler) SetWatcher(w Watcher) { s.watcher = w }
