package minisched

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

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
		nodes = append(nodes, &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%03d", i), Labels: map[string]string{v1.LabelTopologyZone: zone}},
			Status:     v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourcePods: resource.MustParse("10")}},
		})
	}
	snapshot := cache.NewSnapshot(nil, nodes)
	profile := &configv1.KubeSchedulerProfile{SchedulerName: ptr.To("p"), Plugins: &configv1.Plugins{MultiPoint: configv1.PluginSet{
		Enabled: []configv1.Plugin{{Name: "PrioritySort"}, {Name: "NodeUnschedulable"}, {Name: "DefaultBinder"}},
	}}}
	// One Filter worker: with several, which nodes beyond the first 100
	// feasible ones were also examined depends on timing (as upstream).
	fwk, err := framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(), profile,
		framework.WithSnapshotSharedLister(snapshot), framework.WithParallelism(1))
	if err != nil {
		t.Fatal(err)
	}
	s := &Scheduler{snapshot: snapshot, percentageOfNodesToScore: 50, profilePercentage: map[string]*int32{}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}

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
			feasible, _, err := s.findNodesThatFitPod(context.Background(), fwk, framework.NewCycleState(), pod)
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
