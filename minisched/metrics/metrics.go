// Package metrics is what minisched tells Prometheus, under kube-scheduler's
// names, labels and buckets, so that dashboards and alerts written for
// kube-scheduler work on minisched unchanged:
//
//	scheduler_schedule_attempts_total{result,profile}                 counter
//	scheduler_scheduling_attempt_duration_seconds{result,profile}     histogram, pop to bound (or failed)
//	scheduler_scheduling_algorithm_duration_seconds                   histogram, Filter+Score of one pod
//	scheduler_pending_pods{queue}                                     gauge: active, backoff, unschedulable, gated,
//	                                                                  incomplete, pending (podgroup.go)
//	scheduler_queued_entities{queue,type}                             gauge: pods and pod groups in each queue
//	scheduler_queue_incoming_pods_total{queue,event}                  counter: what moved pods into each queue
//	scheduler_unschedulable_pods{plugin,profile}                      gauge: unschedulable pods by rejecting plugin
//	scheduler_framework_extension_point_duration_seconds{extension_point,status,profile}
//	scheduler_plugin_execution_duration_seconds{plugin,extension_point,status}  (10% of cycles)
//	scheduler_pod_scheduling_sli_duration_seconds{attempts}           histogram, first queueing to bound
//	scheduler_pod_scheduling_attempts                                 histogram, attempts of bound pods
//	scheduler_preemption_attempts_total, scheduler_preemption_victims
//	scheduler_goroutines{operation}                                   binding goroutines in flight
//	scheduler_event_handling_duration_seconds{event}                  histogram, informer event handlers
//	scheduler_batch_attempts_total{profile,result}                    counter: no_hint, hint_used, hint_not_used
//	scheduler_batch_cache_flushed_total{profile,reason}               counter: why a stored ranking was dropped
//	scheduler_batch_rescore_attempts_total{profile}                   counter: last chosen nodes rescored
//	scheduler_get_node_hint_duration_seconds{hinted,profile}          histogram
//	scheduler_store_schedule_results_duration_seconds{profile}        histogram
//	scheduler_batch_rescore_duration_seconds{profile}                 histogram
//
// plus, with the GenericWorkload gate, those of pod-group cycles
// (podgroup.go), and the Go runtime's and the process's own metrics. A *Metrics is made
// once per scheduler (New) and handed to the framework, the queue and the
// loop; every method works on a nil *Metrics and does nothing, so tests and
// benchmarks need none.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/minisched/minisched/internal/cowmap"
)

// Values of the result label of the attempt metrics.
const (
	ScheduledResult     = "scheduled"
	UnschedulableResult = "unschedulable"
	ErrorResult         = "error"
)

// Binding is the operation label of binding goroutines.
const Binding = "binding"

// PluginMetricsSamplePercent is the share of scheduling cycles whose plugin
// calls are timed one by one, as in kube-scheduler.
const PluginMetricsSamplePercent = 10

// Values of the result label of scheduler_batch_attempts_total.
const (
	BatchAttemptNoHint      = "no_hint"
	BatchAttemptHintUsed    = "hint_used"
	BatchAttemptHintNotUsed = "hint_not_used"
)

// Values of the reason label of scheduler_batch_cache_flushed_total: why
// OpportunisticBatching could not use, or dropped, its stored ranking.
// (kube-scheduler also names pod_failed, which its code never reaches:
// see minisched/framework/batch.go.)
const (
	BatchFlushPodSkipped      = "pod_skipped"
	BatchFlushPodNominated    = "pod_nominated"
	BatchFlushNodeMissing     = "node_missing"
	BatchFlushEmptyList       = "empty_list"
	BatchFlushExpired         = "expired"
	BatchFlushPodIncompatible = "pod_incompatible"
	BatchFlushPodNotBatchable = "pod_not_batchable"
	BatchFlushFilterError     = "filter_error"
	BatchFlushPreScoreError   = "prescore_error"
	BatchFlushRescoreError    = "rescore_error"
	BatchFlushNormalizeError  = "normalize_error"
)

// Values of the queue label.
const (
	ActiveQ       = "active"
	BackoffQ      = "backoff"
	Unschedulable = "unschedulable"
	Gated         = "gated"
)

const subsystem = "scheduler"

