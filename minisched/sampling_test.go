package minisched

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
)

// TestFeasibleSearchRotates checks percentageOfNodesToScore as kube-scheduler
// does it: with 200 nodes and 50%, each search stops after 100 feasible
// nodes and the next one starts where the last stopped, so the nodes seen
// alternate between zones and every node gets its turn.
func TestFeasibleSearchRotates(t *testing.T) {
	var nodes []*v1.Node
	for i := range 200 {
		zone := []string{"z1", "z2"}[i%2]
		nodes = append(nodes, st.MakeNode().Name(fmt.Sprintf("n%03d", i)).Zone(zone).
			Capacity(map[v1.ResourceName]string{v1.ResourcePods: "10"}).Obj())
	}
	snapshot := cache.NewSnapshot(nil, nodes)
	profile := &configv1.KubeSchedulerProfile{
		SchedulerName: ptr.To("p"),
		Plugins: &configv1.Plugins{MultiPoint: configv1.PluginSet{
			Enabled: []configv1.Plugin{{Name: "PrioritySort"}, {Name: "NodeUnschedulable"}, {Name: "TaintToleration"},
				{Name: "DefaultBinder"}},
		}},
	}
	// One Filter worker: with several, which nodes beyond the first 100
	// feasible ones were also examined depends on timing (as upstream).
	schedFramework, err := framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(), profile,
		framework.WithSnapshotSharedLister(snapshot), framework.WithParallelism(1))
	if err != nil {
		t.Fatal(err)
	}
	s := &Scheduler{snapshot: snapshot, percentageOfNodesToScore: 50, profilePercentage: map[string]*int32{}}
	pod := st.MakePod().Name("p").Namespace("ns").Obj()

	seen := map[string]int{}
	tests := []struct {
		name      string
		wantStart int
	}{
		{name: "first search starts at the first node", wantStart: 0},
		{name: "second search starts after the 100 examined", wantStart: 100},
		{name: "third search wraps around", wantStart: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s.nextStartNodeIndex != tt.wantStart {
				t.Fatalf("search starts at %d, want %d", s.nextStartNodeIndex, tt.wantStart)
			}
			feasible, _, _, err := s.findNodesThatFitPod(context.Background(), schedFramework, framework.NewCycleState(), queuedPod(pod), 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(feasible) != 100 {
				t.Fatalf("found %d feasible nodes, want 100 (50%% of 200)", len(feasible))
			}
			zones := map[string]int{}
			for _, ni := range feasible {
				zones[ni.Node().Labels[v1.LabelTopologyZone]]++
				seen[ni.Node().Name]++
			}
			if zones["z1"] != 50 || zones["z2"] != 50 {
				t.Errorf("zones %v, want the two zones interleaved 50/50", zones)
			}
		})
	}
	if len(seen) != 200 {
		t.Errorf("three searches saw %d distinct nodes, want all 200", len(seen))
	}
}

