//go:build conformance

// This file holds the cases of dynamic resource allocation: DynamicResources
// in the default profile, with kube-controller-manager's resourceclaim
// controller creating the claims of templates (Case.DRA). No driver runs:
// the cases create the DeviceClasses and ResourceSlices a driver would, and
// compare, beside the pods, every ResourceClaim: the devices allocated, the
// node selector of the allocation, the pods it is reserved for and its
// finalizers.
//
// Classes, slices, rules and claims are created in the backlog, before the
// scheduler starts, so that its first look at a pod sees all of them (an
// informer of slices lagging behind the informer of pods would make an
// attempt fail that a later one retries, which ends the same but is not
// what a case means to show). Only one node can take each pod, or Score
// decides: equal scores are broken by the order Filter found the nodes in,
// which differs between runs.

package conformance

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/scenario"
)

// heldLabel marks a pod a case expects DynamicResources' PreEnqueue to hold
// back for good (its claim never comes): it is never tried, so it never
// gets a PodScheduled condition, and the outcome counts it as decided.
const heldLabel = "conformance.minisched.io/held"

// The drivers, classes and attributes of the cases.
const (
	gpuDriver = "gpu.example.com"
	nicDriver = "nic.example.com"
	// numaAttr is an attribute both drivers publish, in a domain of
	// neither, so that a constraint can compare GPUs with NICs.
	numaAttr = "dra.example.com/numa"
)

// gpuClass selects every GPU, nicClass every NIC.
var (
	gpuClass = builders.MakeDeviceClass().Name("gpu").Driver(gpuDriver).Obj()
	nicClass = builders.MakeDeviceClass().Name("nic").Driver(nicDriver).Obj()
)

// gpuSlice is node's one slice of GPUs (pool named after the node).
func gpuSlice(node string, devices ...*builders.DeviceWrapper) *resourceapi.ResourceSlice {
	s := builders.MakeResourceSlice().Name(node + "-gpus").Driver(gpuDriver).Node(node)
	for _, d := range devices {
		s.Device(d)
	}
	return s.Obj()
}

// rackANICs is a network-attached pool of NICs, pool rack-a of nicDriver:
// every node labelled rack=a reaches it (the slice's node selector).
func rackANICs(devices ...*builders.DeviceWrapper) *resourceapi.ResourceSlice {
	s := builders.MakeResourceSlice().Name("rack-a-nics").Driver(nicDriver).Pool("rack-a").
		NodeSelector(&v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{matchExpr("rack", v1.NodeSelectorOpIn, "a")}})
	for _, d := range devices {
		s.Device(d)
	}
	return s.Obj()
}

// gpus are devices named <prefix>-0, <prefix>-1, ... of memory each.
func gpus(prefix string, n int, memory string) []*builders.DeviceWrapper {
	out := make([]*builders.DeviceWrapper, n)
	for i := range out {
		out[i] = builders.MakeDevice(fmt.Sprintf("%s-%d", prefix, i)).Capacity("memory", memory)
	}
	return out
}

// template is a ResourceClaimTemplate in default whose claims make the
// given requests.
func template(name string, requests ...*builders.DeviceRequestWrapper) *resourceapi.ResourceClaimTemplate {
	c := builders.MakeResourceClaim()
	for _, r := range requests {
		c.Request(r)
	}
	return builders.MakeResourceClaimTemplate().Name(name).Claim(c).Obj()
}

// oneGPU is the template of a claim for any one GPU.
var oneGPU = template("one-gpu", builders.MakeDeviceRequest("gpu", "gpu"))

// gpuPod is a pod with one claim, "gpu", made from template.
func gpuPod(name, template string) *builders.PodWrapper {
	return pod(name).ResourceClaimTemplate("gpu", template).ClaimContainer("gpu")
}

