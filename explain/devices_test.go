package explain

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/attempt"
)

// The objects of the device tests: node-1 in rack a with two GPUs of its
// own, node-2 in rack b with none; the class gpu.example.com selects the
// driver's devices.

const gpuDriver = "gpu.example.com"

func draNode(name, rack string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"rack": rack}}}
}

// gpu is a device with a model attribute.
func gpu(name, model string) resourceapi.Device {
	return resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"model": {StringValue: ptr.To(model)}}}
}

// localSlice is a one-slice pool of gpuDriver's on node.
func localSlice(node string, devices ...resourceapi.Device) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
		Spec: resourceapi.ResourceSliceSpec{Driver: gpuDriver, NodeName: ptr.To(node), Devices: devices,
			Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}}}
}

// partitionedGPU is a pool of gpuDriver's on node of two slices: one with
// a counter set of memory GiB, one with the partitions named, each
// consuming its GiB of it.
func partitionedGPU(node string, memory int64, parts map[string]int64) []runtime.Object {
	pool := resourceapi.ResourcePool{Name: node + "-partitions", ResourceSliceCount: 2}
	counters := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-counters"},
		Spec: resourceapi.ResourceSliceSpec{Driver: gpuDriver, NodeName: ptr.To(node), Pool: pool,
			SharedCounters: []resourceapi.CounterSet{{Name: "gpu-0", Counters: map[string]resourceapi.Counter{
				"memory": {Value: *resource.NewQuantity(memory<<30, resource.BinarySI)}}}}}}
	devices := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-partitions"},
		Spec: resourceapi.ResourceSliceSpec{Driver: gpuDriver, NodeName: ptr.To(node), Pool: pool}}
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		devices.Spec.Devices = append(devices.Spec.Devices, resourceapi.Device{Name: name,
			ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: map[string]resourceapi.Counter{
				"memory": {Value: *resource.NewQuantity(parts[name]<<30, resource.BinarySI)}}}}})
	}
	return []runtime.Object{counters, devices}
}

// class is a DeviceClass with CEL selectors.
func class(name string, exprs ...string) *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.DeviceClassSpec{Selectors: selectors(exprs)}}
}

func selectors(exprs []string) []resourceapi.DeviceSelector {
	var out []resourceapi.DeviceSelector
	for _, e := range exprs {
		out = append(out, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
	}
	return out
}

// claim is a ResourceClaim in namespace shop.
func claim(name string, requests ...resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: requests}}}
}

// exactly is a request of count devices of class, with selectors.
func exactly(name, class string, count int64, exprs ...string) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class,
		AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count, Selectors: selectors(exprs)}}
}

// allocated sets c's allocation to devices of node's pool.
func allocated(c *resourceapi.ResourceClaim, node string, devices ...string) *resourceapi.ResourceClaim {
	a := &resourceapi.AllocationResult{NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn,
			Values: []string{node}}}}}}}
	for _, d := range devices {
		a.Devices.Results = append(a.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: "gpu", Driver: gpuDriver, Pool: node, Device: d})
	}
	c.Status.Allocation = a
	return c
}

// draPod is the pod web in shop with the claims named (pod claim name →
// ResourceClaim name).
func draPod(claims ...string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "web-uid"}}
	for _, c := range claims {
		pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims, v1.PodResourceClaim{Name: c, ResourceClaimName: ptr.To(c)})
	}
	return pod
}

// rejectedByDRA is a record of an attempt that DynamicResources rejected
// on every node named, for reason.
func rejectedByDRA(reason string, nodes ...string) *attempt.Record {
	rec := &attempt.Record{Version: attempt.Version, Profile: "p", Attempt: 1, Result: attempt.Unschedulable,
		Filters: []string{"NodeResourcesFit", dynamicResources}, NumNodes: len(nodes),
		Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)}
	for _, n := range nodes {
		rec.Nodes = append(rec.Nodes, attempt.NodeRecord{Name: n, RejectedBy: dynamicResources, Reason: reason,
			Unresolvable: true})
	}
	return rec
}

