// Tests for TopologyPlacementGenerator's placements: one per domain, the
// placed members' domain only, and the errors in kube-scheduler's words.

package topologyaware

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

const rack = "topology.kubernetes.io/rack"

// node is a node named name in rack r ("" for none).
func node(name, r string) *v1.Node {
	n := st.MakeNode().Name(name)
	if r != "" {
		n = n.Label(rack, r)
	}
	return n.Obj()
}

// member is a member of group "g", bound to nodeName if it is not "".
func member(name, nodeName string) *v1.Pod {
	return st.MakePod().Name(name).UID(name).PodGroup("g").NodeName(nodeName).Obj()
}

func TestGeneratePlacements(t *testing.T) {
	gang := st.MakePodGroup().Name("g").Gang(2)
	nodes := []*v1.Node{node("a1", "a"), node("b1", "b"), node("a2", "a"), node("none", ""), node("empty", "")}
	nodes[4].Labels = map[string]string{rack: ""}
	tests := []struct {
		name     string
		podGroup *schedulingv1beta1.PodGroup
		pods     []*v1.Pod
		// parent are the nodes of the parent placement (nil: all).
		parent []string
		// want are the placements, by name, with their nodes.
		want    map[string][]string
		wantErr string
	}{
		{name: "no constraint: the parent placement", podGroup: gang.Obj(),
			want: map[string][]string{"": {"a1", "b1", "a2", "none", "empty"}}},
		{name: "one placement per domain, the parent's order, nodes without the key left out",
			podGroup: st.MakePodGroup().Name("g").Gang(2).TopologyKey(rack).Obj(),
			want:     map[string][]string{"a": {"a1", "a2"}, "b": {"b1"}, "": {"empty"}}},
		{name: "only the parent placement's nodes", podGroup: st.MakePodGroup().Name("g").Gang(2).TopologyKey(rack).Obj(),
			parent: []string{"a2", "b1"}, want: map[string][]string{"a": {"a2"}, "b": {"b1"}}},
		{name: "a key no node has: no placement", podGroup: st.MakePodGroup().Name("g").Gang(2).TopologyKey("zone").Obj(),
			want: map[string][]string{}},
		{name: "a member bound in rack b: rack b only", podGroup: st.MakePodGroup().Name("g").Gang(2).TopologyKey(rack).Obj(),
			pods: []*v1.Pod{member("m1", "b1"), member("m2", "")}, want: map[string][]string{"b": {"b1"}}},
		{name: "members bound in two racks", podGroup: st.MakePodGroup().Name("g").Gang(2).TopologyKey(rack).Obj(),
			pods: []*v1.Pod{member("m1", "a1"), member("m2", "a1"), member("m3", "b1")},
			// The pods come in no set order: either pair may be named.
			wantErr: "cannot determine domain for already scheduled pods: more than 1 domain found for pod group: "},
		{name: "a member bound on a node without the key", podGroup: st.MakePodGroup().Name("g").Gang(2).TopologyKey(rack).Obj(),
			pods:    []*v1.Pod{member("m1", "none")},
			wantErr: "cannot determine domain for already scheduled pods: no topology domain found for pod default/m1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snapshot := plugintesting.PodGroupSnapshot(t, nodes, []*schedulingv1beta1.PodGroup{tt.podGroup}, tt.pods)
			_, pl, err := plugintesting.NewPluginFramework[*TopologyPlacement](context.Background(), Name, New,
				&configv1.Plugins{PlacementGenerate: plugintesting.Enable(Name)}, nil,
				framework.WithSnapshotSharedLister(snapshot),
				framework.WithFeatureGates(features.Gates{GenericWorkload: true, TopologyAwareWorkloadScheduling: true}))
			if err != nil {
				t.Fatal(err)
			}
			parent := &framework.Placement{}
			all, _ := snapshot.List()
			for _, ni := range all {
				if tt.parent == nil || slices.Contains(tt.parent, ni.Node().Name) {
					parent.Nodes = append(parent.Nodes, ni)
				}
			}
			group := &framework.PodGroupInfo{Namespace: "default", Name: "g", PodGroup: tt.podGroup}
			placements, status := pl.GeneratePlacements(context.Background(), framework.NewCycleState(), group, parent)
			if tt.wantErr != "" {
				if status.Code() != framework.Error || !strings.HasPrefix(status.Message(), tt.wantErr) {
					t.Fatalf("status = %v, want an error starting %q", status, tt.wantErr)
				}
				return
			}
			if !status.IsSuccess() {
				t.Fatalf("status = %v", status)
			}
			got := map[string][]string{}
			var order []string
			for _, p := range placements {
				order = append(order, p.Name)
				for _, ni := range p.Nodes {
					got[p.Name] = append(got[p.Name], ni.Node().Name)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("placements (-want +got):\n%s", diff)
			}
			for i := 1; i < len(order); i++ {
				if order[i-1] > order[i] {
					t.Errorf("placements in the order %q, want them sorted by name", order)
				}
			}
		})
	}
}