func draCases() []Case {
	const bigGPU = `device.capacity["gpu.example.com"].memory.compareTo(quantity("80Gi")) >= 0`
	return []Case{
		// The example of the Kubernetes docs' "Dynamic Resource Allocation":
		// a pod with two claims from one template whose CEL selector asks
		// for large black devices (attributes in the driver's domain, named
		// bare in the slice). n1 has one such device, n2 two: n2, a device
		// each.
		{Name: "dra-docs-example", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2"), node("n3")),
			objects(builders.MakeDeviceClass().Name("resource.example.com").Driver("resource-driver.example.com").Obj(),
				builders.MakeResourceClaimTemplate().Name("large-black-cat-claim-template").Claim(
					builders.MakeResourceClaim().Request(builders.MakeDeviceRequest("req-0", "resource.example.com").Selector(
						`device.attributes["resource-driver.example.com"].color == "black" && `+
							`device.attributes["resource-driver.example.com"].size == "large"`))).Obj(),
				cats("n1", cat("black-large", "black", "large"), cat("white-large", "white", "large")),
				cats("n2", cat("black-small", "black", "small"), cat("black-large-a", "black", "large"),
					cat("black-large-b", "black", "large")))},
			Steps: []Step{pods(pod("pod-with-cats").
				ResourceClaimTemplate("cat-0", "large-black-cat-claim-template").
				ResourceClaimTemplate("cat-1", "large-black-cat-claim-template").
				ClaimContainer("cat-0").ClaimContainer("cat-1"))}},
		// Two GPUs on n1, none on n2, three pods: the third finds no node
		// where its claim can be allocated ("cannot allocate all claims",
		// unresolvable, so preemption does not help either) and its claim
		// stays unallocated.
		{Name: "dra-gpus-run-out", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, oneGPU, gpuSlice("n1", gpus("gpu", 2, "40Gi")...))},
			Steps: []Step{
				pods(gpuPod("p1", "one-gpu")), waitBound("p1"),
				pods(gpuPod("p2", "one-gpu")), waitBound("p2"),
				pods(gpuPod("p3", "one-gpu"))}},
		// A claim two pods share: the first allocates it on n2 (the only
		// GPU), the second follows the allocation's node selector there and
		// is added to reservedFor; a third, kept to n1 by its node selector,
		// finds the claim not available there, and as the claim is in use,
		// PostFilter cannot deallocate it.
		{Name: "dra-shared-claim", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, gpuSlice("n2", gpus("gpu", 1, "40Gi")...),
				builders.MakeResourceClaim().Name("shared").Request(builders.MakeDeviceRequest("gpu", "gpu")).Obj())},
			Steps: []Step{
				pods(pod("a").ResourceClaim("gpu", "shared")), waitBound("a"),
				pods(pod("b").ResourceClaim("gpu", "shared")), waitBound("b"),
				pods(pod("c").ResourceClaim("gpu", "shared").NodeSelector(hostKey, "n1"))}},
		// A prioritized list: one GPU of 80Gi or more, else two smaller
		// ones. No node has a big one; n1 has two small ones, n2 one: n1,
		// with the second choice (results named gpu/small).
		{Name: "dra-first-available-fallback", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, builders.MakeResourceClaimTemplate().Name("big-or-two").Claim(
				builders.MakeResourceClaim().FirstAvailable("gpu",
					builders.MakeDeviceRequest("big", "gpu").Selector(bigGPU),
					builders.MakeDeviceRequest("small", "gpu").Count(2))).Obj(),
				gpuSlice("n1", gpus("small", 2, "40Gi")...), gpuSlice("n2", gpus("small", 1, "40Gi")...))},
			Steps: []Step{pods(gpuPod("p", "big-or-two"))}},
		// Both nodes can satisfy the list, n1 with its second choice, n2
		// with its first: DynamicResources' Score (8 minus the index of the
		// choice, normalised, weight 2) sends the pod to n2.
		{Name: "dra-first-available-score", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, builders.MakeResourceClaimTemplate().Name("big-or-two").Claim(
				builders.MakeResourceClaim().FirstAvailable("gpu",
					builders.MakeDeviceRequest("big", "gpu").Selector(bigGPU),
					builders.MakeDeviceRequest("small", "gpu").Count(2))).Obj(),
				gpuSlice("n1", gpus("small", 2, "40Gi")...), gpuSlice("n2", gpus("big", 1, "80Gi")...))},
			Steps: []Step{pods(gpuPod("p", "big-or-two"))}},
		// A device tainted NoSchedule in its slice: the plain pod gets the
		// other one; a second plain pod finds nothing; a pod whose request
		// tolerates the taint gets the tainted one.
		{Name: "dra-device-taint", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, oneGPU, template("tolerant-gpu", builders.MakeDeviceRequest("gpu", "gpu").
				Toleration(resourceapi.DeviceToleration{Key: "maintenance", Operator: resourceapi.DeviceTolerationOpExists,
					Effect: resourceapi.DeviceTaintEffectNoSchedule})),
				gpuSlice("n1", builders.MakeDevice("gpu-0").Taint("maintenance", "", resourceapi.DeviceTaintEffectNoSchedule),
					builders.MakeDevice("gpu-1")))},
			Steps: []Step{
				pods(gpuPod("plain", "one-gpu")), waitBound("plain"),
				pods(gpuPod("plain2", "one-gpu"), gpuPod("tolerant", "tolerant-gpu"))}},
		// The same taint put on n1's gpu-1 by a DeviceTaintRule, which the
		// slice tracker applies as if the slice said it.
		{Name: "dra-device-taint-rule", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, oneGPU, template("tolerant-gpu", builders.MakeDeviceRequest("gpu", "gpu").
				Toleration(resourceapi.DeviceToleration{Key: "maintenance", Operator: resourceapi.DeviceTolerationOpExists,
					Effect: resourceapi.DeviceTaintEffectNoSchedule})),
				gpuSlice("n1", gpus("gpu", 2, "40Gi")...),
				builders.MakeDeviceTaintRule().Name("gpu-1-maintenance").Driver(gpuDriver).Pool("n1").Device("gpu-1").
					Taint("maintenance", "", resourceapi.DeviceTaintEffectNoSchedule).Obj())},
			Steps: []Step{
				pods(gpuPod("plain", "one-gpu")), waitBound("plain"),
				pods(gpuPod("plain2", "one-gpu"), gpuPod("tolerant", "tolerant-gpu"))}},
		// Allocation mode All: every A100 of one node. n2 has none (All
		// needs at least one), n1 three; a second such claim finds them
		// taken.
		{Name: "dra-allocation-mode-all", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, template("all-a100", builders.MakeDeviceRequest("gpu", "gpu").All().
				Selector(`device.attributes["gpu.example.com"].model == "a100"`)),
				gpuSlice("n1", ofModel("a100", gpus("a100", 3, "40Gi"))...),
				gpuSlice("n2", ofModel("h100", gpus("h100", 2, "80Gi"))...))},
			Steps: []Step{
				pods(gpuPod("all", "all-a100")), waitBound("all"),
				pods(gpuPod("again", "all-a100"))}},
		// Count 2: n1 has one GPU, n2 two.
		{Name: "dra-count-two", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, template("two-gpus", builders.MakeDeviceRequest("gpu", "gpu").Count(2)),
				gpuSlice("n1", gpus("gpu", 1, "40Gi")...), gpuSlice("n2", gpus("gpu", 2, "40Gi")...))},
			Steps: []Step{pods(gpuPod("p", "two-gpus"))}},
		// matchAttribute across two requests of two drivers: a GPU and a
		// NIC on the same NUMA node. n1's are on different ones; on n2 the
		// first GPU is on the wrong one, so the allocator takes the second.
		{Name: "dra-match-attribute", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, nicClass,
				builders.MakeResourceClaimTemplate().Name("gpu-and-nic").Claim(builders.MakeResourceClaim().
					Request(builders.MakeDeviceRequest("gpu", "gpu")).Request(builders.MakeDeviceRequest("nic", "nic")).
					MatchAttribute(numaAttr, "gpu", "nic")).Obj(),
				gpuSlice("n1", numa(0, "gpu-0")), nicSlice("n1", numa(1, "nic-0")),
				gpuSlice("n2", numa(0, "gpu-0"), numa(1, "gpu-1")), nicSlice("n2", numa(1, "nic-0")))},
			Steps: []Step{pods(gpuPod("p", "gpu-and-nic"))}},
		// Admin access: a monitoring pod, in a namespace labelled for it,
		// gets the GPU a pod already has, and its allocation does not count
		// as taking it: another plain pod still finds none free.
		{Name: "dra-admin-access", DRA: true, Backlog: []Step{
			namespace("monitoring", map[string]string{resourceapi.DRAAdminNamespaceLabelKey: "true"}),
			nodes(node("n1"), node("n2")),
			objects(gpuClass, oneGPU, builders.MakeResourceClaimTemplate().Name("admin-gpu").Namespace("monitoring").
				Claim(builders.MakeResourceClaim().Request(builders.MakeDeviceRequest("gpu", "gpu").AdminAccess())).Obj(),
				gpuSlice("n1", gpus("gpu", 1, "40Gi")...))},
			Steps: []Step{
				pods(gpuPod("user", "one-gpu")), waitBound("user"),
				pods(gpuPod("monitor", "admin-gpu").Namespace("monitoring"), gpuPod("user2", "one-gpu"))}},
		// Partitionable devices: n1's GPU is offered whole or as two halves,
		// all drawing on one counter set of 40Gi. Two halves use it up, and
		// the whole GPU can no longer be allocated although no pod has it.
		{Name: "dra-partitionable", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass,
				template("half", builders.MakeDeviceRequest("gpu", "gpu").Selector(`device.attributes["gpu.example.com"].partition == "half"`)),
				template("whole", builders.MakeDeviceRequest("gpu", "gpu").Selector(`device.attributes["gpu.example.com"].partition == "whole"`)),
				builders.MakeResourceSlice().Name("n1-counters").Driver(gpuDriver).Node("n1").SliceCount(2).
					SharedCounters("gpu-0-memory", map[string]string{"memory": "40Gi"}).Obj(),
				builders.MakeResourceSlice().Name("n1-gpus").Driver(gpuDriver).Node("n1").SliceCount(2).
					Device(partition("gpu-0", "whole", "40Gi")).Device(partition("gpu-0-a", "half", "20Gi")).
					Device(partition("gpu-0-b", "half", "20Gi")).Obj())},
			Steps: []Step{
				pods(gpuPod("half1", "half")), waitBound("half1"),
				pods(gpuPod("half2", "half")), waitBound("half2"),
				pods(gpuPod("whole", "whole"))}},
		// Consumable capacity: one GPU that several claims may share, each
		// consuming the memory it asks for. 30Gi of 40Gi taken, 20Gi more
		// does not fit, 10Gi does.
		{Name: "dra-consumable-capacity", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, memTemplate("30Gi"), memTemplate("20Gi"), memTemplate("10Gi"),
				gpuSlice("n1", builders.MakeDevice("shared").AllowMultipleAllocations().Capacity("memory", "40Gi")))},
			Steps: []Step{
				pods(gpuPod("m30", "mem-30gi")), waitBound("m30"),
				pods(gpuPod("m20", "mem-20gi")), waitPending("m20"),
				pods(gpuPod("m10", "mem-10gi"))}},
		// An extended resource backed by DRA: the class maps example.com/gpu,
		// no node has allocatable of it, so the scheduler makes a claim for
		// each pod that asks (<pod>-extended-resources-*) and allocates it
		// from n1's three GPUs, one request per container; a pod asking for
		// three more finds two. A pod may also ask by the class's implicit
		// name.
		{Name: "dra-extended-resource", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(builders.MakeDeviceClass().Name("gpu").Driver(gpuDriver).ExtendedResourceName("example.com/gpu").Obj(),
				gpuSlice("n1", gpus("gpu", 3, "40Gi")...))},
			Steps: []Step{
				pods(pod("e1").Req(R{"example.com/gpu": "1"})), waitBound("e1"),
				pods(pod("e2").Req(R{"example.com/gpu": "1"}).Req(R{"example.com/gpu": "2"})), waitPending("e2"),
				pods(pod("implicit").Req(R{v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + "gpu"): "1"}))}},
		// Bad input: a claim of a class that does not exist (PreFilter,
		// unresolvable, nothing to preempt).
		{Name: "dra-missing-class", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, gpuSlice("n1", gpus("gpu", 1, "40Gi")...),
				builders.MakeResourceClaim().Name("bad").Request(builders.MakeDeviceRequest("gpu", "no-such-class")).Obj())},
			Steps: []Step{pods(pod("p").ResourceClaim("gpu", "bad"))}},
		// Bad input: a CEL selector that compiles but fails on n1's devices,
		// which have no attribute "model" ("no such key"). That is an error,
		// not a verdict on the node: the attempt ends (SchedulerError, the
		// message naming claim, selector and device), and the pod backs off
		// and tries again. The claim is not a template's, whose random name
		// the message would carry.
		{Name: "dra-cel-runtime-error", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, gpuSlice("n1", gpus("gpu", 1, "40Gi")...),
				builders.MakeResourceClaim().Name("by-model").Request(builders.MakeDeviceRequest("gpu", "gpu").
					Selector(`device.attributes["gpu.example.com"].model == "a100"`)).Obj())},
			Steps: []Step{pods(pod("p").ResourceClaim("gpu", "by-model"))}},
		// A claim that does not exist: PreEnqueue holds the pod, which is
		// never tried and gets no condition; a pod whose claim is created
		// after it is then scheduled.
		{Name: "dra-missing-claim", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, gpuSlice("n1", gpus("gpu", 1, "40Gi")...))},
			Steps: []Step{
				pods(pod("held").ResourceClaim("gpu", "nope").Label(heldLabel, "PreEnqueue"),
					pod("late").ResourceClaim("gpu", "late")),
				objects(builders.MakeResourceClaim().Name("late").Request(builders.MakeDeviceRequest("gpu", "gpu")).Obj())}},
		// Network-attached devices: a pool that every node of rack a can
		// reach (the slice's node selector), which becomes the allocation's
		// node selector. n2 is in rack b.
		{Name: "dra-network-attached", DRA: true, Backlog: []Step{
			nodes(node("n1").Label("rack", "a"), node("n2").Label("rack", "b")),
			objects(nicClass, oneNIC,
				rackANICs(builders.MakeDevice("nic-0")))},
			Steps: []Step{
				pods(pod("p").ResourceClaimTemplate("nic", "one-nic")), waitBound("p"),
				pods(pod("q").ResourceClaimTemplate("nic", "one-nic"))}},
		// Binding conditions: a network-attached NIC must be attached to
		// the chosen node first (bindsToNode: the allocation names that
		// node, not the rack). PreBind writes the allocation, nominates the
		// node and waits until the driver (played by the case) reports the
		// condition "attached"; then the pod is bound.
		{Name: "dra-binding-conditions", DRA: true, Backlog: []Step{
			nodes(node("n1").Label("rack", "a"), node("n2").Label("rack", "b")),
			objects(nicClass, oneNIC,
				rackANICs(builders.MakeDevice("nic-0").BindsToNode().
					BindingConditions([]string{"attached"}, []string{"attach-failed"})))},
			Steps: []Step{pods(pod("p").ResourceClaimTemplate("nic", "one-nic")), attach("attached")}},
		// PostFilter: a claim allocated on n1 but reserved for no pod, and a
		// pod that must run on n2. Nowhere fits (n1 by node selector, n2
		// because the claim is not available there), so DynamicResources
		// deallocates the idle claim, and the next attempt allocates it on
		// n2.
		{Name: "dra-deallocate-idle-claim", DRA: true, Backlog: []Step{
			nodes(node("n1"), node("n2")),
			objects(gpuClass, gpuSlice("n1", gpus("gpu", 1, "40Gi")...), gpuSlice("n2", gpus("gpu", 1, "40Gi")...),
				builders.MakeResourceClaim().Name("idle").Request(builders.MakeDeviceRequest("gpu", "gpu")).Finalizer().Obj()),
			allocateClaim("idle", builders.NodeNameSelector("n1"), resourceapi.DeviceRequestAllocationResult{
				Request: "gpu", Driver: gpuDriver, Pool: "n1", Device: "gpu-0"})},
			Steps: []Step{pods(pod("p").ResourceClaim("gpu", "idle").NodeSelector(hostKey, "n2"))}},
	}
}

