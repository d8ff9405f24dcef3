package main

// The workloads, after upstream's scheduler_perf (test/integration/
// scheduler_perf/config/performance-config.yaml): the same shapes, pods
// asking for scheduler_perf's default 100m CPU and 500Mi of memory, nodes as
// scenario.MakeNode makes them (4 CPU, 16Gi, 110 pods).

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/examples/provisioner"
	"github.com/minisched/minisched/scenario"
)

const (
	// namespace holds every pod of a run.
	namespace = "bench"
	// roleLabel tells the tracker which phase a pod belongs to.
	roleLabel = "bench/role"
	// Roles: init pods are placed before measuring, measured pods are the
	// ones timed, churn pods come and go while they are (MixedChurn).
	roleInit, roleMeasured, roleChurn = "init", "measured", "churn"
	// Priority classes of the preemption workload.
	lowPriority, highPriority = "bench-low", "bench-high"
)

// Workload is one scheduler_perf-like test: nodes, then init pods that must
// all be bound, then the measured pods (see --backlog for when they are made).
type Workload struct {
	// Name identifies the workload in flags, progress lines and tables.
	Name string
	// Nodes is how many nodes to create.
	Nodes int
	// NodeLabels gives node i's labels beyond its hostname (nil: none).
	NodeLabels func(i int) map[string]string
	// InitPods are created and waited for before measuring, made by InitPod.
	InitPods int
	InitPod  func(name string) *v1.Pod
	// Pods are the measured pods, made by Pod.
	Pods int
	Pod  func(name string) *v1.Pod
	// PriorityClasses creates bench-low (1) and bench-high (1000) first.
	PriorityClasses bool
	// MixedChurn recreates a node, a large pod of priority 10 and a service
	// every second while the measured pods are scheduled (churn.go).
	MixedChurn bool
	// Storage, if set, gives every node a CSINode and every measured pod a
	// claim of its own, and runs what binds them (storage.go).
	Storage *Storage
	// Devices, if set, gives every node a ResourceSlice and every measured
	// pod a claim from a template, and runs what makes the claims
	// (devices.go).
	Devices *Devices
	// NodeMemory, if set, replaces scenario.MakeNode's 16Gi of memory.
	NodeMemory string
	// NoTopologyDefaults gives both schedulers upstream's batching profile
	// (scheduler-config-no-topology.yaml): PodTopologySpread without
	// default constraints. Other workloads run the default profile.
	NoTopologyDefaults bool
	// Gangs, if set, puts the measured pods in gang PodGroups, created
	// before the pods (gangs.go).
	Gangs *Gangs
	// FeatureGates, if set, are passed to both schedulers as
	// --feature-gates (kube-scheduler's syntax, A=true,B=false).
	FeatureGates string
	// ThroughputFromStart times the measured pods from the start of the
	// measured phase (the live phase's first pod created, or the
	// backlog's scheduler started) rather than from the first binding:
	// for a workload whose pods are bound in bursts, a whole gang at a
	// time, after a cycle that the first binding would leave out.
	ThroughputFromStart bool
	// OnlyWhenNamed leaves the workload out of the default set: it runs
	// only when --workloads names it (SchedulingBasic-15000, which takes
	// minutes a run).
	OnlyWhenNamed bool
	// Place is the node the ceiling binds measured pod i to: one where the
	// pod fits beside every pod placed before it, so that each binding is
	// one a scheduler could have made. nil: the ceiling does not run this
	// workload (see ceiling.go).
	Place func(i int) string
}

// onlyWhenNamed marks w to run only when --workloads names it.
func onlyWhenNamed(w Workload) Workload {
	w.OnlyWhenNamed = true
	return w
}

// podName is the name of object i made with prefix: prefix-<i>.
func podName(prefix string, i int) string { return fmt.Sprintf("%s-%d", prefix, i) }

// podIndex is i of a name podName made, or -1.
func podIndex(name string) int {
	_, digits, ok := strings.Cut(name, "-")
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(digits)
	if err != nil || i < 0 {
		return -1
	}
	return i
}

// roundRobin places pod i on node i mod nodes: every node takes
// ceil(pods/nodes) pods at most.
func roundRobin(nodes int) func(int) string {
	return func(i int) string { return fmt.Sprintf("node-%d", i%nodes) }
}

// sizes are the default and the smoke-test sizes of each workload.
type sizes struct{ nodes, initPods, pods int }