// Metrics holds the collectors of one scheduler and the registry that
// serves them.
type Metrics struct {
	registry *prometheus.Registry

	scheduleAttempts   *prometheus.CounterVec
	schedulingLatency  *prometheus.HistogramVec
	algorithmLatency   prometheus.Histogram
	preemptionVictims  prometheus.Histogram
	preemptionAttempts prometheus.Counter
	queueIncomingPods  *prometheus.CounterVec
	extensionPoint     *prometheus.HistogramVec
	pluginExecution    *prometheus.HistogramVec
	// pluginSeries caches pluginExecution's series: a sampled cycle times
	// thousands of plugin calls, and a lookup here costs a fraction of
	// WithLabelValues' hashing of the labels; copy-on-write, so the
	// goroutines timing plugins read it without a lock.
	pluginSeries     cowmap.Map[pluginSeriesKey, prometheus.Observer]
	podSchedulingSLI *prometheus.HistogramVec
	podAttempts      prometheus.Histogram
	goroutines       *prometheus.GaugeVec
	eventHandling    *prometheus.HistogramVec

	batchAttempts       *prometheus.CounterVec
	batchFlushed        *prometheus.CounterVec
	batchRescores       *prometheus.CounterVec
	getNodeHintLatency  *prometheus.HistogramVec
	storeResultsLatency *prometheus.HistogramVec
	batchRescoreLatency *prometheus.HistogramVec
	workloadPreemption  *workloadPreemptionMetrics // with GenericWorkload (workload_preemption.go)
	placement           *placementMetrics          // placement.go; nil until RegisterPlacement

	// podGroups are the pod-group cycles' collectors, nil until
	// RegisterPodGroups.
	podGroups *podGroupMetrics
}

// batchBuckets are the buckets of the batching latencies: from 10 µs,
// doubling, the last one from about 20 ms on, as kube-scheduler's.
var batchBuckets = prometheus.ExponentialBuckets(0.00001, 2, 12)