// cats is node's slice of the docs' example driver.
func cats(node string, devices ...*builders.DeviceWrapper) *resourceapi.ResourceSlice {
	s := builders.MakeResourceSlice().Name(node + "-cats").Driver("resource-driver.example.com").Node(node)
	for _, d := range devices {
		s.Device(d)
	}
	return s.Obj()
}

// cat is a device of the docs' example, its attributes named bare (in the
// driver's domain).
func cat(name, color, size string) *builders.DeviceWrapper {
	return builders.MakeDevice(name).StringAttr("color", color).StringAttr("size", size)
}

// ofModel sets attribute model on each device.
func ofModel(m string, ds []*builders.DeviceWrapper) []*builders.DeviceWrapper {
	for _, d := range ds {
		d.StringAttr("model", m)
	}
	return ds
}

// numa is a device named name on NUMA node n.
func numa(n int64, name string) *builders.DeviceWrapper {
	return builders.MakeDevice(name).IntAttr(numaAttr, n)
}

// nicSlice is node's one slice of NICs.
func nicSlice(node string, devices ...*builders.DeviceWrapper) *resourceapi.ResourceSlice {
	s := builders.MakeResourceSlice().Name(node + "-nics").Driver(nicDriver).Node(node)
	for _, d := range devices {
		s.Device(d)
	}
	return s.Obj()
}

