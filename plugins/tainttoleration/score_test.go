// Tests for TaintToleration's scoring: the raw counts of Score and their
// reversed normalisation.
package tainttoleration

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestScore(t *testing.T) {
	prefer := v1.TaintEffectPreferNoSchedule
	tests := []struct {
		name  string
		pod   *v1.Pod
		nodes []*v1.Node
		// wantRaw are Score's counts; want are the normalised scores,
		// computed by hand as 100 - 100*count/maxCount (100 for all when
		// maxCount is 0), kube-scheduler's DefaultNormalizeScore reversed.
		wantRaw []int64
		want    framework.NodeScoreList
	}{
		{
			name: "a node whose taints the pod tolerates beats one with an intolerable taint",
			pod: st.MakePod().Name("p").Toleration(v1.Toleration{Key: "foo", Operator: v1.TolerationOpEqual,
				Value: "bar", Effect: prefer}).Obj(),
			nodes: []*v1.Node{
				st.MakeNode().Name("a").Taint("foo", "bar", prefer).Obj(),
				st.MakeNode().Name("b").Taint("foo", "blah", prefer).Obj(),
			},
			// maxCount 1: a 100-0 = 100, b 100-100 = 0.
			wantRaw: []int64{0, 1},
			want:    framework.NodeScoreList{{Name: "a", Score: 100}, {Name: "b", Score: 0}},
		},
		{
			name: "nodes whose taints are all tolerated score the same, however many",
			pod: st.MakePod().Name("p").
				Toleration(v1.Toleration{Key: "cpu-type", Operator: v1.TolerationOpEqual, Value: "arm64", Effect: prefer}).
				Toleration(v1.Toleration{Key: "disk-type", Operator: v1.TolerationOpEqual, Value: "ssd", Effect: prefer}).Obj(),
			nodes: []*v1.Node{
				st.MakeNode().Name("a").Obj(),
				st.MakeNode().Name("b").Taint("cpu-type", "arm64", prefer).Obj(),
				st.MakeNode().Name("c").Taint("cpu-type", "arm64", prefer).Taint("disk-type", "ssd", prefer).Obj(),
			},
			// maxCount 0: every node gets 100.
			wantRaw: []int64{0, 0, 0},
			want:    framework.NodeScoreList{{Name: "a", Score: 100}, {Name: "b", Score: 100}, {Name: "c", Score: 100}},
		},
		{
			name: "the more intolerable taints, the lower the score",
			pod: st.MakePod().Name("p").Toleration(v1.Toleration{Key: "foo", Operator: v1.TolerationOpEqual,
				Value: "bar", Effect: prefer}).Obj(),
			nodes: []*v1.Node{
				st.MakeNode().Name("a").Obj(),
				st.MakeNode().Name("b").Taint("cpu-type", "arm64", prefer).Obj(),
				st.MakeNode().Name("c").Taint("cpu-type", "arm64", prefer).Taint("disk-type", "ssd", prefer).Obj(),
			},
			// maxCount 2: a 100, b 100-100*1/2 = 50, c 100-100 = 0.
			wantRaw: []int64{0, 1, 2},
			want:    framework.NodeScoreList{{Name: "a", Score: 100}, {Name: "b", Score: 50}, {Name: "c", Score: 0}},
		},
		{
			name: "only PreferNoSchedule taints count, and only PreferNoSchedule or effect-less tolerations",
			pod: st.MakePod().Name("p").
				// Tolerates the NoSchedule taint, but that does not count here.
				Toleration(v1.Toleration{Key: "cpu-type", Operator: v1.TolerationOpEqual,
					Value: "arm64", Effect: v1.TaintEffectNoSchedule}).
				// A toleration with no effect covers PreferNoSchedule.
				Toleration(v1.Toleration{Key: "zone", Operator: v1.TolerationOpExists}).
				// NoExecute tolerations are left out by PreScore.
				Toleration(v1.Toleration{Key: "disk-type", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}).Obj(),
			nodes: []*v1.Node{
				st.MakeNode().Name("a").Obj(),
				st.MakeNode().Name("b").Taint("cpu-type", "arm64", v1.TaintEffectNoSchedule).Taint("zone", "z1", prefer).Obj(),
				st.MakeNode().Name("c").Taint("cpu-type", "arm64", prefer).Taint("disk-type", "ssd", prefer).Obj(),
			},
			// maxCount 2: a 100, b 100, c 0.
			wantRaw: []int64{0, 0, 2},
			want:    framework.NodeScoreList{{Name: "a", Score: 100}, {Name: "b", Score: 100}, {Name: "c", Score: 0}},
		},
		{
			name: "no tolerations: an untainted node wins",
			pod:  st.MakePod().Name("p").Obj(),
			nodes: []*v1.Node{
				st.MakeNode().Name("a").Obj(),
				st.MakeNode().Name("b").Taint("cpu-type", "arm64", prefer).Obj(),
				st.MakeNode().Name("c").Taint("x", "", prefer).Taint("y", "", prefer).Taint("z", "", prefer).Obj(),
			},
			// maxCount 3: a 100, b 100-100*1/3 = 100-33 = 67, c 0.
			wantRaw: []int64{0, 1, 3},
			want:    framework.NodeScoreList{{Name: "a", Score: 100}, {Name: "b", Score: 67}, {Name: "c", Score: 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := &TaintToleration{}
			var nodeInfos []*framework.NodeInfo
			for _, n := range tt.nodes {
				nodeInfos = append(nodeInfos, plugintesting.MakeNodeInfo(n))
			}
			state := framework.NewCycleState()
			if s := pl.PreScore(ctx, state, tt.pod, nodeInfos); !s.IsSuccess() {
				t.Fatalf("PreScore: %v", s)
			}
			var raw []int64
			var scores framework.NodeScoreList
			for _, ni := range nodeInfos {
				score, s := pl.Score(ctx, state, tt.pod, ni)
				if !s.IsSuccess() {
					t.Fatalf("Score: %v", s)
				}
				raw = append(raw, score)
				scores = append(scores, framework.NodeScore{Name: ni.Node().Name, Score: score})
			}
			if diff := cmp.Diff(tt.wantRaw, raw); diff != "" {
				t.Errorf("Score (-want +got):\n%s", diff)
			}
			if s := pl.ScoreExtensions().NormalizeScore(ctx, state, tt.pod, scores); !s.IsSuccess() {
				t.Fatalf("NormalizeScore: %v", s)
			}
			if diff := cmp.Diff(tt.want, scores); diff != "" {
				t.Errorf("NormalizeScore (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScoreErrors(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl := &TaintToleration{}
	pod := st.MakePod().Name("p").Obj()
	if _, s := pl.Score(ctx, framework.NewCycleState(), pod,
		plugintesting.MakeNodeInfo(st.MakeNode().Name("n").Obj())); s.Code() != framework.Error {
		t.Errorf("Score without PreScore = %v, want code Error", s)
	}
	state := framework.NewCycleState()
	if s := pl.PreScore(ctx, state, pod, nil); !s.IsSuccess() {
		t.Fatal(s)
	}
	if _, s := pl.Score(ctx, state, pod, framework.NewNodeInfo()); s.Code() != framework.Error {
		t.Errorf("Score on a NodeInfo without node = %v, want code Error", s)
	}
}

func TestNormalizeReversed(t *testing.T) {
	tests := []struct {
		name   string
		scores []int64
		want   []int64
	}{
		{name: "no nodes", scores: nil, want: nil},
		{name: "all zero: everyone gets the maximum", scores: []int64{0, 0, 0}, want: []int64{100, 100, 100}},
		// maxCount 4: 100-0, 100-25, 100-50, 100-100.
		{name: "proportional", scores: []int64{0, 1, 2, 4}, want: []int64{100, 75, 50, 0}},
		// maxCount 3: 100-100*2/3 = 100-66 = 34 (integer division).
		{name: "integer division rounds the product down", scores: []int64{2, 3}, want: []int64{34, 0}},
		{name: "one node with taints", scores: []int64{5}, want: []int64{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var list framework.NodeScoreList
			for i, s := range tt.scores {
				list = append(list, framework.NodeScore{Name: string(rune('a' + i)), Score: s})
			}
			framework.DefaultNormalizeScore(framework.MaxNodeScore, true, list)
			var got []int64
			for _, ns := range list {
				got = append(got, ns.Score)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DefaultNormalizeScore reversed (-want +got):\n%s", diff)
			}
		})
	}
}
