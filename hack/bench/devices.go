package main

// The device workload's side of a run, after scheduler_perf's
// SchedulingWithResourceClaimTemplate (test/integration/scheduler_perf/dra):
// a DeviceClass, one ResourceSlice of simulated GPUs per node (published
// directly, as scheduler_perf does, instead of by a driver), a
// ResourceClaimTemplate, and kube-controller-manager's resourceclaim
// controller, which turns each pod's template into a claim of its own. The
// scheduler allocates a device to each claim in its DynamicResources plugin
// and writes the allocation in PreBind.

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/testenv"
)

// Devices says how a workload's pods get devices. Every measured pod has
// one claim, made from the template, asking for one device of the class.
type Devices struct {
	// PerNode is how many devices each node's slice offers.
	PerNode int
}

// The names scheduler_perf's dra templates use.
const (
	deviceDriver   = "test-driver.cdi.k8s.io"
	deviceClass    = "test-class"
	claimTemplate  = "test-claim-template"
	podClaimName   = "resource"
	pciRoots       = 2
	claimsCreation = 2 * time.Minute
)

// startDevices creates the class and the template and starts the
// resourceclaim controller (with the storage workloads' fast client). The
// returned function stops it.
func startDevices(ctx context.Context, env *testenv.Environment, client kubernetes.Interface) (func() error, error) {
	class := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: deviceClass},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", deviceDriver)},
		}}},
	}
	if _, err := client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating device class %s: %w", class.Name, err)
	}
	template := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: claimTemplate, Namespace: namespace},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{
			Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name:    "req-0",
				Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: deviceClass},
			}}},
		}},
	}
	if _, err := client.ResourceV1().ResourceClaimTemplates(namespace).Create(ctx, template, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating claim template %s: %w", template.Name, err)
	}
	kcm, err := env.StartControllerManagerWithFlags(controllerManagerFlags, "resourceclaim-controller")
	if err != nil {
		return nil, err
	}
	return kcm.Stop, nil
}

// createSlice publishes node's devices: scheduler_perf's
// resourceslice-basic-devices.yaml, a pool of its own with PerNode GPUs,
// each with its attributes and capacities.
func createSlice(ctx context.Context, client kubernetes.Interface, d *Devices, node string) error {
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "resourceslice-" + node},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   deviceDriver,
			NodeName: ptr.To(node),
			Pool:     resourceapi.ResourcePool{Name: "resourceslice-" + node, Generation: 1, ResourceSliceCount: 1},
		},
	}
	for i := range d.PerNode {
		slice.Spec.Devices = append(slice.Spec.Devices, basicDevice(i))
	}
	if _, err := client.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating ResourceSlice of node %s: %w", node, err)
	}
	return nil
}

// basicDevice is device i of a slice, with the attributes of the GPU that
// scheduler_perf copies (a realistic number of them: the allocator's cost
// grows with what CEL sees).
func basicDevice(i int) resourceapi.Device {
	str := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: ptr.To(s)} }
	root := i % pciRoots
	return resourceapi.Device{
		Name: fmt.Sprintf("basic-device-%d", i),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"driver":                          str("xe"),
			"driverVersion":                   {VersionValue: ptr.To("1.2.3")},
			"resource.k8s.io/pciRoot":         str(fmt.Sprint(root)),
			"family":                          str("Arc Pro B-Series"),
			"health":                          str("Healthy"),
			"model":                           str("B60"),
			"pciAddress":                      str(fmt.Sprintf("0000:0%d:00.0", i)),
			"pciId":                           str("0xe211"),
			"pciRoot":                         str(fmt.Sprintf("0%d", root)),
			"resource.kubernetes.io/pciBusID": str(fmt.Sprintf("0000:0%d:00.0", i)),
			"resource.kubernetes.io/pciRoot":  str(fmt.Sprintf("pci0000:0%d", root)),
			"sriov":                           {BoolValue: ptr.To(true)},
			"type":                            str("gpu"),
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory":     {Value: resource.MustParse("24480Mi")},
			"millicores": {Value: resource.MustParse("1k")},
		},
	}
}

// devicePod is a default pod whose container uses a claim made from the
// template (pod-with-claim-template.yaml).
func devicePod(n string) *v1.Pod {
	p := defaultPod(n, roleMeasured).Obj()
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: podClaimName, ResourceClaimTemplateName: ptr.To(claimTemplate)}}
	p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: podClaimName}}
	return p
}

// waitForClaims waits until the resourceclaim controller has made the
// claim of each of the pods (it names them in the pod's status): until
// then the scheduler holds the pods back, and a scheduler started earlier
// would time the controller.
func waitForClaims(ctx context.Context, client kubernetes.Interface, pods int) error {
	var have int
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, claimsCreation, true, func(ctx context.Context) (bool, error) {
		list, err := client.ResourceV1().ResourceClaims(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		have = len(list.Items)
		if have < pods {
			return false, nil
		}
		podList, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		have = 0
		for _, p := range podList.Items {
			if len(p.Status.ResourceClaimStatuses) > 0 {
				have++
			}
		}
		return have >= pods, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d pods' claims created: %w", have, pods, err)
	}
	return nil
}

// claimTemplateResourceClaims is SchedulingWithResourceClaimTemplate's
// burst case without initial claims: nodes with ten simulated GPUs each,
// and pods that each want one through a claim of their own.
func claimTemplateResourceClaims(s sizes) Workload {
	// The ceiling goes round robin, which gives a node Pods/Nodes pods (2),
	// fewer than its devices (ceilingDevice).
	return Workload{Name: "SchedulingWithResourceClaimTemplate-500", Nodes: s.nodes, Pods: s.pods, Pod: devicePod,
		Devices: &Devices{PerNode: 10}, Place: roundRobin(s.nodes)}
}
