package dradriver_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/examples/dradriver"
	"github.com/minisched/minisched/testenv"
)

// pollTimeout bounds each wait for the driver: a node's controller starts
// in a second or two.
const pollTimeout = 30 * time.Second

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithEnvironment(m.Run, &env, nil))
}

// TestDriver runs the driver against the apiserver, which validates every
// slice it publishes: every kind of device, on nodes there before it
// started and after; a node's devices changed while it runs; a deleted
// node's slices gone.
func TestDriver(t *testing.T) {
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(env.Config)
	createNode(t, client, "n1")
	createNode(t, client, "n2")
	d := dradriver.New(client, dradriver.Options{
		Devices: dradriver.NodeDevices{GPUs: 2},
		PerNode: map[string]dradriver.NodeDevices{
			"n2": {GPUs: 1, Partitions: 2},
			// Every option at once, to have the apiserver validate them.
			"n3": {GPUs: 1, Shared: true, BindsToNode: true,
				MemoryPolicy: &resourceapi.CapacityRequestPolicy{Default: ptr.To(resource.MustParse("1Gi")),
					ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(resource.MustParse("1Gi"))}},
				BindingConditions: []string{"attached"}, BindingFailureConditions: []string{"failed"},
				Taints: map[string][]resourceapi.DeviceTaint{"gpu-0": {{Key: "example.com/unhealthy",
					Effect: resourceapi.DeviceTaintEffectNoSchedule}}}},
		},
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- d.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	createNode(t, client, "n3")

	waitForSlices(t, client, map[string]string{
		"n1": "gpu-0 gpu-1",
		"n2": "[counters] gpu-0 gpu-0-part-0 gpu-0-part-1",
		"n3": "gpu-0",
	})

	t.Run("a node's devices change while it runs", func(t *testing.T) {
		d.SetNode("n1", dradriver.NodeDevices{GPUs: 3})
		waitForSlices(t, client, map[string]string{"n1": "gpu-0 gpu-1 gpu-2"})
	})
	t.Run("a deleted node's slices go", func(t *testing.T) {
		if err := client.CoreV1().Nodes().Delete(ctx, "n2", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForSlices(t, client, map[string]string{"n2": ""})
	})
	t.Run("slices are the node's", func(t *testing.T) {
		list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list.Items {
			ref := metav1.GetControllerOf(&s)
			if s.Spec.Driver != dradriver.DefaultDriverName || s.Spec.Pool.Name != *s.Spec.NodeName ||
				len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Node" ||
				s.OwnerReferences[0].Name != *s.Spec.NodeName {
				t.Errorf("slice %s: driver %s, pool %s, node %s, owners %v (controller %v)", s.Name, s.Spec.Driver,
					s.Spec.Pool.Name, *s.Spec.NodeName, s.OwnerReferences, ref)
			}
		}
	})
}

// TestDeviceClasses creates the classes the helpers build: the apiserver
// compiles their CEL.
func TestDeviceClasses(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(env.Config)
	driver := dradriver.DefaultDriverName
	for _, c := range []*resourceapi.DeviceClass{
		dradriver.DeviceClass("gpu", driver),
		dradriver.DeviceClass("big-gpu", driver, dradriver.ModelSelector(driver, "big"),
			dradriver.TypeSelector(driver, dradriver.TypeGPU)),
		dradriver.ExtendedResourceClass("gpu-extended", driver, "example.com/gpu"),
	} {
		t.Run(c.Name, func(t *testing.T) {
			if _, err := client.ResourceV1().DeviceClasses().Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSetDeviceCondition reports a binding condition on a claim allocated
// as the scheduler leaves it, twice (the second replaces the first), and
// checks the claim's status.devices.
func TestSetDeviceCondition(t *testing.T) {
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(env.Config)
	driver := dradriver.DefaultDriverName
	claims := client.ResourceV1().ResourceClaims("default")
	claim, err := claims.Create(ctx, &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "attached", Namespace: "default"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", Count: 2,
				AllocationMode: resourceapi.DeviceAllocationModeExactCount},
		}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: driver, Pool: "n1", Device: "gpu-0", BindingConditions: []string{"attached"}, BindingFailureConditions: []string{"failed"}},
			{Request: "gpu", Driver: driver, Pool: "n1", Device: "gpu-1", BindingConditions: []string{"attached"}, BindingFailureConditions: []string{"failed"}},
		},
	}}
	if _, err := claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, status := range []metav1.ConditionStatus{metav1.ConditionFalse, metav1.ConditionTrue} {
		err := dradriver.SetDeviceCondition(ctx, client, driver, "default", claim.Name,
			metav1.Condition{Type: "attached", Status: status, Reason: "Attach", Message: "done"})
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := claims.Get(ctx, claim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var devices []string
	for _, d := range got.Status.Devices {
		c := meta.FindStatusCondition(d.Conditions, "attached")
		devices = append(devices, fmt.Sprintf("%s/%s/%s attached=%s (%d conditions)", d.Driver, d.Pool, d.Device,
			c.Status, len(d.Conditions)))
	}
	want := []string{
		driver + "/n1/gpu-0 attached=True (1 conditions)",
		driver + "/n1/gpu-1 attached=True (1 conditions)",
	}
	if diff := cmp.Diff(want, devices); diff != "" {
		t.Errorf("status.devices (-want +got):\n%s", diff)
	}
	err = dradriver.SetDeviceCondition(ctx, client, "other.example.com", "default", claim.Name,
		metav1.Condition{Type: "attached", Status: metav1.ConditionTrue, Reason: "Attach"})
	if err == nil || !strings.Contains(err.Error(), "no device of driver other.example.com") {
		t.Errorf("another driver's condition: error %v, want one saying the claim has no device of it", err)
	}
}

// createNode creates a node named name.
func createNode(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := client.CoreV1().Nodes().Create(t.Context(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitForSlices waits until each node's published devices are as want
// says: their names in the order of slice names and then of devices, a
// slice of counter sets as "[counters]", "" for none at all.
func waitForSlices(t *testing.T, client kubernetes.Interface, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, pollTimeout, true,
		func(ctx context.Context) (bool, error) {
			list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
			all := map[string][]string{}
			for _, s := range list.Items {
				node := ptr.Deref(s.Spec.NodeName, "")
				if len(s.Spec.SharedCounters) > 0 {
					all[node] = append(all[node], "[counters]")
				}
				for _, d := range s.Spec.Devices {
					all[node] = append(all[node], d.Name)
				}
			}
			for node := range want {
				got[node] = strings.Join(all[node], " ")
			}
			return cmp.Equal(want, got), nil
		})
	if err != nil {
		t.Fatalf("devices by node (-want +got):\n%s", cmp.Diff(want, got))
	}
}
