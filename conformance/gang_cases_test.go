//go:build conformance

// This file holds the gang cases (chapter 19): pods in PodGroups, with the
// GenericWorkload gate on in both schedulers (and
// TopologyAwareWorkloadScheduling for the topology cases). They compare
// where each member went, each member's PodScheduled message (whose shape
// depends on how far the member got in its group's cycle) and the
// PodGroup's PodGroupInitiallyScheduled condition.
//
// Most cases compare counts (CompareCounts): their nodes are alike, so
// either scheduler breaks the ties at random, and members of one priority
// are not tried in an order kube-scheduler keeps from run to run (which
// member fitted nowhere and which was never tried changes; how many of
// each does not).

package conformance

import (
	"context"
	"fmt"
	"strings"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/minisched/minisched/builders"
)

// The gates of the gang cases.
const (
	gangGates     = "GenericWorkload=true"
	topologyGates = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
)

func gangCases() []Case {
	classes := priorityClasses(map[string]int32{"lowest": 10, "low": 20, "high": 1000})
	cpuNode := func(name, cpu string) *builders.NodeWrapper { return node(name).Capacity(R{"cpu": cpu}) }
	// member is a pod of group asking for cpu.
	member := func(name, group, cpu string) *builders.PodWrapper {
		return pod(name).PodGroup(group).Req(R{"cpu": cpu})
	}
	// bound is a pod already running on node, deleted at once if preempted.
	bound := func(name, node, class, cpu string) *builders.PodWrapper {
		return pod(name).NodeName(node).PriorityClassName(class).Req(R{"cpu": cpu}).TerminationGracePeriod(0)
	}
	gang := func(name string, minCount int32) *builders.PodGroupWrapper {
		return builders.MakePodGroup().Name(name).Gang(minCount)
	}
	racks := func(perRack map[string]int) Step {
		var ns []*builders.NodeWrapper
		for _, rack := range []string{"a", "b", "c"} {
			for i := range perRack[rack] {
				ns = append(ns, cpuNode(fmt.Sprintf("%s%d", rack, i+1), "1").Label("rack", rack))
			}
		}
		return nodes(ns...)
	}
	return []Case{
		// All or nothing.
		{Name: "gang-fits", Compare: CompareCounts, FeatureGates: gangGates, Steps: []Step{
			nodes(cpuNode("n1", "1"), cpuNode("n2", "1"), cpuNode("n3", "1")), podGroups(gang("g", 3)),
			pods(member("a", "g", "1"), member("b", "g", "1"), member("c", "g", "1"))}},
		{Name: "gang-one-node-short", Compare: CompareCounts, FeatureGates: gangGates, Steps: []Step{
			nodes(cpuNode("n1", "1"), cpuNode("n2", "1")), podGroups(gang("g", 3)),
			pods(member("a", "g", "1"), member("b", "g", "1"), member("c", "g", "1"))}},
		// A gang of three with two members: both wait, untried and silent.
		{Name: "gang-missing-member", FeatureGates: gangGates, Steps: []Step{
			nodes(cpuNode("n1", "1"), cpuNode("n2", "1"), cpuNode("n3", "1")), podGroups(gang("g", 3)),
			pods(member("a", "g", "1").Label(heldLabel, "gang"), member("b", "g", "1").Label(heldLabel, "gang"))}},
		{Name: "gang-last-member-arrives", Compare: CompareCounts, FeatureGates: gangGates, Steps: []Step{
			nodes(cpuNode("n1", "1"), cpuNode("n2", "1"), cpuNode("n3", "1")), podGroups(gang("g", 3)),
			pods(member("a", "g", "1").Label(heldLabel, "gang"), member("b", "g", "1").Label(heldLabel, "gang")),
			pods(member("c", "g", "1"))}},
		{Name: "gang-mincount-lowered", Compare: CompareCounts, FeatureGates: gangGates, Steps: []Step{
			nodes(cpuNode("n1", "1"), cpuNode("n2", "1"), cpuNode("n3", "1")), podGroups(gang("g", 4)),
			pods(member("a", "g", "1").Label(heldLabel, "gang"), member("b", "g", "1").Label(heldLabel, "gang"),
				member("c", "g", "1").Label(heldLabel, "gang")),
			patchPodGroup("g", `{"spec":{"schedulingPolicy":{"gang":{"minCount":3}}}}`)}},
		// The PodGroup comes after its pods: they wait for it, then go
		// together.
		{Name: "gang-podgroup-arrives-last", Compare: CompareCounts, FeatureGates: gangGates, Backlog: []Step{
			nodes(cpuNode("n1", "1"), cpuNode("n2", "1")),
			pods(member("a", "g", "1").Label(heldLabel, "gang"), member("b", "g", "1").Label(heldLabel, "gang"))},
			Steps: []Step{podGroups(gang("g", 2))}},
		// A basic group: placed as its pods fit, in one cycle; the pod
		// that fits nowhere has its own message. The group is Scheduled,
		// but the leftover pod is retried at once, and that attempt reads
		// the PodGroup from the informer: if it has not seen True yet, the
		// condition goes back to False (kube-scheduler does either).
		{Name: "basic-group-partly", Compare: CompareCounts, RacyPodGroupConditions: true, FeatureGates: gangGates, Steps: []Step{
			nodes(cpuNode("n1", "1"), cpuNode("n2", "1")), podGroups(builders.MakePodGroup().Name("g")),
			pods(member("a", "g", "1"), member("b", "g", "1"), member("c", "g", "1"))}},
		// Without the gate the same gang is placed pod by pod, partly.
		{Name: "gang-gate-off", Compare: CompareCounts, Steps: []Step{
			nodes(cpuNode("n1", "1"), cpuNode("n2", "1")), podGroups(gang("g", 3)),
			pods(member("a", "g", "1"), member("b", "g", "1"), member("c", "g", "1"))}},
		// Two gangs, room for one: the PodGroups' priorities decide, and
		// the lower gang cannot preempt the higher.
		{Name: "gangs-compete", Compare: CompareCounts, FeatureGates: gangGates, Backlog: []Step{classes,
			nodes(cpuNode("n1", "1"), cpuNode("n2", "1"), cpuNode("n3", "1")),
			podGroups(gang("low", 3).PriorityClassName("low"), gang("high", 3).PriorityClassName("high")),
			pods(member("low-a", "low", "1").PriorityClassName("low"), member("low-b", "low", "1").PriorityClassName("low"),
				member("low-c", "low", "1").PriorityClassName("low"),
				member("high-a", "high", "1").PriorityClassName("high"), member("high-b", "high", "1").PriorityClassName("high"),
				member("high-c", "high", "1").PriorityClassName("high"))}},
		// Whole-group preemption: three victims for three members; the
		// most important of the four, low1, is reprieved. (Victims of one
		// priority, which no kubelet gives start times here, are reprieved
		// in no order kube-scheduler keeps.)
		{Name: "gang-preempts", FeatureGates: gangGates, Backlog: []Step{classes,
			nodes(cpuNode("n", "4")),
			pods(bound("low1", "n", "low", "1"), bound("low2", "n", "lowest", "1"), bound("low3", "n", "lowest", "1"),
				bound("low4", "n", "lowest", "1"))},
			Steps: []Step{podGroups(gang("g", 3).PriorityClassName("high")),
				pods(member("a", "g", "1").PriorityClassName("high"), member("b", "g", "1").PriorityClassName("high"),
					member("c", "g", "1").PriorityClassName("high"))}},
		{Name: "gang-no-victims", Compare: CompareCounts, FeatureGates: gangGates, Backlog: []Step{classes,
			nodes(cpuNode("n1", "1"), cpuNode("n2", "1")),
			pods(bound("peer1", "n1", "high", "1"), bound("peer2", "n2", "high", "1"))},
			Steps: []Step{podGroups(gang("g", 2).PriorityClassName("high")),
				pods(member("a", "g", "1").PriorityClassName("high"), member("b", "g", "1").PriorityClassName("high"))}},
		{Name: "gang-preemption-never", Compare: CompareCounts, FeatureGates: gangGates, Backlog: []Step{classes, neverClass("high-never", 1000),
			nodes(cpuNode("n1", "1"), cpuNode("n2", "1")),
			pods(bound("low1", "n1", "low", "1"), bound("low2", "n2", "low", "1"))},
			Steps: []Step{podGroups(gang("g", 2).PriorityClassName("high-never")),
				pods(member("a", "g", "1").PriorityClassName("high-never"), member("b", "g", "1").PriorityClassName("high-never"))}},
		// A victim group with disruptionMode all goes whole or not at all:
		// the single pod outranks it, so both of the group's pods are
		// evicted though one would have made room. Counts: which member
		// goes to the emptier node varies from run to run, under either
		// scheduler (a full run saw minisched put a on n2 and
		// kube-scheduler on n1; the next run saw both put it on n1).
		{Name: "gang-evicts-whole-group", Compare: CompareCounts, FeatureGates: gangGates, Backlog: []Step{classes,
			nodes(cpuNode("n1", "2"), cpuNode("n2", "2")),
			podGroups(builders.MakePodGroup().Name("victims").PriorityClassName("lowest").DisruptionModeAll()),
			pods(bound("v-a", "n1", "lowest", "1").PodGroup("victims"), bound("v-b", "n2", "lowest", "1").PodGroup("victims"),
				bound("single", "n1", "low", "1"))},
			Steps: []Step{podGroups(gang("g", 2).PriorityClassName("high")),
				pods(member("a", "g", "1").PriorityClassName("high"), member("b", "g", "1").PriorityClassName("high"))}},
		// Members must agree with their group.
		{Name: "gang-priority-mismatch", Compare: CompareCounts, FeatureGates: gangGates, Backlog: []Step{classes,
			nodes(cpuNode("n1", "1"), cpuNode("n2", "1"))},
			Steps: []Step{podGroups(gang("g", 2).PriorityClassName("high")),
				pods(member("a", "g", "1").PriorityClassName("high"), member("b", "g", "1").PriorityClassName("low"))}},
		// The quirk: a member deleted while the gang fails; the two left
		// are fewer than minCount, the cycle stops before trying either,
		// and DynamicResources finds no state of theirs ("not found").
		{Name: "gang-member-deleted", Compare: CompareCounts, FeatureGates: gangGates, Steps: []Step{
			nodes(cpuNode("n1", "1"), cpuNode("n2", "1")), podGroups(gang("g", 3)),
			pods(member("a", "g", "1"), member("b", "g", "1"), member("c", "g", "1")),
			waitPending("a", "b", "c"), deletePod("c")}},
		// A member with a device claim: two GPUs for three members.
		{Name: "gang-dra-claim", Compare: CompareCounts, FeatureGates: gangGates, DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")), objects(gpuClass, oneGPU, gpuSlice("n1", gpus("gpu", 2, "40Gi")...))},
			Steps: []Step{podGroups(gang("g", 3)),
				pods(gpuPod("a", "one-gpu").PodGroup("g"), gpuPod("b", "one-gpu").PodGroup("g"), gpuPod("c", "one-gpu").PodGroup("g"))}},
		// A gang whose two members share one unallocated claim, with n2's
		// one GPU: the first member's Reserve allocates it in the
		// simulation, and the second reuses that pending allocation (it
		// would otherwise wait for it to be written), so both go to n2.
		{Name: "gang-shared-claim", FeatureGates: gangGates, DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, gpuSlice("n2", gpus("gpu", 1, "40Gi")...),
				builders.MakeResourceClaim().Name("shared").Request(builders.MakeDeviceRequest("gpu", "gpu")).Obj())},
			Steps: []Step{podGroups(gang("g", 2)),
				pods(pod("a").PodGroup("g").ResourceClaim("gpu", "shared"),
					pod("b").PodGroup("g").ResourceClaim("gpu", "shared"))}},
		// Topology: the whole gang in one rack.
		{Name: "tas-one-rack", Compare: CompareCounts, FeatureGates: topologyGates, Steps: []Step{
			racks(map[string]int{"a": 2, "b": 3}), podGroups(gang("g", 3).TopologyKey("rack")),
			pods(member("a", "g", "1"), member("b", "g", "1"), member("c", "g", "1"))}},
		{Name: "tas-no-rack-fits", Compare: CompareCounts, FeatureGates: topologyGates, Steps: []Step{
			racks(map[string]int{"a": 2, "b": 2}), podGroups(gang("g", 3).TopologyKey("rack")),
			pods(member("a", "g", "1"), member("b", "g", "1"), member("c", "g", "1"))}},
		// Two racks fit; PlacementScore packs: the rack already busier wins.
		{Name: "tas-packs", FeatureGates: topologyGates, Backlog: []Step{
			nodes(cpuNode("a1", "4").Label("rack", "a"), cpuNode("a2", "4").Label("rack", "a"),
				cpuNode("b1", "4").Label("rack", "b"), cpuNode("b2", "4").Label("rack", "b")),
			pods(pod("busy").NodeName("b1").Req(R{"cpu": "2"}))},
			Steps: []Step{podGroups(gang("g", 2).TopologyKey("rack")),
				pods(member("a", "g", "1"), member("b", "g", "1"))}},
	}
}

