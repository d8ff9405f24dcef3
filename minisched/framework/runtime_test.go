package framework

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// fakePlugin implements every extension point; its behaviour per node or
// pod is set by its fields, and every call is logged.
type fakePlugin struct {
	name string
	log  *callLog

	filterFail map[string]*Status // node → status
	score      map[string]int64   // node → raw score
	normalize  bool               // scale scores so the best is 100
	preScore   *Status
	reserve    *Status
	permit     *Status
	permitWait time.Duration
	bind       *Status
}

type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(s string) { l.mu.Lock(); l.calls = append(l.calls, s); l.mu.Unlock() }
func (l *callLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

func (f *fakePlugin) Name() string { return f.name }
func (f *fakePlugin) Less(a, b *QueuedPodInfo) bool {
	return a.Timestamp.Before(b.Timestamp)
}
func (f *fakePlugin) PreFilter(context.Context, *CycleState, *v1.Pod, []*NodeInfo) (*PreFilterResult, *Status) {
	return nil, nil
}
func (f *fakePlugin) PreFilterExtensions() PreFilterExtensions { return nil }
func (f *fakePlugin) Filter(_ context.Context, _ *CycleState, _ *v1.Pod, ni *NodeInfo) *Status {
	f.log.add("Filter/" + f.name + "/" + ni.Node().Name)
	return f.filterFail[ni.Node().Name]
}
func (f *fakePlugin) PreScore(context.Context, *CycleState, *v1.Pod, []*NodeInfo) *Status {
	return f.preScore
}
func (f *fakePlugin) Score(_ context.Context, _ *CycleState, _ *v1.Pod, ni *NodeInfo) (int64, *Status) {
	return f.score[ni.Node().Name], nil
}
func (f *fakePlugin) ScoreExtensions() ScoreExtensions {
	if f.normalize {
		return f
	}
	return nil
}
func (f *fakePlugin) NormalizeScore(_ context.Context, _ *CycleState, _ *v1.Pod, scores NodeScoreList) *Status {
	var best int64
	for _, s := range scores {
		best = max(best, s.Score)
	}
	for i := range scores {
		if best > 0 {
			scores[i].Score = scores[i].Score * MaxNodeScore / best
		}
	}
	return nil
}
func (f *fakePlugin) Reserve(context.Context, *CycleState, *v1.Pod, string) *Status {
	f.log.add("Reserve/" + f.name)
	return f.reserve
}
func (f *fakePlugin) Unreserve(context.Context, *CycleState, *v1.Pod, string) {
	f.log.add("Unreserve/" + f.name)
}
func (f *fakePlugin) Permit(context.Context, *CycleState, *v1.Pod, string) (*Status, time.Duration) {
	return f.permit, f.permitWait
}
func (f *fakePlugin) Bind(context.Context, *CycleState, *v1.Pod, string) *Status {
	f.log.add("Bind/" + f.name)
	return f.bind
}

// newTestFramework builds a profile whose multiPoint enables the given fake
// plugins in order (weights from weights), plus a fake QueueSort.
func newTestFramework(t *testing.T, plugins []*fakePlugin, weights map[string]int32, opts ...Option) *Framework {
	t.Helper()
	r := Registry{}
	prof := &configv1.KubeSchedulerProfile{SchedulerName: ptr.To("test"), Plugins: &configv1.Plugins{}}
	for _, p := range plugins {
		p := p
		r[p.name] = func(context.Context, *runtime.RawExtension, Handle) (Plugin, error) { return p, nil }
		entry := configv1.Plugin{Name: p.name}
		if w, ok := weights[p.name]; ok {
			entry.Weight = ptr.To(w)
		}
		prof.Plugins.MultiPoint.Enabled = append(prof.Plugins.MultiPoint.Enabled, entry)
	}
	// Exactly one QueueSort: the first plugin only.
	for _, p := range plugins[1:] {
		prof.Plugins.QueueSort.Disabled = append(prof.Plugins.QueueSort.Disabled, configv1.Plugin{Name: p.name})
	}
	f, err := NewFramework(context.Background(), r, prof, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func testNodes(names ...string) []*NodeInfo {
	var out []*NodeInfo
	for _, n := range names {
		ni := NewNodeInfo()
		ni.SetNode(&v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Status:     v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourcePods: resource.MustParse("10")}},
		})
		out = append(out, ni)
	}
	return out
}

var testPod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p"}}

func TestFilterStopsAtFirstFailure(t *testing.T) {
	log := &callLog{}
	a := &fakePlugin{name: "A", log: log, filterFail: map[string]*Status{"n1": NewStatus(Unschedulable, "a says no")}}
	b := &fakePlugin{name: "B", log: log, filterFail: map[string]*Status{
		"n1": NewStatus(Unschedulable, "b says no"),
		"n2": NewStatus(UnschedulableAndUnresolvable, "b says never"),
	}}
	f := newTestFramework(t, []*fakePlugin{a, b}, nil)
	nodes := testNodes("n1", "n2", "n3")
	state := NewCycleState()
	got := map[string]*Status{}
	for _, ni := range nodes {
		got[ni.Node().Name] = f.RunFilterPlugins(context.Background(), state, testPod, ni)
	}
	if s := got["n1"]; s.Plugin() != "A" || s.Message() != "a says no" {
		t.Errorf("n1 status = %v, want A's", s)
	}
	if s := got["n2"]; s.Plugin() != "B" || s.Code() != UnschedulableAndUnresolvable {
		t.Errorf("n2 status = %v, want B's", s)
	}
	if s := got["n3"]; !s.IsSuccess() {
		t.Errorf("n3 status = %v, want Success", s)
	}
	for _, c := range log.get() {
		if c == "Filter/B/n1" {
			t.Errorf("B's Filter ran on n1 after A rejected it")
		}
	}
}

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

