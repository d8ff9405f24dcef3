// Tests for NodeResourcesFit's LeastAllocated scoring.
package noderesources

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestLeastAllocatedScore(t *testing.T) {
	// Node: 4000m cpu, 10000 bytes of memory.
	node := func(name string) *v1.Node {
		return st.MakeNode().Name(name).Capacity(res{v1.ResourceCPU: "4", v1.ResourceMemory: "10000"}).Obj()
	}
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		args     string
		want     int64
	}{
		{
			// cpu (4000-3000)*100/4000 = 25, memory (10000-5000)*100/10000 = 50 → 37
			name: "empty node", pod: st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3", v1.ResourceMemory: "5000"}).Obj(),
			want: 37,
		},
		{
			// cpu (4000-1000-2000)*100/4000 = 25, memory (10000-2000-3000)*100/10000 = 50 → 37
			name: "existing pods count",
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "1", v1.ResourceMemory: "2000"}).Obj(),
			existing: []*v1.Pod{
				st.MakePod().Name("e").UID("e").Req(res{v1.ResourceCPU: "2", v1.ResourceMemory: "3000"}).Obj(),
			},
			want: 37,
		},
		{
			// A best-effort pod counts as 100m and 200Mi; 200Mi exceeds the
			// node's memory, which scores 0: cpu (4000-100)*100/4000 = 97 → 48
			name: "best-effort pod uses the non-zero defaults",
			pod:  st.MakePod().Name("p").Req(res{}).Obj(),
			want: 48,
		},
		{
			name: "overcommitted resource scores 0",
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "5", v1.ResourceMemory: "10000"}).Obj(),
			want: 0,
		},
		{
			// cpu weight 3: (25*3 + 50*1) / 4 = 31
			name: "resource weights",
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3", v1.ResourceMemory: "5000"}).Obj(),
			args: `{"scoringStrategy":{"type":"LeastAllocated","resources":[{"name":"cpu","weight":3},{"name":"memory",` +
				`"weight":1}]}}`,
			want: 31,
		},
		{
			// The node has no example.com/gpu: only cpu counts, 25.
			name: "resource the node lacks is left out",
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3", gpu: "1"}).Obj(),
			args: `{"scoringStrategy":{"type":"LeastAllocated","resources":[{"name":"cpu","weight":1},` +
				`{"name":"example.com/gpu","weight":1}]}}`,
			want: 25,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pl *Fit
			if tt.args == "" {
				pl = newFit(t, nil)
			} else {
				pl = newFit(t, rawArgs(tt.args))
			}
			ni := plugintesting.MakeNodeInfo(node("n"), tt.existing...)
			state := framework.NewCycleState()
			if s := pl.PreScore(context.Background(), state, tt.pod, []*framework.NodeInfo{ni}); !s.IsSuccess() {
				t.Fatal(s)
			}
			got, s := pl.Score(context.Background(), state, tt.pod, ni)
			if !s.IsSuccess() {
				t.Fatal(s)
			}
			if got != tt.want {
				t.Errorf("score = %d, want %d", got, tt.want)
			}
			// Without PreScore's state, Score computes the same.
			if again, _ := pl.Score(context.Background(), framework.NewCycleState(), tt.pod, ni); again != got {
				t.Errorf("score without PreScore = %d, want %d", again, got)
			}
		})
	}
}
