// Tests for NodeResourcesBalancedAllocation: args, PreScore's Skip for
// best-effort pods, and scores computed by hand from kube-scheduler's formula
// (balanced_allocation.go): balance b = (1 − std of used fractions) × 100,
// score = 50 + (50 + b(with pod) − b(without pod)) / 2.
package noderesources

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

var _ framework.PluginFactory = NewBalancedAllocation

func newBalancedAllocation(t *testing.T, args *runtime.RawExtension) *BalancedAllocation {
	t.Helper()
	pl, err := NewBalancedAllocation(context.Background(), args, nil)
	if err != nil {
		t.Fatalf("NewBalancedAllocation: %v", err)
	}
	return pl.(*BalancedAllocation)
}

func TestNewBalancedAllocationArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    *runtime.RawExtension
		want    []configv1.ResourceSpec
		wantErr string
	}{
		{name: "no args", want: defaultResources()},
		{name: "empty args", args: rawArgs(`{}`), want: defaultResources()},
		{
			name: "resources with a missing weight, apiVersion and kind",
			args: rawArgs(`{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeResourcesBalancedAllocationArgs",
				"resources": [{"name": "cpu"}, {"name": "example.com/gpu", "weight": 1}]}`),
			want: []configv1.ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "example.com/gpu", Weight: 1}},
		},
		{
			name: "typed args",
			args: &runtime.RawExtension{Object: &configv1.NodeResourcesBalancedAllocationArgs{
				Resources: []configv1.ResourceSpec{{Name: "memory"}},
			}},
			want: []configv1.ResourceSpec{{Name: "memory", Weight: 1}},
		},
		{
			name:    "unknown field",
			args:    rawArgs(`{"resource": [{"name": "cpu"}]}`),
			wantErr: `decoding NodeResourcesBalancedAllocationArgs: unknown field "resource"`,
		},
		{
			name:    "weight other than 1",
			args:    rawArgs(`{"resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": -1}]}`),
			wantErr: `[resources[0].weight: Invalid value: 2: must be 1, resources[1].weight: Invalid value: -1: must be 1]`,
		},
		{
			name:    "duplicate resource",
			args:    rawArgs(`{"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "cpu"}]}`),
			wantErr: `resources[2].name: Duplicate value: "cpu"`,
		},
		{
			name:    "wrong typed args",
			args:    &runtime.RawExtension{Object: &configv1.NodeResourcesFitArgs{}},
			wantErr: "want args of type *v1.NodeResourcesBalancedAllocationArgs, got *v1.NodeResourcesFitArgs",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := NewBalancedAllocation(context.Background(), tt.args, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ba := pl.(*BalancedAllocation)
			if diff := cmp.Diff(tt.want, ba.resources); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
			if !ba.useRequested {
				t.Error("useRequested = false, want true: balance counts requests as they are")
			}
		})
	}
}

func TestNewBalancedAllocationDoesNotChangeTypedArgs(t *testing.T) {
	args := &configv1.NodeResourcesBalancedAllocationArgs{Resources: []configv1.ResourceSpec{{Name: "cpu"}}}
	want := args.DeepCopy()
	newBalancedAllocation(t, &runtime.RawExtension{Object: args})
	if diff := cmp.Diff(want, args); diff != "" {
		t.Errorf("NewBalancedAllocation changed the configuration's args (-want +got):\n%s", diff)
	}
}

