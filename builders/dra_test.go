package builders_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/builders"
)

// The builders that decide something on their own: defaults, names derived
// from others, fields that come in pairs, copies that must not alias.
func TestDRABuilders(t *testing.T) {
	const class = "gpu.example.com"
	tests := []struct {
		name      string
		got, want any
	}{{
		name: "a request is for one device unless told otherwise",
		got:  builders.MakeDeviceRequest("gpu", class).Exactly(),
		want: resourceapi.DeviceRequest{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}},
	}, {
		name: "All leaves no count behind",
		got:  builders.MakeDeviceRequest("gpu", class).Count(3).All().Exactly().Exactly,
		want: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeAll},
	}, {
		name: "a subrequest keeps everything but admin access",
		got: builders.MakeDeviceRequest("big", class).Selector("device.attributes['x'].size > 1").Count(2).
			AdminAccess().Capacity(map[resourceapi.QualifiedName]string{"memory": "8Gi"}).SubRequest(),
		want: resourceapi.DeviceSubRequest{Name: "big", DeviceClassName: class,
			Selectors:      []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: "device.attributes['x'].size > 1"}}},
			AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2,
			Capacity: &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
				"memory": resource.MustParse("8Gi")}}},
	}, {
		name: "a prioritized list holds its alternatives in order",
		got: builders.MakeResourceClaim().FirstAvailable("gpu", builders.MakeDeviceRequest("big", "big"),
			builders.MakeDeviceRequest("small", "small").Count(2)).Obj().Spec.Devices.Requests,
		want: []resourceapi.DeviceRequest{{Name: "gpu", FirstAvailable: []resourceapi.DeviceSubRequest{
			{Name: "big", DeviceClassName: "big", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
			{Name: "small", DeviceClassName: "small", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2},
		}}},
	}, {
		name: "a node-local slice's pool is named after the node",
		got:  builders.MakeResourceSlice().Driver(class).Node("n1").Obj().Spec,
		want: resourceapi.ResourceSliceSpec{Driver: class, NodeName: ptr.To("n1"),
			Pool: resourceapi.ResourcePool{Name: "n1", Generation: 1, ResourceSliceCount: 1}},
	}, {
		name: "unless Pool named it",
		got:  builders.MakeResourceSlice().Pool("rack-a").Node("n1").Obj().Spec.Pool.Name,
		want: "rack-a",
	}, {
		name: "a device bound to its node once attached",
		got:  builders.MakeDevice("d").BindingConditions([]string{"attached"}, []string{"failed"}).BindsToNode().Device,
		want: resourceapi.Device{Name: "d", BindingConditions: []string{"attached"},
			BindingFailureConditions: []string{"failed"}, BindsToNode: ptr.To(true)},
	}, {
		name: "the allocator's selector of one node's devices",
		got:  builders.NodeNameSelector("n1"),
		want: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"n1"}}}}}},
	}, {
		name: "a class of one driver",
		got:  builders.MakeDeviceClass().Name("gpu").Driver(class).ExtendedResourceName("example.com/gpu").Obj().Spec,
		want: resourceapi.DeviceClassSpec{
			Selectors:            []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.example.com"`}}},
			ExtendedResourceName: ptr.To("example.com/gpu")},
	}, {
		name: "pod claims name a claim or a template, and containers use them",
		got: builders.MakePod().ResourceClaim("shared", "c").ResourceClaimTemplate("own", "t").
			ClaimContainer("shared", "own").Obj().Spec,
		want: v1.PodSpec{
			ResourceClaims: []v1.PodResourceClaim{{Name: "shared", ResourceClaimName: ptr.To("c")},
				{Name: "own", ResourceClaimTemplateName: ptr.To("t")}},
			Containers: []v1.Container{{Name: "c0", Image: builders.PauseImage, Resources: v1.ResourceRequirements{
				Claims: []v1.ResourceClaim{{Name: "shared"}, {Name: "own"}}}}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got, equalQuantities); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// equalQuantities compares quantities by value (they cache their string
// form, which cmp would otherwise compare too).
var equalQuantities = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// A template holds a copy of its claim's spec: building on the claim
// afterwards changes neither the template nor the claims made before.
func TestTemplateCopiesClaim(t *testing.T) {
	claim := builders.MakeResourceClaim().Name("c").Request(builders.MakeDeviceRequest("gpu", "gpu"))
	tmpl := builders.MakeResourceClaimTemplate().Name("t").Claim(claim).Obj()
	before := claim.Obj()
	claim.Request(builders.MakeDeviceRequest("nic", "nic")).MatchAttribute("example.com/numa")
	claim.Spec.Devices.Requests[0].Exactly.Count = 5
	if diff := cmp.Diff(before.Spec, tmpl.Spec.Spec); diff != "" {
		t.Errorf("template spec (-want +got):\n%s", diff)
	}
	if got := before.Spec.Devices.Requests[0].Exactly.Count; got != 1 {
		t.Errorf("an earlier Obj() changed with the wrapper: count %d", got)
	}
}
