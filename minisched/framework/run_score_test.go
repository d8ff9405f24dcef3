// This file tests the Score runner: weights, normalisation, skipped plugins
// and the range check.

package framework

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScoreWeightsAndNormalize(t *testing.T) {
	tests := []struct {
		name       string
		totalsOnly bool
		want       []NodePluginScores
	}{
		{
			name: "per-plugin scores",
			want: []NodePluginScores{
				{Name: "n1", Scores: []PluginScore{{Name: "A", Score: 150, Raw: 5}, {Name: "B", Score: 100, Raw: 100}}, TotalScore: 250},
				{Name: "n2", Scores: []PluginScore{{Name: "A", Score: 300, Raw: 10}, {Name: "B", Score: 0, Raw: 0}}, TotalScore: 300},
			},
		},
		{
			name:       "totals only",
			totalsOnly: true,
			want:       []NodePluginScores{{Name: "n1", TotalScore: 250}, {Name: "n2", TotalScore: 300}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &callLog{}
			a := &fakePlugin{name: "A", log: log, score: map[string]int64{"n1": 5, "n2": 10}, normalize: true}
			b := &fakePlugin{name: "B", log: log, score: map[string]int64{"n1": 100, "n2": 0}}
			skip := &fakePlugin{name: "S", log: log, score: map[string]int64{"n1": 100, "n2": 100}, preScore: NewStatus(Skip)}
			f := newTestFramework(t, []*fakePlugin{a, b, skip}, map[string]int32{"A": 3})
			state := NewCycleState()
			state.ScoreTotalsOnly = tt.totalsOnly
			nodes := testNodes("n1", "n2")
			if s := f.RunPreScorePlugins(context.Background(), state, testPod, nodes); !s.IsSuccess() {
				t.Fatal(s)
			}
			got, s := f.RunScorePlugins(context.Background(), state, testPod, nodes)
			if !s.IsSuccess() {
				t.Fatal(s)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("scores (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScoreOutOfRangeIsAnError(t *testing.T) {
	a := &fakePlugin{name: "A", log: &callLog{}, score: map[string]int64{"n1": 101}}
	f := newTestFramework(t, []*fakePlugin{a}, nil)
	_, s := f.RunScorePlugins(context.Background(), NewCycleState(), testPod, testNodes("n1"))
	if s.Code() != Error || !strings.Contains(s.Message(), "invalid score 101") {
		t.Errorf("status = %v, want an invalid-score error", s)
	}
}
