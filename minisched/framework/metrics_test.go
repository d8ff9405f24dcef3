// This file tests the metrics sampling: extension points always timed,
// plugin calls only in sampled cycles.

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
		preFilter   bool   // the cycle runs PreFilter (and so lists Filter's series once)
		wantPlugins uint64 // Filter calls of plugin A timed
		wantScores  uint64 // and its Score calls, on the two feasible nodes
	}{
		{name: "a sampled cycle times each plugin call", sampled: true, wantPlugins: 3, wantScores: 2},
		{name: "a sampled cycle after PreFilter times each plugin call", sampled: true, preFilter: true,
			wantPlugins: 3, wantScores: 2},
		{name: "other cycles time none", sampled: false, wantPlugins: 0},
		{name: "other cycles after PreFilter time none", sampled: false, preFilter: true, wantPlugins: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := metrics.New()
			log := &callLog{}
			a := &fakePlugin{name: "A", log: log, filterFail: map[string]*Status{"n1": NewStatus(Unschedulable, "no")},
				score: map[string]int64{"n2": 10, "n3": 20}, normalize: true}
			f := newTestFramework(t, []*fakePlugin{a}, nil, WithMetrics(m))
			state := NewCycleState()
			state.RecordPluginMetrics = tt.sampled
			nodes := testNodes("n1", "n2", "n3")
			if tt.preFilter {
				if _, sts, _ := f.RunPreFilterPlugins(context.Background(), state, testPod, nodes); !sts.IsSuccess() {
					t.Fatal(sts)
				}
			}
			for _, ni := range nodes {
				f.RunFilterPlugins(context.Background(), state, testPod, ni)
			}
			if _, sts := f.RunScorePlugins(context.Background(), state, testPod, nodes[1:]); !sts.IsSuccess() {
				t.Fatal(sts)
			}
			if got := countOf(t, m, "scheduler_plugin_execution_duration_seconds",
				map[string]string{"plugin": "A", "extension_point": "Score", "status": "Success"}); got != tt.wantScores {
				t.Errorf("timed %d Score calls of A, want %d", got, tt.wantScores)
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
			if got := countOf(t, m, "scheduler_plugin_execution_duration_seconds",
				map[string]string{"plugin": "A", "extension_point": "Filter", "status": "Success"}); tt.sampled && got != 2 {
				t.Errorf("timed %d passing Filter calls, want 2 with status Success", got)
			}
			if got := countOf(t, m, "scheduler_framework_extension_point_duration_seconds",
				map[string]string{"extension_point": "Reserve", "status": "Success", "profile": "test"}); got != 1 {
				t.Errorf("Reserve timed %d times, want 1", got)
			}
		})
	}
}
