// An end-to-end test of the extended-resource claim flow against a real
// apiserver (envtest): a pod asking for example.com/gpu, which no node
// advertises but a DeviceClass backs, gets a claim the scheduler creates,
// allocates and reserves, named in the pod's status; a pod asking for more
// than there is gets kube-scheduler's FailedScheduling text. It shares the
// apiserver of integration_test.go, and removes its cluster-wide objects
// (nodes, class, slice) when done, so that the other test sees only its
// own.
package dynamicresources_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/scenario"
)

// The driver of this test's devices, and the extended resource they serve.
const (
	extDriver   = "ext-gpu.example.com"
	extResource = v1.ResourceName("example.com/gpu")
)

func TestSchedulerCreatesExtendedResourceClaims(t *testing.T) {
	const ns = "dra-extended"
	ctx, client, env := startScheduler(t, ns)

	// Two nodes, neither advertising example.com/gpu; two devices on
	// ext-node-2, of a class that backs it.
	nodes := []*v1.Node{scenario.MakeNode("ext-node-1").Obj(), scenario.MakeNode("ext-node-2").Obj()}
	if err := env.CreateNodes(ctx, nodes...); err != nil {
		t.Fatal(err)
	}
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: extDriver},
		Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{
				CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", extDriver)}}},
			ExtendedResourceName: ptr.To(string(extResource)),
		}}
	if _, err := client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "ext-node-2-gpus"},
		Spec: resourceapi.ResourceSliceSpec{Driver: extDriver, NodeName: ptr.To("ext-node-2"),
			Pool:    resourceapi.ResourcePool{Name: "ext-node-2", ResourceSliceCount: 1},
			Devices: []resourceapi.Device{{Name: "gpu-0"}, {Name: "gpu-1"}}}}
	if _, err := client.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeClusterObjects(t, client, ns, nodes, class.Name, slice.Name) })
	gpuPod := func(name, count string) *v1.Pod {
		return scenario.MakePod(name).Req(map[v1.ResourceName]string{extResource: count}).Obj()
	}

	t.Run("a claim is created for the pod, allocated, reserved, and named in its status", func(t *testing.T) {
		if err := env.CreatePods(ctx, gpuPod("one-gpu", "1")); err != nil {
			t.Fatal(err)
		}
		pod, err := env.WaitForPodBound(ctx, "one-gpu", scenario.DefaultWait)
		if err != nil {
			t.Fatal(err)
		}
		if pod.Spec.NodeName != "ext-node-2" {
			t.Errorf("bound to %s, want ext-node-2", pod.Spec.NodeName)
		}
		claims, err := client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(claims.Items) != 1 || !strings.HasPrefix(claims.Items[0].Name, "one-gpu-extended-resources-") {
			t.Fatalf("claims %v, want one named one-gpu-extended-resources-*", claimNames(claims.Items))
		}
		claim := &claims.Items[0]
		type claimView struct {
			Annotations map[string]string
			Controller  string
			Finalizers  []string
			Requests    []resourceapi.DeviceRequest
			Devices     []string
			ReservedFor []resourceapi.ResourceClaimConsumerReference
		}
		got := claimView{Annotations: claim.Annotations, Finalizers: claim.Finalizers,
			Requests: claim.Spec.Devices.Requests, ReservedFor: claim.Status.ReservedFor}
		if owner := metav1.GetControllerOf(claim); owner != nil {
			got.Controller = owner.Kind + "/" + owner.Name + "/" + string(owner.UID)
		}
		if claim.Status.Allocation != nil {
			for _, r := range claim.Status.Allocation.Devices.Results {
				got.Devices = append(got.Devices, r.Request+"="+r.Pool+"/"+r.Device)
			}
		}
		want := claimView{
			Annotations: map[string]string{resourceapi.ExtendedResourceClaimAnnotation: "true"},
			Controller:  "Pod/one-gpu/" + string(pod.UID),
			Finalizers:  []string{resourceapi.Finalizer},
			Requests: []resourceapi.DeviceRequest{{Name: "container-0-request-0", Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: extDriver, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}},
			Devices:     []string{"container-0-request-0=ext-node-2/gpu-0"},
			ReservedFor: []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "one-gpu", UID: pod.UID}},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("claim (-want +got):\n%s", diff)
		}
		wantStatus := &v1.PodExtendedResourceClaimStatus{ResourceClaimName: claim.Name,
			RequestMappings: []v1.ContainerExtendedResourceRequest{{
				ContainerName: pod.Spec.Containers[0].Name, ResourceName: string(extResource), RequestName: "container-0-request-0"}}}
		if diff := cmp.Diff(wantStatus, pod.Status.ExtendedResourceClaimStatus); diff != "" {
			t.Errorf("pod's status.extendedResourceClaimStatus (-want +got):\n%s", diff)
		}
	})

	t.Run("a pod asking for more devices than are left", func(t *testing.T) {
		if err := env.CreatePods(ctx, gpuPod("two-gpus", "2")); err != nil {
			t.Fatal(err)
		}
		msgs, err := env.WaitForEvent(ctx, "two-gpus", "FailedScheduling", scenario.DefaultWait)
		if err != nil {
			t.Fatal(err)
		}
		// Every node of the apiserver is rejected alike (integration_test.go
		// may have left two of its own).
		all, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n := len(all.Items)
		want := fmt.Sprintf("0/%d nodes are available: %d cannot allocate all claims. "+
			"preemption: 0/%d nodes are available: %d Preemption is not helpful for scheduling.", n, n, n, n)
		if msgs[0] != want {
			t.Errorf("FailedScheduling = %q, want %q", msgs[0], want)
		}
		claims, err := client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range claims.Items {
			if strings.HasPrefix(c.Name, "two-gpus-") {
				t.Errorf("claim %s was created for a pod that fits nowhere", c.Name)
			}
		}
	})
}

// claimNames lists the claims' names.
func claimNames(claims []resourceapi.ResourceClaim) []string {
	names := make([]string, 0, len(claims))
	for _, c := range claims {
		names = append(names, c.Name)
	}
	return names
}

// removeClusterObjects deletes the test's pods (at once: no kubelet
// finishes them), nodes, class and slice.
func removeClusterObjects(t *testing.T, client kubernetes.Interface, ns string, nodes []*v1.Node, class, slice string) {
	ctx := context.Background()
	if err := client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
		metav1.ListOptions{}); err != nil {
		t.Errorf("deleting pods: %v", err)
	}
	for _, n := range nodes {
		if err := client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting node %s: %v", n.Name, err)
		}
	}
	if err := client.ResourceV1().ResourceSlices().Delete(ctx, slice, metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting slice: %v", err)
	}
	if err := client.ResourceV1().DeviceClasses().Delete(ctx, class, metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting class: %v", err)
	}
}
