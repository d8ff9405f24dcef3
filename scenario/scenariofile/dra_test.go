package scenariofile

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/minisched/minisched/examples/dradriver"
)

// TestFileDRA runs a file with the example DRA driver and DRA objects on
// envtest (with kube-controller-manager): the driver publishes each node's
// devices, the resourceclaim controller makes the pod's claim from its
// template, and the claim, whose class selects no device, is not
// allocated. The next scenario finds every DRA object cleaned away.
func TestFileDRA(t *testing.T) {
	const file = `name: yaml-dra
draDriver:
  devices: {gpus: 2}
  perNode:
    n2: {gpus: 1, partitions: 2}
steps:
- create:
  - {kind: Node, metadata: {name: n1}}
  - {kind: Node, metadata: {name: n2}}
  - kind: DeviceClass
    metadata: {name: elsewhere}
    spec: {selectors: [{cel: {expression: 'device.driver == "other.example.com"'}}]}
  - kind: ResourceClaimTemplate
    metadata: {name: one-gpu}
    spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: elsewhere}}]}}}
  - kind: Pod
    metadata: {name: p}
    spec:
      resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
      containers: [{resources: {claims: [{name: gpu}]}}]
- waitSlices: {nodes: [n1, n2]}
- waitAllocated: {pod: p, podClaim: gpu, timeout: 3s}
`
	s, err := Parse("dra.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if s.DRADriver == nil || s.DRADriver.Devices.GPUs != 2 || s.DRADriver.PerNode["n2"].Partitions != 2 {
		t.Fatalf("draDriver read as %+v", s.DRADriver)
	}
	out, err := runFileScenario(t, s)
	wantErr := "dra.yaml:22: steps[2] waitAllocated: claim p-gpu-"
	if err == nil || !strings.HasPrefix(err.Error(), wantErr) ||
		!strings.Contains(err.Error(), "was not allocated within 3s (claim p-gpu-…: not allocated)") {
		t.Errorf("error %v, want one starting %q saying the claim was not allocated\n%s", err, wantErr, out)
	}
	for _, want := range []string{
		"driver " + dradriver.DefaultDriverName + " publishes n1=2 devices, n2=3 devices",
		"claim p-gpu-…: not allocated",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}

	clean, err := Parse("clean.yaml", []byte("name: yaml-dra\nsteps:\n"+
		"- create: [{kind: Node, metadata: {name: n1}}, {kind: Pod, metadata: {name: q}}]\n- waitBound: {pod: q}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := runFileScenario(t, clean); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(testEnv.Config)
	resource := client.ResourceV1()
	left := map[string]int{}
	count := func(kind string, n int, err error) {
		if err != nil {
			t.Fatal(err)
		}
		left[kind] = n
	}
	slices, err := resource.ResourceSlices().List(ctx, metav1.ListOptions{})
	count("slices", len(slices.Items), err)
	classes, err := resource.DeviceClasses().List(ctx, metav1.ListOptions{})
	count("classes", len(classes.Items), err)
	claims, err := resource.ResourceClaims("yaml-dra").List(ctx, metav1.ListOptions{})
	count("claims", len(claims.Items), err)
	templates, err := resource.ResourceClaimTemplates("yaml-dra").List(ctx, metav1.ListOptions{})
	count("templates", len(templates.Items), err)
	if diff := cmp.Diff(map[string]int{"slices": 0, "classes": 0, "claims": 0, "templates": 0}, left); diff != "" {
		t.Errorf("DRA objects left for the next scenario (-want +got):\n%s", diff)
	}
}
