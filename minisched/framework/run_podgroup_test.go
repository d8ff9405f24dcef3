package framework

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/features"
)

// groupPlugin is a fake of the pod-group extension points: each returns
// what its fields say.
type groupPlugin struct {
	name       string
	placements []*Placement
	generate   *Status
	feasible   *Status
	score      map[string]int64 // placement name → raw score
	scoreErr   *Status
	normalize  bool
	postFilter *Status
	result     *PodGroupPostFilterResult
}

func (g *groupPlugin) Name() string { return g.name }

// generatorPlugin is a groupPlugin that is also a PlacementGenerate
// plugin: a profile may have one at most.
type generatorPlugin struct{ *groupPlugin }

func (g generatorPlugin) GeneratePlacements(context.Context, *CycleState, *PodGroupInfo, *Placement) ([]*Placement, *Status) {
	return g.placements, g.generate
}
func (g *groupPlugin) PlacementFeasible(context.Context, *CycleState, *PodGroupInfo, PlacementProgress) *Status {
	return g.feasible
}
func (g *groupPlugin) ScorePlacement(_ context.Context, _ *CycleState, _ *PodGroupInfo, a *PodGroupAssignments) (int64, *Status) {
	return g.score[a.Placement.Name], g.scoreErr
}
func (g *groupPlugin) PlacementScoreExtensions() PlacementScoreExtensions {
	if g.normalize {
		return g
	}
	return nil
}
func (g *groupPlugin) NormalizePlacementScore(_ context.Context, _ *CycleState, _ *PodGroupInfo, scores []PlacementScore) *Status {
	var best int64
	for _, s := range scores {
		best = max(best, s.Score)
	}
	for i := range scores {
		scores[i].Score = scores[i].Score * MaxNodeScore / best
	}
	return nil
}
func (g *groupPlugin) PodGroupPostFilter(context.Context, *CycleState, *PodGroupInfo, PodGroupSchedulingFunc) (*PodGroupPostFilterResult, *Status) {
	return g.result, g.postFilter
}

