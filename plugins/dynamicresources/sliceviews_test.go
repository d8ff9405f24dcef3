package dynamicresources

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
)

// The nodes of these tests: worker-0 to worker-3, each with a slice of its
// own (pool = node name).
var viewNodes = []string{"worker-0", "worker-1", "worker-2", "worker-3"}

// gpuSelector and friends are CEL selectors on the test devices'
// attributes (in the driver's domain).
const (
	gpuSelector  = `device.attributes["some-driver"].type == "gpu"`
	fpgaSelector = `device.attributes["some-driver"].type == "fpga"`
	// memSelector fails on a device without the attribute mem.
	memSelector = `device.attributes["some-driver"].mem >= 16`
)

// viewDevice is a device of a kind (gpu or fpga), with memory mem (none:
// no attribute mem) and a model.
func viewDevice(name, kind string, mem int64) resourceapi.Device {
	d := resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"type":  {StringValue: ptr.To(kind)},
		"model": {StringValue: ptr.To("m-" + kind)},
	}, Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
		"memory": {Value: resource.MustParse("16Gi")},
	}}
	if mem > 0 {
		d.Attributes["mem"] = resourceapi.DeviceAttribute{IntValue: ptr.To(mem)}
	}
	return d
}

// viewSlice is node's slice of the devices, stored at resourceVersion 1.
func viewSlice(node string, devices ...resourceapi.Device) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-slice", UID: types.UID(node + "-slice-uid"), ResourceVersion: "1"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver: driverName, NodeName: ptr.To(node),
			Pool:    resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1},
			Devices: devices,
		},
	}
}

// viewSlices are the four nodes' slices: worker-0 and worker-1 have two
// gpus and an fpga, worker-2 only fpgas, worker-3 a gpu without mem.
func viewSlices() []*resourceapi.ResourceSlice {
	return []*resourceapi.ResourceSlice{
		viewSlice("worker-0", viewDevice("dev-0", "gpu", 16), viewDevice("dev-1", "fpga", 8), viewDevice("dev-2", "gpu", 32)),
		viewSlice("worker-1", viewDevice("dev-0", "fpga", 8), viewDevice("dev-1", "gpu", 16), viewDevice("dev-2", "gpu", 8)),
		viewSlice("worker-2", viewDevice("dev-0", "fpga", 32), viewDevice("dev-1", "fpga", 16)),
		viewSlice("worker-3", viewDevice("dev-0", "gpu", 0)),
	}
}

// viewClass is a class with the selectors, stored at resourceVersion rv.
func viewClass(name, rv string, selectors ...string) *resourceapi.DeviceClass {
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid"), ResourceVersion: rv}}
	for _, s := range selectors {
		class.Spec.Selectors = append(class.Spec.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: s}})
	}
	class.Spec.Config = []resourceapi.DeviceClassConfiguration{{DeviceConfiguration: resourceapi.DeviceConfiguration{
		Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: driverName}}}}
	return class
}

// classes is a DeviceClassLister over a map.
type classes map[string]*resourceapi.DeviceClass

func (c classes) List() ([]*resourceapi.DeviceClass, error) {
	var out []*resourceapi.DeviceClass
	for _, class := range c {
		out = append(out, class)
	}
	return out, nil
}

func (c classes) Get(name string) (*resourceapi.DeviceClass, error) {
	if class, ok := c[name]; ok {
		return class, nil
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
}

// classClaim is a claim whose request req-1 asks for count devices of
// class (ExactCount), changed by the edits.
func classClaim(name, class string, count int64, edits ...func(*resourceapi.ResourceClaim)) *resourceapi.ResourceClaim {
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID(name + "-uid")},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "req-1", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class,
				AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count},
		}}}},
	}
	for _, edit := range edits {
		edit(claim)
	}
	return claim
}