func TestExplainDevices(t *testing.T) {
	const cannot = "cannot allocate all claims"
	nodes := []runtime.Object{draNode("node-1", "a"), draNode("node-2", "b")}
	gpus := localSlice("node-1", gpu("gpu-0", "a100"), gpu("gpu-1", "h100"))
	gpuClass := class(gpuDriver, `device.driver == "gpu.example.com"`)
	tests := []struct {
		name    string
		objects []runtime.Object
		pod     *v1.Pod
		rec     *attempt.Record
		want    string // "" : no device section
	}{
		{
			name:    "no DynamicResources rejection: nothing new",
			objects: []runtime.Object{gpus, gpuClass, claim("gpu-claim", exactly("gpu", gpuDriver, 1))},
			pod:     draPod("gpu-claim"),
			rec: &attempt.Record{Version: attempt.Version, Result: attempt.Unschedulable, NumNodes: 1,
				Nodes: []attempt.NodeRecord{{Name: "node-1", RejectedBy: "NodeResourcesFit", Reason: "Insufficient cpu"}}},
		},
		{
			name: "pool exhausted: every matching device allocated to other claims",
			objects: []runtime.Object{gpus, gpuClass, claim("gpu-claim", exactly("gpu", gpuDriver, 1)),
				allocated(claim("other", exactly("gpu", gpuDriver, 2)), "node-1", "gpu-0", "gpu-1")},
			pod: draPod("gpu-claim"),
			rec: rejectedByDRA(cannot, "node-1", "node-2"),
			want: `
Devices, as the cluster is now (DynamicResources said "cannot allocate all claims"):
  claim gpu-claim, request gpu (class gpu.example.com, 1 device):
    node-1  2 devices, 2 match, 2 allocated to other claims → none free
    node-2  no devices
`,
		},
		{
			name: "admin access: allocated devices are still usable; an admin-access allocation holds no device",
			objects: []runtime.Object{gpus, gpuClass,
				claim("admin", resourceapi.DeviceRequest{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{
					DeviceClassName: gpuDriver, AllocationMode: resourceapi.DeviceAllocationModeAll,
					AdminAccess: ptr.To(true)}}),
				allocated(claim("other", exactly("gpu", gpuDriver, 1)), "node-1", "gpu-0")},
			pod: draPod("admin"),
			rec: rejectedByDRA(cannot, "node-1"),
			want: `
Devices, as the cluster is now (DynamicResources said "cannot allocate all claims"):
  claim admin, request gpu (class gpu.example.com, all matching devices, admin access):
    node-1  2 devices, 2 match → 2 free, enough for this request on its own
Now DynamicResources accepts node-1: the cluster changed since the attempt.
`,
		},
		{
			name: "the request's selector matches nothing; two requests compete for one device",
			objects: []runtime.Object{gpus, gpuClass, claim("gpu-claim",
				exactly("big", gpuDriver, 1, `device.attributes["gpu.example.com"].model == "b200"`),
				exactly("any", gpuDriver, 3))},
			pod: draPod("gpu-claim"),
			rec: rejectedByDRA(cannot, "node-1"),
			want: `
Devices, as the cluster is now (DynamicResources said "cannot allocate all claims"):
  claim gpu-claim, request big (class gpu.example.com, 1 device):
    node-1  2 devices, 2 in the class, none match the request's selectors
  claim gpu-claim, request any (class gpu.example.com, 3 devices):
    node-1  2 devices, 2 match → 2 free, 3 wanted
`,
		},
		{
			name:    "each request finds its devices on its own, not together: their combination fails",
			objects: []runtime.Object{gpus, gpuClass, claim("pair", exactly("a", gpuDriver, 2), exactly("b", gpuDriver, 1))},
			pod:     draPod("pair"),
			rec:     rejectedByDRA(cannot, "node-1"),
			want: `
Devices, as the cluster is now (DynamicResources said "cannot allocate all claims"):
  claim pair, request a (class gpu.example.com, 2 devices):
    node-1  2 devices, 2 match → 2 free, enough for this request on its own
  claim pair, request b (class gpu.example.com, 1 device):
    node-1  2 devices, 2 match → 2 free, enough for this request on its own
On node-1 each request finds enough devices on its own: what fails is their combination (requests wanting the same devices, a matchAttribute constraint, shared counters or capacity).
`,
		},
		{
			name: "partitions of one GPU: each is free, the counters they share allow one at a time",
			objects: append([]runtime.Object{gpuClass, claim("halves", exactly("gpu", gpuDriver, 2))},
				partitionedGPU("node-1", 40, map[string]int64{"part-a": 30, "part-b": 30})...),
			pod: draPod("halves"),
			rec: rejectedByDRA(cannot, "node-1"),
			want: `
Devices, as the cluster is now (DynamicResources said "cannot allocate all claims"):
  claim halves, request gpu (class gpu.example.com, 2 devices):
    node-1  2 devices, 2 match → 2 free, but the allocator finds no 2 of them together (shared counters or capacity)
`,
		},
		{
			name: "the class's selector matches nothing: the drivers there are named",
			objects: []runtime.Object{gpus, class("nic.example.com", `device.driver == "nic.example.com"`),
				claim("nic", exactly("nic", "nic.example.com", 1))},
			pod: draPod("nic"),
			rec: rejectedByDRA(cannot, "node-1"),
			want: `
Devices, as the cluster is now (DynamicResources said "cannot allocate all claims"):
  claim nic, request nic (class nic.example.com, 1 device):
    node-1  2 devices (of gpu.example.com), none in the class
`,
		},
		{
			name: "CEL runtime error in the class, named with the device, on the node's evaluation",
			objects: []runtime.Object{gpus, class(gpuDriver, `device.attributes["gpu.example.com"].memory > 0`),
				claim("gpu-claim", exactly("gpu", gpuDriver, 1))},
			pod: draPod("gpu-claim"),
			rec: rejectedByDRA(cannot, "node-1"),
			want: `
Devices, as the cluster is now (DynamicResources said "cannot allocate all claims"):
  claim gpu-claim, request gpu (class gpu.example.com, 1 device): class gpu.example.com: selector #0 on device gpu.example.com/node-1/gpu-0: CEL runtime error: no such key: memory. consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for optional fields
`,
		},
		{
			name: "CEL runtime error in the claim that ended the attempt: no node verdicts, the claim named",
			objects: []runtime.Object{gpus, gpuClass,
				claim("gpu-claim", exactly("gpu", gpuDriver, 1, `device.attributes["gpu.example.com"].cores > 2`))},
			pod: draPod("gpu-claim"),
			rec: &attempt.Record{Version: attempt.Version, Result: attempt.SchedulerError, NumNodes: 2,
				Message: `running "DynamicResources" filter plugin: claim shop/gpu-claim: selector #0 on device ` +
					`gpu.example.com/node-1/gpu-0: CEL runtime error: no such key: cores`},
			want: `
Devices, as the cluster is now (DynamicResources said "claim shop/gpu-claim: selector #0 on device gpu.example.com/node-1/gpu-0: CEL runtime error: no such key: cores"):
  claim gpu-claim, request gpu (class gpu.example.com, 1 device): claim shop/gpu-claim: selector #0 on device gpu.example.com/node-1/gpu-0: CEL runtime error: no such key: cores. consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for optional fields
`,
		},
		{
			name:    "missing class (PreFilter) and missing claim, each named",
			objects: []runtime.Object{gpus, claim("gpu-claim", exactly("gpu", "tpu.example.com", 1))},
			pod:     draPod("gpu-claim", "gone"),
			rec: &attempt.Record{Version: attempt.Version, Result: attempt.Unschedulable, NumNodes: 2,
				PreFilter: &attempt.Verdict{Plugin: dynamicResources,
					Reason: "request gpu: device class tpu.example.com does not exist"}},
			want: `
Devices, as the cluster is now (DynamicResources said "request gpu: device class tpu.example.com does not exist"):
  claim gpu-claim: request gpu: device class tpu.example.com does not exist
  claim gone: could not find ResourceClaim "shop/gone"
`,
		},
		{
			name: "tainted devices: by the slice and by a DeviceTaintRule; a toleration lets one through",
			objects: []runtime.Object{
				localSlice("node-1", gpu("gpu-0", "a100"), gpu("gpu-1", "a100"), resourceapi.Device{Name: "gpu-2",
					Taints: []resourceapi.DeviceTaint{{Key: "broken", Effect: resourceapi.DeviceTaintEffectNoSchedule}}}),
				&resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "drain-gpu-0"},
					Spec: resourceapi.DeviceTaintRuleSpec{
						DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr.To(gpuDriver), Device: ptr.To("gpu-0")},
						Taint: resourceapi.DeviceTaint{Key: "maintenance", Value: "true",
							Effect: resourceapi.DeviceTaintEffectNoExecute}}},
				gpuClass,
				claim("gpu-claim", resourceapi.DeviceRequest{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{
					DeviceClassName: gpuDriver, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2,
					Tolerations: []resourceapi.DeviceToleration{{
						Key: "maintenance", Operator: resourceapi.DeviceTolerationOpEqual, Value: "true",
						Effect: resourceapi.DeviceTaintEffectNoExecute}}}}),
				claim("strict", exactly("gpu", gpuDriver, 3))},
			pod: draPod("gpu-claim", "strict"),
			rec: rejectedByDRA(cannot, "node-1"),
			want: `
Devices, as the cluster is now (DynamicResources said "cannot allocate all claims"):
  claim gpu-claim, request gpu (class gpu.example.com, 2 devices):
    node-1  3 devices, 3 match, 1 tainted without a toleration (broken=:NoSchedule) → 2 free, enough for this request on its own
  claim strict, request gpu (class gpu.example.com, 3 devices):
    node-1  3 devices, 3 match, 2 tainted without a toleration (maintenance=true:NoExecute, broken=:NoSchedule) → 1 free, 3 wanted
`,
		},
		{
			name: "firstAvailable: each choice in order",
			objects: []runtime.Object{gpus, gpuClass, allocated(claim("other", exactly("gpu", gpuDriver, 1)), "node-1", "gpu-1"),
				claim("gpu-claim", resourceapi.DeviceRequest{Name: "gpu", FirstAvailable: []resourceapi.DeviceSubRequest{
					{Name: "big", DeviceClassName: gpuDriver, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
						Selectors: selectors([]string{`device.attributes["gpu.example.com"].model == "h100"`})},
					{Name: "small", DeviceClassName: gpuDriver, AllocationMode: resourceapi.DeviceAllocationModeAll}}})},
			pod: draPod("gpu-claim"),
			rec: rejectedByDRA(cannot, "node-1", "node-2"),
			want: `
Devices, as the cluster is now (DynamicResources said "cannot allocate all claims"):
  claim gpu-claim, request gpu/big (choice 1 of 2: class gpu.example.com, 1 device):
    node-1  2 devices, 2 in the class, 1 matches the request's selectors, 1 allocated to other claims → none free
    node-2  no devices
  claim gpu-claim, request gpu/small (choice 2 of 2: class gpu.example.com, all matching devices):
    node-1  2 devices, 2 match, 1 allocated to other claims → 1 of 2 free, all wanted
    node-2  no devices
`,
		},
		{
			name: "network-attached slice: its nodeSelector reaches rack a only; an incomplete pool is not used",
			objects: []runtime.Object{gpuClass, claim("gpu-claim", exactly("gpu", gpuDriver, 2)),
				&resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "fabric"}, Spec: resourceapi.ResourceSliceSpec{
					Driver: gpuDriver, Pool: resourceapi.ResourcePool{Name: "fabric", ResourceSliceCount: 1},
					NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
						{Key: "rack", Operator: v1.NodeSelectorOpIn, Values: []string{"a"}}}}}},
					Devices: []resourceapi.Device{gpu("fabric-0", "h100")}}},
				&resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "spare-1"}, Spec: resourceapi.ResourceSliceSpec{
					Driver: gpuDriver, Pool: resourceapi.ResourcePool{Name: "spare", ResourceSliceCount: 2},
					AllNodes: ptr.To(true), Devices: []resourceapi.Device{gpu("spare-0", "h100")}}}},
			pod: draPod("gpu-claim"),
			rec: rejectedByDRA(cannot, "node-1", "node-2"),
			want: `
Devices, as the cluster is now (DynamicResources said "cannot allocate all claims"):
  claim gpu-claim, request gpu (class gpu.example.com, 2 devices):
    node-1  1 device, 1 matches → 1 free, 2 wanted
    node-2  no devices
`,
		},
		{
			name:    "an allocated claim bound to another node; a template's claim not made yet",
			objects: []runtime.Object{gpus, gpuClass, allocated(claim("gpu-claim", exactly("gpu", gpuDriver, 1)), "node-1", "gpu-0")},
			pod: func() *v1.Pod {
				pod := draPod("gpu-claim")
				pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims,
					v1.PodResourceClaim{Name: "scratch", ResourceClaimTemplateName: ptr.To("scratch-gpu")})
				return pod
			}(),
			rec: rejectedByDRA("resourceclaim not available on the node", "node-1", "node-2"),
			want: `
Devices, as the cluster is now (DynamicResources said "resourceclaim not available on the node"):
  claim gpu-claim, allocated (gpu.example.com/node-1/gpu-0):
    node-1  usable here
    node-2  not usable here: resourceclaim not available on the node
  the pod's claim "scratch" (template scratch-gpu): pod "shop/web": ResourceClaim not created yet (kube-controller-manager's resourceclaim controller makes it)
`,
		},
		{
			name: "an allocated claim whose device failed binding is usable nowhere",
			objects: []runtime.Object{gpus, gpuClass, func() *resourceapi.ResourceClaim {
				c := allocated(claim("gpu-claim", exactly("gpu", gpuDriver, 1)), "node-1", "gpu-0")
				c.Status.Allocation.Devices.Results[0].BindingConditions = []string{"Attached"}
				c.Status.Allocation.Devices.Results[0].BindingFailureConditions = []string{"AttachFailed"}
				c.Status.Devices = []resourceapi.AllocatedDeviceStatus{{Driver: gpuDriver, Pool: "node-1", Device: "gpu-0",
					Conditions: []metav1.Condition{{Type: "AttachFailed", Status: metav1.ConditionTrue,
						Message: "fabric manager timed out"}}}}
				return c
			}()},
			pod: draPod("gpu-claim"),
			rec: rejectedByDRA("resourceclaim not available on the node", "node-1"),
			want: `
Devices, as the cluster is now (DynamicResources said "resourceclaim not available on the node"):
  claim gpu-claim, allocated (gpu.example.com/node-1/gpu-0): device binding failed: claim=gpu-claim, reason=, message="fabric manager timed out": not usable on any node until it is deallocated
`,
		},
		{
			name:    "a node that is gone",
			objects: []runtime.Object{gpus, gpuClass, claim("gpu-claim", exactly("gpu", gpuDriver, 1))},
			pod:     draPod("gpu-claim"),
			rec:     rejectedByDRA(cannot, "node-1", "node-9"),
			want: `
Devices, as the cluster is now (DynamicResources said "cannot allocate all claims"):
  claim gpu-claim, request gpu (class gpu.example.com, 1 device):
    node-1  2 devices, 2 match → 2 free, enough for this request on its own
    node-9  the node no longer exists
Now DynamicResources accepts node-1: the cluster changed since the attempt.
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			client := fake.NewClientset(append(append([]runtime.Object{tt.pod}, nodes...), tt.objects...)...)
			var b strings.Builder
			if rep := explainDevices(ctx, client, tt.pod, tt.rec); rep != nil {
				renderDevices(&b, rep)
			}
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("device section (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodDevices checks where Pod puts the device section: below the
// Filter table, above the verdict.
func TestPodDevices(t *testing.T) {
	pod := draPod("gpu-claim")
	rec := rejectedByDRA("cannot allocate all claims", "node-2")
	rec.Message = "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, preemption: " +
		"0/1 nodes are available: 1 Preemption is not helpful for scheduling."
	value, err := rec.Encode(attempt.MaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	pod.Annotations = map[string]string{attempt.Annotation: string(value)}
	client := fake.NewClientset(pod, draNode("node-2", "b"), class(gpuDriver),
		claim("gpu-claim", exactly("gpu", gpuDriver, 1)))
	var b strings.Builder
	if err := Pod(context.Background(), client, "shop", "web", &b, Options{}); err != nil {
		t.Fatal(err)
	}
	want := `Pod shop/web: Unschedulable (attempt 1, profile p, 2026-01-02 03:04:05)

Filter (✓ passed, – not run: a node's plugins stop at its first failure):
NODE    DynamicResources
node-2  cannot allocate all claims
Rejected no node: NodeResourcesFit

Devices, as the cluster is now (DynamicResources said "cannot allocate all claims"):
  claim gpu-claim, request gpu (class gpu.example.com, 1 device):
    node-2  no devices

No node: 0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("Pod (-want +got):\n%s", diff)
	}
}

