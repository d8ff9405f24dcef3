package scenario

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestDescribeClaim checks the one-line story of a claim: name (a
// generated one's without its random suffix), devices, node, consumers.
func TestDescribeClaim(t *testing.T) {
	onNode := func(node string) *v1.NodeSelector {
		return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}
	}
	gpu := func(pool, device string) resourceapi.DeviceRequestAllocationResult {
		return resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: "gpu.example.com", Pool: pool,
			Device: device}
	}
	tests := []struct {
		name  string
		claim resourceapi.ResourceClaim
		want  string
	}{
		{name: "not allocated", claim: resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "shared"}},
			want: "claim shared: not allocated"},
		{name: "generated, allocated and reserved",
			claim: resourceapi.ResourceClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "pod-1-gpu-x7k2p",
					Annotations: map[string]string{podClaimNameAnnotation: "gpu"},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "pod-1",
						Controller: ptr.To(true)}}},
				Status: resourceapi.ResourceClaimStatus{
					Allocation: &resourceapi.AllocationResult{NodeSelector: onNode("node-1"),
						Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
							gpu("node-1", "gpu-0"), gpu("node-1", "gpu-1")}}},
					ReservedFor: []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "pod-1"}},
				},
			},
			want: "claim pod-1-gpu-…: gpu.example.com/node-1/gpu-0, gpu.example.com/node-1/gpu-1 on node-1, " +
				"reserved for pod-1"},
		{name: "allocated, not reserved, network-attached",
			claim: resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "net"},
				Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
					NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
						{Key: "rack", Operator: v1.NodeSelectorOpIn, Values: []string{"r1"}}}}}},
					Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
						gpu("rack-1", "gpu-0")}}}}},
			want: "claim net: gpu.example.com/rack-1/gpu-0 on nodes where rack In [r1], reserved for none"},
		{name: "allocated for any node", claim: resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "any"},
			Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{}}},
			want: "claim any: no devices on any node, reserved for none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DescribeClaim(&tt.claim); got != tt.want {
				t.Errorf("DescribeClaim:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}