// workloads lists every workload, at smoke sizes (a few pods) or at the
// sizes scheduler_perf uses for its 500- and 5000-node cases.
func workloads(smoke bool) []Workload {
	pick := func(full, tiny sizes) sizes {
		if smoke {
			return tiny
		}
		return full
	}
	return []Workload{
		basic("SchedulingBasic-500", pick(sizes{500, 0, 1000}, sizes{10, 0, 20})),
		basic("SchedulingBasic-5000", pick(sizes{5000, 0, 5000}, sizes{20, 0, 20})),
		onlyWhenNamed(basic("SchedulingBasic-15000", pick(sizes{15000, 0, 15000}, sizes{30, 0, 30}))),
		podAntiAffinity(pick(sizes{500, 100, 400}, sizes{10, 2, 8})),
		topologySpreading(pick(sizes{500, 0, 1000}, sizes{10, 0, 20})),
		nodeAffinity(pick(sizes{500, 0, 1000}, sizes{10, 0, 20})),
		preemption(pick(sizes{500, 2000, 500}, sizes{5, 20, 5})),
		mixedChurn(pick(sizes{1000, 0, 1000}, sizes{10, 0, 20})),
		csiPVs(pick(sizes{500, 0, 500}, sizes{10, 0, 20})),
		provisionedPVs(pick(sizes{500, 0, 250}, sizes{10, 0, 20})),
		claimTemplateResourceClaims(pick(sizes{500, 0, 1000}, sizes{10, 0, 20})),
		hostPortConflict("HostPortConflict", pick(sizes{batchingNodes, 0, batchingNodes}, sizes{10, 0, 10})),
		resourceSaturation("ResourceSaturation", pick(sizes{batchingNodes, 0, batchingNodes}, sizes{10, 0, 10})),
		// At the size an independent measurement ran them.
		onlyWhenNamed(hostPortConflict("HostPortConflict-2000", pick(sizes{2000, 0, 2000}, sizes{10, 0, 10}))),
		onlyWhenNamed(resourceSaturation("ResourceSaturation-2000", pick(sizes{2000, 0, 2000}, sizes{10, 0, 10}))),
		gangScheduling("GangScheduling-3PerGroup", pick(sizes{gangNodes, 0, 3000}, sizes{10, 0, 9}), 3),
		gangScheduling("GangScheduling-1000PerGroup", pick(sizes{gangNodes, 0, 3000}, sizes{10, 0, 20}),
			pickInt(smoke, 1000, 10)),
		gangPreemption("GangPreemptionBasic-1Gang", pick(sizes{100, 1000, 100}, sizes{2, 10, 2}), 1),
		gangPreemption("GangPreemptionBasic-10Gangs", pick(sizes{100, 1000, 100}, sizes{4, 20, 4}), pickInt(smoke, 10, 2)),
	}
}

// smokeDefault are the workloads the smoke run plays unless told otherwise:
// one of each way of running (plain; init pods and priority classes;
// churn; static and provisioned volumes and claims from templates, with
// kube-controller-manager; gangs, on a backlog and preempting), since every run costs an apiserver's start,
// some seconds.
const smokeDefault = "SchedulingBasic-500,Preemption,SchedulingWithMixedChurn-1000,SchedulingCSIPVs-500,SchedulingProvisionedPVs-500," +
	"SchedulingWithResourceClaimTemplate-500,HostPortConflict,ResourceSaturation,GangScheduling-3PerGroup,GangPreemptionBasic-1Gang"

// defaultPod is scheduler_perf's pod-default.yaml: 100m CPU, 500Mi.
func defaultPod(name, role string) *builders.PodWrapper {
	return scenario.MakePod(name).Namespace(namespace).Label(roleLabel, role).
		Req(map[v1.ResourceName]string{v1.ResourceCPU: "100m", v1.ResourceMemory: "500Mi"})
}

// basic is SchedulingBasic: plain pods on plain nodes.
func basic(name string, s sizes) Workload {
	return Workload{Name: name, Nodes: s.nodes, Pods: s.pods,
		Pod:   func(n string) *v1.Pod { return defaultPod(n, roleMeasured).Obj() },
		Place: roundRobin(s.nodes)}
}

// podAntiAffinity is SchedulingPodAntiAffinity: every pod refuses a node
// that holds another pod of its group, so nodes ≥ init + measured pods.
func podAntiAffinity(s sizes) Workload {
	pod := func(role string) func(string) *v1.Pod {
		return func(n string) *v1.Pod {
			return defaultPod(n, role).Label("color", "green").PodAntiAffinity(&v1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"color": "green"}},
					TopologyKey:   v1.LabelHostname,
				}},
			}).Obj()
		}
	}
	// The init pods are on the first InitPods nodes (placeInitPods): the
	// ceiling puts measured pod i on the InitPods+i-th.
	return Workload{Name: "PodAntiAffinity", Nodes: s.nodes, InitPods: s.initPods, InitPod: pod(roleInit),
		Pods: s.pods, Pod: pod(roleMeasured),
		Place: func(i int) string { return fmt.Sprintf("node-%d", (s.initPods+i)%s.nodes) }}
}