// New returns the collectors, registered with a fresh registry together
// with the Go and process collectors.
func New() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		scheduleAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "schedule_attempts_total",
			Help: "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem.",
		}, []string{"result", "profile"}),
		schedulingLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "scheduling_attempt_duration_seconds",
			Help:    "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"result", "profile"}),
		algorithmLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "scheduling_algorithm_duration_seconds",
			Help:    "Scheduling algorithm latency in seconds",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		preemptionVictims: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "preemption_victims",
			Help:    "Number of selected preemption victims for preemption initiated by a single pod",
			Buckets: prometheus.ExponentialBuckets(1, 2, 7),
		}),
		preemptionAttempts: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "preemption_attempts_total",
			Help: "Total preemption attempts in the cluster till now",
		}),
		queueIncomingPods: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "queue_incoming_pods_total",
			Help: "Number of pods added to scheduling queues by event and queue type.",
		}, []string{"queue", "event"}),
		extensionPoint: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "framework_extension_point_duration_seconds",
			Help:    "Latency for running all plugins of a specific extension point.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 12),
		}, []string{"extension_point", "status", "profile"}),
		pluginExecution: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "plugin_execution_duration_seconds",
			Help:    "Duration for running a plugin at a specific extension point.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 1.5, 20),
		}, []string{"plugin", "extension_point", "status"}),
		podSchedulingSLI: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "pod_scheduling_sli_duration_seconds",
			Help:    "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might involve multiple scheduling attempts.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 20),
		}, []string{"attempts"}),
		podAttempts: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "pod_scheduling_attempts",
			Help:    "Number of attempts to successfully schedule a pod.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 5),
		}),
		goroutines: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "goroutines",
			Help: "Number of running goroutines split by the work they do such as binding.",
		}, []string{"operation"}),
		eventHandling: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "event_handling_duration_seconds",
			Help:    "Event handling latency in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 12),
		}, []string{"event"}),
		batchAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "batch_attempts_total",
			Help: "Counts of results when we attempt to use batching.",
		}, []string{"profile", "result"}),
		batchFlushed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "batch_cache_flushed_total",
			Help: "Counts of cache flushes by reason.",
		}, []string{"profile", "reason"}),
		batchRescores: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "batch_rescore_attempts_total",
			Help: "Counts of rescore attempts during opportunistic batching.",
		}, []string{"profile"}),
		getNodeHintLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "get_node_hint_duration_seconds",
			Help: "Latency for getting a node hint.", Buckets: batchBuckets,
		}, []string{"hinted", "profile"}),
		storeResultsLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "store_schedule_results_duration_seconds",
			Help: "Latency for storing scheduling results.", Buckets: batchBuckets,
		}, []string{"profile"}),
		batchRescoreLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "batch_rescore_duration_seconds",
			Help: "Latency for rescoring a node during opportunistic batching.", Buckets: batchBuckets,
		}, []string{"profile"}),
	}
	m.registry.MustRegister(m.scheduleAttempts, m.schedulingLatency, m.algorithmLatency, m.preemptionVictims,
		m.preemptionAttempts, m.queueIncomingPods, m.extensionPoint, m.pluginExecution, m.podSchedulingSLI,
		m.podAttempts, m.goroutines, m.eventHandling,
		m.batchAttempts, m.batchFlushed, m.batchRescores, m.getNodeHintLatency, m.storeResultsLatency,
		m.batchRescoreLatency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// Gatherer is the registry, for tests that read the values.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.registry }

// Attempt records a scheduling attempt's result and its duration from pop
// to bound (or to the failure).
func (m *Metrics) Attempt(result, profile string, d time.Duration) {
	if m == nil {
		return
	}
	m.scheduleAttempts.WithLabelValues(result, profile).Inc()
	m.schedulingLatency.WithLabelValues(result, profile).Observe(d.Seconds())
}

// Algorithm records how long finding a node took (Filter and Score).
func (m *Metrics) Algorithm(d time.Duration) {
	if m == nil {
		return
	}
	m.algorithmLatency.Observe(d.Seconds())
}

// PodBound records, for a bound pod, its number of attempts and the time
// since it was first queued, labelled by attempts ("15+" from 15 on, to
// bound the label's values).
func (m *Metrics) PodBound(attempts int, firstQueued time.Time) {
	if m == nil {
		return
	}
	m.podAttempts.Observe(float64(attempts))
	label := strconv.Itoa(attempts)
	if attempts >= 15 {
		label = "15+"
	}
	m.podSchedulingSLI.WithLabelValues(label).Observe(time.Since(firstQueued).Seconds())
}

// PreemptionAttempt counts a preemption attempt (a PostFilter run that
// looked for victims).
func (m *Metrics) PreemptionAttempt() {
	if m == nil {
		return
	}
	m.preemptionAttempts.Inc()
}

// PreemptionVictims records how many victims a preemption chose.
func (m *Metrics) PreemptionVictims(n int) {
	if m == nil {
		return
	}
	m.preemptionVictims.Observe(float64(n))
}

// QueueIncoming counts a pod moved into queue (ActiveQ, BackoffQ,
// Unschedulable, Gated) because of event.
func (m *Metrics) QueueIncoming(queue, event string) {
	if m == nil {
		return
	}
	m.queueIncomingPods.WithLabelValues(queue, event).Inc()
}

// ExtensionPoint records how long all plugins of an extension point took.
func (m *Metrics) ExtensionPoint(point, status, profile string, d time.Duration) {
	if m == nil {
		return
	}
	m.extensionPoint.WithLabelValues(point, status, profile).Observe(d.Seconds())
}

// pluginSeriesKey names one series of pluginExecution.
type pluginSeriesKey struct{ plugin, point, status string }

// PluginExecution records one plugin call of a sampled cycle.
func (m *Metrics) PluginExecution(plugin, point, status string, d time.Duration) {
	if m == nil {
		return
	}
	m.PluginObserver(plugin, point, status).Observe(d.Seconds())
}

// PluginObserver returns the series of scheduler_plugin_execution_duration_seconds
// for calls of plugin at point that end with status, or nil when m is nil:
// the framework resolves the series of successful Filter and Score calls
// once per sampled cycle, instead of once per node in PluginExecution.
func (m *Metrics) PluginObserver(plugin, point, status string) prometheus.Observer {
	if m == nil {
		return nil
	}
	key := pluginSeriesKey{plugin, point, status}
	series, ok := m.pluginSeries.Load(key)
	if !ok {
		// Two goroutines may both get here: WithLabelValues returns the
		// same series to both.
		series = m.pluginExecution.WithLabelValues(plugin, point, status)
		m.pluginSeries.Store(key, series)
	}
	return series
}

// GoroutineStarted and GoroutineDone count goroutines of an operation.
func (m *Metrics) GoroutineStarted(operation string) {
	if m == nil {
		return
	}
	m.goroutines.WithLabelValues(operation).Inc()
}

// GoroutineDone is the end of a goroutine GoroutineStarted counted.
func (m *Metrics) GoroutineDone(operation string) {
	if m == nil {
		return
	}
	m.goroutines.WithLabelValues(operation).Dec()
}

// EventHandled records how long the handlers of an informer event took.
func (m *Metrics) EventHandled(event string, d time.Duration) {
	if m == nil {
		return
	}
	m.eventHandling.WithLabelValues(event).Observe(d.Seconds())
}

// BatchAttempt counts an OpportunisticBatching outcome (BatchAttemptNoHint,
// BatchAttemptHintUsed, BatchAttemptHintNotUsed) of profile.
func (m *Metrics) BatchAttempt(profile, result string) {
	if m == nil {
		return
	}
	m.batchAttempts.WithLabelValues(profile, result).Inc()
}

// BatchFlushed counts a stored ranking of profile dropped for reason (one
// of the BatchFlush values).
func (m *Metrics) BatchFlushed(profile, reason string) {
	if m == nil {
		return
	}
	m.batchFlushed.WithLabelValues(profile, reason).Inc()
}

// NodeHint records how long looking for a node hint took; hinted says
// whether one was found ("hint" or "no_hint").
func (m *Metrics) NodeHint(hinted, profile string, d time.Duration) {
	if m == nil {
		return
	}
	m.getNodeHintLatency.WithLabelValues(hinted, profile).Observe(d.Seconds())
}

// ScheduleResultsStored records how long storing a cycle's ranking took.
func (m *Metrics) ScheduleResultsStored(profile string, d time.Duration) {
	if m == nil {
		return
	}
	m.storeResultsLatency.WithLabelValues(profile).Observe(d.Seconds())
}

// BatchRescore counts a rescoring of the last chosen node and records how
// long it took.
func (m *Metrics) BatchRescore(profile string, d time.Duration) {
	if m == nil {
		return
	}
	m.batchRescores.WithLabelValues(profile).Inc()
	m.batchRescoreLatency.WithLabelValues(profile).Observe(d.Seconds())
}

// QueueStats is what the scheduling queue reports at each scrape: the pods
// in each of its parts, the entities (pods, pod groups) in each sub-queue,
// and the unschedulable pods by each plugin that rejected them.
type QueueStats interface {
	PendingPodCounts() map[string]int
	QueuedEntityCounts() map[QueueEntity]int
	UnschedulablePodsByPlugin() map[PluginProfile]int
}

// PluginProfile labels scheduler_unschedulable_pods.
type PluginProfile struct{ Plugin, Profile string }

// RegisterQueue has scheduler_pending_pods, scheduler_queued_entities and
// scheduler_unschedulable_pods read from q at each scrape, so they are exact without bookkeeping on
// every move.
func (m *Metrics) RegisterQueue(q QueueStats) {
	if m == nil {
		return
	}
	m.registry.MustRegister(&queueCollector{q: q})
}

var (
	pendingPodsDesc = prometheus.NewDesc("scheduler_pending_pods",
		"Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulableEntities that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to schedule because they are gated; 'incomplete' means number of pods in incompletePodGroupPods; 'pending' means number of pods in pendingPodGroupPods.",
		[]string{"queue"}, nil)
	unschedulablePodsDesc = prometheus.NewDesc("scheduler_unschedulable_pods",
		"The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for all plugins that caused it to not schedule and so this metric have meaning only when broken down by plugin.",
		[]string{"plugin", "profile"}, nil)
)

type queueCollector struct{ q QueueStats }

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingPodsDesc
	ch <- queuedEntitiesDesc
	ch <- unschedulablePodsDesc
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	counts := c.q.PendingPodCounts()
	for _, queue := range []string{ActiveQ, BackoffQ, Unschedulable, Gated, Incomplete, Pending} {
		ch <- prometheus.MustNewConstMetric(pendingPodsDesc, prometheus.GaugeValue, float64(counts[queue]), queue)
	}
	for k, n := range c.q.QueuedEntityCounts() {
		ch <- prometheus.MustNewConstMetric(queuedEntitiesDesc, prometheus.GaugeValue, float64(n), k.Queue, k.Type)
	}
	for k, n := range c.q.UnschedulablePodsByPlugin() {
		ch <- prometheus.MustNewConstMetric(unschedulablePodsDesc, prometheus.GaugeValue, float64(n), k.Plugin, k.Profile)
	}
}