func TestBalancedAllocationScore(t *testing.T) {
	// node builds a node with cpu millicores, memory bytes and optional GPUs.
	node := func(name, cpu, memory, gpus string) *v1.Node {
		c := res{v1.ResourceCPU: cpu, v1.ResourceMemory: memory}
		if gpus != "" {
			c[gpu] = gpus
		}
		return st.MakeNode().Name(name).Capacity(c).Obj()
	}
	withGPU := rawArgs(`{"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "example.com/gpu"}]}`)
	tests := []struct {
		name     string
		args     *runtime.RawExtension
		pod      *v1.Pod
		node     *v1.Node
		existing []*v1.Pod
		want     int64
	}{
		{
			// cpu 0 → 3000/4000 (0.75), memory 0 → 5000/10000 (0.5):
			// b1 = (1 − 0.25/2) × 100 = 87, b0 = 100 → 50 + (50+87−100)/2 = 68
			name: "empty node, uneven result",
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3000m", v1.ResourceMemory: "5000"}).Obj(),
			node: node("n", "4000m", "10000", ""),
			want: 68,
		},
		{
			// cpu 0.5, memory 0.5: b1 = b0 = 100 → 50 + 50/2 = 75
			name: "empty node, even result",
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3000m", v1.ResourceMemory: "5000"}).Obj(),
			node: node("n", "6000m", "10000", ""),
			want: 75,
		},
		{
			// The existing pod asks for no memory, which counts as 0 (no
			// non-zero default): cpu 0.3 → 0.6, memory 0 → 0.25:
			// b0 = (1 − 0.15) × 100 = 85, b1 = (1 − 0.175) × 100 = 82
			// → 50 + (50+82−85)/2 = 73
			name:     "existing pod without memory request counts as requested",
			pod:      st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3000m", v1.ResourceMemory: "5000"}).Obj(),
			node:     node("n", "10000m", "20000", ""),
			existing: []*v1.Pod{st.MakePod().Name("e").UID("e").Req(res{v1.ResourceCPU: "3000m"}).Obj()},
			want:     73,
		},
		{
			// cpu 0.3 → 0.6, memory 0.25 → 0.5: b0 = 97, b1 = 95 → 50 + 48/2 = 74
			name: "existing pods count",
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3000m", v1.ResourceMemory: "5000"}).Obj(),
			node: node("n", "10000m", "20000", ""),
			existing: []*v1.Pod{st.MakePod().Name("e").UID("e").Req(res{v1.ResourceCPU: "3000m",
				v1.ResourceMemory: "5000"}).Obj()},
			want: 74,
		},
		{
			// cpu 1 → 1, memory 0 → 1: b0 = 50, b1 = 100 → 50 + 100/2 = 100
			name:     "pod that evens the node out scores the maximum",
			pod:      st.MakePod().Name("p").Req(res{v1.ResourceMemory: "5000"}).Obj(),
			node:     node("n", "3000m", "5000", ""),
			existing: []*v1.Pod{st.MakePod().Name("e").UID("e").Req(res{v1.ResourceCPU: "3000m"}).Obj()},
			want:     100,
		},
		{
			// cpu 0 → 0, memory 0 → 1: b0 = 100, b1 = 50 → 50 + 0/2 = 50
			name: "pod that unbalances an empty node scores the minimum",
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceMemory: "5000"}).Obj(),
			node: node("n", "10000m", "5000", ""),
			want: 50,
		},
		{
			// Fractions are capped at 1: cpu 0.5 → 1 (9000/6000), memory
			// 0 → 0: b0 = 75, b1 = 50 → 50 + 25/2 = 62
			name:     "overcommitted fraction is capped at 1",
			pod:      st.MakePod().Name("p").Req(res{v1.ResourceCPU: "6000m"}).Obj(),
			node:     node("n", "6000m", "10000", ""),
			existing: []*v1.Pod{st.MakePod().Name("e").UID("e").Req(res{v1.ResourceCPU: "3000m"}).Obj()},
			want:     62,
		},
		{
			// Three fractions, before cpu 6/7, memory 0.125, gpu 0.375:
			// std ≈ 0.3039, b0 = 69; after gpu 0.5: std ≈ 0.2989, b1 = 70
			// → 50 + 51/2 = 75
			name: "requested extended resource joins the standard deviation",
			args: withGPU,
			pod:  st.MakePod().Name("p").Req(res{gpu: "1"}).Obj(),
			node: node("n", "3500m", "40000", "8"),
			existing: []*v1.Pod{st.MakePod().Name("e").UID("e").Req(res{v1.ResourceCPU: "3000m", v1.ResourceMemory: "5000",
				gpu: "3"}).Obj()},
			want: 75,
		},
		{
			// gpu left out: cpu 6/7, memory 0.125: std ≈ 0.366, b1 = 63,
			// b0 = 100 → 50 + 13/2 = 56
			name: "extended resource the pod does not request is left out",
			args: withGPU,
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3000m", v1.ResourceMemory: "5000"}).Obj(),
			node: node("n", "3500m", "40000", "8"),
			want: 56,
		},
		{
			// The node has no GPU: cpu and memory as in "empty node, uneven
			// result" → 68
			name: "resource the node lacks is left out",
			args: withGPU,
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3000m", v1.ResourceMemory: "5000", gpu: "1"}).Obj(),
			node: node("n", "4000m", "10000", ""),
			want: 68,
		},
		{
			// One resource: std is 0, b0 = b1 = 100 → 75
			name: "a single resource is always balanced",
			args: rawArgs(`{"resources": [{"name": "cpu"}]}`),
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3000m"}).Obj(),
			node: node("n", "4000m", "10000", ""),
			want: 75,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := newBalancedAllocation(t, tt.args)
			ni := plugintesting.MakeNodeInfo(tt.node, tt.existing...)
			state := framework.NewCycleState()
			if s := pl.PreScore(ctx, state, tt.pod, []*framework.NodeInfo{ni}); !s.IsSuccess() {
				t.Fatalf("PreScore: %v", s)
			}
			got, s := pl.Score(ctx, state, tt.pod, ni)
			if !s.IsSuccess() {
				t.Fatalf("Score: %v", s)
			}
			if got != tt.want {
				t.Errorf("score = %d, want %d", got, tt.want)
			}
			// Without PreScore's state, Score computes the same.
			if again, s := pl.Score(ctx, framework.NewCycleState(), tt.pod, ni); !s.IsSuccess() || again != got {
				t.Errorf("score without PreScore = %d (%v), want %d", again, s, got)
			}
		})
	}
}