// podGroups creates the PodGroups in default.
func podGroups(pgs ...*builders.PodGroupWrapper) Step {
	return func(ctx context.Context, c *Cluster) error {
		for _, pg := range pgs {
			if _, err := c.Client.SchedulingV1beta1().PodGroups("default").Create(ctx, pg.Obj(),
				metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating PodGroup %s: %w", pg.PodGroup.Name, err)
			}
		}
		return nil
	}
}

// patchPodGroup applies a merge patch to a PodGroup in default.
func patchPodGroup(name, patch string) Step {
	return func(ctx context.Context, c *Cluster) error {
		_, err := c.Client.SchedulingV1beta1().PodGroups("default").Patch(ctx, name, types.MergePatchType,
			[]byte(patch), metav1.PatchOptions{})
		return err
	}
}

// podGroupOutcome lists each PodGroup's PodGroupInitiallyScheduled
// condition: "podgroup ns/name: <status> <reason>: <message>", or "no
// condition". An apiserver that serves no PodGroups has none to list.
func podGroupOutcome(ctx context.Context, client kubernetes.Interface) ([]string, error) {
	list, err := client.SchedulingV1beta1().PodGroups(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing PodGroups: %w", err)
	}
	var out []string
	for i := range list.Items {
		pg := &list.Items[i]
		line := "podgroup " + pg.Namespace + "/" + pg.Name + ": "
		if c := apimeta.FindStatusCondition(pg.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled); c != nil {
			line += strings.TrimSpace(fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message))
		} else {
			line += "no condition"
		}
		out = append(out, line)
	}
	return out, nil
}