// newGroupFramework builds a profile whose multiPoint enables the fake
// QueueSort and binder, then the group plugins in order (weights from
// weights), with gates.
func newGroupFramework(t *testing.T, gates features.Gates, weights map[string]int32, plugins ...*groupPlugin) *Framework {
	t.Helper()
	f, err := buildGroupFramework(gates, weights, asPlugins(plugins)...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func asPlugins(plugins []*groupPlugin) []Plugin {
	out := make([]Plugin, len(plugins))
	for i, p := range plugins {
		out[i] = p
	}
	return out
}

// buildGroupFramework is newGroupFramework for any plugins, returning
// NewFramework's error.
func buildGroupFramework(gates features.Gates, weights map[string]int32, plugins ...Plugin) (*Framework, error) {
	sort := &fakePlugin{name: "Sort", log: &callLog{}}
	r := Registry{"Sort": func(context.Context, *runtime.RawExtension, Handle) (Plugin, error) { return sort, nil }}
	prof := &configv1.KubeSchedulerProfile{SchedulerName: ptr.To("test"), Plugins: &configv1.Plugins{
		MultiPoint: configv1.PluginSet{Enabled: []configv1.Plugin{{Name: "Sort"}}}}}
	for _, p := range plugins {
		r[p.Name()] = func(context.Context, *runtime.RawExtension, Handle) (Plugin, error) { return p, nil }
		entry := configv1.Plugin{Name: p.Name()}
		if w, ok := weights[p.Name()]; ok {
			entry.Weight = ptr.To(w)
		}
		prof.Plugins.MultiPoint.Enabled = append(prof.Plugins.MultiPoint.Enabled, entry)
	}
	return NewFramework(context.Background(), r, prof, WithFeatureGates(gates))
}

var testGroup = &PodGroupInfo{Namespace: "ns", Name: "g"}

func TestRunPlacementGeneratePlugins(t *testing.T) {
	nodes := testNodes("a", "b")
	tests := []struct {
		name       string
		generators []*groupPlugin
		want       []string // placement names ("" for the parent)
		wantErr    string
	}{
		{name: "none: the parent placement", want: []string{""}},
		{name: "the plugin's placements", generators: []*groupPlugin{
			{name: "Gen1", placements: []*Placement{{Name: "rack-1"}, {Name: "rack-2"}}}},
			want: []string{"rack-1", "rack-2"}},
		{name: "nothing proposed", generators: []*groupPlugin{{name: "Gen1"}}, wantErr: "no feasible placements found"},
		{name: "an error", generators: []*groupPlugin{{name: "Gen1", generate: AsStatus(errors.New("boom"))}},
			wantErr: "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var plugins []Plugin
			for _, g := range tt.generators {
				plugins = append(plugins, generatorPlugin{g})
			}
			f, err := buildGroupFramework(features.Gates{GenericWorkload: true}, nil, plugins...)
			if err != nil {
				t.Fatal(err)
			}
			got, s := f.RunPlacementGeneratePlugins(context.Background(), NewCycleState(), testGroup, nodes)
			if tt.wantErr != "" {
				if s.IsSuccess() || s.Message() != tt.wantErr || s.Plugin() != "Gen1" {
					t.Fatalf("status = %v (plugin %q), want %q from Gen1", s, s.Plugin(), tt.wantErr)
				}
				return
			}
			var names []string
			for _, p := range got {
				names = append(names, p.Name)
			}
			if diff := cmp.Diff(tt.want, names); diff != "" {
				t.Errorf("placements (-want +got):\n%s", diff)
			}
			if len(tt.generators) == 0 && len(got[0].Nodes) != 2 {
				t.Errorf("the parent placement has %d nodes, want 2", len(got[0].Nodes))
			}
		})
	}
}

// TestPlacementPluginsChecked: a profile refuses a second PlacementGenerate
// plugin, as kube-scheduler does.
func TestPlacementPluginsChecked(t *testing.T) {
	tests := []struct {
		name    string
		plugins []Plugin
		weights map[string]int32
		wantErr string
	}{
		{name: "two generators",
			plugins: []Plugin{generatorPlugin{&groupPlugin{name: "Gen1"}}, generatorPlugin{&groupPlugin{name: "Gen2"}}},
			wantErr: `profile "test": at most one PlacementGenerate plugin is allowed, got 2`},
		{name: "one generator, weights that fit",
			plugins: []Plugin{generatorPlugin{&groupPlugin{name: "Gen1"}}, &groupPlugin{name: "Count"}},
			weights: map[string]int32{"Count": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := buildGroupFramework(features.Gates{GenericWorkload: true}, tt.weights, tt.plugins...)
			if got := fmt.Sprint(err); tt.wantErr == "" && err != nil || tt.wantErr != "" && got != tt.wantErr {
				t.Errorf("NewFramework() error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestRunPlacementFeasiblePlugins(t *testing.T) {
	wait := NewStatus(Wait, "minCount (3) is not yet satisfied: 1 scheduled, 2 remaining")
	tests := []struct {
		name     string
		gates    features.Gates
		feasible *Status
		wantCode Code
		wantMsg  string
	}{
		{name: "success", gates: features.Gates{GenericWorkload: true}, wantCode: Success},
		{name: "wait", gates: features.Gates{GenericWorkload: true}, feasible: wait, wantCode: Wait,
			wantMsg: wait.Message()},
		{name: "unschedulable", gates: features.Gates{GenericWorkload: true},
			feasible: NewStatus(Unschedulable, "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining"),
			wantCode: Unschedulable, wantMsg: "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining"},
		{name: "an error", gates: features.Gates{GenericWorkload: true}, feasible: AsStatus(errors.New("boom")),
			wantCode: Error, wantMsg: "running PlacementFeasible plugin: boom"},
		{name: "an unexpected code", gates: features.Gates{GenericWorkload: true}, feasible: NewStatus(Skip),
			wantCode: Error, wantMsg: "unexpected status from PlacementFeasible plugin: Skip"},
		{name: "not wired with the gate off", feasible: wait, wantCode: Success},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Only a plugin named GangScheduling is wired.
			f := newGroupFramework(t, tt.gates, nil, &groupPlugin{name: "GangScheduling", feasible: tt.feasible})
			s := f.RunPlacementFeasiblePlugins(context.Background(), NewCycleState(), testGroup, PlacementProgress{})
			if s.Code() != tt.wantCode || s.Message() != tt.wantMsg {
				t.Errorf("status = %v %q, want %v %q", s.Code(), s.Message(), tt.wantCode, tt.wantMsg)
			}
		})
	}
}

func TestRunPlacementScorePlugins(t *testing.T) {
	placements := []*Placement{{Name: "rack-1"}, {Name: "rack-2"}}
	assignments := []*PodGroupAssignments{{Placement: placements[0]}, {Placement: placements[1]}}
	states := []*CycleState{NewCycleState(), NewCycleState()}
	tests := []struct {
		name    string
		plugins []*groupPlugin
		weights map[string]int32
		want    []int64 // total per placement
		wantErr string
	}{
		{name: "normalised and weighed", plugins: []*groupPlugin{
			{name: "Packed", score: map[string]int64{"rack-1": 2, "rack-2": 4}, normalize: true},
			{name: "Count", score: map[string]int64{"rack-1": 100, "rack-2": 0}}},
			weights: map[string]int32{"Packed": 2}, want: []int64{2*50 + 100, 2*100 + 0}},
		{name: "out of range", plugins: []*groupPlugin{{name: "Big", score: map[string]int64{"rack-1": 101}}},
			wantErr: `applying score defaultWeights on PlacementScore plugins: plugin "Big" returns an invalid score 101, it should in the range of [0, 100] after normalizing`},
		{name: "an error", plugins: []*groupPlugin{{name: "Bad", scoreErr: AsStatus(errors.New("boom"))}},
			wantErr: `running PlacementScore plugins: plugin "Bad" failed with: boom`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newGroupFramework(t, features.Gates{GenericWorkload: true}, tt.weights, tt.plugins...)
			got, s := f.RunPlacementScorePlugins(context.Background(), NewCycleState(), testGroup, assignments, states)
			if tt.wantErr != "" {
				if s.Code() != Error || s.Message() != tt.wantErr {
					t.Fatalf("status = %v %q, want an error %q", s.Code(), s.Message(), tt.wantErr)
				}
				return
			}
			var totals []int64
			for _, p := range got {
				totals = append(totals, p.TotalScore)
			}
			if diff := cmp.Diff(tt.want, totals); diff != "" {
				t.Errorf("totals (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunPodGroupPostFilterPlugins(t *testing.T) {
	nominated := &PodGroupPostFilterResult{}
	tests := []struct {
		name       string
		gates      features.Gates
		plugins    []*groupPlugin
		wantCode   Code
		wantMsg    string
		wantPlugin string
		wantResult *PodGroupPostFilterResult
	}{
		{name: "the first success wins", gates: features.Gates{GenericWorkload: true}, plugins: []*groupPlugin{
			{name: "DRA", postFilter: NewStatus(Unschedulable, "deallocation and deletion of ResourceClaims completed")},
			{name: "Preempt", result: nominated}}, wantCode: Success, wantResult: nominated},
		{name: "unschedulable reasons joined, the first rejector named", gates: features.Gates{GenericWorkload: true},
			plugins: []*groupPlugin{
				{name: "DRA", postFilter: NewStatus(Unschedulable, "deallocation and deletion of ResourceClaims completed")},
				{name: "Preempt", postFilter: NewStatus(Unschedulable, "pod group preemption: No preemption victims found for incoming preemptor")}},
			wantCode: Unschedulable, wantPlugin: "DRA",
			wantMsg: "deallocation and deletion of ResourceClaims completed, pod group preemption: No preemption victims found for incoming preemptor"},
		{name: "unresolvable stops", gates: features.Gates{GenericWorkload: true}, plugins: []*groupPlugin{
			{name: "DRA", postFilter: NewStatus(UnschedulableAndUnresolvable, "no")},
			{name: "Preempt", result: nominated}}, wantCode: UnschedulableAndUnresolvable, wantMsg: "no", wantPlugin: "DRA"},
		{name: "an error names the plugin", gates: features.Gates{GenericWorkload: true}, plugins: []*groupPlugin{
			{name: "DRA", postFilter: AsStatus(errors.New("not found"))}},
			wantCode: Error, wantMsg: `error in "DRA" PodGroupPostFilter plugins: not found`, wantPlugin: "DRA"},
		{name: "the gate off", plugins: []*groupPlugin{{name: "Preempt", result: nominated}},
			wantCode: Unschedulable, wantMsg: "generic workload feature is disabled, cannot perform PodGroupPostFilter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newGroupFramework(t, tt.gates, nil, tt.plugins...)
			r, s := f.RunPodGroupPostFilterPlugins(context.Background(), NewCycleState(), testGroup, nil)
			if s.Code() != tt.wantCode || s.Message() != tt.wantMsg || s.Plugin() != tt.wantPlugin {
				t.Errorf("status = %v %q (plugin %q), want %v %q (plugin %q)", s.Code(), s.Message(), s.Plugin(),
					tt.wantCode, tt.wantMsg, tt.wantPlugin)
			}
			if r != tt.wantResult {
				t.Errorf("result = %v, want %v", r, tt.wantResult)
			}
		})
	}
}