// TestSliceViewsAllocateAlike builds the allocator over everything and
// over what sliceViews gives it, and asks both to allocate on every node:
// the results and errors must be the same, and the views must be used
// exactly where the rules allow them.
func TestSliceViewsAllocateAlike(t *testing.T) {
	taken := func(ids ...string) sets.Set[structured.DeviceID] {
		s := sets.New[structured.DeviceID]()
		for _, id := range ids {
			var node, device string
			fmt.Sscanf(id, "%s %s", &node, &device)
			s.Insert(structured.MakeDeviceID(driverName, node, device))
		}
		return s
	}
	gpu := viewClass("gpu", "1", gpuSelector)
	fpga := viewClass("fpga", "1", fpgaSelector)
	mem := viewClass("mem", "1", memSelector)
	plain := viewClass("plain", "1")
	all := classes{"gpu": gpu, "fpga": fpga, "mem": mem, "plain": plain}
	edited := func(edit func([]*resourceapi.ResourceSlice) []*resourceapi.ResourceSlice) []*resourceapi.ResourceSlice {
		return edit(viewSlices())
	}

	tests := []struct {
		name     string
		slices   []*resourceapi.ResourceSlice
		claims   []*resourceapi.ResourceClaim
		taken    sets.Set[structured.DeviceID]
		narrowed bool
	}{
		{name: "one device of a class, attributes left out", claims: []*resourceapi.ResourceClaim{classClaim("c", "gpu", 1)},
			taken: taken("worker-0 dev-0"), narrowed: true},
		{name: "two devices, one taken", claims: []*resourceapi.ResourceClaim{classClaim("c", "gpu", 2)},
			taken: taken("worker-1 dev-2"), narrowed: true},
		{name: "a class without selectors", claims: []*resourceapi.ResourceClaim{classClaim("c", "plain", 3)}, narrowed: true},
		{name: "two claims of one class", claims: []*resourceapi.ResourceClaim{classClaim("a", "gpu", 1), classClaim("b", "gpu", 1)},
			narrowed: true},
		{name: "a request's own selector keeps the attributes", narrowed: true,
			claims: []*resourceapi.ResourceClaim{classClaim("c", "gpu", 1, func(c *resourceapi.ResourceClaim) {
				c.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: `device.attributes["some-driver"].mem >= 32`}}}
			})}},
		{name: "a constraint keeps the attributes", narrowed: true,
			claims: []*resourceapi.ResourceClaim{classClaim("c", "gpu", 2, func(c *resourceapi.ResourceClaim) {
				c.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{
					MatchAttribute: ptr.To(resourceapi.FullyQualifiedName("some-driver/model"))}}
			})}},
		{name: "all devices, one taken", taken: taken("worker-1 dev-1"), narrowed: true,
			claims: []*resourceapi.ResourceClaim{classClaim("c", "gpu", 0, func(c *resourceapi.ResourceClaim) {
				c.Spec.Devices.Requests[0].Exactly.AllocationMode = resourceapi.DeviceAllocationModeAll
			})}},
		{name: "admin access to a taken device", taken: taken("worker-0 dev-0", "worker-0 dev-2"), narrowed: true,
			claims: []*resourceapi.ResourceClaim{classClaim("c", "gpu", 1, func(c *resourceapi.ResourceClaim) {
				c.Spec.Devices.Requests[0].Exactly.AdminAccess = ptr.To(true)
			})}},
		{name: "a tainted device", narrowed: true, claims: []*resourceapi.ResourceClaim{classClaim("c", "gpu", 2)},
			slices: edited(func(s []*resourceapi.ResourceSlice) []*resourceapi.ResourceSlice {
				s[0].Spec.Devices[2].Taints = []resourceapi.DeviceTaint{{Key: "broken", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
				return s
			})},
		{name: "an incomplete pool", narrowed: true, claims: []*resourceapi.ResourceClaim{classClaim("c", "gpu", 1)},
			slices: edited(func(s []*resourceapi.ResourceSlice) []*resourceapi.ResourceSlice {
				s[0].Spec.Pool.ResourceSliceCount = 2
				return s
			})},
		{name: "a pool of two slices", narrowed: true, claims: []*resourceapi.ResourceClaim{classClaim("c", "gpu", 3)},
			slices: edited(func(s []*resourceapi.ResourceSlice) []*resourceapi.ResourceSlice {
				second := viewSlice("worker-0", viewDevice("dev-3", "gpu", 8))
				second.Name, second.UID = "worker-0-second", "worker-0-second-uid"
				s[0].Spec.Pool.ResourceSliceCount, second.Spec.Pool.ResourceSliceCount = 2, 2
				return append(s, second)
			})},
		{name: "a device name twice in a pool: everything", claims: []*resourceapi.ResourceClaim{classClaim("c", "gpu", 1)},
			slices: edited(func(s []*resourceapi.ResourceSlice) []*resourceapi.ResourceSlice {
				second := viewSlice("worker-0", viewDevice("dev-1", "fpga", 8))
				second.Name, second.UID = "worker-0-second", "worker-0-second-uid"
				s[0].Spec.Pool.ResourceSliceCount, second.Spec.Pool.ResourceSliceCount = 2, 2
				return append(s, second)
			})},
		{name: "two classes: everything", claims: []*resourceapi.ResourceClaim{classClaim("a", "gpu", 1), classClaim("b", "fpga", 1)}},
		{name: "alternatives of two classes: everything",
			claims: []*resourceapi.ResourceClaim{withFirstAvailable(classClaim("c", "gpu", 1), "fpga", "gpu")}},
		{name: "alternatives of one class", narrowed: true,
			claims: []*resourceapi.ResourceClaim{withFirstAvailable(classClaim("c", "gpu", 1), "gpu", "gpu")}},
		{name: "a selector failing on some device: everything", claims: []*resourceapi.ResourceClaim{classClaim("c", "mem", 1)}},
		{name: "a class that does not exist: everything", claims: []*resourceapi.ResourceClaim{classClaim("c", "none", 1)}},
		{name: "shared counters: everything", claims: []*resourceapi.ResourceClaim{classClaim("c", "gpu", 1)},
			slices: edited(func(s []*resourceapi.ResourceSlice) []*resourceapi.ResourceSlice {
				s[1].Spec.Devices[1].ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "set",
					Counters: map[string]resourceapi.Counter{"mem": {Value: resource.MustParse("1")}}}}
				counters := viewSlice("worker-1")
				counters.Name, counters.UID, counters.Spec.NodeName, counters.Spec.Devices = "worker-1-counters", "counters-uid", nil, nil
				counters.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "set",
					Counters: map[string]resourceapi.Counter{"mem": {Value: resource.MustParse("1")}}}}
				s[1].Spec.Pool.ResourceSliceCount, counters.Spec.Pool.ResourceSliceCount = 2, 2
				return append(s, counters)
			})},
		{name: "binding conditions: everything", claims: []*resourceapi.ResourceClaim{classClaim("c", "gpu", 1)},
			slices: edited(func(s []*resourceapi.ResourceSlice) []*resourceapi.ResourceSlice {
				s[0].Spec.Devices[1].BindingConditions = []string{"ready"}
				s[0].Spec.Devices[1].BindingFailureConditions = []string{"failed"}
				return s
			})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			slices := tc.slices
			if slices == nil {
				slices = viewSlices()
			}
			allocated := structured.AllocatedState{AllocatedDevices: tc.taken}
			if allocated.AllocatedDevices == nil {
				allocated.AllocatedDevices = sets.New[structured.DeviceID]()
			}
			narrowed := allocateAlike(t, &sliceViews{}, all, slices, tc.claims, allocated)
			if narrowed != tc.narrowed {
				t.Errorf("views used: %v, want %v", narrowed, tc.narrowed)
			}
		})
	}
}

