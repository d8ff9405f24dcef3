//go:build conformance

// This file holds DRA cases written apart from the plugin, as an
// independent checker might: mixed reasons in one message, claims shared
// by pods that do not fit for other reasons, claims on cordoned nodes,
// PostFilter's deallocation message, prioritized lists of three, classes
// with several selectors, capacity selectors, incomplete pools, objects
// that appear (or go) while a pod is pending, and extended resources served
// by a device plugin on one node and by DRA on another.

package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/scenario"
)

// cordon marks a node unschedulable.
func cordon(node string) Step {
	return func(ctx context.Context, c *Cluster) error { return c.SetUnschedulable(ctx, node, true) }
}

// deleteTaintRule deletes a DeviceTaintRule.
func deleteTaintRule(name string) Step {
	return func(ctx context.Context, c *Cluster) error {
		return c.Client.ResourceV1().DeviceTaintRules().Delete(ctx, name, metav1.DeleteOptions{})
	}
}

// expectEvent waits until a FailedScheduling event about pod (in default)
// says exactly want: how a case checks the text of an attempt other than
// the last, which the outcome shows.
func expectEvent(pod, want string) Step {
	return func(ctx context.Context, c *Cluster) error {
		var notes []string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, scenario.DefaultWait, true,
			func(ctx context.Context) (bool, error) {
				var err error
				notes, err = c.EventMessages(ctx, pod, "FailedScheduling")
				return slices.Contains(notes, want), err
			})
		if err != nil {
			return fmt.Errorf("no FailedScheduling event of %s says %q; they say:\n%s", pod, want,
				strings.Join(notes, "\n"))
		}
		return nil
	}
}

// gpuModel is a GPU named name of model m with memory.
func gpuModel(name, m, memory string) *builders.DeviceWrapper {
	return builders.MakeDevice(name).StringAttr("model", m).Capacity("memory", memory)
}

