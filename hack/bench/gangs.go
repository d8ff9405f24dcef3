package main

// The gang workloads, after upstream's scheduler_perf podgroup/gangscheduling
// and workload_preemption configs: PodGroups with a gang policy, created
// before their pods, and both schedulers run with GenericWorkload on.

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/minisched/minisched/scenario"
)

// Gangs are a workload's PodGroups: Groups of them, gang-0 … gang-<Groups-1>,
// each a gang of MinCount, and measured pod i belongs to gang-<i/PodsPerGroup>.
type Gangs struct {
	Groups, PodsPerGroup int
	MinCount             int32
	// PriorityClass, if set, is every PodGroup's priorityClassName (the
	// apiserver resolves it into the PodGroup's priority, as it does a pod's).
	PriorityClass string
}

// gangFeatureGates turn on kube-scheduler's gang scheduling (and minisched's).
const gangFeatureGates = "GenericWorkload=true"

// gangNodes is the nodes of the GangScheduling workloads: upstream's 5000.
const gangNodes = 5000

// gangName is the name of PodGroup i: gang-<i>.
func gangName(i int) string { return fmt.Sprintf("gang-%d", i) }

// gangOf is the PodGroup of the measured pod with this name.
func (g *Gangs) gangOf(pod string) string { return gangName(podIndex(pod) / g.PodsPerGroup) }

// pickInt is full, or tiny at smoke sizes.
func pickInt(smoke bool, full, tiny int) int {
	if smoke {
		return tiny
	}
	return full
}

// gangScheduling is upstream's GangScheduling: s.pods pods of 100m CPU and
// 100Mi in gangs of perGroup (minCount = perGroup), on plain nodes. Any
// node takes any member, so the ceiling binds round robin.
func gangScheduling(name string, s sizes, perGroup int) Workload {
	g := &Gangs{Groups: s.pods / perGroup, PodsPerGroup: perGroup, MinCount: int32(perGroup)}
	return Workload{Name: name, Nodes: s.nodes, Pods: g.Groups * perGroup, Gangs: g, FeatureGates: gangFeatureGates,
		Pod: func(n string) *v1.Pod {
			return scenario.MakePod(n).Namespace(namespace).Label(roleLabel, roleMeasured).PodGroup(g.gangOf(n)).
				Req(map[v1.ResourceName]string{v1.ResourceCPU: "100m", v1.ResourceMemory: "100Mi"}).Obj()
		},
		Place: roundRobin(s.nodes)}
}

// Resources of GangPreemptionBasic: a node's 4 CPU hold a gang member of
// 3970m only once every 40m low-priority pod on it is gone.
const (
	gangPreemptorCPU = "3970m"
	gangVictimCPU    = "40m"
	// gangVictimPort is the first host port of the low-priority pods.
	gangVictimPort = 8000
)

// gangPreemption is upstream's GangPreemptionBasic: s.initPods
// low-priority pods of 40m (host ports 8000 + i mod initPods/nodes, which
// spread them evenly, as upstream's pod-low-priority.yaml does), then
// s.pods high-priority gang members of 3970m in groups gangs, one member
// per node, each of which needs every low-priority pod on its node
// evicted. The measured pods are the gang members; a gang's members are
// bound together once their victims are gone, so the throughput is timed
// from the first member's creation (ThroughputFromStart).
func gangPreemption(name string, s sizes, groups int) Workload {
	perNode := max(1, s.initPods/s.nodes)
	g := &Gangs{Groups: groups, PodsPerGroup: s.pods / groups, MinCount: int32(s.pods / groups), PriorityClass: highPriority}
	return Workload{Name: name, Nodes: s.nodes, PriorityClasses: true, Gangs: g, FeatureGates: gangFeatureGates,
		ThroughputFromStart: true,
		InitPods:            s.initPods,
		InitPod: func(n string) *v1.Pod {
			p := scenario.MakePod(n).Namespace(namespace).Label(roleLabel, roleInit).PriorityClassName(lowPriority).
				Req(map[v1.ResourceName]string{v1.ResourceCPU: gangVictimCPU, v1.ResourceMemory: "100Mi"}).Obj()
			port := int32(gangVictimPort + podIndex(n)%perNode)
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: port, Protocol: v1.ProtocolTCP}}
			return p
		},
		Pods: g.Groups * g.PodsPerGroup,
		Pod: func(n string) *v1.Pod {
			return scenario.MakePod(n).Namespace(namespace).Label(roleLabel, roleMeasured).PriorityClassName(highPriority).
				PodGroup(g.gangOf(n)).
				Req(map[v1.ResourceName]string{v1.ResourceCPU: gangPreemptorCPU, v1.ResourceMemory: "100Mi"}).Obj()
		}}
}

// createPodGroups creates w's PodGroups, if it has any, in parallel.
func createPodGroups(ctx context.Context, client kubernetes.Interface, w Workload) error {
	g := w.Gangs
	if g == nil {
		return nil
	}
	return parallel(ctx, g.Groups, func(ctx context.Context, i int) error {
		pg := scenario.MakePodGroup(gangName(i)).Namespace(namespace).Gang(g.MinCount)
		if g.PriorityClass != "" {
			pg.PriorityClassName(g.PriorityClass)
		}
		if _, err := client.SchedulingV1beta1().PodGroups(namespace).Create(ctx, pg.Obj(), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod group %s: %w", gangName(i), err)
		}
		return nil
	})
}
