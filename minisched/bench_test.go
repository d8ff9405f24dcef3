// Benchmarks of one scheduling cycle: the search and ranking alone, and the
// whole cycle with the default profile (chapter 15).

package minisched_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
	"github.com/minisched/minisched/queue"
	"github.com/minisched/minisched/scheduler"
)

// BenchmarkSchedulingCycle measures one pod's search for feasible nodes
// (PreFilter, Filter) and their ranking (PreScore, Score) over 1000 nodes
// with 10 pods each, all of which fit, with the default plugins
// NodeUnschedulable, NodeName and NodeResourcesFit (and the QueueSort and
// Bind plugins a profile needs).
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
	schedFramework, err := framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(), profile,
		framework.WithSnapshotSharedLister(snapshot))
	if err != nil {
		b.Fatal(err)
	}
	// 100%: every node is searched, as in a cluster of fewer than 100 nodes.
	s := minisched.NewBenchScheduler(cache.New(0), nil, snapshot, schedFramework, nil, 100)
	pod := st.MakePod().Name("incoming").UID("incoming").
		Req(map[v1.ResourceName]string{v1.ResourceCPU: "2", v1.ResourceMemory: "2Gi"}).Obj()
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if feasible, err := s.FilterAndScore(ctx, schedFramework, pod); err != nil || feasible != numNodes {
			b.Fatalf("feasible %d, err %v", feasible, err)
		}
	}
}

// benchProfileName is the schedulerName of BenchmarkScheduleOne's profile.
const benchProfileName = "default-scheduler"

// The shape of BenchmarkScheduleOne's clusters.
const (
	benchPodsPerNode = 10
	benchZones       = 5
	// benchGroups is how many "app" label values the pods are spread over;
	// the pods on one node belong to different groups.
	benchGroups = 50
)

// benchCluster returns numNodes nodes in benchZones zones (a mix of
// instance types and images) and benchPodsPerNode pods on each, labelled
// app=g<k> for one of benchGroups groups. The first pod on each node has
// required anti-affinity to its own group on its node, so InterPodAffinity
// has existing pods' terms to check against every incoming pod.
func benchCluster(numNodes int) ([]*v1.Node, []*v1.Pod) {
	var nodes []*v1.Node
	var pods []*v1.Pod
	for i := range numNodes {
		name := fmt.Sprintf("node-%05d", i)
		nodes = append(nodes, st.MakeNode().Name(name).
			Label(v1.LabelHostname, name).
			Zone(fmt.Sprintf("zone-%d", i%benchZones)).
			Label(v1.LabelInstanceTypeStable, []string{"small", "large"}[i%2]).
			Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64", v1.ResourceMemory: "256Gi", v1.ResourcePods: "110"}).
			Images(500_000_000, fmt.Sprintf("registry.example/app:%d", i%7)).
			Obj())
		for j := range benchPodsPerNode {
			group := fmt.Sprintf("g%d", (i*7+j)%benchGroups)
			p := st.MakePod().Namespace("default").Name(fmt.Sprintf("p-%05d-%d", i, j)).
				UID(fmt.Sprintf("u-%05d-%d", i, j)).NodeName(name).Label("app", group).
				Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "2Gi"})
			if j == 0 {
				p = p.PodAntiAffinity(&v1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{groupTerm(group, v1.LabelHostname)},
				})
			}
			pods = append(pods, p.Obj())
		}
	}
	return nodes, pods
}

// groupTerm selects the pods of group with topology key key.
func groupTerm(group, key string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": group}},
		TopologyKey:   key,
	}
}

// benchIncomingPods returns one incoming pod per group for workload:
// "plain" pods have requests, a label and an image; "affinity" pods also
// have required anti-affinity to their group per node, preferred
// anti-affinity to it per zone, and spread their group over zones
// (DoNotSchedule) and nodes (ScheduleAnyway).
func benchIncomingPods(workload string) []*framework.QueuedPodInfo {
	var out []*framework.QueuedPodInfo
	for g := range benchGroups {
		group := fmt.Sprintf("g%d", g)
		p := st.MakePod().Namespace("default").Name("incoming-"+group).UID("incoming-"+group).
			Label("app", group).Image(fmt.Sprintf("registry.example/app:%d", g%7)).
			Req(map[v1.ResourceName]string{v1.ResourceCPU: "500m", v1.ResourceMemory: "1Gi"})
		if workload == "affinity" {
			selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": group}}
			p = p.PodAntiAffinity(&v1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{groupTerm(group, v1.LabelHostname)},
				PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{
					{Weight: 10, PodAffinityTerm: groupTerm(group, v1.LabelTopologyZone)},
				},
			}).SpreadConstraint(v1.TopologySpreadConstraint{
				MaxSkew: 3, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.DoNotSchedule,
				LabelSelector: selector,
			}).SpreadConstraint(v1.TopologySpreadConstraint{
				MaxSkew: 1, TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.ScheduleAnyway,
				LabelSelector: selector,
			})
		}
		out = append(out, framework.NewQueuedPodInfo(p.Obj(), time.Time{}))
	}
	return out
}

