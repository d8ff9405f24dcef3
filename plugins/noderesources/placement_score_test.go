// Tests for NodeResourcesFit's PlacementScore: a placement scored as one
// node, with MostAllocated over the profile's resources, whatever the
// strategy nodes are scored with.

package noderesources

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestScorePlacement(t *testing.T) {
	node := func(name string, capacity res) *v1.Node { return st.MakeNode().Name(name).Capacity(capacity).Obj() }
	big := res{v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi", gpu: "4"}
	member := func(name string, req res) *v1.Pod {
		return st.MakePod().Name(name).UID(name).PodGroup("g").Req(req).Obj()
	}
	tests := []struct {
		name string
		args string
		// nodes are the placement's, each with the pods already on it.
		nodes []*framework.NodeInfo
		// members are the group's pods the cycle placed there.
		members []*v1.Pod
		want    int64
	}{
		{
			// cpu (2000+1000)/8000 → 37, memory (4Gi+1Gi)/16Gi → 31.
			name: "the placement's nodes summed, the group's requests added to their pods'",
			nodes: []*framework.NodeInfo{
				plugintesting.MakeNodeInfo(node("n1", big), st.MakePod().Name("old").Req(res{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi"}).Obj()),
				plugintesting.MakeNodeInfo(node("n2", big)),
			},
			members: []*v1.Pod{member("m1", res{v1.ResourceCPU: "1", v1.ResourceMemory: "2Gi"}),
				member("m2", res{v1.ResourceCPU: "1", v1.ResourceMemory: "2Gi"})},
			want: 34,
		},
		{
			name: "MostAllocated even when nodes are scored LeastAllocated",
			args: `{"scoringStrategy": {"type": "LeastAllocated"}}`,
			nodes: []*framework.NodeInfo{
				plugintesting.MakeNodeInfo(node("n1", big), st.MakePod().Name("old").Req(res{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi"}).Obj()),
				plugintesting.MakeNodeInfo(node("n2", big)),
			},
			members: []*v1.Pod{member("m1", res{v1.ResourceCPU: "1", v1.ResourceMemory: "2Gi"}),
				member("m2", res{v1.ResourceCPU: "1", v1.ResourceMemory: "2Gi"})},
			want: 34,
		},
		{
			// cpu 100m/1000m → 10, memory 200Mi/1Gi → 19.
			name:    "a member without requests counts as 100m and 200Mi",
			nodes:   []*framework.NodeInfo{plugintesting.MakeNodeInfo(node("n1", res{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi"}))},
			members: []*v1.Pod{member("m1", nil)},
			want:    14,
		},
		{
			name:    "a scored extended resource the group does not ask for is left out",
			args:    `{"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}, {"name": "example.com/gpu", "weight": 1}]}}`,
			nodes:   []*framework.NodeInfo{plugintesting.MakeNodeInfo(node("n1", big))},
			members: []*v1.Pod{member("m1", res{v1.ResourceCPU: "1"})},
			want:    25,
		},
		{
			// cpu 2/4 → 50, gpu 1/4 → 25.
			name:    "a scored extended resource the group asks for counts",
			args:    `{"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}, {"name": "example.com/gpu", "weight": 1}]}}`,
			nodes:   []*framework.NodeInfo{plugintesting.MakeNodeInfo(node("n1", big))},
			members: []*v1.Pod{member("m1", res{v1.ResourceCPU: "2", gpu: "1"})},
			want:    37,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if args == "" {
				args = "{}"
			}
			pl, err := New(context.Background(), rawArgs(args), nil)
			if err != nil {
				t.Fatal(err)
			}
			assignments := &framework.PodGroupAssignments{Placement: &framework.Placement{Name: "rack", Nodes: tt.nodes}}
			for _, m := range tt.members {
				assignments.ProposedAssignments = append(assignments.ProposedAssignments,
					framework.ProposedAssignment{PodInfo: framework.NewPodInfo(m), NodeName: "n1"})
			}
			fit := pl.(*Fit)
			if fit.PlacementScoreExtensions() != nil {
				t.Error("PlacementScoreExtensions() is not nil: the score needs no normalising")
			}
			got, status := fit.ScorePlacement(context.Background(), framework.NewCycleState(),
				&framework.PodGroupInfo{Namespace: "default", Name: "g"}, assignments)
			if !status.IsSuccess() || got != tt.want {
				t.Errorf("ScorePlacement() = %d, %v; want %d", got, status, tt.want)
			}
		})
	}
}
