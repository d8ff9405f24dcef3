package minisched

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
)

// BenchmarkSchedulingCycle measures one pod's search for feasible nodes
// (PreFilter, Filter) and their ranking (PreScore, Score) over 1000 nodes
// with 10 pods each, all of which fit, with four of the default plugins.
func BenchmarkSchedulingCycle(b *testing.B) {
	const numNodes, podsPerNode = 1000, 10
	var nodes []*v1.Node
	var pods []*v1.Pod
	for i := range numNodes {
		name := fmt.Sprintf("node-%d", i)
		nodes = append(nodes, st.MakeNode().Name(name).
			Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "32", v1.ResourceMemory: "128Gi"}).Obj())
		for j := range podsPerNode {
			pods = append(pods, st.MakePod().Name(fmt.Sprintf("p-%d-%d", i, j)).UID(fmt.Sprintf("u-%d-%d", i, j)).
				NodeName(name).Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi"}).Obj())
		}
	}
	snapshot := cache.NewSnapshot(pods, nodes)
	profile := &configv1.KubeSchedulerProfile{SchedulerName: ptr.To("bench"), Plugins: &configv1.Plugins{
		MultiPoint: configv1.PluginSet{Enabled: []configv1.Plugin{
			{Name: "PrioritySort"}, {Name: "NodeUnschedulable"}, {Name: "NodeName"}, {Name: "NodeResourcesFit"},
			{Name: "DefaultBinder"},
		}},
	}}
	fwk, err := framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(), profile,
		framework.WithSnapshotSharedLister(snapshot))
	if err != nil {
		b.Fatal(err)
	}
	// 100%: every node is searched, as in a cluster of fewer than 100 nodes.
	s := &Scheduler{snapshot: snapshot, percentageOfNodesToScore: 100}
	pod := st.MakePod().Name("incoming").UID("incoming").
		Req(map[v1.ResourceName]string{v1.ResourceCPU: "2", v1.ResourceMemory: "2Gi"}).Obj()
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		state := framework.NewCycleState()
		feasible, _, err := s.findNodesThatFitPod(ctx, fwk, state, pod)
		if err != nil || len(feasible) != numNodes {
			b.Fatalf("feasible %d, err %v", len(feasible), err)
		}
		if _, err := s.prioritizeNodes(ctx, fwk, state, pod, feasible); err != nil {
			b.Fatal(err)
		}
	}
}
