// Tests of the pod-group preemption metrics.

package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

var workloadPreemptionNames = []string{"scheduler_workload_preemption_attempts_total",
	"scheduler_workload_preemption_victims", "scheduler_preemption_workload_disruptions"}

// TestWorkloadPreemption: the pod-group preemption metrics exist only once
// registered (GenericWorkload), record what they are told then, and a
// disruption count of zero is not recorded, as in kube-scheduler.
func TestWorkloadPreemption(t *testing.T) {
	var none *Metrics
	none.RegisterWorkloadPreemption()
	none.WorkloadPreemptionAttempt("Success")

	m := New()
	m.WorkloadPreemptionAttempt("Success")
	m.WorkloadPreemptionVictims(3)
	m.PreemptionWorkloadDisruptions("podgroup", 1)
	if n, err := testutil.GatherAndCount(m.Gatherer(), workloadPreemptionNames...); err != nil || n != 0 {
		t.Fatalf("before registration: %d series (%v), want none", n, err)
	}

	m.RegisterWorkloadPreemption()
	m.RegisterWorkloadPreemption() // once only: no duplicate registration
	m.WorkloadPreemptionAttempt("Success")
	m.WorkloadPreemptionAttempt("UnschedulableAndUnresolvable")
	m.WorkloadPreemptionVictims(3)
	m.PreemptionWorkloadDisruptions("podgroup", 2)
	m.PreemptionWorkloadDisruptions("podgroup", 0)
	want := `
# HELP scheduler_workload_preemption_attempts_total Total preemption attempts initiated by workload (including pod groups) in the cluster till now.
# TYPE scheduler_workload_preemption_attempts_total counter
scheduler_workload_preemption_attempts_total{result="Success"} 1
scheduler_workload_preemption_attempts_total{result="UnschedulableAndUnresolvable"} 1
# HELP scheduler_workload_preemption_victims Number of pod preemption victims caused by workload preemption.
# TYPE scheduler_workload_preemption_victims histogram
scheduler_workload_preemption_victims_bucket{le="1"} 0
scheduler_workload_preemption_victims_bucket{le="2"} 0
scheduler_workload_preemption_victims_bucket{le="4"} 1
scheduler_workload_preemption_victims_bucket{le="8"} 1
scheduler_workload_preemption_victims_bucket{le="16"} 1
scheduler_workload_preemption_victims_bucket{le="32"} 1
scheduler_workload_preemption_victims_bucket{le="64"} 1
scheduler_workload_preemption_victims_bucket{le="128"} 1
scheduler_workload_preemption_victims_bucket{le="256"} 1
scheduler_workload_preemption_victims_bucket{le="512"} 1
scheduler_workload_preemption_victims_bucket{le="1024"} 1
scheduler_workload_preemption_victims_bucket{le="+Inf"} 1
scheduler_workload_preemption_victims_sum 3
scheduler_workload_preemption_victims_count 1
# HELP scheduler_preemption_workload_disruptions Number of workload preemption units being preempted. A single preemption unit can be all pods in a pod group (in case of DisruptionMode=all), or a single pod (in case of DisruptionMode=single).
# TYPE scheduler_preemption_workload_disruptions histogram
scheduler_preemption_workload_disruptions_bucket{preemptor="podgroup",le="1"} 0
scheduler_preemption_workload_disruptions_bucket{preemptor="podgroup",le="2"} 1
scheduler_preemption_workload_disruptions_bucket{preemptor="podgroup",le="4"} 1
scheduler_preemption_workload_disruptions_bucket{preemptor="podgroup",le="8"} 1
scheduler_preemption_workload_disruptions_bucket{preemptor="podgroup",le="16"} 1
scheduler_preemption_workload_disruptions_bucket{preemptor="podgroup",le="32"} 1
scheduler_preemption_workload_disruptions_bucket{preemptor="podgroup",le="64"} 1
scheduler_preemption_workload_disruptions_bucket{preemptor="podgroup",le="128"} 1
scheduler_preemption_workload_disruptions_bucket{preemptor="podgroup",le="256"} 1
scheduler_preemption_workload_disruptions_bucket{preemptor="podgroup",le="512"} 1
scheduler_preemption_workload_disruptions_bucket{preemptor="podgroup",le="1024"} 1
scheduler_preemption_workload_disruptions_bucket{preemptor="podgroup",le="+Inf"} 1
scheduler_preemption_workload_disruptions_sum{preemptor="podgroup"} 2
scheduler_preemption_workload_disruptions_count{preemptor="podgroup"} 1
`
	if err := testutil.GatherAndCompare(m.Gatherer(), strings.NewReader(want), workloadPreemptionNames...); err != nil {
		t.Error(err)
	}
}
