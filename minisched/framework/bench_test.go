package framework_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
	st "github.com/minisched/minisched/plugins/testing"
)

// BenchmarkSchedulingCycle measures one pod's Filter and Score over 1000
// nodes with 10 pods each, using the default profile's plugins.
func BenchmarkSchedulingCycle(b *testing.B) {
	const numNodes, podsPerNode = 1000, 10
	var nodes []*v1.Node
	var pods []*v1.Pod
	for i := range numNodes {
		name := fmt.Sprintf("node-%d", i)
		nodes = append(nodes, st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "32", v1.ResourceMemory: "128Gi"}).Obj())
		for j := range podsPerNode {
			pods = append(pods, st.MakePod().Name(fmt.Sprintf("p-%d-%d", i, j)).UID(fmt.Sprintf("u-%d-%d", i, j)).
				NodeName(name).Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi"}).Obj())
		}
	}
	snapshot := cache.NewSnapshot(pods, nodes)
	profile := &configv1.KubeSchedulerProfile{SchedulerName: ptr.To("bench"), Plugins: &configv1.Plugins{
		MultiPoint: configv1.PluginSet{Enabled: []configv1.Plugin{
			{Name: "PrioritySort"}, {Name: "NodeUnschedulable"}, {Name: "NodeName"}, {Name: "NodeResourcesFit"}, {Name: "DefaultBinder"},
		}},
	}}
	fwk, err := framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(), profile, framework.WithSnapshotSharedLister(snapshot))
	if err != nil {
		b.Fatal(err)
	}
	all, _ := snapshot.NodeInfos().List()
	pod := st.MakePod().Name("incoming").UID("incoming").Req(map[v1.ResourceName]string{v1.ResourceCPU: "2", v1.ResourceMemory: "2Gi"}).Obj()
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		state := framework.NewCycleState()
		if _, s, _ := fwk.RunPreFilterPlugins(ctx, state, pod, all); !s.IsSuccess() {
			b.Fatal(s)
		}
		diag := framework.NewDiagnosis()
		feasible, _, err := fwk.FindNodesThatPassFilters(ctx, state, pod, &diag, all, 0, len(all))
		if err != nil || len(feasible) != numNodes {
			b.Fatalf("feasible %d, err %v", len(feasible), err)
		}
		if s := fwk.RunPreScorePlugins(ctx, state, pod, feasible); !s.IsSuccess() {
			b.Fatal(s)
		}
		if _, s := fwk.RunScorePlugins(ctx, state, pod, feasible); !s.IsSuccess() {
			b.Fatal(s)
		}
	}
}
