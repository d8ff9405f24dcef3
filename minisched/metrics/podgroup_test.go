package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// podGroupFamilies are the metrics RegisterPodGroups adds.
var podGroupFamilies = []string{
	"scheduler_podgroup_schedule_attempts_total",
	"scheduler_podgroup_scheduling_attempt_duration_seconds",
	"scheduler_podgroup_scheduling_algorithm_duration_seconds",
}

// TestPodGroupMetricsNeedTheGate: without RegisterPodGroups (the
// GenericWorkload gate off) the pod-group metrics are not served at all,
// and recording into them does nothing; once registered they count each
// attempt under its result and profile, and time it with kube-scheduler's
// buckets.
func TestPodGroupMetricsNeedTheGate(t *testing.T) {
	attempts := []struct {
		result, profile string
		d               time.Duration
	}{
		{ScheduledResult, "default-scheduler", 3 * time.Millisecond},
		{UnschedulableResult, "default-scheduler", 20 * time.Millisecond},
		{UnschedulableResult, "default-scheduler", 20 * time.Millisecond},
		{WaitingOnPreemptionResult, "default-scheduler", 20 * time.Millisecond},
		{ErrorResult, "other", 20 * time.Millisecond},
	}
	record := func(m *Metrics) {
		for _, a := range attempts {
			m.PodGroupAlgorithm(a.d / 2)
			m.PodGroupAttempt(a.result, a.profile, a.d)
		}
	}
	tests := []struct {
		name     string
		register bool
		want     string
	}{
		{name: "gate off: not served"},
		{name: "gate on", register: true, want: `
# HELP scheduler_podgroup_schedule_attempts_total Number of attempts to schedule pod group, by the result. 'unschedulable' means a pod group could not be scheduled, while 'error' means an internal scheduler problem.
# TYPE scheduler_podgroup_schedule_attempts_total counter
scheduler_podgroup_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1
scheduler_podgroup_schedule_attempts_total{profile="default-scheduler",result="unschedulable"} 2
scheduler_podgroup_schedule_attempts_total{profile="default-scheduler",result="waiting_on_preemption"} 1
scheduler_podgroup_schedule_attempts_total{profile="other",result="error"} 1
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New()
			if tt.register {
				m.RegisterPodGroups()
				m.RegisterPodGroups() // a second call registers nothing twice
			}
			record(m)
			n, err := testutil.GatherAndCount(m.Gatherer(), podGroupFamilies...)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.register {
				if n != 0 {
					t.Errorf("%d pod-group series served without the gate, want none", n)
				}
				return
			}
			if err := testutil.GatherAndCompare(m.Gatherer(), strings.NewReader(tt.want),
				"scheduler_podgroup_schedule_attempts_total"); err != nil {
				t.Error(err)
			}
			// One algorithm series, four attempt-duration series.
			if want := 4 + 4 + 1; n != want {
				t.Errorf("%d pod-group series, want %d", n, want)
			}
			families, err := m.Gatherer().Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range families {
				switch f.GetName() {
				case "scheduler_podgroup_scheduling_algorithm_duration_seconds":
					h := f.GetMetric()[0].GetHistogram()
					if h.GetSampleCount() != uint64(len(attempts)) {
						t.Errorf("algorithm: %d samples, want %d", h.GetSampleCount(), len(attempts))
					}
					if b := h.GetBucket(); len(b) != 15 || b[0].GetUpperBound() != 0.001 {
						t.Errorf("algorithm buckets: %d from %v, want 15 from 0.001", len(b), b[0].GetUpperBound())
					}
				case "scheduler_podgroup_scheduling_attempt_duration_seconds":
					for _, s := range f.GetMetric() {
						// The 3ms scheduled attempt is in the 4ms bucket, not the 2ms one.
						if labelValue(s.GetLabel(), "result") != ScheduledResult {
							continue
						}
						b := s.GetHistogram().GetBucket()
						if b[1].GetCumulativeCount() != 0 || b[2].GetCumulativeCount() != 1 {
							t.Errorf("scheduled attempt in buckets %v", b[:3])
						}
					}
				}
			}
		})
	}
}

// labelValue is the value of the label name among labels, "" if absent.
func labelValue(labels []*dto.LabelPair, name string) string {
	for _, l := range labels {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
