package minisched

import (
	"math/rand/v2"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/framework"
)

func newTestScheduler() *Scheduler {
	return &Scheduler{rng: rand.New(rand.NewPCG(1, 2))}
}

func TestSelectHost(t *testing.T) {
	tests := []struct {
		name   string
		scores []framework.NodePluginScores
		// want lists the nodes that may be chosen.
		want []string
	}{
		{
			name: "unique best",
			scores: []framework.NodePluginScores{
				{Name: "a", TotalScore: 1}, {Name: "b", TotalScore: 30}, {Name: "c", TotalScore: 2},
			},
			want: []string{"b"},
		},
		{
			name: "tie among the best",
			scores: []framework.NodePluginScores{
				{Name: "a", TotalScore: 5}, {Name: "b", TotalScore: 9}, {Name: "c", TotalScore: 9},
			},
			want: []string{"b", "c"},
		},
		{
			name:   "single node",
			scores: []framework.NodePluginScores{{Name: "a"}},
			want:   []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestScheduler()
			seen := map[string]bool{}
			for range 200 {
				host := s.selectHost(tt.scores)
				seen[host] = true
			}
			if len(seen) != len(tt.want) {
				t.Errorf("chose %v, want each of %v", seen, tt.want)
			}
			for _, w := range tt.want {
				if !seen[w] {
					t.Errorf("never chose %s", w)
				}
			}
		})
	}
}

// TestSelectHostIsUniform checks ties are broken uniformly: each of four
// tied nodes gets about a quarter of 40,000 draws.
func TestSelectHostIsUniform(t *testing.T) {
	s := newTestScheduler()
	scores := []framework.NodePluginScores{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}}
	counts := map[string]int{}
	const draws = 40000
	for range draws {
		host := s.selectHost(scores)
		counts[host]++
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		if c := counts[n]; c < draws/4*9/10 || c > draws/4*11/10 {
			t.Errorf("node %s chosen %d times of %d, want about %d", n, c, draws, draws/4)
		}
	}
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	tests := []struct {
		name       string
		global     int32
		profile    *int32
		numNodes   int
		wantToFind int
	}{
		{name: "small cluster: all nodes", numNodes: 99, wantToFind: 99},
		{name: "adaptive at 1000 nodes: 42%", numNodes: 1000, wantToFind: 420},
		{name: "adaptive at 5000 nodes: 10%", numNodes: 5000, wantToFind: 500},
		{name: "adaptive never under 5%", numNodes: 6000, wantToFind: 300},
		{name: "never under 100", numNodes: 150, global: 10, wantToFind: 100},
		{name: "global 30%", numNodes: 1000, global: 30, wantToFind: 300},
		{name: "profile overrides global", numNodes: 1000, global: 30, profile: ptr.To[int32](60), wantToFind: 600},
		{name: "100% means all", numNodes: 5000, global: 100, wantToFind: 5000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Scheduler{percentageOfNodesToScore: tt.global, profilePercentage: map[string]*int32{"p": tt.profile}}
			if got := s.numFeasibleNodesToFind("p", tt.numNodes); got != tt.wantToFind {
				t.Errorf("numFeasibleNodesToFind(%d) = %d, want %d", tt.numNodes, got, tt.wantToFind)
			}
		})
	}
}

func TestTruncateMessage(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantLen int
	}{
		{name: "short", in: "0/3 nodes are available", wantLen: 23},
		{name: "long", in: strings.Repeat("x", 5000), wantLen: noteLengthLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := truncateMessage(tt.in); len(got) != tt.wantLen {
				t.Errorf("len = %d, want %d", len(got), tt.wantLen)
			}
		})
	}
}