// newBenchScheduler builds a Scheduler with the default profile over a cache
// holding nodes and pods, with no apiserver: the informer factory of a fake
// clientset is never started, so the listers plugins ask for (namespaces,
// Services, controllers) are empty. percentageOfNodesToScore is adaptive,
// as by default.
func newBenchScheduler(b *testing.B, nodes []*v1.Node, pods []*v1.Pod) *minisched.Scheduler {
	ctx := context.Background()
	logger := klog.Background()
	c := cache.New(0)
	for _, n := range nodes {
		c.AddNode(logger, n)
	}
	for _, p := range pods {
		if err := c.AddPod(logger, p); err != nil {
			b.Fatal(err)
		}
	}
	snapshot := cache.NewEmptySnapshot()
	client := fake.NewClientset()
	profile := &configv1.KubeSchedulerProfile{
		SchedulerName: ptr.To(benchProfileName),
		Plugins:       scheduler.DefaultPlugins(),
	}
	schedFramework, err := framework.NewFramework(ctx, plugins.NewInTreeRegistry(), profile,
		framework.WithSnapshotSharedLister(snapshot), framework.WithClientSet(client),
		framework.WithInformerFactory(informers.NewSharedInformerFactory(client, 0)))
	if err != nil {
		b.Fatal(err)
	}
	// The first refresh copies every NodeInfo; later cycles copy only the
	// one node the previous cycle assumed a pod on and forgot. Do it here,
	// not in the first timed iteration.
	if err := c.UpdateSnapshot(logger, snapshot); err != nil {
		b.Fatal(err)
	}
	q := queue.New(schedFramework.QueueSortFunc(), map[string]queue.Profile{benchProfileName: schedFramework})
	schedFramework.SetPodNominator(q)
	schedFramework.SetPodActivator(q)
	return minisched.NewBenchScheduler(c, q, snapshot, schedFramework, client, 0)
}

// BenchmarkScheduleOne measures the scheduling cycle of one pod with the
// default profile: snapshot refresh, PreFilter, Filter over the nodes
// percentageOfNodesToScore asks for (adaptive: all of 100 nodes, 46% of
// 500, 42% of 1000, 10% of 5000), PreScore, Score, selectHost, then assume,
// Reserve and Permit. Each iteration schedules the next of benchGroups
// fresh pods and then undoes it (Unreserve, ForgetPod), so every iteration
// sees the same cluster: what the undo costs (one NodeInfo copied by the
// next snapshot refresh) is measured with it.
//
// Workloads: "plain" pods have only requests, a label and an image;
// "affinity" pods add required and preferred pod anti-affinity and
// topology spread constraints (see benchIncomingPods). Both run on the same
// clusters, where the first pod on each node has required anti-affinity.
func BenchmarkScheduleOne(b *testing.B) {
	for _, numNodes := range []int{100, 500, 1000, 5000} {
		nodes, pods := benchCluster(numNodes)
		for _, workload := range []string{"plain", "affinity"} {
			b.Run(fmt.Sprintf("nodes=%d/workload=%s", numNodes, workload), func(b *testing.B) {
				s := newBenchScheduler(b, nodes, pods)
				schedFramework := s.Profiles[benchProfileName]
				incoming := benchIncomingPods(workload)
				ctx := klog.NewContext(context.Background(), klog.Background())
				i := 0
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					podInfo := incoming[i%len(incoming)]
					i++
					if status := s.ScheduleAndUndo(ctx, schedFramework, podInfo); !status.IsSuccess() {
						b.Fatalf("pod %s: %v", podInfo.Pod.Name, status.AsError())
					}
				}
			})
		}
	}
}
