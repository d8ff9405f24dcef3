// This file tests the score pools: what a released list leaves behind.

package framework

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/sets"
)

// TestReleaseScores checks that a totals-only cycle's list, given back
// with ReleaseScores, serves a later totals-only cycle without any of its
// figures showing there (a later cycle with fewer nodes, or whose every
// Score plugin skipped, included), and that a list with per-plugin scores
// is not given back: cycles after it leave it as it was.
func TestReleaseScores(t *testing.T) {
	log := &callLog{}
	a := &fakePlugin{name: "A", log: log, score: map[string]int64{"n1": 5, "n2": 10, "n3": 20}, normalize: true}
	b := &fakePlugin{name: "B", log: log, score: map[string]int64{"n1": 100, "n2": 0, "n3": 50}}
	f := newTestFramework(t, []*fakePlugin{a, b}, map[string]int32{"A": 3})
	cycle := func(totalsOnly, skipAll bool, nodes ...string) []NodePluginScores {
		t.Helper()
		state := NewCycleState()
		state.ScoreTotalsOnly = totalsOnly
		if skipAll {
			state.SkipScorePlugins = sets.New("A", "B")
		}
		got, s := f.RunScorePlugins(context.Background(), state, testPod, testNodes(nodes...))
		if !s.IsSuccess() {
			t.Fatal(s)
		}
		return got
	}
	release := func(totalsOnly bool, scores []NodePluginScores) {
		state := NewCycleState()
		state.ScoreTotalsOnly = totalsOnly
		ReleaseScores(state, scores)
	}
	tests := []struct {
		name    string
		skipAll bool
		nodes   []string
		want    []NodePluginScores
	}{
		{name: "as many nodes", nodes: []string{"n1", "n2", "n3"},
			want: []NodePluginScores{{Name: "n1", TotalScore: 175}, {Name: "n2", TotalScore: 150}, {Name: "n3", TotalScore: 350}}},
		{name: "fewer nodes", nodes: []string{"n2"}, want: []NodePluginScores{{Name: "n2", TotalScore: 300}}},
		{name: "every Score plugin skipped", skipAll: true, nodes: []string{"n1", "n2"},
			want: []NodePluginScores{{Name: "n1"}, {Name: "n2"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release(true, cycle(true, false, "n1", "n2", "n3"))
			if diff := cmp.Diff(tt.want, cycle(true, tt.skipAll, tt.nodes...)); diff != "" {
				t.Errorf("scores after a released list (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("per-plugin scores are not given back", func(t *testing.T) {
		kept := cycle(false, false, "n1", "n2")
		want := slices.Clone(kept)
		release(false, kept)
		for range 10 {
			release(true, cycle(true, false, "n3", "n3"))
		}
		if diff := cmp.Diff(want, kept); diff != "" {
			t.Errorf("a list with per-plugin scores changed after ReleaseScores (-want +got):\n%s", diff)
		}
	})
}