// TestFindNodesThatPassFilters covers the parallel search, through
// findNodesThatFitPod without nominations or extenders: the verdicts it
// records, where it starts, when it stops, and where the next search will
// start.
func TestFindNodesThatPassFilters(t *testing.T) {
	makeNodes := func(n int, cordoned ...int) []*v1.Node {
		var nodes []*v1.Node
		for i := range n {
			nodes = append(nodes, st.MakeNode().Name(fmt.Sprintf("n%03d", i)).
				Capacity(map[v1.ResourceName]string{v1.ResourcePods: "10"}).Obj())
		}
		for _, i := range cordoned {
			nodes[i].Spec.Unschedulable = true
		}
		return nodes
	}
	names := func(from, to int) []string { // n<from> … n<to-1>, wrapping at 200
		var out []string
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf("n%03d", i%200))
		}
		return out
	}
	// TaintToleration scores nodes (and filters none here): with something
	// to rank them by, the search looks for more than one feasible node.
	withFilter := []configv1.Plugin{{Name: "PrioritySort"}, {Name: "NodeUnschedulable"}, {Name: "TaintToleration"},
		{Name: "DefaultBinder"}}
	noFilter := []configv1.Plugin{{Name: "PrioritySort"}, {Name: "NodeNumber"}, {Name: "DefaultBinder"}}
	noScore := []configv1.Plugin{{Name: "PrioritySort"}, {Name: "NodeUnschedulable"}, {Name: "DefaultBinder"}}
	noPlugins := []configv1.Plugin{{Name: "PrioritySort"}, {Name: "DefaultBinder"}}
	tests := []struct {
		name         string
		plugins      []configv1.Plugin
		nodes        []*v1.Node
		start        int
		wantFeasible []string
		wantRejected map[string]string // node → plugin
		wantNext     int
	}{
		{
			name:         "a rejected node is recorded with its plugin; the others are feasible",
			plugins:      withFilter,
			nodes:        makeNodes(3, 1),
			wantFeasible: []string{"n000", "n002"},
			wantRejected: map[string]string{"n001": "NodeUnschedulable"},
			wantNext:     0, // three examined of three
		},
		{
			name:         "with nothing to rank the nodes the search stops at the first feasible one",
			plugins:      noScore,
			nodes:        makeNodes(200, 10),
			start:        10,
			wantFeasible: []string{"n011"},
			wantRejected: map[string]string{"n010": "NodeUnschedulable"},
			wantNext:     12,
		},
		{
			name:         "with no plugins at all the node at the start index is taken, round robin",
			plugins:      noPlugins,
			nodes:        makeNodes(5),
			start:        3,
			wantFeasible: []string{"n003"},
			wantRejected: map[string]string{},
			wantNext:     4,
		},
		{
			name:         "the search starts at the start index, wraps, and stops at 50% of 200 nodes",
			plugins:      withFilter,
			nodes:        makeNodes(200, 160),
			start:        150,
			wantFeasible: append(append(names(150, 160), names(161, 200)...), names(200, 251)...),
			wantRejected: map[string]string{"n160": "NodeUnschedulable"},
			wantNext:     51, // 150 + 100 feasible + 1 rejected, modulo 200
		},
		{
			name:         "without Filter plugins the first nodes from the start index are feasible",
			plugins:      noFilter,
			nodes:        makeNodes(200),
			start:        10,
			wantFeasible: names(10, 110),
			wantRejected: map[string]string{},
			wantNext:     110,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snapshot := cache.NewSnapshot(nil, tt.nodes)
			profile := &configv1.KubeSchedulerProfile{
				SchedulerName: ptr.To("p"),
				Plugins:       &configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: tt.plugins}},
			}
			// One Filter worker, so which nodes are examined after enough
			// were found does not depend on timing.
			schedFramework, err := framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(), profile,
				framework.WithSnapshotSharedLister(snapshot), framework.WithParallelism(1))
			if err != nil {
				t.Fatal(err)
			}
			s := &Scheduler{snapshot: snapshot, percentageOfNodesToScore: 50, nextStartNodeIndex: tt.start}
			pod := st.MakePod().Name("p").Namespace("ns").Obj()

			feasible, diagnosis, _, err := s.findNodesThatFitPod(context.Background(), schedFramework, framework.NewCycleState(), queuedPod(pod), 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ni := range feasible {
				got = append(got, ni.Node().Name)
			}
			if diff := cmp.Diff(tt.wantFeasible, got); diff != "" {
				t.Errorf("feasible nodes (-want +got):\n%s", diff)
			}
			rejected := map[string]string{}
			diagnosis.NodeToStatus.ForEachExplicitNode(func(node string, s *framework.Status) {
				rejected[node] = s.Plugin()
			})
			if diff := cmp.Diff(tt.wantRejected, rejected); diff != "" {
				t.Errorf("rejected nodes (-want +got):\n%s", diff)
			}
			wantPlugins := sets.New[string]()
			for _, plugin := range tt.wantRejected {
				wantPlugins.Insert(plugin)
			}
			if diff := cmp.Diff(sets.List(wantPlugins), sets.List(diagnosis.UnschedulablePlugins)); diff != "" {
				t.Errorf("unschedulable plugins (-want +got):\n%s", diff)
			}
			if s.nextStartNodeIndex != tt.wantNext {
				t.Errorf("next search starts at %d, want %d", s.nextStartNodeIndex, tt.wantNext)
			}
		})
	}
}