// TestSliceViewsFollowChanges keeps one sliceViews while the class and a
// slice change: each answer must follow the new versions.
func TestSliceViewsFollowChanges(t *testing.T) {
	views := &sliceViews{}
	claims := []*resourceapi.ResourceClaim{classClaim("c", "accel", 1)}
	allocated := structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID]()}
	slices := viewSlices()
	steps := []struct {
		name   string
		change func()
		class  *resourceapi.DeviceClass
	}{
		{name: "the class selects gpus", class: viewClass("accel", "1", gpuSelector)},
		{name: "the same again, from what is kept", class: viewClass("accel", "1", gpuSelector)},
		{name: "the class now selects fpgas", class: viewClass("accel", "2", fpgaSelector)},
		{name: "worker-2's fpgas become gpus", class: viewClass("accel", "3", gpuSelector), change: func() {
			s := viewSlice("worker-2", viewDevice("dev-0", "gpu", 32), viewDevice("dev-1", "gpu", 16))
			s.ResourceVersion = "2"
			slices[2] = s
		}},
		{name: "worker-0's slice is deleted", class: viewClass("accel", "3", gpuSelector), change: func() {
			slices = slices[1:]
		}},
		{name: "the same class, not stored (no version)", class: viewClass("accel", "", fpgaSelector)},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if step.change != nil {
				step.change()
			}
			if !allocateAlike(t, views, classes{"accel": step.class}, slices, claims, allocated) {
				t.Errorf("views not used")
			}
			if len(views.slices) != len(slices) {
				t.Errorf("%d slices kept, %d listed", len(views.slices), len(slices))
			}
		})
	}
}

