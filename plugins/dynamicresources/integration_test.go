// An end-to-end test of DynamicResources against a real apiserver
// (envtest): minisched's whole scheduler, with its default profile,
// allocates a device to a ResourceClaim, writes the claim and binds the
// pod; a pod whose claim fits nowhere gets kube-scheduler's
// FailedScheduling text. The DeviceClass, the ResourceSlices (a DRA
// driver's job) and the claims (no template, so no resourceclaim
// controller is needed) are created directly. The apiserver is started by
// the first test that needs it.
package dynamicresources_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/testenv"
)

var (
	apiOnce sync.Once
	apiEnv  *testenv.Environment
	apiErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if apiEnv != nil {
		if err := apiEnv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
	}
	os.Exit(code)
}

// The driver of the test's devices.
const driver = "gpu.example.com"

// startScheduler starts the package's apiserver (once), creates namespace
// ns and runs the scheduler, the default profile under the namespace's
// name, until the test ends. It returns the test's context, a client and
// the Env of ns. It skips the test with -short.
func startScheduler(t *testing.T, ns string) (context.Context, *kubernetes.Clientset, *scenario.Env) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an apiserver")
	}
	apiOnce.Do(func() { apiEnv, apiErr = testenv.StartEnvironment() })
	if apiErr != nil {
		t.Fatalf("starting envtest: %v", apiErr)
	}
	_, ctx := ktesting.NewTestContext(t)
	client, err := kubernetes.NewForConfig(apiEnv.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg := scheduler.DefaultConfig()
	cfg.Profiles[0].SchedulerName = ptr.To(ns)
	runCtx, stop := context.WithCancel(ctx)
	svc, err := scheduler.New(runCtx, cfg, apiEnv.Config)
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- svc.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-runErr; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return ctx, client, &scenario.Env{Client: client, Namespace: ns, SchedulerName: ns}
}

func TestSchedulerAllocatesClaims(t *testing.T) {
	const ns = "dra"
	ctx, client, env := startScheduler(t, ns)

	// Two nodes; one device, on node-2.
	cpu := map[v1.ResourceName]string{v1.ResourceCPU: "2"}
	if err := env.CreateNodes(ctx, scenario.MakeNode("node-1").Capacity(cpu).Obj(),
		scenario.MakeNode("node-2").Capacity(cpu).Obj()); err != nil {
		t.Fatal(err)
	}
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: driver},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", driver)}}}}}
	if _, err := client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "node-2-gpus"},
		Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: ptr.To("node-2"),
			Pool:    resourceapi.ResourcePool{Name: "node-2", ResourceSliceCount: 1},
			Devices: []resourceapi.Device{{Name: "gpu-0"}}}}
	if _, err := client.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim := func(name string) *resourceapi.ResourceClaim {
		return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: driver}}}}}}
	}
	podWith := func(name, claimName string) *v1.Pod {
		p := scenario.MakePod(name).Obj()
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(claimName)}}
		return p
	}

	t.Run("the claim is allocated on the node with the device, written, and the pod bound there", func(t *testing.T) {
		if _, err := client.ResourceV1().ResourceClaims(ns).Create(ctx, claim("gpu-1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := env.CreatePods(ctx, podWith("with-gpu", "gpu-1")); err != nil {
			t.Fatal(err)
		}
		pod, err := env.WaitForPodBound(ctx, "with-gpu", scenario.DefaultWait)
		if err != nil {
			t.Fatal(err)
		}
		if pod.Spec.NodeName != "node-2" {
			t.Errorf("bound to %s, want node-2", pod.Spec.NodeName)
		}
		got, err := client.ResourceV1().ResourceClaims(ns).Get(ctx, "gpu-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := &resourceapi.ResourceClaimStatus{
			Allocation: &resourceapi.AllocationResult{
				Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
					Request: "gpu", Driver: driver, Pool: "node-2", Device: "gpu-0"}}},
				NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
					MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn,
						Values: []string{"node-2"}}}}}},
			},
			ReservedFor: []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "with-gpu", UID: pod.UID}},
		}
		if got.Status.Allocation == nil || got.Status.Allocation.AllocationTimestamp == nil {
			t.Errorf("allocation %v has no allocationTimestamp", got.Status.Allocation)
		} else {
			got.Status.Allocation.AllocationTimestamp = nil
		}
		if diff := cmp.Diff(want, &got.Status); diff != "" {
			t.Errorf("claim status (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{resourceapi.Finalizer}, got.Finalizers); diff != "" {
			t.Errorf("claim finalizers (-want +got):\n%s", diff)
		}
	})

	t.Run("a second claim finds the only device taken", func(t *testing.T) {
		if _, err := client.ResourceV1().ResourceClaims(ns).Create(ctx, claim("gpu-2"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := env.CreatePods(ctx, podWith("without-gpu", "gpu-2")); err != nil {
			t.Fatal(err)
		}
		msgs, err := env.WaitForEvent(ctx, "without-gpu", "FailedScheduling", scenario.DefaultWait)
		if err != nil {
			t.Fatal(err)
		}
		want := "0/2 nodes are available: 2 cannot allocate all claims. " +
			"preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
		if msgs[0] != want {
			t.Errorf("FailedScheduling = %q, want %q", msgs[0], want)
		}
	})
}
