// Tests for NodeResourcesFit's MostAllocated and RequestedToCapacityRatio
// scoring and for the shape function. Expected scores are computed by hand
// from kube-scheduler's formulas (most_allocated.go,
// requested_to_capacity_ratio.go, helper/shape_score.go), as each comment
// shows.
package noderesources

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// scoringNode has 4000m cpu, 10000 bytes of memory and 4 GPUs.
func scoringNode() *v1.Node {
	return st.MakeNode().Name("n").Capacity(res{v1.ResourceCPU: "4", v1.ResourceMemory: "10000", gpu: "4"}).Obj()
}

// fitScore runs Fit's PreScore and Score for pod on ni, and checks that
// Score without PreScore's state agrees.
func fitScore(t *testing.T, pl *Fit, pod *v1.Pod, ni *framework.NodeInfo) int64 {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	if s := pl.PreScore(ctx, state, pod, []*framework.NodeInfo{ni}); !s.IsSuccess() {
		t.Fatalf("PreScore: %v", s)
	}
	got, s := pl.Score(ctx, state, pod, ni)
	if !s.IsSuccess() {
		t.Fatalf("Score: %v", s)
	}
	if again, s := pl.Score(ctx, framework.NewCycleState(), pod, ni); !s.IsSuccess() || again != got {
		t.Errorf("Score without PreScore = %d (%v), want %d", again, s, got)
	}
	return got
}