// zones is how many zones the topology-spreading workload's nodes are in.
const zones = 10

// topologySpreading is TopologySpreading: nodes in ten zones, each pod
// spread over zones with maxSkew 1 and DoNotSchedule.
func topologySpreading(s sizes) Workload {
	return Workload{Name: "TopologySpreading", Nodes: s.nodes,
		NodeLabels: func(i int) map[string]string {
			return map[string]string{v1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%zones)}
		},
		Pods: s.pods,
		Pod: func(n string) *v1.Pod {
			return defaultPod(n, roleMeasured).Label("app", "spread").SpreadConstraint(v1.TopologySpreadConstraint{
				MaxSkew:           1,
				TopologyKey:       v1.LabelTopologyZone,
				WhenUnsatisfiable: v1.DoNotSchedule,
				LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
			}).Obj()
		},
		// Node i is in zone i mod zones: round robin over the nodes fills
		// the zones in turn, a skew of one at most.
		Place: roundRobin(s.nodes)}
}

// affinityLabel is carried by every other node of the node-affinity workload.
const affinityLabel = "bench/group"

// nodeAffinity is SchedulingNodeAffinity: pods require a label that half
// of the nodes carry.
func nodeAffinity(s sizes) Workload {
	return Workload{Name: "NodeAffinity", Nodes: s.nodes,
		NodeLabels: func(i int) map[string]string {
			if i%2 == 0 {
				return map[string]string{affinityLabel: "affine"}
			}
			return nil
		},
		Pods: s.pods,
		Pod: func(n string) *v1.Pod {
			return defaultPod(n, roleMeasured).NodeAffinity(&v1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
					NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{
						Key: affinityLabel, Operator: v1.NodeSelectorOpIn, Values: []string{"affine"},
					}}}},
				},
			}).Obj()
		},
		// Round robin over the even (labelled) nodes.
		Place: func(i int) string { return fmt.Sprintf("node-%d", 2*(i%((s.nodes+1)/2))) }}
}

// preemption is PreemptionBasic: low-priority pods of one CPU each fill
// every node's four CPUs, then each high-priority pod of one CPU must
// preempt one of them. Victims have no grace period, so they go at once.
func preemption(s sizes) Workload {
	pod := func(role, class string) func(string) *v1.Pod {
		return func(n string) *v1.Pod {
			return scenario.MakePod(n).Namespace(namespace).Label(roleLabel, role).PriorityClassName(class).
				Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "500Mi"}).Obj()
		}
	}
	return Workload{Name: "Preemption", Nodes: s.nodes, PriorityClasses: true,
		InitPods: s.initPods, InitPod: pod(roleInit, lowPriority),
		Pods: s.pods, Pod: pod(roleMeasured, highPriority)}
}

// mixedChurn is scheduler_perf's SchedulingWithMixedChurn at 1000 nodes:
// plain pods on plain nodes, while a node, a large pod of priority 10 and a
// service are recreated every second (churn.go). The measured pods are a
// backlog like the other workloads'; the churn starts with the scheduler.
func mixedChurn(s sizes) Workload {
	w := basic("SchedulingWithMixedChurn-1000", s)
	w.MixedChurn = true
	return w
}

// The storage workloads' driver and its attach limit per node: upstream's
// SchedulingCSIPVs (its CSINodes list ebs.csi.aws.com with a count of 39).
const (
	csiDriver      = "ebs.csi.aws.com"
	csiAttachLimit = 39
)

// storagePod is a default pod that mounts the claim named after it.
func storagePod(n string) *v1.Pod { return defaultPod(n, roleMeasured).PVC(n).Obj() }