// oneNIC is the template of a claim for any one NIC.
var oneNIC = template("one-nic", builders.MakeDeviceRequest("nic", "nic"))

// partition is a device that is a part (or the whole) of gpu-0, drawing
// memory from its counter set.
func partition(name, kind, memory string) *builders.DeviceWrapper {
	return builders.MakeDevice(name).StringAttr("partition", kind).
		ConsumesCounters("gpu-0-memory", map[string]string{"memory": memory})
}

// memTemplate is the template mem-<amount> of a claim for amount of a
// shareable GPU's memory.
func memTemplate(amount string) *resourceapi.ResourceClaimTemplate {
	return template("mem-"+strings.ToLower(amount), builders.MakeDeviceRequest("gpu", "gpu").
		Capacity(map[resourceapi.QualifiedName]string{"memory": amount}))
}

// allocateClaim writes an allocation into claim name's status (in
// default), as a scheduler that then lost its pod would have left it.
func allocateClaim(name string, sel *v1.NodeSelector, results ...resourceapi.DeviceRequestAllocationResult) Step {
	return func(ctx context.Context, c *Cluster) error {
		claims := c.Client.ResourceV1().ResourceClaims("default")
		claim, err := claims.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		claim.Status.Allocation = builders.MakeResourceClaim().Allocation(sel, results...).Obj().Status.Allocation
		_, err = claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
		return err
	}
}

