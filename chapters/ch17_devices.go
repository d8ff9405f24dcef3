// Chapter 17's stories told in Go (docs/17-devices.md): the two that look
// inside the binding of a claim, which a scenario file cannot, with the
// example DRA driver (Scenario.DRADriver) and kube-controller-manager's
// resourceclaim controller. The chapter's other stories are files of
// scenarios/ (ch17-*.yaml).

package chapters

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/examples/dradriver"
	"github.com/minisched/minisched/scenario"
)

// The driver, class and template of chapter 17's Go stories.
const (
	// gpuClass selects every device of the example DRA driver.
	gpuClass = dradriver.DefaultDriverName
	// oneGPUTemplate is the template of a claim for any one GPU.
	oneGPUTemplate = "one-gpu"
	// attached is the binding condition of ch17-binding-conditions' GPU,
	// and attachFailed its failure condition.
	attached, attachFailed = "attached", "attach-failed"
)

// chapter17 is chapter 17's Go stories.
func chapter17() []scenario.Scenario {
	return []scenario.Scenario{
		{
			Name: "ch17-in-flight", Chapter: 17, Run: runInFlight,
			DRADriver: &dradriver.Options{Devices: dradriver.NodeDevices{GPUs: 1}},
			Description: "two pods at once, one GPU per node: the second cycle finds the first pod's node refused by " +
				"DynamicResources, whose Reserve put the first allocation in flight",
		},
		{
			Name: "ch17-binding-conditions", Chapter: 17, Run: runBindingConditions,
			DRADriver: &dradriver.Options{PerNode: map[string]dradriver.NodeDevices{"node1": {GPUs: 1,
				BindingConditions: []string{attached}, BindingFailureConditions: []string{attachFailed}}}},
			Description: "a GPU with a binding condition: PreBind writes the allocation, then waits, the pod " +
				"nominated to node1, until the driver reports the GPU attached; then the pod is bound",
		},
	}
}

// createGPUClassAndTemplate creates the nodes, the class of the driver's
// GPUs and oneGPUTemplate, and waits for the driver's slices.
func createGPUClassAndTemplate(ctx context.Context, env *scenario.Env, nodes ...string) error {
	if err := env.CreateNodes(ctx, scenario.Nodes(nodes...)...); err != nil {
		return err
	}
	if err := env.CreateObjects(ctx, dradriver.DeviceClass(gpuClass, dradriver.DefaultDriverName),
		builders.MakeResourceClaimTemplate().Name(oneGPUTemplate).Namespace("").Claim(
			builders.MakeResourceClaim().Request(builders.MakeDeviceRequest("gpu", gpuClass))).Obj()); err != nil {
		return err
	}
	devices, err := env.WaitForSlices(ctx, dradriver.DefaultDriverName, nodes...)
	if err != nil {
		return err
	}
	env.Logf("the driver publishes %s; template %s asks for one GPU", devices, oneGPUTemplate)
	return nil
}

// gpuPod is a pod whose claim gpu is made from oneGPUTemplate.
func gpuPod(name string) *builders.PodWrapper {
	return scenario.MakePod(name).ResourceClaimTemplate("gpu", oneGPUTemplate).ClaimContainer("gpu")
}

func runInFlight(ctx context.Context, env *scenario.Env) error {
	if err := createGPUClassAndTemplate(ctx, env, "node0", "node1"); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, gpuPod("p1").Obj(), gpuPod("p2").Obj()); err != nil {
		return err
	}
	nodes, err := env.WaitForPodsBound(ctx, []string{"p1", "p2"})
	if err != nil {
		return err
	}
	if nodes[0] == nodes[1] {
		return fmt.Errorf("p1 and p2 both went to %s, which has one GPU", nodes[0])
	}
	// Scheduling cycles run one at a time, and the pod scheduled second
	// found the other's node refused by DynamicResources: its allocator
	// counted the GPU the first pod's Reserve had put in flight (or, if
	// the first PreBind was done, the allocation it wrote).
	var second string
	for i, pod := range []string{"p1", "p2"} {
		a, err := env.WaitForScheduledAttempt(ctx, pod, scenario.DefaultWait)
		if err != nil {
			return err
		}
		for _, n := range a.Nodes {
			if n.Name == nodes[1-i] && n.RejectedBy == "DynamicResources" {
				second = pod
			}
		}
	}
	if second == "" {
		return fmt.Errorf("neither pod's attempt shows the other's node refused by DynamicResources")
	}
	env.ShowAttempt(second)
	return nil
}

func runBindingConditions(ctx context.Context, env *scenario.Env) error {
	if err := createGPUClassAndTemplate(ctx, env, "node0", "node1"); err != nil {
		return err
	}
	env.Logf("node1's GPU has the binding condition %q (and the failure condition %q)", attached, attachFailed)
	if err := env.CreatePods(ctx, gpuPod("p").Obj()); err != nil {
		return err
	}
	claim, err := env.WaitForPodClaim(ctx, "p", "gpu", scenario.DefaultWait)
	if err != nil {
		return err
	}
	allocated, err := env.WaitForClaimAllocated(ctx, claim, scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("PreBind wrote the allocation: %s", scenario.DescribeClaim(allocated))
	// PreBind now waits for the condition (bindingTimeout, 10 minutes by
	// default): the pod stays unbound, nominated to the node.
	pod, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		return err
	}
	env.Logf("p: spec.nodeName %q, status.nominatedNodeName %q: PreBind waits for %q", pod.Spec.NodeName,
		pod.Status.NominatedNodeName, attached)
	if pod.Spec.NodeName != "" || pod.Status.NominatedNodeName != "node1" {
		return fmt.Errorf("p is bound to %q and nominated to %q before its GPU is attached; want unbound, nominated "+
			"to node1", pod.Spec.NodeName, pod.Status.NominatedNodeName)
	}
	env.Logf("the driver attaches the GPU and reports %s=True in the claim's status.devices", attached)
	if err := dradriver.SetDeviceCondition(ctx, env.Client, dradriver.DefaultDriverName, env.Namespace, claim,
		metav1.Condition{Type: attached, Status: metav1.ConditionTrue, Reason: "Attached"}); err != nil {
		return err
	}
	return env.ExpectBound(ctx, map[string]string{"p": "node1"}, "p")
}
