// This file is what the pod-group cycle tells Prometheus about placements
// under TopologyAwareWorkloadScheduling, with kube-scheduler's names,
// labels and buckets:
//
//	scheduler_generated_placements_total{profile}                      counter: placements proposed
//	scheduler_placement_evaluations_total{result,profile}              counter: feasible, infeasible
//	scheduler_placement_evaluation_duration_seconds{result,profile}    histogram, one placement tried
//
// As kube-scheduler, minisched registers them only with the gate on
// (RegisterPlacement).

package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Values of the result label of the placement evaluations: the whole
// group fit in the placement, or it did not.
const (
	FeasibleResult   = "feasible"
	InfeasibleResult = "infeasible"
)

// placementMetrics are the collectors RegisterPlacement adds.
type placementMetrics struct {
	generated          *prometheus.CounterVec
	evaluations        *prometheus.CounterVec
	evaluationDuration *prometheus.HistogramVec
}

// RegisterPlacement adds the placement metrics, for a scheduler with
// TopologyAwareWorkloadScheduling. Call it once, before scheduling starts;
// without it GeneratedPlacements and PlacementEvaluated record nothing.
func (m *Metrics) RegisterPlacement() {
	if m == nil {
		return
	}
	p := &placementMetrics{
		generated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "generated_placements_total",
			Help: "Number of candidate placements generated when scheduling pod groups.",
		}, []string{"profile"}),
		evaluations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "placement_evaluations_total",
			Help: "Number of candidate placements evaluated when scheduling pod groups, by result. 'feasible' means the pod group fit into the placement, while 'infeasible' means it did not.",
		}, []string{"result", "profile"}),
		evaluationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "placement_evaluation_duration_seconds",
			Help:    "Latency in seconds of evaluating a single candidate placement when scheduling pod groups, by result. 'feasible' means the pod group fit into the placement, while 'infeasible' means it did not.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"result", "profile"}),
	}
	m.registry.MustRegister(p.generated, p.evaluations, p.evaluationDuration)
	m.placement = p
}

// GeneratedPlacements counts the n placements a profile's PlacementGenerate
// proposed for one pod group.
func (m *Metrics) GeneratedPlacements(profile string, n int) {
	if m == nil || m.placement == nil {
		return
	}
	m.placement.generated.WithLabelValues(profile).Add(float64(n))
}

// PlacementEvaluated counts one placement tried (result FeasibleResult or
// InfeasibleResult) and records how long trying the group in it took.
func (m *Metrics) PlacementEvaluated(result, profile string, d time.Duration) {
	if m == nil || m.placement == nil {
		return
	}
	m.placement.evaluations.WithLabelValues(result, profile).Inc()
	m.placement.evaluationDuration.WithLabelValues(result, profile).Observe(d.Seconds())
}