// attach plays a driver that completes binding: it waits until some claim
// in default is allocated a device with binding conditions, and then
// reports condition (one of them) true for each such device.
func attach(condition string) Step {
	return func(ctx context.Context, c *Cluster) error {
		claims := c.Client.ResourceV1().ResourceClaims("default")
		var name string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, scenario.DefaultWait, true,
			func(ctx context.Context) (bool, error) {
				list, err := claims.List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, err
				}
				for _, claim := range list.Items {
					if a := claim.Status.Allocation; a != nil && slices.ContainsFunc(a.Devices.Results,
						func(r resourceapi.DeviceRequestAllocationResult) bool { return len(r.BindingConditions) > 0 }) {
						name = claim.Name
						return true, nil
					}
				}
				return false, nil
			})
		if err != nil {
			return fmt.Errorf("waiting for a claim to attach: %w", err)
		}
		// The scheduler may be writing the claim too (reservedFor).
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			claim, err := claims.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			claim.Status.Devices = nil
			for _, r := range claim.Status.Allocation.Devices.Results {
				if len(r.BindingConditions) == 0 {
					continue
				}
				claim.Status.Devices = append(claim.Status.Devices, resourceapi.AllocatedDeviceStatus{
					Driver: r.Driver, Pool: r.Pool, Device: r.Device,
					Conditions: []metav1.Condition{{Type: condition, Status: metav1.ConditionTrue,
						Reason: "Attached", LastTransitionTime: metav1.Now()}}})
			}
			_, err = claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
			return err
		})
	}
}

