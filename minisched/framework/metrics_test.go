package framework

import (
	"context"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/minisched/minisched/minisched/metrics"
)

// countOf is the sample count of family's histogram with the given label
// values (all of them must match).
func countOf(t *testing.T, m *metrics.Metrics, family string, labels map[string]string) uint64 {
	t.Helper()
	families, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
		for _, s := range f.GetMetric() {
			if matches(s, labels) {
				n += s.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}

func matches(s *dto.Metric, labels map[string]string) bool {
	have := map[string]string{}
	for _, l := range s.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range labels {
		if have[k] != v {
			return false
		}
	}
	return true
}

// TestPluginAndExtensionPointMetrics checks that extension points are
// always timed, and plugin calls only in sampled cycles.
func TestPluginAndExtensionPointMetrics(t *testing.T) {
	tests := []struct {
		name        string
		sampled     bool
		wantPlugins uint64 // Filter calls of plugin A timed
	}{
		{name: "a sampled cycle times each plugin call", sampled: true, wantPlugins: 3},
		{name: "other cycles time none", sampled: false, wantPlugins: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := metrics.New()
			log := &callLog{}
			a := &fakePlugin{name: "A", log: log, filterFail: map[string]*Status{"n1": NewStatus(Unschedulable, "no")}}
			f := newTestFramework(t, []*fakePlugin{a}, nil, WithMetrics(m))
			state := NewCycleState()
			state.RecordPluginMetrics = tt.sampled
			for _, ni := range testNodes("n1", "n2", "n3") {
				f.RunFilterPlugins(context.Background(), state, testPod, ni)
			}
			if sts := f.RunReservePluginsReserve(context.Background(), state, testPod, "n2"); !sts.IsSuccess() {
				t.Fatal(sts)
			}
			got := countOf(t, m, "scheduler_plugin_execution_duration_seconds",
				map[string]string{"plugin": "A", "extension_point": "Filter"})
			if got != tt.wantPlugins {
				t.Errorf("timed %d Filter calls of A, want %d", got, tt.wantPlugins)
			}
			if got := countOf(t, m, "scheduler_plugin_execution_duration_seconds",
				map[string]string{"plugin": "A", "extension_point": "Filter", "status": "Unschedulable"}); tt.sampled && got != 1 {
				t.Errorf("timed %d rejecting Filter calls, want 1 with status Unschedulable", got)
			}
			if got := countOf(t, m, "scheduler_framework_extension_point_duration_seconds",
				map[string]string{"extension_point": "Reserve", "status": "Success", "profile": "test"}); got != 1 {
				t.Errorf("Reserve timed %d times, want 1", got)
			}
		})
	}
}
