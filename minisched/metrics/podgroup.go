// This file holds the metrics that gang scheduling (chapter 19, the
// GenericWorkload gate) brought: those of pod-group cycles, which
// kube-scheduler registers only with that gate on,
//
//	scheduler_podgroup_schedule_attempts_total{result,profile}              counter
//	scheduler_podgroup_scheduling_attempt_duration_seconds{result,profile}  histogram, cycle start to submitted
//	scheduler_podgroup_scheduling_algorithm_duration_seconds                histogram, cycle start to the algorithm's end
//
// (result is scheduled, unschedulable, waiting_on_preemption or error), and
// the queue's view of entities, registered always (RegisterQueue): the
// pending_pods queues of members outside any entity, and
//
//	scheduler_queued_entities{queue,type}   gauge: type pod (a pod in no group) or podgroup

package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// WaitingOnPreemptionResult is the result of a pod-group attempt that found
// no room, but whose PodGroupPostFilter is making some: the group is
// retried once its victims are gone.
const WaitingOnPreemptionResult = "waiting_on_preemption"

// The queues of scheduler_pending_pods that hold members of pod groups
// outside any entity (queue.IncompletePodGroupPods,
// queue.PendingPodGroupPods).
const (
	// Incomplete counts the members whose PodGroup has not been seen yet.
	Incomplete = "incomplete"
	// Pending counts the members that arrived, or came back, while their
	// group was being scheduled.
	Pending = "pending"
)

// The values of the type label of scheduler_queued_entities.
const (
	// PodEntity is a pod in no pod group.
	PodEntity = "pod"
	// PodGroupEntity is a pod group, however many members it holds.
	PodGroupEntity = "podgroup"
)

// QueueEntity labels scheduler_queued_entities: a queue (ActiveQ,
// BackoffQ, Unschedulable, Gated) and a type (PodEntity, PodGroupEntity).
type QueueEntity struct{ Queue, Type string }

var queuedEntitiesDesc = prometheus.NewDesc("scheduler_queued_entities",
	"Number of queued scheduling entities ('pod' or 'podgroup'; 'pod' stands for individual pods that are not members of any podgroup) by the queue type. 'active' means number of entities in activeQ; 'backoff' means number of entities in backoffQ; 'unschedulable' means number of entities in unschedulableEntities that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable entities that the scheduler never attempted to schedule because they are gated.",
	[]string{"queue", "type"}, nil)

// podGroupMetrics are the collectors of pod-group cycles.
type podGroupMetrics struct {
	scheduleAttempts  *prometheus.CounterVec
	schedulingLatency *prometheus.HistogramVec
	algorithmLatency  prometheus.Histogram
}

// RegisterPodGroups registers the pod-group cycle's metrics: the scheduler
// calls it when the GenericWorkload gate is on, as kube-scheduler registers
// them only then. Until it is called, PodGroupAttempt and PodGroupAlgorithm
// record nothing.
func (m *Metrics) RegisterPodGroups() {
	if m == nil || m.podGroups != nil {
		return
	}
	pg := &podGroupMetrics{
		scheduleAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "podgroup_schedule_attempts_total",
			Help: "Number of attempts to schedule pod group, by the result. 'unschedulable' means a pod group could not be scheduled, while 'error' means an internal scheduler problem.",
		}, []string{"result", "profile"}),
		schedulingLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "podgroup_scheduling_attempt_duration_seconds",
			Help:    "Pod group scheduling attempt latency in seconds",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"result", "profile"}),
		algorithmLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "podgroup_scheduling_algorithm_duration_seconds",
			Help:    "Pod group scheduling algorithm latency in seconds",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
	}
	m.registry.MustRegister(pg.scheduleAttempts, pg.schedulingLatency, pg.algorithmLatency)
	m.podGroups = pg
}

// PodGroupAttempt records a pod-group attempt's result (ScheduledResult,
// UnschedulableResult, WaitingOnPreemptionResult or ErrorResult) and its
// duration from the start of its cycle to the end of its submission: the
// members' bindings run on, and are not counted.
func (m *Metrics) PodGroupAttempt(result, profile string, d time.Duration) {
	if m == nil || m.podGroups == nil {
		return
	}
	m.podGroups.scheduleAttempts.WithLabelValues(result, profile).Inc()
	m.podGroups.schedulingLatency.WithLabelValues(result, profile).Observe(d.Seconds())
}

// PodGroupAlgorithm records how long a pod-group cycle took from its start
// (the snapshot's update) to the end of its algorithm (every member tried
// in the snapshot), before any PodGroupPostFilter.
func (m *Metrics) PodGroupAlgorithm(d time.Duration) {
	if m == nil || m.podGroups == nil {
		return
	}
	m.podGroups.algorithmLatency.Observe(d.Seconds())
}
