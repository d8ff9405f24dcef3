// This file holds the metrics of preemption for pod groups (the
// GenericWorkload gate), which kube-scheduler registers only with that
// gate on:
//
//	scheduler_workload_preemption_attempts_total{result}              counter: PodGroupPostFilter runs of DefaultPreemption, by status code
//	scheduler_workload_preemption_victims                             histogram: pods a pod group's preemption evicts
//	scheduler_preemption_workload_disruptions{preemptor}              histogram: victim units of pod groups a preemption evicts

package metrics

import "github.com/prometheus/client_golang/prometheus"

// workloadPreemptionMetrics are the collectors of pod-group preemption.
type workloadPreemptionMetrics struct {
	attempts    *prometheus.CounterVec
	victims     prometheus.Histogram
	disruptions *prometheus.HistogramVec
}

// RegisterWorkloadPreemption creates and registers the pod-group
// preemption metrics. The scheduler calls it once, before it runs, when
// GenericWorkload is on; without it the methods below record nothing, and
// the metrics are not exposed, as in kube-scheduler with the gate off.
func (m *Metrics) RegisterWorkloadPreemption() {
	if m == nil || m.workloadPreemption != nil {
		return
	}
	w := &workloadPreemptionMetrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "workload_preemption_attempts_total",
			Help: "Total preemption attempts initiated by workload (including pod groups) in the cluster till now.",
		}, []string{"result"}),
		victims: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "workload_preemption_victims",
			Help: "Number of pod preemption victims caused by workload preemption.",
			// From 1, the last bucket being [1024, Inf).
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}),
		disruptions: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "preemption_workload_disruptions",
			Help: "Number of workload preemption units being preempted. A single preemption unit can be all pods " +
				"in a pod group (in case of DisruptionMode=all), or a single pod (in case of DisruptionMode=single).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}, []string{"preemptor"}),
	}
	m.registry.MustRegister(w.attempts, w.victims, w.disruptions)
	m.workloadPreemption = w
}

// WorkloadPreemptionAttempt counts one PodGroupPostFilter run of
// DefaultPreemption, labelled with its status code ("Success",
// "Unschedulable", "UnschedulableAndUnresolvable", "Error").
func (m *Metrics) WorkloadPreemptionAttempt(result string) {
	if m == nil || m.workloadPreemption == nil {
		return
	}
	m.workloadPreemption.attempts.WithLabelValues(result).Inc()
}

// WorkloadPreemptionVictims records how many pods a pod group's
// preemption chose to evict.
func (m *Metrics) WorkloadPreemptionVictims(n int) {
	if m == nil || m.workloadPreemption == nil {
		return
	}
	m.workloadPreemption.victims.Observe(float64(n))
}

// PreemptionWorkloadDisruptions records how many victim units that belong
// to pod groups a preemption evicts, by the preemptor's kind ("pod",
// "podgroup"); as kube-scheduler, only a positive count is recorded.
func (m *Metrics) PreemptionWorkloadDisruptions(preemptor string, n int) {
	if m == nil || m.workloadPreemption == nil || n <= 0 {
		return
	}
	m.workloadPreemption.disruptions.WithLabelValues(preemptor).Observe(float64(n))
}