func TestMostAllocatedScore(t *testing.T) {
	const (
		defaultArgs = `{"scoringStrategy":{"type":"MostAllocated"}}`
		weighted    = `{"scoringStrategy":{"type":"MostAllocated","resources":[{"name":"cpu","weight":3},{"name":"memory",` +
			`"weight":1}]}}`
		withGPU = `{"scoringStrategy":{"type":"MostAllocated","resources":[{"name":"cpu","weight":1},` +
			`{"name":"example.com/gpu","weight":1}]}}`
	)
	tests := []struct {
		name     string
		args     string
		pod      *v1.Pod
		existing []*v1.Pod
		want     int64
	}{
		{
			// cpu 3000*100/4000 = 75, memory 5000*100/10000 = 50 → 125/2 = 62
			name: "empty node", args: defaultArgs,
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3", v1.ResourceMemory: "5000"}).Obj(),
			want: 62,
		},
		{
			// cpu (2000+1000)*100/4000 = 75, memory (3000+2000)*100/10000 = 50 → 62
			name: "existing pods count", args: defaultArgs,
			pod:      st.MakePod().Name("p").Req(res{v1.ResourceCPU: "1", v1.ResourceMemory: "2000"}).Obj(),
			existing: []*v1.Pod{st.MakePod().Name("e").UID("e").Req(res{v1.ResourceCPU: "2", v1.ResourceMemory: "3000"}).Obj()},
			want:     62,
		},
		{
			// The pod counts as 100m and 200Mi: cpu 100*100/4000 = 2, memory
			// 200Mi > 10000 is capped at 100 → 102/2 = 51
			name: "best-effort pod uses the non-zero defaults", args: defaultArgs,
			pod:  st.MakePod().Name("p").Req(res{}).Obj(),
			want: 51,
		},
		{
			// An existing best-effort pod also counts as 100m and 200Mi on the
			// node: cpu (100+1000)*100/4000 = 27, memory capped at 100 → 63
			name: "existing best-effort pod uses the non-zero defaults", args: defaultArgs,
			pod:      st.MakePod().Name("p").Req(res{v1.ResourceCPU: "1", v1.ResourceMemory: "1000"}).Obj(),
			existing: []*v1.Pod{st.MakePod().Name("e").UID("e").Req(res{}).Obj()},
			want:     63,
		},
		{
			// Both above capacity: capped at 100 each.
			name: "overcommitted resources score 100", args: defaultArgs,
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "5", v1.ResourceMemory: "20000"}).Obj(),
			want: 100,
		},
		{
			// (75*3 + 50*1) / 4 = 275/4 = 68
			name: "resource weights", args: weighted,
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3", v1.ResourceMemory: "5000"}).Obj(),
			want: 68,
		},
		{
			// The pod asks for no GPU: only cpu counts, 75.
			name: "extended resource the pod does not request is left out", args: withGPU,
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3"}).Obj(),
			want: 75,
		},
		{
			// cpu 75, gpu 1*100/4 = 25 → 50
			name: "extended resource the pod requests counts", args: withGPU,
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3", gpu: "1"}).Obj(),
			want: 50,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := newFit(t, rawArgs(tt.args))
			if got := fitScore(t, pl, tt.pod, plugintesting.MakeNodeInfo(scoringNode(), tt.existing...)); got != tt.want {
				t.Errorf("score = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestRequestedToCapacityRatioScore(t *testing.T) {
	// args builds RequestedToCapacityRatio args over resources with shape.
	args := func(resources, shape string) string {
		return `{"scoringStrategy":{"type":"RequestedToCapacityRatio","resources":` + resources +
			`,"requestedToCapacityRatio":{"shape":` + shape + `}}}`
	}
	const (
		cpuMem      = `[{"name":"cpu","weight":1},{"name":"memory","weight":1}]`
		packShape   = `[{"utilization":0,"score":0},{"utilization":100,"score":10}]`
		spreadShape = `[{"utilization":0,"score":10},{"utilization":100,"score":0}]`
	)
	// pod asks for 3000m of 4000m cpu (75%) and 5000 of 10000 memory (50%).
	pod := st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3", v1.ResourceMemory: "5000"}).Obj()
	tests := []struct {
		name string
		args string
		pod  *v1.Pod
		want int64
	}{
		{
			// Shape ×10: (0,0)-(100,100). cpu 75, memory 50 →
			// round(125/2 = 62.5) = 63, where MostAllocated truncates to 62.
			name: "bin packing rounds the average", args: args(cpuMem, packShape), pod: pod,
			want: 63,
		},
		{
			// Shape (0,100)-(100,0): cpu 100-75 = 25, memory 50 → round(37.5) = 38
			name: "spreading", args: args(cpuMem, spreadShape), pod: pod,
			want: 38,
		},
		{
			// Shape (0,0) (30,50) (60,20) (100,100):
			// cpu 75 → 20 + 80*(75-60)/40 = 50; memory 50 → 50 + (-30)*(50-30)/30 = 30
			// → round(40) = 40
			name: "several segments", pod: pod,
			args: args(cpuMem,
				`[{"utilization":0,"score":0},{"utilization":30,"score":5},{"utilization":60,"score":2},{"utilization":100,`+
					`"score":10}]`),
			want: 40,
		},
		{
			// Shape (50,0)-(100,100): cpu 75 → 50; memory 50 → 0, and a
			// resource scoring 0 leaves the average with its weight: 50, not 25.
			name: "resource scoring 0 is left out of the average", pod: pod,
			args: args(cpuMem, `[{"utilization":50,"score":0},{"utilization":100,"score":10}]`),
			want: 50,
		},
		{
			// Every resource scores 0: no weight, score 0.
			name: "all resources score 0", pod: pod,
			args: args(cpuMem, `[{"utilization":90,"score":0},{"utilization":100,"score":10}]`),
			want: 0,
		},
		{
			// cpu 5000 > 4000 is scored at utilization 100 → 100; memory 50 → 75
			name: "overcommitted resource scores at 100% utilization", args: args(cpuMem, packShape),
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "5", v1.ResourceMemory: "5000"}).Obj(),
			want: 75,
		},
		{
			// (75*3 + 50*1) / 4 = 68.75 → 69
			name: "resource weights", pod: pod,
			args: args(`[{"name":"cpu","weight":3},{"name":"memory","weight":1}]`, packShape),
			want: 69,
		},
		{
			// gpu not requested: left out (at 0% utilization it would score
			// 100) → only cpu: 100 - 75 = 25
			name: "extended resource the pod does not request is left out",
			args: args(`[{"name":"cpu","weight":1},{"name":"example.com/gpu","weight":1}]`, spreadShape),
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3"}).Obj(),
			want: 25,
		},
		{
			// gpu 2 of 4 → 50; cpu 75 → round(62.5) = 63
			name: "extended resource the pod requests counts",
			args: args(`[{"name":"cpu","weight":1},{"name":"example.com/gpu","weight":1}]`, packShape),
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3", gpu: "2"}).Obj(),
			want: 63,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := newFit(t, rawArgs(tt.args))
			if got := fitScore(t, pl, tt.pod, plugintesting.MakeNodeInfo(scoringNode())); got != tt.want {
				t.Errorf("score = %d, want %d", got, tt.want)
			}
		})
	}
}
