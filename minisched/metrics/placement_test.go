// Tests for the placement metrics: kube-scheduler's names, labels and
// help, present only once registered, and safe on a nil *Metrics.

package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestPlacementMetrics(t *testing.T) {
	tests := []struct {
		name     string
		register bool
		want     string
	}{
		{name: "registered", register: true, want: `
# HELP scheduler_generated_placements_total Number of candidate placements generated when scheduling pod groups.
# TYPE scheduler_generated_placements_total counter
scheduler_generated_placements_total{profile="p"} 5
# HELP scheduler_placement_evaluations_total Number of candidate placements evaluated when scheduling pod groups, by result. 'feasible' means the pod group fit into the placement, while 'infeasible' means it did not.
# TYPE scheduler_placement_evaluations_total counter
scheduler_placement_evaluations_total{profile="p",result="feasible"} 2
scheduler_placement_evaluations_total{profile="p",result="infeasible"} 1
`},
		// Without TopologyAwareWorkloadScheduling nothing is registered,
		// and recording does nothing.
		{name: "not registered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New()
			if tt.register {
				m.RegisterPlacement()
			}
			m.GeneratedPlacements("p", 2)
			m.GeneratedPlacements("p", 3)
			m.PlacementEvaluated(FeasibleResult, "p", time.Millisecond)
			m.PlacementEvaluated(FeasibleResult, "p", 3*time.Millisecond)
			m.PlacementEvaluated(InfeasibleResult, "p", time.Millisecond)
			if err := testutil.GatherAndCompare(m.Gatherer(), strings.NewReader(tt.want),
				"scheduler_generated_placements_total", "scheduler_placement_evaluations_total"); err != nil {
				t.Error(err)
			}
			count, err := testutil.GatherAndCount(m.Gatherer(), "scheduler_placement_evaluation_duration_seconds")
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 2, false: 0}[tt.register]; count != want {
				t.Errorf("scheduler_placement_evaluation_duration_seconds has %d series, want %d", count, want)
			}
		})
	}
	var m *Metrics
	m.RegisterPlacement()
	m.GeneratedPlacements("p", 1)
	m.PlacementEvaluated(FeasibleResult, "p", time.Second)
}