func TestScoreOutOfRangeIsAnError(t *testing.T) {
	a := &fakePlugin{name: "A", log: &callLog{}, score: map[string]int64{"n1": 101}}
	f := newTestFramework(t, []*fakePlugin{a}, nil)
	_, s := f.RunScorePlugins(context.Background(), NewCycleState(), testPod, testNodes("n1"))
	if s.Code() != Error || !strings.Contains(s.Message(), "invalid score 101") {
		t.Errorf("status = %v, want an invalid-score error", s)
	}
}

func TestReserveFailureAndUnreserveOrder(t *testing.T) {
	log := &callLog{}
	a := &fakePlugin{name: "A", log: log}
	b := &fakePlugin{name: "B", log: log, reserve: NewStatus(Unschedulable, "no room")}
	c := &fakePlugin{name: "C", log: log}
	f := newTestFramework(t, []*fakePlugin{a, b, c}, nil)
	s := f.RunReservePluginsReserve(context.Background(), NewCycleState(), testPod, "n1")
	if s.Code() != Unschedulable || s.Plugin() != "B" {
		t.Fatalf("Reserve = %v, want B's rejection", s)
	}
	f.RunReservePluginsUnreserve(context.Background(), NewCycleState(), testPod, "n1")
	want := []string{"Reserve/A", "Reserve/B", "Unreserve/C", "Unreserve/B", "Unreserve/A"}
	if diff := cmp.Diff(want, log.get()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestPermit(t *testing.T) {
	tests := []struct {
		name     string
		permits  []*Status
		act      func(f *Framework, clk *clocktesting.FakeClock)
		wantCode Code
		wantMsg  string
	}{
		{
			name:     "all approve",
			permits:  []*Status{nil, nil},
			wantCode: Success,
		},
		{
			name:     "a rejection wins at once",
			permits:  []*Status{NewStatus(Wait), NewStatus(Unschedulable, "no")},
			wantCode: Unschedulable,
			wantMsg:  "no",
		},
		{
			name:    "waiting until every waiting plugin allows",
			permits: []*Status{NewStatus(Wait), NewStatus(Wait)},
			act: func(f *Framework, _ *clocktesting.FakeClock) {
				f.GetWaitingPod(testPod.UID).Allow("P0")
				f.GetWaitingPod(testPod.UID).Allow("P1")
			},
			wantCode: Success,
		},
		{
			name:    "rejected by another goroutine",
			permits: []*Status{NewStatus(Wait)},
			act: func(f *Framework, _ *clocktesting.FakeClock) {
				f.GetWaitingPod(testPod.UID).Reject("P0", "changed my mind")
			},
			wantCode: Unschedulable,
			wantMsg:  "changed my mind",
		},
		{
			name:     "timeout rejects",
			permits:  []*Status{NewStatus(Wait)},
			act:      func(_ *Framework, clk *clocktesting.FakeClock) { clk.Step(11 * time.Second) },
			wantCode: Unschedulable,
			wantMsg:  "rejected due to timeout after waiting 10s at plugin P0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			var pls []*fakePlugin
			for i, st := range tt.permits {
				pls = append(pls, &fakePlugin{
					name: "P" + string(rune('0'+i)), log: &callLog{}, permit: st, permitWait: 10 * time.Second,
				})
			}
			f := newTestFramework(t, pls, nil, WithClock(clock.WithDelayedExecution(clk)))
			s := f.RunPermitPlugins(context.Background(), NewCycleState(), testPod, "n1")
			if s.IsWait() {
				done := make(chan *Status, 1)
				go func() { done <- f.WaitOnPermit(context.Background(), testPod) }()
				tt.act(f, clk)
				select {
				case s = <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("WaitOnPermit did not return")
				}
			}
			if s.Code() != tt.wantCode || (tt.wantMsg != "" && s.Message() != tt.wantMsg) {
				t.Errorf("status = %v, want %v %q", s, tt.wantCode, tt.wantMsg)
			}
			if f.GetWaitingPod(testPod.UID) != nil && s.Code() != Wait {
				t.Errorf("the pod is still among the waiting pods")
			}
		})
	}
}

func TestBindSkipsToTheNextBinder(t *testing.T) {
	log := &callLog{}
	a := &fakePlugin{name: "A", log: log, bind: NewStatus(Skip)}
	b := &fakePlugin{name: "B", log: log}
	c := &fakePlugin{name: "C", log: log}
	f := newTestFramework(t, []*fakePlugin{a, b, c}, nil)
	if s := f.RunBindPlugins(context.Background(), NewCycleState(), testPod, "n1"); !s.IsSuccess() {
		t.Fatal(s)
	}
	if diff := cmp.Diff([]string{"Bind/A", "Bind/B"}, log.get()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestPluginsWithoutEnqueueExtensionsGetEveryEvent(t *testing.T) {
	f := newTestFramework(t, []*fakePlugin{{name: "A", log: &callLog{}}}, nil)
	hints := f.QueueingHints()["A"]
	if len(hints) != 1 || !hints[0].Event.Match(ClusterEvent{Resource: Node, ActionType: UpdateNodeLabel}) {
		t.Errorf("hints = %+v, want a wildcard registration", hints)
	}
}