// TestExplainDevicesDenied checks what the device section says when the
// user may not list some of what it reads: the optional lists (claims of
// other namespaces, DeviceTaintRules) become notes, the others end the
// section with the error.
func TestExplainDevicesDenied(t *testing.T) {
	tests := []struct {
		name   string
		denied func(k8stesting.ListAction) bool
		want   string
	}{
		{
			name: "claims of other namespaces: the devices they hold count as free",
			denied: func(a k8stesting.ListAction) bool {
				return a.GetResource().Resource == "resourceclaims" && a.GetNamespace() == ""
			},
			want: `
Devices, as the cluster is now (DynamicResources said "cannot allocate all claims"):
  claim gpu-claim, request gpu (class gpu.example.com, 2 devices):
    node-1  2 devices, 2 match, 1 allocated to other claims → 1 free, 2 wanted
ResourceClaims of namespaces other than shop were not read: devices they hold are counted as free.
`,
		},
		{
			name:   "DeviceTaintRules: their taints are not counted",
			denied: func(a k8stesting.ListAction) bool { return a.GetResource().Resource == "devicetaintrules" },
			want: `
Devices, as the cluster is now (DynamicResources said "cannot allocate all claims"):
  claim gpu-claim, request gpu (class gpu.example.com, 2 devices):
    node-1  2 devices, 2 match, 2 allocated to other claims → none free
DeviceTaintRules were not read (denied): their taints are not counted.
`,
		},
		{
			name:   "ResourceSlices: nothing can be told",
			denied: func(a k8stesting.ListAction) bool { return a.GetResource().Resource == "resourceslices" },
			want: `
Devices, as the cluster is now (DynamicResources said "cannot allocate all claims"):
  cannot tell: listing ResourceSlices: denied
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pod := draPod("gpu-claim")
			mine := allocated(claim("mine", exactly("gpu", gpuDriver, 1)), "node-1", "gpu-0")
			theirs := allocated(claim("theirs", exactly("gpu", gpuDriver, 1)), "node-1", "gpu-1")
			theirs.Namespace = "lab"
			client := fake.NewClientset(pod, draNode("node-1", "a"), localSlice("node-1", gpu("gpu-0", "a100"),
				gpu("gpu-1", "a100")), class(gpuDriver), claim("gpu-claim", exactly("gpu", gpuDriver, 2)), mine, theirs)
			client.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if l, ok := a.(k8stesting.ListAction); ok && tt.denied(l) {
					return true, nil, errors.New("denied")
				}
				return false, nil, nil
			})
			var b strings.Builder
			renderDevices(&b, explainDevices(ctx, client, pod, rejectedByDRA("cannot allocate all claims", "node-1")))
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("device section (-want +got):\n%s", diff)
			}
		})
	}
}
