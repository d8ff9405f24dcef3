// Tests for PodTopologySpread's scoring. Expected values are computed by hand
// from kube-scheduler's formulas:
//
//	raw   = round(Σ over constraints the node has a key for: count × ln(domains + 2) + maxSkew - 1)
//	final = 100 × (max + min - raw) / max      (integer division; 100 for all if max = 0)
//
// with ln 4 = 1.386294 and ln 5 = 1.609438.
package podtopologyspread

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
)

func TestScore(t *testing.T) {
	threeNodes := []*v1.Node{zonedNode("a", "z1").Obj(), zonedNode("b", "z1").Obj(), zonedNode("c", "z2").Obj()}
	webPod := func(cs ...v1.TopologySpreadConstraint) *v1.Pod {
		p := st.MakePod().Name("p").Label("app", "web")
		for _, c := range cs {
			p.SpreadConstraint(c)
		}
		return p.Obj()
	}
	tests := []struct {
		name  string
		args  string
		pod   *v1.Pod
		pods  []*v1.Pod
		nodes []*v1.Node
		objs  []runtime.Object
		// feasible names the nodes that passed Filter; all if nil.
		feasible []string
		wantRaw  map[string]int64
		want     map[string]int64
		wantSkip bool
	}{
		{
			// Zones z1 (3 pods), z2 (0): weight ln 4.
			// a, b: 3 × 1.386294 + 0 = 4.16 → 4; c: 0.
			// Normalised: max 4, min 0: a, b 100 × 0 / 4 = 0; c 100 × 4 / 4 = 100.
			name:    "zone constraint",
			pod:     webPod(soft(1, zoneKey, web)),
			pods:    concat(podsOn("a", 2), podsOn("b", 1)),
			nodes:   threeNodes,
			wantRaw: map[string]int64{"a": 4, "b": 4, "c": 0},
			want:    map[string]int64{"a": 0, "b": 0, "c": 100},
		},
		{
			// Three feasible hosts: weight ln 5.
			// a: 2 × 1.609438 = 3.22 → 3; b: 1.61 → 2; c: 0.
			// Normalised: max 3, min 0: a 0, b 100 × 1 / 3 = 33, c 100.
			name:    "hostname constraint",
			pod:     webPod(soft(1, hostKey, web)),
			pods:    concat(podsOn("a", 2), podsOn("b", 1)),
			nodes:   threeNodes,
			wantRaw: map[string]int64{"a": 3, "b": 2, "c": 0},
			want:    map[string]int64{"a": 0, "b": 33, "c": 100},
		},
		{
			// zone (maxSkew 2, ln 4) + hostname (maxSkew 1, ln 5):
			// a: 3 × 1.386294 + 1 + 2 × 1.609438 = 8.38 → 8
			// b: 3 × 1.386294 + 1 + 1 × 1.609438 = 6.77 → 7
			// c: 0 + 1 + 0 = 1
			// Normalised: max 8, min 1: a 100 × 1 / 8 = 12, b 100 × 2 / 8 = 25, c 100 × 8 / 8 = 100.
			name:    "zone and hostname constraints add up",
			pod:     webPod(soft(2, zoneKey, web), soft(1, hostKey, web)),
			pods:    concat(podsOn("a", 2), podsOn("b", 1)),
			nodes:   threeNodes,
			wantRaw: map[string]int64{"a": 8, "b": 7, "c": 1},
			want:    map[string]int64{"a": 12, "b": 25, "c": 100},
		},
		{
			// Pods on a node that did not pass Filter still count for its
			// zone: c is infeasible but holds 3 pods, all in z2 with the
			// feasible b. Domains of feasible nodes: z1, z2 → ln 4.
			// a: 1 × 1.386294 = 1.39 → 1; b: 3 × 1.386294 = 4.16 → 4.
			// Normalised: max 4, min 1: a 100 × 4 / 4 = 100, b 100 × 1 / 4 = 25.
			name:     "counts cover all nodes, not just feasible ones",
			pod:      webPod(soft(1, zoneKey, web)),
			pods:     concat(podsOn("a", 1), podsOn("c", 3)),
			nodes:    []*v1.Node{zonedNode("a", "z1").Obj(), zonedNode("b", "z2").Obj(), zonedNode("c", "z2").Obj()},
			feasible: []string{"a", "b"},
			wantRaw:  map[string]int64{"a": 1, "b": 4},
			want:     map[string]int64{"a": 100, "b": 25},
		},
		{
			// Node c has no zone label: with the pod's own constraints it is
			// ignored (raw 0, final 0). Domains z1, z2 → ln 4.
			// a: 1.39 → 1; b: 0. Normalised over a, b: max 1, min 0: a 0, b 100.
			name:    "nodes missing the topology key are ignored",
			pod:     webPod(soft(1, zoneKey, web)),
			pods:    concat(podsOn("a", 1), podsOn("c", 5)),
			nodes:   []*v1.Node{zonedNode("a", "z1").Obj(), zonedNode("b", "z2").Obj(), zonedNode("c", "").Obj()},
			wantRaw: map[string]int64{"a": 1, "b": 0, "c": 0},
			want:    map[string]int64{"a": 0, "b": 100, "c": 0},
		},
		{
			// c (z2, no pool label) does not match the pod's nodeSelector:
			// under the default Honor policy its 3 pods do not count.
			// Feasible a (z1), b (z2): ln 4. a: 1.39 → 1; b: 0.
			// Normalised: a 0, b 100.
			name: "nodeAffinityPolicy Honor leaves out pods on nodes the pod cannot use",
			pod: st.MakePod().Name("p").Label("app", "web").NodeSelector("pool", "x").
				SpreadConstraint(soft(1, zoneKey, web)).Obj(),
			pods: concat(podsOn("a", 1), podsOn("c", 3)),
			nodes: []*v1.Node{
				zonedNode("a", "z1").Label("pool", "x").Obj(),
				zonedNode("b", "z2").Label("pool", "x").Obj(),
				zonedNode("c", "z2").Obj(),
			},
			feasible: []string{"a", "b"},
			wantRaw:  map[string]int64{"a": 1, "b": 0},
			want:     map[string]int64{"a": 0, "b": 100},
		},
		{
			// With Ignore, c's 3 pods count for z2: b 3 × 1.386294 = 4.16 → 4.
			// Normalised: max 4, min 1: a 100 × 4 / 4 = 100, b 100 × 1 / 4 = 25.
			name: "nodeAffinityPolicy Ignore counts pods on every node",
			pod: st.MakePod().Name("p").Label("app", "web").NodeSelector("pool", "x").
				SpreadConstraint(soft(1, zoneKey, web, affinityPolicy(v1.NodeInclusionPolicyIgnore))).Obj(),
			pods: concat(podsOn("a", 1), podsOn("c", 3)),
			nodes: []*v1.Node{
				zonedNode("a", "z1").Label("pool", "x").Obj(),
				zonedNode("b", "z2").Label("pool", "x").Obj(),
				zonedNode("c", "z2").Obj(),
			},
			feasible: []string{"a", "b"},
			wantRaw:  map[string]int64{"a": 1, "b": 4},
			want:     map[string]int64{"a": 100, "b": 25},
		},
		{
			// With Honor, pods on c (untolerated NoSchedule taint) do not count.
			// a 1.39 → 1, b 0 → a 0, b 100.
			name: "nodeTaintsPolicy Honor leaves out pods on untolerated tainted nodes",
			pod:  webPod(soft(1, zoneKey, web, taintsPolicy(v1.NodeInclusionPolicyHonor))),
			pods: concat(podsOn("a", 1), podsOn("c", 3)),
			nodes: []*v1.Node{
				zonedNode("a", "z1").Obj(), zonedNode("b", "z2").Obj(),
				zonedNode("c", "z2").Taint("dedicated", "x", v1.TaintEffectNoSchedule).Obj(),
			},
			feasible: []string{"a", "b"},
			wantRaw:  map[string]int64{"a": 1, "b": 0},
			want:     map[string]int64{"a": 0, "b": 100},
		},
		{
			// maxSkew 3 adds 2 to every node: a 1.39 + 2 = 3.39 → 3, b 2.
			// Normalised: max 3, min 2: a 100 × 2 / 3 = 66, b 100 × 3 / 3 = 100.
			name:    "a larger maxSkew flattens the scores",
			pod:     webPod(soft(3, zoneKey, web)),
			pods:    podsOn("a", 1),
			nodes:   []*v1.Node{zonedNode("a", "z1").Obj(), zonedNode("b", "z2").Obj()},
			wantRaw: map[string]int64{"a": 3, "b": 2},
			want:    map[string]int64{"a": 66, "b": 100},
		},
		{
			// No matching pods and maxSkew 1: every raw score is 0, so
			// every node gets 100.
			name:    "all raw scores 0",
			pod:     webPod(soft(1, zoneKey, web)),
			nodes:   threeNodes,
			wantRaw: map[string]int64{"a": 0, "b": 0, "c": 0},
			want:    map[string]int64{"a": 100, "b": 100, "c": 100},
		},
		{
			// System defaults (hostname maxSkew 3, zone maxSkew 5) with the
			// Service's selector app=web. Node b has no zone label and, with
			// system defaults, is still scored; it joins zone "" for the
			// domain count. Hostname: 2 feasible nodes → ln 4; zone: "z1"
			// and "" → ln 4.
			// a: host 2 × 1.386294 + 2 + zone 2 × 1.386294 + 4 = 11.55 → 12
			// b: host 1 × 1.386294 + 2 (no zone label: no zone term) = 3.39 → 3
			// Normalised: max 12, min 3: a 100 × 3 / 12 = 25, b 100 × 12 / 12 = 100.
			name:    "system default constraints from a Service",
			pod:     webPod(),
			pods:    concat(podsOn("a", 2), podsOn("b", 1)),
			nodes:   []*v1.Node{zonedNode("a", "z1").Obj(), zonedNode("b", "").Obj()},
			objs:    []runtime.Object{service("web", web)},
			wantRaw: map[string]int64{"a": 12, "b": 3},
			want:    map[string]int64{"a": 25, "b": 100},
		},
		{
			// List defaults require every topology key: b (no zone) is
			// ignored. Zone: only z1 → ln 3 = 1.098612.
			// a: 2 × 1.098612 + 0 = 2.20 → 2. Normalised: a 100 × 2 / 2 = 100, b 0.
			name: "list default constraints require every key",
			args: `{"defaultingType":"List","defaultConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone",` +
				`"whenUnsatisfiable":"ScheduleAnyway"}]}`,
			pod:     webPod(),
			pods:    concat(podsOn("a", 2), podsOn("b", 1)),
			nodes:   []*v1.Node{zonedNode("a", "z1").Obj(), zonedNode("b", "").Obj()},
			objs:    []runtime.Object{service("web", web)},
			wantRaw: map[string]int64{"a": 2, "b": 0},
			want:    map[string]int64{"a": 100, "b": 0},
		},
		{
			name:     "only hard constraints: Skip",
			pod:      webPod(hard(1, zoneKey, web)),
			nodes:    threeNodes,
			wantSkip: true,
		},
		{
			name:     "no constraints and no selecting Service: Skip",
			pod:      webPod(),
			nodes:    threeNodes,
			wantSkip: true,
		},
		{
			name:     "no nodes: Skip",
			pod:      webPod(soft(1, zoneKey, web)),
			wantSkip: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := newPlugin(t, ctx, tt.args, tt.pods, tt.nodes, tt.objs...)
			var feasible []*framework.NodeInfo
			if tt.feasible == nil {
				feasible = nodeInfos(t, pl)
			} else {
				for _, n := range tt.feasible {
					feasible = append(feasible, nodeInfo(t, pl, n))
				}
			}
			state := framework.NewCycleState()
			s := pl.PreScore(ctx, state, tt.pod, feasible)
			if tt.wantSkip {
				if !s.IsSkip() {
					t.Fatalf("PreScore = %v, want Skip", s)
				}
				return
			}
			if !s.IsSuccess() {
				t.Fatalf("PreScore: %v", s)
			}
			var scores framework.NodeScoreList
			gotRaw := map[string]int64{}
			for _, ni := range feasible {
				score, s := pl.Score(ctx, state, tt.pod, ni)
				if !s.IsSuccess() {
					t.Fatalf("Score(%s): %v", ni.Node().Name, s)
				}
				gotRaw[ni.Node().Name] = score
				scores = append(scores, framework.NodeScore{Name: ni.Node().Name, Score: score})
			}
			if diff := cmp.Diff(tt.wantRaw, gotRaw); diff != "" {
				t.Errorf("raw scores (-want +got):\n%s", diff)
			}
			if s := pl.ScoreExtensions().NormalizeScore(ctx, state, tt.pod, scores); !s.IsSuccess() {
				t.Fatalf("NormalizeScore: %v", s)
			}
			got := map[string]int64{}
			for _, ns := range scores {
				got[ns.Name] = ns.Score
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("normalised scores (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNormalizeScore(t *testing.T) {
	tests := []struct {
		name    string
		ignored []string
		scores  framework.NodeScoreList
		want    framework.NodeScoreList
	}{
		{
			// max 10, min 2: 100 × (12 - s) / 10.
			name:   "reversed and scaled",
			scores: framework.NodeScoreList{{Name: "a", Score: 2}, {Name: "b", Score: 5}, {Name: "c", Score: 10}},
			want:   framework.NodeScoreList{{Name: "a", Score: 100}, {Name: "b", Score: 70}, {Name: "c", Score: 20}},
		},
		{
			// c is left out of min/max: max 7, min 3 → a 100 × 7 / 7, b 100 × 3 / 7 = 42.
			name:    "ignored nodes score 0 and do not count for min and max",
			ignored: []string{"c"},
			scores:  framework.NodeScoreList{{Name: "a", Score: 3}, {Name: "b", Score: 7}, {Name: "c", Score: 0}},
			want:    framework.NodeScoreList{{Name: "a", Score: 100}, {Name: "b", Score: 42}, {Name: "c", Score: 0}},
		},
		{
			name:    "max 0: everyone 100, ignored 0",
			ignored: []string{"b"},
			scores:  framework.NodeScoreList{{Name: "a", Score: 0}, {Name: "b", Score: 0}},
			want:    framework.NodeScoreList{{Name: "a", Score: 100}, {Name: "b", Score: 0}},
		},
		{
			// Equal non-zero scores: 100 × (4 + 4 - 4) / 4 = 100.
			name:   "equal scores",
			scores: framework.NodeScoreList{{Name: "a", Score: 4}, {Name: "b", Score: 4}},
			want:   framework.NodeScoreList{{Name: "a", Score: 100}, {Name: "b", Score: 100}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			state := framework.NewCycleState()
			state.Write(preScoreStateKey, &preScoreState{IgnoredNodes: sets.New(tt.ignored...)})
			pl := &PodTopologySpread{}
			if s := pl.NormalizeScore(ctx, state, st.MakePod().Obj(), tt.scores); !s.IsSuccess() {
				t.Fatal(s)
			}
			if diff := cmp.Diff(tt.want, tt.scores); diff != "" {
				t.Errorf("scores (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScoreWithoutPreScore(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl := newPlugin(t, ctx, "", nil, []*v1.Node{zonedNode("a", "z1").Obj()})
	if _, s := pl.Score(ctx, framework.NewCycleState(), st.MakePod().Obj(),
		nodeInfo(t, pl, "a")); s.Code() != framework.Error {
		t.Errorf("Score without PreScore state = %v, want Error", s)
	}
	if s := pl.NormalizeScore(ctx, framework.NewCycleState(), st.MakePod().Obj(), nil); s.Code() != framework.Error {
		t.Errorf("NormalizeScore without PreScore state = %v, want Error", s)
	}
}