// allocateAlike compares the allocator over everything with the allocator
// over what views gives it, on every node, and says whether views were
// used.
func allocateAlike(t *testing.T, views *sliceViews, lister structured.DeviceClassLister, slices []*resourceapi.ResourceSlice,
	claims []*resourceapi.ResourceClaim, allocated structured.AllocatedState) bool {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	celCache := NewCELCache()
	full, err := NewAllocator(ctx, allocated, lister, slices, celCache)
	if err != nil {
		t.Fatalf("allocator over everything: %v", err)
	}
	viewClasses, input, narrowed := views.allocatorInput(ctx, celCache, lister, slices, claims)
	narrow, err := NewAllocator(ctx, allocated, viewClasses, input, celCache)
	if err != nil {
		t.Fatalf("allocator over the views: %v", err)
	}
	for _, name := range viewNodes {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		want, wantErr := full.Allocate(ctx, node, claims)
		got, gotErr := narrow.Allocate(ctx, node, claims)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("%s: error %v, want %v", name, gotErr, wantErr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: allocation differs (-everything +views):\n%s", name, diff)
		}
	}
	return narrowed
}

// TestSliceViewsLeaveOut checks what a view holds: only the devices the
// class selects, without their attributes unless something reads them.
func TestSliceViewsLeaveOut(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	lister := classes{"gpu": viewClass("gpu", "1", gpuSelector)}
	tests := []struct {
		name           string
		claim          *resourceapi.ResourceClaim
		wantAttributes bool
	}{
		{name: "nothing reads them", claim: classClaim("c", "gpu", 1)},
		{name: "a constraint reads them", wantAttributes: true, claim: classClaim("c", "gpu", 1, func(c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{DistinctAttribute: ptr.To(resourceapi.FullyQualifiedName("some-driver/model"))}}
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			classLister, views, narrowed := (&sliceViews{}).allocatorInput(ctx, NewCELCache(), lister, viewSlices(),
				[]*resourceapi.ResourceClaim{tc.claim})
			if !narrowed {
				t.Fatal("views not used")
			}
			var names []string
			for _, device := range views[0].Spec.Devices {
				names = append(names, device.Name)
				if got := device.Attributes != nil; got != tc.wantAttributes {
					t.Errorf("%s: attributes kept %v, want %v", device.Name, got, tc.wantAttributes)
				}
			}
			if diff := cmp.Diff([]string{"dev-0", "dev-2"}, names); diff != "" {
				t.Errorf("worker-0's view (-want +got):\n%s", diff)
			}
			class, err := classLister.Get("gpu")
			if err != nil || len(class.Spec.Selectors) != 0 || len(class.Spec.Config) != 1 {
				t.Errorf("class given: %+v, %v; want it without selectors, with its config", class, err)
			}
		})
	}
}