// draOutcome lists each ResourceClaim: "claim ns/name: devices (request ->
// driver/pool/device, with admin access, sharing and consumed capacity if
// any), node selector, reservedFor (pod names), finalizers", sorted. A
// generated name (a template's claim, <pod>-<podClaimName>-<random>, or an
// extended resource's, <pod>-extended-resources-<random>) differs between
// runs: it is shown as its generateName followed by "*".
func draOutcome(ctx context.Context, client kubernetes.Interface) ([]string, error) {
	claims, err := client.ResourceV1().ResourceClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, claim := range claims.Items {
		name := claim.Name
		if claim.GenerateName != "" && strings.HasPrefix(name, claim.GenerateName) {
			name = claim.GenerateName + "*"
		}
		line := fmt.Sprintf("claim %s/%s: ", claim.Namespace, name)
		if a := claim.Status.Allocation; a != nil {
			line += fmt.Sprintf("allocated [%s] on %s", allocatedDevices(a), nodeSelector(a.NodeSelector))
		} else {
			line += "unallocated"
		}
		var reserved []string
		for _, r := range claim.Status.ReservedFor {
			reserved = append(reserved, r.Resource+"/"+r.Name)
		}
		// Sorted: pods bound at once (a gang's members, whose PreBinds run
		// in parallel) reserve the claim in no set order.
		slices.Sort(reserved)
		line += fmt.Sprintf(", reserved for %v, finalizers %v", reserved, claim.Finalizers)
		if claim.DeletionTimestamp != nil {
			line += " (deleting)"
		}
		out = append(out, line)
	}
	sort.Strings(out)
	return out, nil
}