func TestBalancedAllocationBestEffort(t *testing.T) {
	ni := plugintesting.MakeNodeInfo(st.MakeNode().Name("n").Capacity(res{v1.ResourceCPU: "4", v1.ResourceMemory: "10000",
		gpu: "4"}).Obj())
	tests := []struct {
		name     string
		pod      *v1.Pod
		wantSkip bool
	}{
		{name: "no requests", pod: st.MakePod().Name("p").Req(res{}).Obj(), wantSkip: true},
		{name: "only a resource that is not scored", pod: st.MakePod().Name("p").Req(res{gpu: "1"}).Obj(), wantSkip: true},
		{name: "memory only", pod: st.MakePod().Name("p").Req(res{v1.ResourceMemory: "1000"}).Obj()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := newBalancedAllocation(t, nil)
			state := framework.NewCycleState()
			s := pl.PreScore(ctx, state, tt.pod, []*framework.NodeInfo{ni})
			if got := s.Code(); got != framework.Skip && tt.wantSkip || got != framework.Success && !tt.wantSkip {
				t.Fatalf("PreScore code = %v, want skip %v", got, tt.wantSkip)
			}
			if !tt.wantSkip {
				return
			}
			if _, err := state.Read(balancedAllocationPreScoreStateKey); err == nil {
				t.Error("PreScore wrote state for a skipped pod")
			}
			// Called anyway without state, Score gives a best-effort pod 0.
			if got, s := pl.Score(ctx, state, tt.pod, ni); !s.IsSuccess() || got != 0 {
				t.Errorf("Score = %d (%v), want 0", got, s)
			}
		})
	}
}

func TestBalancedAllocationPreScoreStateClone(t *testing.T) {
	s := &balancedAllocationPreScoreState{podRequests: []int64{1, 2}}
	c := s.Clone().(*balancedAllocationPreScoreState)
	c.podRequests[0] = 9
	if s.podRequests[0] != 1 {
		t.Error("Clone shares podRequests with the original")
	}
}

func TestBalancedAllocationRegistersNoEvents(t *testing.T) {
	var pl framework.Plugin = newBalancedAllocation(t, nil)
	if _, ok := pl.(framework.EnqueueExtensions); ok {
		t.Error("BalancedAllocation implements EnqueueExtensions; it never rejects, so it should not")
	}
	if pl.(framework.ScorePlugin).ScoreExtensions() != nil {
		t.Error("ScoreExtensions is not nil; kube-scheduler does not normalise these scores")
	}
}

// TestBalancedAllocationInFramework runs the plugin through a profile, as
// multiPoint enables it, with kube-scheduler's default weight of 1: a
// best-effort pod is skipped (no score entry), others are scored per node.
func TestBalancedAllocationInFramework(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	nodes := []*v1.Node{
		st.MakeNode().Name("a").Capacity(res{v1.ResourceCPU: "4", v1.ResourceMemory: "10000"}).Obj(),
		st.MakeNode().Name("b").Capacity(res{v1.ResourceCPU: "6", v1.ResourceMemory: "10000"}).Obj(),
	}
	snapshot := cache.NewSnapshot(nil, nodes)
	schedFramework, _, err := plugintesting.NewPluginFramework[framework.Plugin](ctx, BalancedAllocationName,
		NewBalancedAllocation, &configv1.Plugins{MultiPoint: plugintesting.Enable(BalancedAllocationName)},
		&runtime.RawExtension{Raw: []byte(`{}`)}, framework.WithSnapshotSharedLister(snapshot))
	if err != nil {
		t.Fatal(err)
	}
	infos, _ := snapshot.NodeInfos().List()

	scores := func(pod *v1.Pod) map[string]int64 {
		t.Helper()
		state := framework.NewCycleState()
		if s := schedFramework.RunPreScorePlugins(ctx, state, pod, infos); !s.IsSuccess() {
			t.Fatal(s)
		}
		list, s := schedFramework.RunScorePlugins(ctx, state, pod, infos)
		if !s.IsSuccess() {
			t.Fatal(s)
		}
		out := map[string]int64{}
		for _, ns := range list {
			for _, ps := range ns.Scores {
				out[ns.Name+"/"+ps.Name] = ps.Score
			}
		}
		return out
	}
	// a: 68 and b: 75, as in TestBalancedAllocationScore.
	want := map[string]int64{"a/" + BalancedAllocationName: 68, "b/" + BalancedAllocationName: 75}
	if diff := cmp.Diff(want,
		scores(st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3", v1.ResourceMemory: "5000"}).Obj())); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int64{}, scores(st.MakePod().Name("be").Req(res{}).Obj())); diff != "" {
		t.Errorf("best-effort pod scores (-want +got):\n%s", diff)
	}
}
