// Tests for InterPodAffinity's PreScore, Score and NormalizeScore. Expected
// values are hand-computed from kube-scheduler's formula: per topology
// domain, the sum of matching terms' weights (+ for affinity, − for
// anti-affinity, hardPodAffinityWeight for existing pods' required
// affinity); a node's raw score is the sum over its domains; normalised,
// 100 × ((raw − min) / (max − min)), truncated, or 0 when max = min.
package interpodaffinity

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/minisched/minisched/minisched/framework"
)

// scoreNodes are testNodes plus "e", a node without any label.
func scoreNodes() []*v1.Node { return append(testNodes(), node("e")) }

func TestScore(t *testing.T) {
	// Existing pods whose own terms select app=web pods.
	requiresWeb := pod("x").NodeName("a").PodAffinity(required(term(zone, "app", "web"))).Obj()
	avoidsWeb := pod("y").NodeName("c").PodAntiAffinity(preferredAnti(weighted(4, term(zone, "app", "web")))).Obj()
	prefersWeb := pod("z").NodeName("b").PodAffinity(preferred(weighted(2, term(hostname, "app", "web")))).Obj()
	// On e, which has no labels, so in no domain: it never counts.
	requiresWebOnE := pod("w").NodeName("e").PodAffinity(required(term(hostname, "app", "web"))).Obj()
	existingTerms := []*v1.Pod{requiresWeb, avoidsWeb, prefersWeb, requiresWebOnE}

	tests := []struct {
		name       string
		args       *runtime.RawExtension
		pod        *v1.Pod
		pods       []*v1.Pod
		namespaces []*v1.Namespace
		wantSkip   bool
		// wantRaw and wantNormalized are per node, a to e.
		wantRaw, wantNormalized []int64
	}{
		{
			name: "the pod's preferred affinity and anti-affinity",
			// +5 per db pod in the zone, −3 per web pod on the host.
			pod: pod("p").
				PodAffinity(preferred(weighted(5, term(zone, "app", "db")))).
				PodAntiAffinity(preferredAnti(weighted(3, term(hostname, "app", "web")))).Obj(),
			pods: []*v1.Pod{
				pod("db").Label("app", "db").NodeName("a").Obj(),
				pod("web").Label("app", "web").NodeName("b").Obj(),
				pod("db2").Label("app", "db").NodeName("c").Obj(),
				pod("web2").Label("app", "web").NodeName("c").Obj(),
				pod("db3").Label("app", "db").NodeName("e").Obj(),
			},
			// zone z1: +5, zone z2: +5, host b: −3, host c: −3.
			// a = 5, b = 5 − 3 = 2, c = 5 − 3 = 2, d = e = 0.
			wantRaw: []int64{5, 2, 2, 0, 0},
			// min 0, max 5: 100·5/5, 100·2/5, 100·2/5, 0, 0.
			wantNormalized: []int64{100, 40, 40, 0, 0},
		},
		{
			name: "two terms of the same pod matching one pod add up",
			pod: pod("p").PodAffinity(preferred(
				weighted(5, term(zone, "app", "db")),
				weighted(7, term(zone, "tier", "back")))).Obj(),
			pods:           []*v1.Pod{pod("db").Label("app", "db").Label("tier", "back").NodeName("c").Obj()},
			wantRaw:        []int64{0, 0, 12, 0, 0},
			wantNormalized: []int64{0, 0, 100, 0, 0},
		},
		{
			name: "existing pods' terms, hardPodAffinityWeight defaulted to 1",
			pod:  pod("p").Label("app", "web").Obj(),
			pods: existingTerms,
			// zone z1: +1 (x's required affinity), zone z2: −4 (y),
			// host b: +2 (z). a = 1, b = 1 + 2 = 3, c = −4, d = e = 0.
			wantRaw: []int64{1, 3, -4, 0, 0},
			// min −4, max 3, spread 7: a 100·5/7 = 71.4, b 100,
			// c 0, d and e 100·4/7 = 57.1.
			wantNormalized: []int64{71, 100, 0, 57, 57},
		},
		{
			name: "hardPodAffinityWeight 10",
			args: rawArgs(`{"hardPodAffinityWeight": 10}`),
			pod:  pod("p").Label("app", "web").Obj(),
			pods: existingTerms,
			// a = 10, b = 10 + 2 = 12, c = −4, d = e = 0.
			wantRaw: []int64{10, 12, -4, 0, 0},
			// spread 16: a 100·14/16 = 87.5, d and e 100·4/16 = 25.
			wantNormalized: []int64{87, 100, 0, 25, 25},
		},
		{
			name: "hardPodAffinityWeight 0 ignores existing pods' required affinity",
			args: rawArgs(`{"hardPodAffinityWeight": 0}`),
			pod:  pod("p").Label("app", "web").Obj(),
			pods: existingTerms,
			// a = 0, b = 2, c = −4; spread 6: a, d, e 100·4/6 = 66.7.
			wantRaw:        []int64{0, 2, -4, 0, 0},
			wantNormalized: []int64{66, 100, 0, 66, 66},
		},
		{
			name:     "ignorePreferredTermsOfExistingPods without preferred terms of its own: skipped",
			args:     rawArgs(`{"ignorePreferredTermsOfExistingPods": true}`),
			pod:      pod("p").Label("app", "web").Obj(),
			pods:     existingTerms,
			wantSkip: true,
		},
		{
			name: "ignorePreferredTermsOfExistingPods with preferred terms of its own: existing pods' terms count too",
			args: rawArgs(`{"ignorePreferredTermsOfExistingPods": true}`),
			pod:  pod("p").Label("app", "web").PodAffinity(preferred(weighted(1, term(zone, "app", "db")))).Obj(),
			pods: append([]*v1.Pod{pod("db").Label("app", "db").NodeName("a").Obj()}, existingTerms...),
			// zone z1: +1 (db) +1 (x), zone z2: −4, host b: +2.
			// a = 2, b = 4, c = −4; spread 8: a 100·6/8 = 75, d, e 50.
			wantRaw:        []int64{2, 4, -4, 0, 0},
			wantNormalized: []int64{75, 100, 0, 50, 50},
		},
		{
			name:     "no pod with affinity and no preferred terms: skipped",
			pod:      pod("p").Label("app", "web").Obj(),
			pods:     []*v1.Pod{pod("db").Label("app", "db").NodeName("a").Obj()},
			wantSkip: true,
		},
		{
			name:     "preferred terms matching no pod: skipped",
			pod:      pod("p").PodAffinity(preferred(weighted(5, term(zone, "app", "cache")))).Obj(),
			pods:     []*v1.Pod{pod("db").Label("app", "db").NodeName("a").Obj()},
			wantSkip: true,
		},
		{
			name: "affinity and anti-affinity cancelling out: scored, all equal, all 0",
			pod: pod("p").
				PodAffinity(preferred(weighted(5, term(zone, "app", "db")))).
				PodAntiAffinity(preferredAnti(weighted(5, term(zone, "app", "db")))).Obj(),
			pods:           []*v1.Pod{pod("db").Label("app", "db").NodeName("a").Obj()},
			wantRaw:        []int64{0, 0, 0, 0, 0},
			wantNormalized: []int64{0, 0, 0, 0, 0},
		},
		{
			name: "namespaceSelector of the pod's preferred term",
			pod: pod("p").PodAffinity(preferred(weighted(5,
				withNamespaceSelector(term(zone, "app", "db"), "team", "a")))).Obj(),
			namespaces: []*v1.Namespace{namespace("ns1", "team", "a"), namespace("ns2", "team", "b")},
			pods: []*v1.Pod{
				pod("db1").Namespace("ns1").Label("app", "db").NodeName("a").Obj(),
				pod("db2").Namespace("ns2").Label("app", "db").NodeName("c").Obj(),
				pod("db3").Label("app", "db").NodeName("c").Obj(),
			},
			wantRaw:        []int64{5, 5, 0, 0, 0},
			wantNormalized: []int64{100, 100, 0, 0, 0},
		},
		{
			name:       "existing pod's namespaceSelector matches the pod's namespace labels",
			pod:        pod("p").Namespace("ns1").Label("app", "web").Obj(),
			namespaces: []*v1.Namespace{namespace("ns1", "team", "a")},
			pods: []*v1.Pod{pod("z").Namespace("other").NodeName("c").
				PodAffinity(preferred(weighted(3, withNamespaceSelector(term(zone, "app", "web"), "team", "a")))).Obj()},
			wantRaw:        []int64{0, 0, 3, 0, 0},
			wantNormalized: []int64{0, 0, 100, 0, 0},
		},
		{
			name:       "existing pod's namespaceSelector does not match the pod's namespace labels: skipped",
			pod:        pod("p").Namespace("ns2").Label("app", "web").Obj(),
			namespaces: []*v1.Namespace{namespace("ns2", "team", "b")},
			pods: []*v1.Pod{pod("z").Namespace("other").NodeName("c").
				PodAffinity(preferred(weighted(3, withNamespaceSelector(term(zone, "app", "web"), "team", "a")))).Obj()},
			wantSkip: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			env := newTestEnv(t, tt.args, tt.pods, scoreNodes(), tt.namespaces...)
			// The snapshot orders nodes by zone; score them a to e.
			nodes := slices.SortedFunc(slices.Values(env.nodeInfos(t)), func(x, y *framework.NodeInfo) int {
				return strings.Compare(x.Node().Name, y.Node().Name)
			})
			state := framework.NewCycleState()

			s := env.pl.PreScore(ctx, state, tt.pod, nodes)
			if tt.wantSkip {
				if !s.IsSkip() {
					t.Fatalf("PreScore = %v, want Skip", s)
				}
				return
			}
			if !s.IsSuccess() {
				t.Fatalf("PreScore = %v", s)
			}

			scores := make(framework.NodeScoreList, len(nodes))
			gotRaw := make([]int64, len(nodes))
			for i, ni := range nodes {
				score, s := env.pl.Score(ctx, state, tt.pod, ni)
				if !s.IsSuccess() {
					t.Fatalf("Score(%s) = %v", ni.Node().Name, s)
				}
				scores[i] = framework.NodeScore{Name: ni.Node().Name, Score: score}
				gotRaw[i] = score
			}
			if diff := cmp.Diff(tt.wantRaw, gotRaw); diff != "" {
				t.Errorf("raw scores a..e (-want +got):\n%s", diff)
			}
			if s := env.pl.NormalizeScore(ctx, state, tt.pod, scores); !s.IsSuccess() {
				t.Fatalf("NormalizeScore = %v", s)
			}
			gotNormalized := make([]int64, len(scores))
			for i := range scores {
				gotNormalized[i] = scores[i].Score
			}
			if diff := cmp.Diff(tt.wantNormalized, gotNormalized); diff != "" {
				t.Errorf("normalized scores a..e (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScoreOnlyFeasibleNodes checks that domains are scored over the whole
// snapshot while only the feasible nodes are normalised: the db pod on
// infeasible a still draws the pod to b, its zone.
func TestScoreOnlyFeasibleNodes(t *testing.T) {
	ctx := context.Background()
	env := newTestEnv(t, nil, []*v1.Pod{pod("db").Label("app", "db").NodeName("a").Obj()}, scoreNodes())
	p := pod("p").PodAffinity(preferred(weighted(5, term(zone, "app", "db")))).Obj()
	feasible := []*framework.NodeInfo{env.nodeInfo(t, "b"), env.nodeInfo(t, "c")}

	state := framework.NewCycleState()
	if s := env.schedFramework.RunPreScorePlugins(ctx, state, p, feasible); !s.IsSuccess() {
		t.Fatalf("RunPreScorePlugins = %v", s)
	}
	got, s := env.schedFramework.RunScorePlugins(ctx, state, p, feasible)
	if !s.IsSuccess() {
		t.Fatalf("RunScorePlugins = %v", s)
	}
	// b = 5, c = 0: normalised 100 and 0, times the default weight 1.
	want := []framework.NodePluginScores{
		{Name: "b", Scores: []framework.PluginScore{{Name: Name, Score: 100, Raw: 5}}, TotalScore: 100},
		{Name: "c", Scores: []framework.PluginScore{{Name: Name, Score: 0, Raw: 0}}, TotalScore: 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RunScorePlugins (-want +got):\n%s", diff)
	}
}

func TestNormalizeScore(t *testing.T) {
	scored := &preScoreState{topologyScore: scoreMap{zone: {"z1": 1}}}
	tests := []struct {
		name  string
		state *preScoreState
		in    []int64
		want  []int64
	}{
		{name: "all equal: all 0", state: scored, in: []int64{3, 3, 3}, want: []int64{0, 0, 0}},
		{name: "all negative", state: scored, in: []int64{-10, -5, 0}, want: []int64{0, 50, 100}},
		{name: "mixed signs", state: scored, in: []int64{-4, 1, 3, 0}, want: []int64{0, 71, 100, 57}},
		// 100 × (29 / 100) is 28.999… in floating point: truncated to 28,
		// as kube-scheduler computes it.
		{name: "truncation follows kube-scheduler's order of operations", state: scored, in: []int64{0, 29, 100},
			want: []int64{0, 28, 100}},
		{name: "one node", state: scored, in: []int64{42}, want: []int64{0}},
		{name: "nothing scored: left as is", state: &preScoreState{topologyScore: scoreMap{}}, in: []int64{7, 9},
			want: []int64{7, 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, nil, nil, nil)
			state := framework.NewCycleState()
			state.Write(preScoreStateKey, tt.state)
			scores := make(framework.NodeScoreList, len(tt.in))
			for i, s := range tt.in {
				scores[i] = framework.NodeScore{Name: string(rune('a' + i)), Score: s}
			}
			if s := env.pl.NormalizeScore(context.Background(), state, pod("p").Obj(), scores); !s.IsSuccess() {
				t.Fatalf("NormalizeScore = %v", s)
			}
			got := make([]int64, len(scores))
			for i := range scores {
				got[i] = scores[i].Score
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("NormalizeScore (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScoreWithoutPreScore(t *testing.T) {
	ctx := context.Background()
	env := newTestEnv(t, nil, nil, testNodes())
	want := `failed to read "PreScoreInterPodAffinity" from cycleState: not found`
	if _, s := env.pl.Score(ctx, framework.NewCycleState(), pod("p").Obj(),
		env.nodeInfo(t, "a")); s.Code() != framework.Error || s.Message() != want {
		t.Errorf("Score = %v, want Error %q", s, want)
	}
	if s := env.pl.NormalizeScore(ctx, framework.NewCycleState(), pod("p").Obj(), nil); s.Code() != framework.Error ||
		s.Message() != want {
		t.Errorf("NormalizeScore = %v, want Error %q", s, want)
	}
}
