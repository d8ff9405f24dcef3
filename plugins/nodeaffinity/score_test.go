// Tests for NodeAffinity's PreScore, Score and NormalizeScore. Expected
// values are computed by hand from kube-scheduler's formula: raw score = sum
// of the weights of matching preferred terms (pod's plus addedAffinity's);
// normalised = 100 × raw / max raw, integer division, all 0 if max is 0.
package nodeaffinity

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestScore(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("node1").Label("foo", "bar").Obj(),
		st.MakeNode().Name("node2").Label("foo", "bar").Label("key", "value").Obj(),
		st.MakeNode().Name("node3").Label("az", "az1").Obj(),
	}
	// Weights 2 (foo=bar), 4 (key=value), 5 (az=az1).
	threeTerms := preferred(
		pref(2, labelTerm(expr("foo", v1.NodeSelectorOpIn, "bar"))),
		pref(4, labelTerm(expr("key", v1.NodeSelectorOpIn, "value"))),
		pref(5, labelTerm(expr("az", v1.NodeSelectorOpIn, "az1"))),
	)
	addedAzExists := rawArgs(`{"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
		{"weight": 3, "preference": {"matchExpressions": [{"key": "az", "operator": "Exists"}]}}]}}`)

	tests := []struct {
		name         string
		args         *runtime.RawExtension
		pod          *v1.Pod
		skipPreScore bool
		wantSkip     bool
		wantRaw      []int64
		wantNorm     []int64
	}{
		{
			name:     "no node affinity: PreScore skips",
			pod:      st.MakePod().Name("p").Obj(),
			wantSkip: true,
		},
		{
			name:     "required node affinity only: PreScore skips",
			pod:      st.MakePod().Name("p").NodeAffinity(required(labelTerm(expr("foo", v1.NodeSelectorOpExists)))).Obj(),
			wantSkip: true,
		},
		{
			// An empty, non-nil preferred list is scored (to 0 everywhere).
			name: "empty preferred list",
			pod: st.MakePod().Name("p").NodeAffinity(&v1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{},
			}).Obj(),
			wantRaw:  []int64{0, 0, 0},
			wantNorm: []int64{0, 0, 0},
		},
		{
			name: "no node matches",
			pod: st.MakePod().Name("p").NodeAffinity(preferred(
				pref(3, labelTerm(expr("disk", v1.NodeSelectorOpIn, "ssd"))))).Obj(),
			wantRaw:  []int64{0, 0, 0},
			wantNorm: []int64{0, 0, 0},
		},
		{
			// node1 2; node2 2+4=6; node3 5. Max 6: 200/6=33, 600/6=100, 500/6=83.
			name:     "weights of matching terms add up",
			pod:      st.MakePod().Name("p").NodeAffinity(threeTerms).Obj(),
			wantRaw:  []int64{2, 6, 5},
			wantNorm: []int64{33, 100, 83},
		},
		{
			name:         "PreScore not run: Score parses the pod itself",
			pod:          st.MakePod().Name("p").NodeAffinity(threeTerms).Obj(),
			skipPreScore: true,
			wantRaw:      []int64{2, 6, 5},
			wantNorm:     []int64{33, 100, 83},
		},
		{
			// A term with two requirements (ANDed) matches only node2: 10.
			// Weight 0 and empty terms count for nothing. Max 10.
			name: "ANDed requirements, weight 0 and empty terms",
			pod: st.MakePod().Name("p").NodeAffinity(preferred(
				pref(10, labelTerm(expr("foo", v1.NodeSelectorOpIn, "bar"), expr("key", v1.NodeSelectorOpExists))),
				pref(0, labelTerm(expr("az", v1.NodeSelectorOpExists))),
				pref(7, v1.NodeSelectorTerm{}),
			)).Obj(),
			wantRaw:  []int64{0, 10, 0},
			wantNorm: []int64{0, 100, 0},
		},
		{
			// node1 matches both terms: 1+1=2, others 0. Max 2.
			name: "metadata.name field term",
			pod: st.MakePod().Name("p").NodeAffinity(preferred(
				pref(1, fieldTerm(nameIn("node1"))),
				pref(1, labelTerm(expr("foo", v1.NodeSelectorOpIn, "bar"), expr("key", v1.NodeSelectorOpDoesNotExist))),
			)).Obj(),
			wantRaw:  []int64{2, 0, 0},
			wantNorm: []int64{100, 0, 0},
		},
		{
			// addedAffinity's term (az exists, weight 3) alone: node3 3. Max 3.
			name:     "addedAffinity preferred terms for a pod without affinity",
			args:     addedAzExists,
			pod:      st.MakePod().Name("p").Obj(),
			wantRaw:  []int64{0, 0, 3},
			wantNorm: []int64{0, 0, 100},
		},
		{
			// Pod's 2, 6, 5 plus added 3 on node3: 2, 6, 8. Max 8:
			// 200/8=25, 600/8=75, 800/8=100.
			name:     "addedAffinity and the pod's terms add up",
			args:     addedAzExists,
			pod:      st.MakePod().Name("p").NodeAffinity(threeTerms).Obj(),
			wantRaw:  []int64{2, 6, 8},
			wantNorm: []int64{25, 75, 100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := newPlugin(t, tt.args)
			state := framework.NewCycleState()
			nodeInfos := make([]*framework.NodeInfo, len(nodes))
			for i, n := range nodes {
				nodeInfos[i] = plugintesting.MakeNodeInfo(n)
			}
			if !tt.skipPreScore {
				s := pl.PreScore(ctx, state, tt.pod, nodeInfos)
				if s.IsSkip() != tt.wantSkip {
					t.Fatalf("PreScore = %v, want Skip %v", s, tt.wantSkip)
				}
				if tt.wantSkip {
					return
				}
				if !s.IsSuccess() {
					t.Fatalf("PreScore = %v", s)
				}
			}
			var scores framework.NodeScoreList
			var raw []int64
			for _, ni := range nodeInfos {
				score, s := pl.Score(ctx, state, tt.pod, ni)
				if !s.IsSuccess() {
					t.Fatalf("Score(%s) = %v", ni.Node().Name, s)
				}
				scores = append(scores, framework.NodeScore{Name: ni.Node().Name, Score: score})
				raw = append(raw, score)
			}
			if diff := cmp.Diff(tt.wantRaw, raw); diff != "" {
				t.Errorf("raw scores (-want +got):\n%s", diff)
			}
			if s := pl.ScoreExtensions().NormalizeScore(ctx, state, tt.pod, scores); !s.IsSuccess() {
				t.Fatalf("NormalizeScore = %v", s)
			}
			var norm []int64
			for _, ns := range scores {
				norm = append(norm, ns.Score)
			}
			if diff := cmp.Diff(tt.wantNorm, norm); diff != "" {
				t.Errorf("normalised scores (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPreScoreBrokenAffinity(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl := newPlugin(t, nil)
	pod := st.MakePod().Name("p").NodeAffinity(preferred(
		pref(1, labelTerm(expr("invalid key", v1.NodeSelectorOpIn, "v"))))).Obj()
	if s := pl.PreScore(ctx, framework.NewCycleState(), pod, nil); s.Code() != framework.Error {
		t.Errorf("PreScore = %v, want Error", s)
	}
	// Without PreScore, Score meets the same error.
	ni := plugintesting.MakeNodeInfo(st.MakeNode().Name("node1").Obj())
	if _, s := pl.Score(ctx, framework.NewCycleState(), pod, ni); s.Code() != framework.Error {
		t.Errorf("Score = %v, want Error", s)
	}
}

func TestNormalizeScore(t *testing.T) {
	tests := []struct {
		name string
		in   []int64
		want []int64
	}{
		{name: "no nodes", in: nil, want: nil},
		{name: "all zero stay zero", in: []int64{0, 0, 0}, want: []int64{0, 0, 0}},
		// 100×5/10=50, 100×10/10=100.
		{name: "scaled to the maximum", in: []int64{0, 5, 10}, want: []int64{0, 50, 100}},
		// 100×3/7=42 (integer division), 100×7/7=100.
		{name: "integer division rounds down", in: []int64{3, 7}, want: []int64{42, 100}},
		// 100×1/1=100: a lone positive score is raised, not reversed.
		{name: "single node", in: []int64{1}, want: []int64{100}},
		// Raw sums above 100: 100×150/300=50, 100×300/300=100.
		{name: "raw scores above 100", in: []int64{150, 300}, want: []int64{50, 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			var scores framework.NodeScoreList
			for i, s := range tt.in {
				scores = append(scores, framework.NodeScore{Name: string(rune('a' + i)), Score: s})
			}
			if s := newPlugin(t, nil).NormalizeScore(ctx, framework.NewCycleState(), nil, scores); !s.IsSuccess() {
				t.Fatalf("NormalizeScore = %v", s)
			}
			var got []int64
			for _, ns := range scores {
				got = append(got, ns.Score)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("scores (-want +got):\n%s", diff)
			}
		})
	}
}