// allocatedDevices prints an allocation's results, in their order (that of
// the claim's requests).
func allocatedDevices(a *resourceapi.AllocationResult) string {
	var devices []string
	for _, r := range a.Devices.Results {
		d := fmt.Sprintf("%s -> %s/%s/%s", r.Request, r.Driver, r.Pool, r.Device)
		if r.AdminAccess != nil && *r.AdminAccess {
			d += " (admin access)"
		}
		if r.ShareID != nil {
			// The ID is random; that there is one says the device is shared.
			d += " (shared)"
		}
		if len(r.BindingConditions) > 0 {
			d += fmt.Sprintf(" (binding conditions %v, failure conditions %v)", r.BindingConditions,
				r.BindingFailureConditions)
		}
		if len(r.ConsumedCapacity) > 0 {
			var consumed []string
			for k, q := range r.ConsumedCapacity {
				consumed = append(consumed, fmt.Sprintf("%s=%s", k, q.String()))
			}
			sort.Strings(consumed)
			d += " consumed " + strings.Join(consumed, ",")
		}
		devices = append(devices, d)
	}
	return strings.Join(devices, ", ")
}

// nodeSelector prints an allocation's node selector compactly: "every
// node" for none, else its terms.
func nodeSelector(sel *v1.NodeSelector) string {
	if sel == nil {
		return "every node"
	}
	var terms []string
	for _, t := range sel.NodeSelectorTerms {
		var reqs []string
		for _, e := range t.MatchExpressions {
			reqs = append(reqs, fmt.Sprintf("%s %s %v", e.Key, e.Operator, e.Values))
		}
		for _, f := range t.MatchFields {
			reqs = append(reqs, fmt.Sprintf("field %s %s %v", f.Key, f.Operator, f.Values))
		}
		terms = append(terms, strings.Join(reqs, " && "))
	}
	return "[" + strings.Join(terms, " || ") + "]"
}
