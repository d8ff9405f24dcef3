package minisched

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/framework"
)

func newTestScheduler() *Scheduler {
	return &Scheduler{rng: rand.New(rand.NewPCG(1, 2))}
}

// TestSelectHost checks the ranking kube-scheduler v1.37 selects from: a
// heap by total score, ties going to the higher Randomizer (extenders set
// it), and otherwise to the tied node the heap holds first, which is the
// first of them in the order given.
func TestSelectHost(t *testing.T) {
	tests := []struct {
		name   string
		scores []framework.NodePluginScores
		// want is the order the nodes are popped in.
		want []string
	}{
		{
			name: "best first",
			scores: []framework.NodePluginScores{
				{Name: "a", TotalScore: 1}, {Name: "b", TotalScore: 30}, {Name: "c", TotalScore: 2}, {Name: "d", TotalScore: 20},
			},
			want: []string{"b", "d", "c", "a"},
		},
		{
			name: "a tie without extenders goes to the first found",
			scores: []framework.NodePluginScores{
				{Name: "a", TotalScore: 5}, {Name: "b", TotalScore: 9}, {Name: "c", TotalScore: 9},
			},
			want: []string{"b", "c", "a"},
		},
		{
			name: "a tie between nodes extenders scored goes to the higher randomizer",
			scores: []framework.NodePluginScores{
				{Name: "a", TotalScore: 9, Randomizer: 3}, {Name: "b", TotalScore: 9, Randomizer: 7},
				{Name: "c", TotalScore: 9, Randomizer: 5},
			},
			want: []string{"b", "c", "a"},
		},
		{
			name:   "single node",
			scores: []framework.NodePluginScores{{Name: "a"}},
			want:   []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scores := slices.Clone(tt.scores)
			ranking := selectHost(scores)
			var got []string
			for ranking.Len() > 0 {
				got = append(got, ranking.Pop().Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("popped order (-want +got):\n%s", diff)
			}
			// The heap is built in scores' array: every node stays in it,
			// in some order, for the attempt record to find by name.
			byName := func(a, b framework.NodePluginScores) int { return strings.Compare(a.Name, b.Name) }
			before, after := slices.SortedFunc(slices.Values(tt.scores), byName), slices.SortedFunc(slices.Values(scores), byName)
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("selectHost lost or changed a node the record reads (-before +after):\n%s", diff)
			}
		})
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