func draHeldoutCases() []Case {
	cpu := func(q string) R { return R{v1.ResourceCPU: q} }
	extGPU := builders.MakeDeviceClass().Name("gpu").Driver(gpuDriver).ExtendedResourceName("example.com/gpu").Obj()
	return []Case{
		// Four nodes, four reasons: n1's GPU is behind a taint, n2 does not
		// match the pod's node selector, n3 has no GPU, n4 is cordoned.
		{Name: "dra-h-mixed-reasons", DRA: true, Backlog: []Step{
			nodes(node("n1").Label("disk", "ssd").Taint("dedicated", "x", v1.TaintEffectNoSchedule),
				node("n2").Label("disk", "hdd"), node("n3").Label("disk", "ssd"),
				node("n4").Label("disk", "ssd").Unschedulable(true)),
			objects(gpuClass, oneGPU, gpuSlice("n1", gpus("gpu", 1, "40Gi")...),
				gpuSlice("n2", gpus("gpu", 1, "40Gi")...), gpuSlice("n4", gpus("gpu", 1, "40Gi")...))},
			Steps: []Step{pods(gpuPod("p", "one-gpu").NodeSelector("disk", "ssd"))}},
		// A pod with a WaitForFirstConsumer volume only n2 has and a GPU
		// only n1 has: each node fails for one of the two.
		{Name: "dra-h-pvc-and-claim", DRA: true, Storage: true, Backlog: []Step{
			nodes(node("n1"), node("n2"), node("n3")),
			objects(static, localPV("pv", "1Gi", "n2").Obj(), claim("data", "static", "1Gi").Obj(),
				gpuClass, oneGPU, gpuSlice("n1", gpus("gpu", 1, "40Gi")...))},
			Steps: []Step{pods(gpuPod("p", "one-gpu").PVC("data"))}},
		// A claim in use on n1, which is then cordoned: a second pod of
		// the claim finds n1 unschedulable and the claim unavailable on n2;
		// PostFilter cannot deallocate a claim another pod uses.
		{Name: "dra-h-claim-on-cordoned-node", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, gpuSlice("n1", gpus("gpu", 1, "40Gi")...), gpuSlice("n2", gpus("gpu", 1, "40Gi")...),
				builders.MakeResourceClaim().Name("shared").Request(builders.MakeDeviceRequest("gpu", "gpu")).Obj())},
			Steps: []Step{
				pods(pod("a").ResourceClaim("gpu", "shared").NodeSelector(hostKey, "n1")), waitBound("a"),
				cordon("n1"),
				pods(pod("b").ResourceClaim("gpu", "shared"))}},
		// An idle claim allocated on cordoned n1: PostFilter deallocates
		// it, and the pod then gets n2's GPU.
		{Name: "dra-h-idle-claim-cordoned", DRA: true, Backlog: []Step{
			nodes(node("n1").Unschedulable(true), node("n2")),
			objects(gpuClass, gpuSlice("n1", gpus("gpu", 1, "40Gi")...), gpuSlice("n2", gpus("gpu", 1, "40Gi")...),
				builders.MakeResourceClaim().Name("idle").Request(builders.MakeDeviceRequest("gpu", "gpu")).Finalizer().Obj()),
			allocateClaim("idle", builders.NodeNameSelector("n1"), resourceapi.DeviceRequestAllocationResult{
				Request: "gpu", Driver: gpuDriver, Pool: "n1", Device: "gpu-0"})},
			Steps: []Step{pods(pod("p").ResourceClaim("gpu", "idle"))}},
		// The first attempt's whole text when PostFilter deallocates and
		// preemption then runs: n1 by node selector, n2 because the claim
		// is allocated on n1. n2 has no GPU, so the next attempts fail too.
		{Name: "dra-h-deallocate-then-preempt-text", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, gpuSlice("n1", gpus("gpu", 1, "40Gi")...),
				builders.MakeResourceClaim().Name("idle").Request(builders.MakeDeviceRequest("gpu", "gpu")).Finalizer().Obj()),
			allocateClaim("idle", builders.NodeNameSelector("n1"), resourceapi.DeviceRequestAllocationResult{
				Request: "gpu", Driver: gpuDriver, Pool: "n1", Device: "gpu-0"})},
			Steps: []Step{
				pods(pod("p").ResourceClaim("gpu", "idle").NodeSelector(hostKey, "n2")),
				expectEvent("p", "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "+
					"1 resourceclaim not available on the node. deallocation of ResourceClaim completed, "+
					"preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")}},
		// Two pods share a claim allocated on n1; the second does not fit
		// there for CPU, and the claim is not available on n2.
		{Name: "dra-h-shared-claim-cpu", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, gpuSlice("n1", gpus("gpu", 1, "40Gi")...), gpuSlice("n2", gpus("gpu", 1, "40Gi")...),
				builders.MakeResourceClaim().Name("shared").Request(builders.MakeDeviceRequest("gpu", "gpu")).Obj())},
			Steps: []Step{
				pods(pod("a").Req(cpu("3")).ResourceClaim("gpu", "shared").NodeSelector(hostKey, "n1")), waitBound("a"),
				pods(pod("b").Req(cpu("2")).ResourceClaim("gpu", "shared"))}},
		// Three pods share one claim: all follow it to n1, reservedFor
		// lists the three in order.
		{Name: "dra-h-reserved-for-three", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, gpuSlice("n1", gpus("gpu", 1, "40Gi")...),
				builders.MakeResourceClaim().Name("shared").Request(builders.MakeDeviceRequest("gpu", "gpu")).Obj())},
			Steps: []Step{
				pods(pod("a").ResourceClaim("gpu", "shared")), waitBound("a"),
				pods(pod("b").ResourceClaim("gpu", "shared")), waitBound("b"),
				pods(pod("c").ResourceClaim("gpu", "shared")), waitBound("c"),
				deletePod("b")}},
		// A prioritized list of three: one 80Gi GPU, else two of 40Gi or
		// more, else four of any size. n3 offers the first, n2 the second,
		// n1 the third: the pods go n3, n2, n1, and the fourth finds none.
		{Name: "dra-h-first-available-three", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2"), node("n3")),
			objects(gpuClass, builders.MakeResourceClaimTemplate().Name("tiers").Claim(
				builders.MakeResourceClaim().FirstAvailable("gpu",
					builders.MakeDeviceRequest("big", "gpu").Selector(
						`device.capacity["gpu.example.com"].memory.compareTo(quantity("80Gi")) >= 0`),
					builders.MakeDeviceRequest("mid", "gpu").Count(2).Selector(
						`device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0`),
					builders.MakeDeviceRequest("any", "gpu").Count(4))).Obj(),
				gpuSlice("n1", gpus("small", 4, "20Gi")...), gpuSlice("n2", gpus("mid", 2, "40Gi")...),
				gpuSlice("n3", gpus("big", 1, "80Gi")...))},
			Steps: []Step{
				pods(gpuPod("p1", "tiers")), waitBound("p1"),
				pods(gpuPod("p2", "tiers")), waitBound("p2"),
				pods(gpuPod("p3", "tiers")), waitBound("p3"),
				pods(gpuPod("p4", "tiers"))}},
		// matchAttribute no node can satisfy: GPU and NIC on different
		// NUMA nodes everywhere.
		{Name: "dra-h-match-attribute-unsatisfiable", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, nicClass,
				builders.MakeResourceClaimTemplate().Name("gpu-and-nic").Claim(builders.MakeResourceClaim().
					Request(builders.MakeDeviceRequest("gpu", "gpu")).Request(builders.MakeDeviceRequest("nic", "nic")).
					MatchAttribute(numaAttr, "gpu", "nic")).Obj(),
				gpuSlice("n1", numa(0, "gpu-0")), nicSlice("n1", numa(1, "nic-0")),
				gpuSlice("n2", numa(1, "gpu-0")), nicSlice("n2", numa(0, "nic-0")))},
			Steps: []Step{pods(gpuPod("p", "gpu-and-nic"))}},
		// A class with two selectors (driver and model): only n2's A100
		// qualifies; a second pod finds none.
		{Name: "dra-h-class-two-selectors", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(builders.MakeDeviceClass().Name("a100").Driver(gpuDriver).
				Selector(`device.attributes["gpu.example.com"].model == "a100"`).Obj(),
				template("one-a100", builders.MakeDeviceRequest("gpu", "a100")),
				gpuSlice("n1", gpuModel("gpu-0", "h100", "80Gi")), gpuSlice("n2", gpuModel("gpu-0", "a100", "40Gi")))},
			Steps: []Step{
				pods(gpuPod("p1", "one-a100")), waitBound("p1"),
				pods(gpuPod("p2", "one-a100"))}},
		// A request selector on capacity (isGreaterThan): n1's 40Gi is not
		// more than 40Gi, n2's 48Gi is.
		{Name: "dra-h-capacity-selector", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, template("over-40", builders.MakeDeviceRequest("gpu", "gpu").Selector(
				`device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("40Gi"))`)),
				gpuSlice("n1", gpus("gpu", 1, "40Gi")...), gpuSlice("n2", gpus("gpu", 1, "48Gi")...))},
			Steps: []Step{pods(gpuPod("p", "over-40"))}},
		// Allocation mode All where no node has a matching device (n1 has
		// H100s, n2 nothing).
		{Name: "dra-h-all-no-devices", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, template("all-a100", builders.MakeDeviceRequest("gpu", "gpu").All().
				Selector(`device.attributes["gpu.example.com"].model == "a100"`)),
				gpuSlice("n1", gpuModel("gpu-0", "h100", "80Gi"), gpuModel("gpu-1", "h100", "80Gi")))},
			Steps: []Step{pods(gpuPod("p", "all-a100"))}},
		// A pool that says it has two slices, of which only one exists:
		// n1's devices cannot be used; n2's complete pool can.
		{Name: "dra-h-incomplete-pool", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, oneGPU,
				builders.MakeResourceSlice().Name("n1-gpus").Driver(gpuDriver).Node("n1").SliceCount(2).
					Device(builders.MakeDevice("gpu-0")).Device(builders.MakeDevice("gpu-1")).Obj(),
				gpuSlice("n2", gpus("gpu", 1, "40Gi")...))},
			Steps: []Step{
				pods(gpuPod("p1", "one-gpu")), waitBound("p1"),
				pods(gpuPod("p2", "one-gpu"))}},
		// Allocation mode All on an incomplete pool (the only one): an
		// error, not a verdict on the node, whose text names the claim (so
		// not a template's, whose name is random).
		{Name: "dra-h-incomplete-pool-all", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, builders.MakeResourceClaim().Name("all").Request(builders.MakeDeviceRequest("gpu", "gpu").All()).Obj(),
				builders.MakeResourceSlice().Name("n1-gpus").Driver(gpuDriver).Node("n1").SliceCount(2).
					Device(builders.MakeDevice("gpu-0")).Obj())},
			Steps: []Step{pods(pod("p").ResourceClaim("gpu", "all"))}},
		// A slice published while the pod is pending: ResourceSlice/Add
		// requeues it and it is scheduled.
		{Name: "dra-h-slice-after", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, oneGPU)},
			Steps: []Step{
				pods(gpuPod("p", "one-gpu")), waitPending("p"),
				objects(gpuSlice("n2", gpus("gpu", 1, "40Gi")...))}},
		// The class created while the pod is pending (PreFilter said it
		// does not exist): DeviceClass/Add requeues it.
		{Name: "dra-h-class-after", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(oneGPU, gpuSlice("n1", gpus("gpu", 1, "40Gi")...))},
			Steps: []Step{
				pods(gpuPod("p", "one-gpu")), waitPending("p"),
				objects(gpuClass)}},
		// The template created after the pod: the claim cannot be created
		// until then, PreEnqueue holds the pod; then the controller creates
		// it and names it in the pod's status, which requeues the pod.
		{Name: "dra-h-template-after", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, gpuSlice("n1", gpus("gpu", 1, "40Gi")...))},
			Steps: []Step{
				pods(gpuPod("p", "one-gpu")),
				objects(oneGPU)}},
		// A DeviceTaintRule keeps the only GPU from the pending pod; its
		// deletion (a slice update from the tracker) lets the pod in.
		{Name: "dra-h-taint-rule-removed", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, oneGPU, gpuSlice("n1", gpus("gpu", 1, "40Gi")...),
				builders.MakeDeviceTaintRule().Name("all-gpus").Driver(gpuDriver).
					Taint("maintenance", "", resourceapi.DeviceTaintEffectNoSchedule).Obj())},
			Steps: []Step{
				pods(gpuPod("p", "one-gpu")), waitPending("p"),
				deleteTaintRule("all-gpus")}},
		// A DeviceTaintRule added while the pod is pending (its GPU is
		// taken), then a slice it taints: the pod stays pending.
		{Name: "dra-h-taint-rule-after", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, oneGPU, gpuSlice("n1", gpus("gpu", 1, "40Gi")...))},
			Steps: []Step{
				pods(gpuPod("p1", "one-gpu")), waitBound("p1"),
				pods(gpuPod("p2", "one-gpu")), waitPending("p2"),
				objects(builders.MakeDeviceTaintRule().Name("all-gpus").Driver(gpuDriver).
					Taint("maintenance", "", resourceapi.DeviceTaintEffectNoSchedule).Obj()),
				objects(gpuSlice("n2", gpus("gpu", 1, "40Gi")...))}},
		// A higher-priority pod cannot preempt the holder of the only GPU:
		// DynamicResources' rejection is unresolvable.
		{Name: "dra-h-no-preemption-for-devices", DRA: true, Backlog: []Step{
			priorityClasses(map[string]int32{"high": 1000, "low": 10}),
			nodes(node("n1"), node("n2")),
			objects(gpuClass, oneGPU, gpuSlice("n1", gpus("gpu", 1, "40Gi")...))},
			Steps: []Step{
				pods(gpuPod("low", "one-gpu").PriorityClassName("low")), waitBound("low"),
				pods(gpuPod("high", "one-gpu").PriorityClassName("high"))}},
		// A network-attached pool of rack a and a pod kept to rack b.
		{Name: "dra-h-network-attached-wrong-rack", DRA: true, Backlog: []Step{
			nodes(node("n1").Label("rack", "a"), node("n2").Label("rack", "b"), node("n3").Label("rack", "b")),
			objects(nicClass, oneNIC,
				rackANICs(builders.MakeDevice("nic-0")))},
			Steps: []Step{pods(pod("p").ResourceClaimTemplate("nic", "one-nic").NodeSelector("rack", "b"))}},
		// A pod-scoped claim and a shared one in one pod: both on n2, the
		// only node with two GPUs.
		{Name: "dra-h-template-and-shared", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, oneGPU, gpuSlice("n1", gpus("gpu", 1, "40Gi")...), gpuSlice("n2", gpus("gpu", 2, "40Gi")...),
				builders.MakeResourceClaim().Name("shared").Request(builders.MakeDeviceRequest("gpu", "gpu")).Obj())},
			Steps: []Step{pods(gpuPod("p", "one-gpu").ResourceClaim("shared", "shared").ClaimContainer("shared"))}},
		// Extended resources: n1 has two by a device plugin (allocatable),
		// n2 two DRA GPUs and none allocatable. One pod kept to each, then
		// a pod asking for two finds one left on each.
		{Name: "dra-h-ext-device-plugin-and-dra", DRA: true, Backlog: []Step{
			nodes(node("n1").Capacity(R{"example.com/gpu": "2"}), node("n2")),
			objects(extGPU, gpuSlice("n2", gpus("gpu", 2, "40Gi")...))},
			Steps: []Step{
				pods(pod("dp").Req(R{"example.com/gpu": "1"}).NodeSelector(hostKey, "n1")), waitBound("dp"),
				pods(pod("dra").Req(R{"example.com/gpu": "1"}).NodeSelector(hostKey, "n2")), waitBound("dra"),
				pods(pod("two").Req(R{"example.com/gpu": "2"}))}},
		// Extended resources in two containers, one by the class's
		// extended resource name, one by its implicit name; and a pod
		// asking for more than any node has.
		{Name: "dra-h-ext-two-containers-implicit", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(extGPU, gpuSlice("n1", gpus("gpu", 3, "40Gi")...))},
			Steps: []Step{
				pods(pod("two").Req(R{"example.com/gpu": "1"}).
					Req(R{v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + "gpu"): "2"})), waitBound("two"),
				pods(pod("more").Req(R{v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + "gpu"): "1"}).Req(R{"example.com/gpu": "1"}))}},
		// An extended resource no class maps and no node has, beside a
		// DRA-mapped one.
		{Name: "dra-h-ext-unmapped", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(extGPU, gpuSlice("n1", gpus("gpu", 1, "40Gi")...))},
			Steps: []Step{pods(pod("p").Req(R{"example.com/gpu": "1", "example.com/tpu": "1"}))}},
		// An extended-resource pod and a claim pod compete for n1's one
		// GPU: whichever is second finds none.
		{Name: "dra-h-ext-and-claim-compete", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(extGPU, oneGPU, gpuSlice("n1", gpus("gpu", 1, "40Gi")...))},
			Steps: []Step{
				pods(pod("ext").Req(R{"example.com/gpu": "1"})), waitBound("ext"),
				pods(gpuPod("claim", "one-gpu"))}},
		// An extended-resource pod pending until DRA devices appear.
		{Name: "dra-h-ext-slice-after", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(extGPU)},
			Steps: []Step{
				pods(pod("p").Req(R{"example.com/gpu": "1"})), waitPending("p"),
				objects(gpuSlice("n2", gpus("gpu", 1, "40Gi")...))}},
		// An extended resource no class maps yet (NodeResourcesFit says
		// insufficient), then the class that maps it to n1's devices.
		{Name: "dra-h-ext-class-after", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuSlice("n1", gpus("gpu", 1, "40Gi")...))},
			Steps: []Step{
				pods(pod("p").Req(R{"example.com/gpu": "1"})), waitPending("p"),
				objects(extGPU)}},
		// The holder of the only GPU is deleted: the resourceclaim
		// controller deletes its claim, and the pending pod gets the GPU.
		{Name: "dra-h-holder-deleted", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, oneGPU, gpuSlice("n1", gpus("gpu", 1, "40Gi")...))},
			Steps: []Step{
				pods(gpuPod("p1", "one-gpu")), waitBound("p1"),
				pods(gpuPod("p2", "one-gpu")), waitPending("p2"),
				deletePod("p1")}},
		// A network-attached pool of rack a, where no node is yet: a node
		// of rack a then joins.
		{Name: "dra-h-node-added", DRA: true, Backlog: []Step{
			nodes(node("n1").Label("rack", "b")),
			objects(nicClass, oneNIC,
				rackANICs(builders.MakeDevice("nic-0")))},
			Steps: []Step{
				pods(pod("p").ResourceClaimTemplate("nic", "one-nic")), waitPending("p"),
				nodes(node("n2").Label("rack", "a"))}},
		// Preemption for CPU on the node whose GPU is free: the pod with
		// a claim preempts a low-priority pod without one.
		{Name: "dra-h-preempt-for-cpu-with-claim", DRA: true, Backlog: []Step{
			priorityClasses(map[string]int32{"high": 1000, "low": 10}),
			nodes(node("n1"), node("n2")),
			objects(gpuClass, oneGPU, gpuSlice("n1", gpus("gpu", 1, "40Gi")...))},
			Steps: []Step{
				pods(pod("low").Req(cpu("3")).PriorityClassName("low").NodeSelector(hostKey, "n1")), waitBound("low"),
				pods(gpuPod("high", "one-gpu").Req(cpu("2")).PriorityClassName("high"))}},
		// A device tainted NoExecute in its slice is not allocated either;
		// the other device is.
		{Name: "dra-h-device-taint-noexecute", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, oneGPU, gpuSlice("n1",
				builders.MakeDevice("gpu-0").Taint("broken", "ecc", resourceapi.DeviceTaintEffectNoExecute),
				builders.MakeDevice("gpu-1")))},
			Steps: []Step{
				pods(gpuPod("p1", "one-gpu")), waitBound("p1"),
				pods(gpuPod("p2", "one-gpu"))}},
		// A claim being deleted (a finalizer keeps it): PreEnqueue holds
		// the pod, which is never tried.
		{Name: "dra-h-claim-being-deleted", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, gpuSlice("n1", gpus("gpu", 1, "40Gi")...),
				builders.MakeResourceClaim().Name("going").Request(builders.MakeDeviceRequest("gpu", "gpu")).Finalizer().Obj()),
			func(ctx context.Context, c *Cluster) error {
				return c.Client.ResourceV1().ResourceClaims("default").Delete(ctx, "going", metav1.DeleteOptions{})
			}},
			Steps: []Step{pods(pod("p").ResourceClaim("gpu", "going").Label(heldLabel, "PreEnqueue"))}},
		// Preemption for CPU by a pod whose extended resource DRA serves.
		{Name: "dra-h-ext-preempt-for-cpu", DRA: true, Backlog: []Step{
			priorityClasses(map[string]int32{"high": 1000, "low": 10}),
			nodes(node("n1"), node("n2")),
			objects(extGPU, gpuSlice("n1", gpus("gpu", 1, "40Gi")...))},
			Steps: []Step{
				pods(pod("low").Req(cpu("3")).PriorityClassName("low").NodeSelector(hostKey, "n1")), waitBound("low"),
				pods(pod("high").Req(R{"cpu": "2", "example.com/gpu": "1"}).PriorityClassName("high"))}},
	}
}