// csiPVs is SchedulingCSIPVs with the binding left to the scheduler: every
// pod has a WaitForFirstConsumer claim of its own, and beside each claim a
// CSI PV as upstream's pv-csi.yaml makes it (its driver, 1Gi, no node
// affinity), of the same class, so that any claim fits any volume.
// VolumeBinding's Filter finds a free volume for the claim on each node,
// Reserve takes one, and PreBind writes its claimRef and waits for
// kube-controller-manager's PV binder to bind the claim. NodeVolumeLimits
// counts every claim against the driver's attach limit: the class's
// provisioner names the driver, which is how a claim not yet bound is
// counted. (Upstream's pods come with their claims bound already, so that
// PreBind writes nothing and no controller runs.)
func csiPVs(s sizes) Workload {
	class := builders.MakeStorageClass().Name("bench-csi").Provisioner(csiDriver).WaitForFirstConsumer().Obj()
	return Workload{Name: "SchedulingCSIPVs-500", Nodes: s.nodes, Pods: s.pods, Pod: storagePod,
		Storage: &Storage{Class: class, Driver: csiDriver, AttachLimit: csiAttachLimit,
			StaticPV: func(claim string) *v1.PersistentVolume {
				return builders.MakePV().Name("pv-"+claim).Class(class.Name).Capacity(claimSize).
					CSI(csiDriver, "pv-"+claim).Obj()
			}}}
}

// provisionedPVs is csiPVs with dynamic provisioning instead of PVs made
// beforehand: the claims are of the example provisioner's class, which
// publishes a CSIStorageCapacity per node (10Gi, room for ten claims) that
// VolumeBinding's Filter checks; PreBind annotates the claim with the
// chosen node, the PV binder hands it to the provisioner, which creates a
// PV there, and the binder binds the two.
func provisionedPVs(s sizes) Workload {
	return Workload{Name: "SchedulingProvisionedPVs-500", Nodes: s.nodes, Pods: s.pods, Pod: storagePod,
		Storage: &Storage{Class: provisioner.StorageClass("bench-provisioned"), Driver: provisioner.Name,
			AttachLimit: csiAttachLimit, DiskSize: resource.MustParse("10Gi")}}
}

// batchingNodes is the size of the batching workloads: as many nodes as
// measured pods, one pod per node. Upstream's performance cases are 20000
// of each; docs/performance.md says why this machine runs fewer.
const batchingNodes = 10000

// signature is the "signature" label of pod i of a batching workload
// whose runs of batch consecutive pods share one: upstream's
// signatureBatchSize, signature-label-<i/batch>. InterPodAffinity puts a
// pod's labels in its signature, so a new value starts a new batch.
//
// The workloads give every pod the same one (batch = pods), as upstream's
// 20000BatchSize cases do: on a backlog the schedulers learn of the pods,
// and queue them, in the order the apiserver's watch cache hands them
// out, which is not their creation order, so runs of, say, 100 would be
// interleaved, and the signature would change at almost every pod. (A
// run of 7500 pods in runs of 100 had kube-scheduler use a batch hint for
// 191 pods; it flushed its batch for another signature 7308 times.)
func signature(i, batch int) string { return fmt.Sprintf("signature-label-%d", i/batch) }

// batchingNodeMemory is node-default.yaml's memory (4 CPU, 110 pods, as
// scenario.MakeNode makes them).
const batchingNodeMemory = "32Gi"

// hostPortConflict is upstream's HostPortConflict (scheduler_perf/batching,
// pod-hostport-80.yaml): every pod exposes host port 80, so that each node
// takes one pod, and once a pod is bound its node is out for every later
// pod. Pods ask for 100m CPU and 100Mi of memory.
func hostPortConflict(name string, s sizes) Workload {
	return Workload{Name: name, Nodes: s.nodes, Pods: s.pods, NodeMemory: batchingNodeMemory,
		NoTopologyDefaults: true, Place: roundRobin(s.nodes),
		Pod: func(n string) *v1.Pod {
			p := scenario.MakePod(n).Namespace(namespace).Label(roleLabel, roleMeasured).
				Label("signature", signature(podIndex(n), s.pods)).
				Req(map[v1.ResourceName]string{v1.ResourceCPU: "100m", v1.ResourceMemory: "100Mi"}).Obj()
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 80, Protocol: v1.ProtocolTCP}}
			return p
		}}
}

// resourceSaturation is upstream's ResourceSaturation (pod-saturation.yaml):
// pods of 3 CPU and 1Gi on nodes of 4 CPU, so that each node takes one pod.
func resourceSaturation(name string, s sizes) Workload {
	return Workload{Name: name, Nodes: s.nodes, Pods: s.pods, NodeMemory: batchingNodeMemory,
		NoTopologyDefaults: true, Place: roundRobin(s.nodes),
		Pod: func(n string) *v1.Pod {
			return scenario.MakePod(n).Namespace(namespace).Label(roleLabel, roleMeasured).
				Label("signature", signature(podIndex(n), s.pods)).
				Req(map[v1.ResourceName]string{v1.ResourceCPU: "3", v1.ResourceMemory: "1Gi"}).Obj()
		}}
}
