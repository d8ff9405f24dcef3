// Tests for PodGroupPodsCount: the count of a placement's pods, the group's
// placed pods included, and its normalisation by the largest count.

package podgrouppodscount

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestPodGroupPodsCount(t *testing.T) {
	// proposed is a placement's assignments of n members.
	proposed := func(name string, n int) *framework.PodGroupAssignments {
		a := &framework.PodGroupAssignments{Placement: &framework.Placement{Name: name}}
		for range n {
			a.ProposedAssignments = append(a.ProposedAssignments, framework.ProposedAssignment{})
		}
		return a
	}
	bound := func(name string) *v1.Pod {
		return st.MakePod().Name(name).UID(name).PodGroup("g").NodeName("n1").Obj()
	}
	tests := []struct {
		name        string
		placed      []*v1.Pod
		assignments []*framework.PodGroupAssignments
		wantRaw     []int64
		wantScores  []int64
		wantErr     string
	}{
		{name: "the placement holding more scores higher",
			assignments: []*framework.PodGroupAssignments{proposed("a", 2), proposed("b", 4), proposed("c", 3)},
			wantRaw:     []int64{2, 4, 3}, wantScores: []int64{50, 100, 75}},
		{name: "the group's placed pods count in every placement",
			placed:      []*v1.Pod{bound("p1"), bound("p2")},
			assignments: []*framework.PodGroupAssignments{proposed("a", 1), proposed("b", 2)},
			wantRaw:     []int64{3, 4}, wantScores: []int64{75, 100}},
		{name: "nothing placed anywhere",
			assignments: []*framework.PodGroupAssignments{proposed("a", 0), proposed("b", 0)},
			wantRaw:     []int64{0, 0},
			wantErr:     "no pods from pod group are assigned to any of the candidate placements"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pg := st.MakePodGroup().Name("g").Gang(1).Obj()
			nodes := []*v1.Node{st.MakeNode().Name("n1").Obj()}
			snapshot := plugintesting.PodGroupSnapshot(t, nodes, []*schedulingv1beta1.PodGroup{pg}, tt.placed)
			_, pl, err := plugintesting.NewPluginFramework[*PodGroupPodsCount](context.Background(), Name, New,
				&configv1.Plugins{PlacementScore: plugintesting.Enable(Name)}, nil,
				framework.WithSnapshotSharedLister(snapshot))
			if err != nil {
				t.Fatal(err)
			}
			ctx, group := context.Background(), &framework.PodGroupInfo{Namespace: "default", Name: "g", PodGroup: pg}
			var raw []int64
			scores := make([]framework.PlacementScore, len(tt.assignments))
			for i, a := range tt.assignments {
				score, status := pl.ScorePlacement(ctx, framework.NewCycleState(), group, a)
				if !status.IsSuccess() {
					t.Fatalf("ScorePlacement(%s): %v", a.Placement.Name, status)
				}
				raw = append(raw, score)
				scores[i] = framework.PlacementScore{Placement: a.Placement, Score: score}
			}
			if diff := cmp.Diff(tt.wantRaw, raw); diff != "" {
				t.Errorf("raw scores (-want +got):\n%s", diff)
			}
			status := pl.PlacementScoreExtensions().NormalizePlacementScore(ctx, framework.NewCycleState(), group, scores)
			if tt.wantErr != "" {
				if status.Code() != framework.Error || status.Message() != tt.wantErr {
					t.Fatalf("NormalizePlacementScore = %v, want the error %q", status, tt.wantErr)
				}
				return
			}
			var got []int64
			for _, s := range scores {
				got = append(got, s.Score)
			}
			if diff := cmp.Diff(tt.wantScores, got); diff != "" {
				t.Errorf("normalised scores (-want +got):\n%s", diff)
			}
		})
	}
}
