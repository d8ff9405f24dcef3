// Tests for scenario files: what Parse rejects and where it says the fault
// is, and runs on envtest of the defaults and failures of the steps. The
// shipped files in scenarios/ are chapter stories: package chapters' tests
// run them.

package scenariofile

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/podstatus"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/testenv"
)

// testEnv is one apiserver shared by every test of scenario files.
var testEnv *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithEnvironment(m.Run, &testEnv, nil))
}

// TestFileParseErrors checks that each mistake is reported with the file,
// the line and the field or step at fault.
func TestFileParseErrors(t *testing.T) {
	// head is a valid start: line 1 name, line 2 steps, line 3 a node, line
	// 4 a pod; a case's own lines start at 5.
	const head = "name: x\nsteps:\n- create: [{kind: Node, metadata: {name: n1}}]\n" +
		"- create: [{kind: Pod, metadata: {name: p}}]\n"
	tests := []struct {
		name string
		yaml string
		// want is the start of the error.
		want string
	}{
		{name: "empty file", yaml: "", want: "x.yaml: the file is empty"},
		{name: "YAML syntax", yaml: "name: x\nsteps:\n- create: [\n", want: "x.yaml:3: did not find expected node content"},
		{name: "two documents", yaml: head + "---\nname: y\n", want: "x.yaml:5: one scenario per file"},
		{name: "not a mapping", yaml: "- a\n", want: "x.yaml:1: want a mapping, got a list"},
		{name: "unknown top-level field", yaml: "nmae: x\n", want: `x.yaml:1: unknown field "nmae"`},
		{name: "duplicate field", yaml: "name: x\nname: y\n", want: `x.yaml:2: field "name" given twice`},
		{name: "name missing", yaml: "steps: []\n", want: "x.yaml:1: name is missing"},
		{name: "name not a namespace", yaml: "name: Ch2_X\nsteps: []\n", want: `x.yaml:1: name "Ch2_X" is also`},
		{name: "chapter not a number", yaml: "name: x\nchapter: two\n", want: `x.yaml:2: chapter: want a whole number, got "two"`},
		{name: "lifecycle not a bool", yaml: "name: x\nlifecycle: 1\n", want: "x.yaml:2: lifecycle: want true or false"},
		{name: "storage not a bool", yaml: "name: x\nstorage: yes please\n", want: "x.yaml:2: storage: want true or false"},
		{name: "provisioner not a mapping", yaml: "name: x\nprovisioner: [n1]\n",
			want: "x.yaml:2: provisioner: want a mapping, got a list"},
		{name: "provisioner without disks", yaml: "name: x\nprovisioner: {}\n",
			want: "x.yaml:2: provisioner: give each node's disk size"},
		{name: "provisioner disk not a size", yaml: "name: x\nprovisioner:\n  n1: lots\n",
			want: "x.yaml:3: provisioner.n1: quantities must match the regular expression"},
		{name: "steps missing", yaml: "name: x\n", want: "x.yaml:1: steps are missing"},
		{name: "steps empty", yaml: "name: x\nsteps: []\n", want: "x.yaml:2: steps: the list is empty"},
		{name: "config and profile", yaml: "name: x\nconfig: {}\nprofile: {plugins: [PrioritySort]}\nsteps: []\n",
			want: "x.yaml:3: give config or profile, not both"},
		{name: "config unknown field", yaml: "name: x\nconfig:\n  profilez: []\n",
			want: `x.yaml:3: config: strict decoding error: unknown field "profilez"`},
		{name: "profile unknown field", yaml: "name: x\nprofile: {plugin: [A]}\n",
			want: `x.yaml:2: profile: unknown field "plugin"`},
		{name: "profile without plugins", yaml: "name: x\nprofile: {plugins: []}\n",
			want: "x.yaml:2: profile.plugins: name at least one plugin"},
		{name: "unknown step", yaml: head + "- waitbound: {pod: p}\n",
			want: `x.yaml:5: steps[2]: unknown step "waitbound"; steps are: cordon, create,`},
		{name: "two steps in one item", yaml: head + "- waitBound: {pod: p}\n  cordon: n1\n",
			want: "x.yaml:5: steps[2]: one step per list item, got 2: waitBound, cordon"},
		{name: "unknown step field", yaml: head + "- waitBound:\n    pod: p\n    podd: q\n",
			want: `x.yaml:7: steps[2].waitBound: unknown field "podd" (fields: pod, timeout)`},
		{name: "pod missing", yaml: head + "- waitUnschedulable: {timeout: 3s}\n",
			want: "x.yaml:5: steps[2].waitUnschedulable: pod is missing"},
		{name: "pod no step created", yaml: head + "- waitBound: {pod: q}\n",
			want: `x.yaml:5: steps[2].waitBound.pod: no earlier step creates pod "q"`},
		{name: "pod created later", yaml: "name: x\nsteps:\n- waitGone: {pod: p}\n- create: [{kind: Pod, metadata: {name: p}}]\n",
			want: `x.yaml:3: steps[0].waitGone.pod: no earlier step creates pod "p"`},
		{name: "bad timeout", yaml: head + "- waitBound: {pod: p, timeout: 30}\n",
			want: `x.yaml:5: steps[2].waitBound.timeout: want a positive duration such as 30s or 2m, got "30"`},
		{name: "node and oneOf", yaml: head + "- expectNode: {pod: p, node: n1, oneOf: [n1]}\n",
			want: "x.yaml:5: steps[2].expectNode: give node or oneOf (exactly one)"},
		{name: "oneOf names an unknown node", yaml: head + "- expectNode:\n    pod: p\n    oneOf:\n    - n1\n    - n2\n",
			want: `x.yaml:9: steps[2].expectNode.oneOf[1]: no earlier step creates node "n2"`},
		{name: "expectReason without text", yaml: head + "- expectReason: {pod: p}\n",
			want: "x.yaml:5: steps[2].expectReason: give contains or equals (exactly one)"},
		{name: "cordon unknown node", yaml: head + "- cordon: n2\n",
			want: `x.yaml:5: steps[2].cordon: no earlier step creates node "n2"`},
		{name: "cordon a mapping", yaml: head + "- cordon: {node: n1}\n",
			want: "x.yaml:5: steps[2].cordon: want a string, got a mapping"},
		{name: "delete both", yaml: head + "- delete: {pod: p, node: n1}\n",
			want: "x.yaml:5: steps[2].delete: give pod or node (exactly one)"},
		{name: "label bad key", yaml: head + "- label: {node: n1, key: 'a b', value: c}\n",
			want: "x.yaml:5: steps[2].label.key: "},
		{name: "label without value", yaml: head + "- label: {node: n1, key: disk}\n",
			want: "x.yaml:5: steps[2].label: value is missing"},
		{name: "patch not a mapping", yaml: head + "- patch: {kind: Pod, name: p, patch: '{}'}\n",
			want: "x.yaml:5: steps[2].patch.patch: want a mapping (a strategic merge patch)"},
		{name: "patch kind without apiVersion", yaml: head + "- patch: {kind: Deployment, name: d, patch: {}}\n",
			want: "x.yaml:5: steps[2].patch: apiVersion is missing"},
		{name: "create nothing", yaml: head + "- create: []\n", want: "x.yaml:5: steps[2].create: no objects to create"},
		{name: "manifest unknown field", yaml: head + "- create:\n  - {kind: Pod, metadata: {name: a}}\n" +
			"  - kind: Pod\n    metadata: {name: b}\n    spec: {contaners: []}\n",
			want: `x.yaml:7: steps[2].create[1] (Pod b): unknown field "spec.contaners"`},
		{name: "manifest without kind", yaml: head + "- create: [{metadata: {name: a}}]\n",
			want: "x.yaml:5: steps[2].create[0]: kind is missing"},
		{name: "manifest without name", yaml: head + "- create: [{kind: Node}]\n",
			want: "x.yaml:5: steps[2].create[0]: metadata.name is missing"},
		{name: "manifest without apiVersion", yaml: head + "- create: [{kind: Deployment, metadata: {name: d}}]\n",
			want: "x.yaml:5: steps[2].create[0]: apiVersion is missing (only ConfigMap, DeviceClass, DeviceTaintRule, Namespace,"},
		{name: "pod status", yaml: head + "- create: [{kind: Pod, metadata: {name: a}, status: {phase: Running}}]\n",
			want: "x.yaml:5: steps[2].create[0]: a Pod's status is not written from a scenario"},
		{name: "manifest in a string, second document", yaml: head + "- create: |\n    kind: Node\n" +
			"    metadata: {name: a}\n    ---\n    kind: Node\n    metadata: {name: b}\n    spec: {unschedulabel: true}\n",
			want: `x.yaml:9: steps[2].create[1] (Node b): unknown field "spec.unschedulabel"`},
		{name: "YAML syntax in a string", yaml: head + "- create: |\n    kind: Node\n    metadata: {name: a}\n    kind: Pod: x\n",
			want: "x.yaml:8: steps[2].create: mapping values are not allowed in this context"},
		{name: "create a number", yaml: head + "- create: 3\n",
			want: "x.yaml:5: steps[2].create: want a list of objects or a string of YAML documents"},
		{name: "dra not a bool", yaml: "name: x\ndra: 1\n", want: "x.yaml:2: dra: want true or false"},
		{name: "draDriver not a mapping", yaml: "name: x\ndraDriver: 2\n",
			want: `x.yaml:2: draDriver: want a mapping, got "2"`},
		{name: "draDriver unknown field", yaml: "name: x\ndraDriver:\n  devices: {gpu: 2}\n",
			want: `x.yaml:3: draDriver: unknown field "devices.gpu"`},
		{name: "draDriver memory not a size", yaml: "name: x\ndraDriver: {devices: {gpus: 1, memory: lots}}\n",
			want: "x.yaml:2: draDriver: quantities must match the regular expression"},
		{name: "DRA manifest unknown field", yaml: head + "- create:\n  - kind: DeviceClass\n    metadata: {name: gpu}\n" +
			"    spec: {selector: []}\n",
			want: `x.yaml:6: steps[2].create[0] (DeviceClass gpu): unknown field "spec.selector"`},
		{name: "claim status", yaml: head + "- create: [{kind: ResourceClaim, metadata: {name: c}, status: {}}]\n",
			want: "x.yaml:5: steps[2].create[0]: a ResourceClaim's status is not written from a scenario"},
		{name: "waitSlices unknown node", yaml: head + "- waitSlices: {nodes: [n1, n2]}\n",
			want: `x.yaml:5: steps[2].waitSlices.nodes[1]: no earlier step creates node "n2"`},
		{name: "waitSlices without nodes", yaml: head + "- waitSlices: {driver: d}\n",
			want: "x.yaml:5: steps[2].waitSlices: nodes are missing"},
		{name: "waitAllocated claim and pod", yaml: head + "- waitAllocated: {claim: c, pod: p}\n",
			want: "x.yaml:5: steps[2].waitAllocated: give claim, or pod and podClaim"},
		{name: "waitAllocated pod without podClaim", yaml: head + "- waitAllocated: {pod: p}\n",
			want: "x.yaml:5: steps[2].waitAllocated: podClaim is missing"},
		{name: "waitAllocated claim with podClaim", yaml: head + "- waitAllocated: {claim: c, podClaim: gpu}\n",
			want: "x.yaml:5: steps[2].waitAllocated: podClaim goes with pod, not claim"},
		{name: "unknown controller", yaml: "name: x\nlifecycle: true\ncontrollers: [replicaset-controller, " +
			"taint-manager]\nsteps: []\n",
			want: `x.yaml:3: controllers: unknown controller "taint-manager": kube-controller-manager v1.37.1 knows`},
		{name: "controllers not a list", yaml: "name: x\ncontrollers: replicaset-controller\nsteps: []\n",
			want: "x.yaml:2: controllers: want a list"},
		{name: "taint eviction alone", yaml: "name: x\nlifecycle: true\ncontrollers: [taint-eviction-controller]\n" +
			"steps: []\n", want: "x.yaml:3: controllers: taint-eviction-controller needs node-lifecycle-controller"},
		{name: "node lifecycle without lifecycle", yaml: "name: x\ncontrollers: [node-lifecycle-controller]\n" +
			"steps: []\n", want: "x.yaml:2: controllers: node-lifecycle-controller needs lifecycle: true"},
		{name: "taint effect", yaml: head + "- taint: {node: n1, key: k, value: v, effect: NoExcute}\n",
			want: `x.yaml:5: steps[2].taint.effect: want one of [NoSchedule PreferNoSchedule NoExecute], got "NoExcute"`},
		{name: "taint unknown node", yaml: head + "- taint: {node: n2, key: k, effect: NoExecute}\n",
			want: `x.yaml:5: steps[2].taint.node: no earlier step creates node "n2"`},
		{name: "untaint with a value", yaml: head + "- untaint: {node: n1, key: k, value: v, effect: NoExecute}\n",
			want: `x.yaml:5: steps[2].untaint: unknown field "value"`},
		{name: "evict unknown pod", yaml: head + "- evict: {pod: q}\n",
			want: `x.yaml:5: steps[2].evict.pod: no earlier step creates pod "q"`},
		{name: "evict with a budget and no disruption controller", yaml: head +
			"- create: [{kind: PodDisruptionBudget, metadata: {name: b}, spec: {minAvailable: 1}}]\n" +
			"- evict: {pod: p, refused: true}\n",
			want: "x.yaml:6: evict: the file creates a PodDisruptionBudget (line 5) but its controllers do not name " +
				"disruption-controller: nobody would write the budget's status, and the Eviction API would answer " +
				"429 with Retry-After: 10, which client-go retries silently, ten times: about 100s for each eviction"},
		{name: "a feature gate minisched does not implement", yaml: "name: x\nfeatureGates: CompositePodGroup=true\n",
			want: `x.yaml:2: featureGates: --feature-gates "CompositePodGroup=true": cannot set feature gate CompositePodGroup to true`},
		{name: "a feature gate without its dependency", yaml: "name: x\nfeatureGates: TopologyAwareWorkloadScheduling=true\n",
			want: "x.yaml:2: featureGates: "},
		{name: "PodGroup with an unknown field", yaml: head +
			"- create: [{kind: PodGroup, metadata: {name: g}, spec: {schedulingPolicy: {gang: {minCont: 2}}}}]\n",
			want: `x.yaml:5: steps[2].create[0] (PodGroup g): unknown field "spec.schedulingPolicy.gang.minCont"`},
		{name: "expectPodGroup unknown group", yaml: head + "- expectPodGroup: {podGroup: g, status: \"True\"}\n",
			want: `x.yaml:5: steps[2].expectPodGroup.podGroup: no create step before this one makes PodGroup "g"`},
		{name: "expectPodGroup bad status", yaml: head +
			"- create: [{kind: PodGroup, metadata: {name: g}, spec: {schedulingPolicy: {basic: {}}}}]\n" +
			"- expectPodGroup: {podGroup: g, status: yes}\n",
			want: `x.yaml:6: steps[3].expectPodGroup.status: want "True" or "False", got "yes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded, want an error starting %q", tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error:\n  %v\nwant it to start with\n  %s", err, tt.want)
			}
		})
	}
}

// TestFileParse checks what a valid file becomes.
func TestFileParse(t *testing.T) {
	tests := []struct {
		name        string
		yaml        string
		wantChapter int
		wantDesc    string
		wantParts   scenario.Parts
		wantDisks   map[string]string
		// wantPlugins is the profile's multiPoint plugins; nil for no
		// configuration of the scenario's own.
		wantPlugins []string
	}{
		{name: "smallest", yaml: "name: a\nsteps:\n- create: [{kind: Node, metadata: {name: n}}]\n",
			wantDesc: "steps from x.yaml"},
		{name: "everything", yaml: "name: b\nchapter: 7\ndescription: d\nlifecycle: true\nstorage: true\n" +
			"provisioner: {n: 8Gi}\nprofile: {plugins: [PrioritySort, DefaultBinder]}\n" +
			"steps:\n- create: [{kind: Node, metadata: {name: n}}]\n",
			wantChapter: 7, wantDesc: "d", wantParts: scenario.Parts{scenario.KWOK, scenario.Storage},
			wantDisks:   map[string]string{"n": "8Gi"},
			wantPlugins: []string{"PrioritySort", "DefaultBinder"}},
		{name: "inline configuration without apiVersion", yaml: "name: c\nconfig:\n  profiles:\n  - plugins:\n" +
			"      multiPoint:\n        enabled: [{name: PrioritySort}, {name: DefaultBinder}]\n" +
			"        disabled: [{name: '*'}]\nsteps:\n- create: [{kind: Node, metadata: {name: n}}]\n",
			wantDesc: "steps from x.yaml", wantPlugins: []string{"PrioritySort", "DefaultBinder"}},
		{name: "switches off and on", yaml: "name: d\nlifecycle: false\nstorage: false\ndra: true\n" +
			"steps:\n- create: [{kind: Node, metadata: {name: n}}]\n",
			wantDesc: "steps from x.yaml", wantParts: scenario.Parts{scenario.DRA}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("x.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if s.Chapter != tt.wantChapter || s.Description != tt.wantDesc || s.Run == nil {
				t.Errorf("got chapter %d, description %q; want %d, %q", s.Chapter, s.Description,
					tt.wantChapter, tt.wantDesc)
			}
			if !slices.Equal(s.Parts, tt.wantParts) || !maps.Equal(s.Provisioner, tt.wantDisks) {
				t.Errorf("got parts %v, provisioner %v; want %v, %v", s.Parts, s.Provisioner, tt.wantParts,
					tt.wantDisks)
			}
			if (s.Config == nil) != (tt.wantPlugins == nil) {
				t.Fatalf("has a configuration: %t, want %t", s.Config != nil, tt.wantPlugins != nil)
			}
			if s.Config == nil {
				return
			}
			cfg, err := s.Config()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range cfg.Profiles[0].Plugins.MultiPoint.Enabled {
				got = append(got, p.Name)
			}
			if strings.Join(got, ",") != strings.Join(tt.wantPlugins, ",") {
				t.Errorf("multiPoint plugins %v, want %v", got, tt.wantPlugins)
			}
		})
	}
}

// runFileScenario runs s with the runner and returns its report.
func runFileScenario(t *testing.T, s scenario.Scenario) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	r := &scenario.Runner{RestConfig: testEnv.Config, Out: &out, Environment: testEnv}
	err := r.Run(ctx, s)
	return out.String(), err
}

// repoFiles returns the files of the repository that match the glob
// given as path elements from its root, and fails the test if there are
// none.
func repoFiles(t *testing.T, elem ...string) []string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(append([]string{root}, elem...)...))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no file matches %s", filepath.Join(elem...))
	}
	return files
}

// mustPass runs s with the runner, logs its report, and fails the test
// unless it passed.
func mustPass(t *testing.T, s scenario.Scenario) {
	t.Helper()
	out, err := runFileScenario(t, s)
	t.Log("\n" + out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "--- PASS "+s.Name) {
		t.Errorf("the report has no PASS line for %s", s.Name)
	}
}

// TestFileRunErrors checks that a step failing at run time is reported with
// the file, the line and the step.
func TestFileRunErrors(t *testing.T) {
	const head = "name: yaml-run-errors\nsteps:\n" +
		"- create: [{kind: Node, metadata: {name: node0}}, {kind: Node, metadata: {name: node1}, spec: {unschedulable: true}}]\n" +
		"- create: [{kind: Pod, metadata: {name: p}}]\n"
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{name: "expectNode on another node", yaml: head + "- expectNode: {pod: p, node: node1}\n",
			want: "x.yaml:5: steps[2] expectNode: pod p on node0, want node1"},
		{name: "expectNode none of oneOf", yaml: head + "- expectNode: {pod: p, oneOf: [node1]}\n",
			want: "x.yaml:5: steps[2] expectNode: pod p on node0, want one of node1"},
		{name: "expectReason never seen", yaml: "name: yaml-run-errors\nsteps:\n" +
			"- create: [{kind: Node, metadata: {name: node0}, spec: {unschedulable: true}}]\n" +
			"- create: [{kind: Pod, metadata: {name: p}}]\n" +
			"- expectReason: {pod: p, contains: nothing like this, timeout: 3s}\n",
			want: `x.yaml:5: steps[2] expectReason: pod p: no scheduling message contains "nothing like this" within 3s; ` +
				`messages: ["0/1 nodes are available: 1 node(s) were unschedulable.`},
		{name: "waitUnschedulable of a pod that is bound", yaml: head + "- waitUnschedulable: {pod: p, timeout: 5s}\n",
			want: "x.yaml:5: steps[2] waitUnschedulable: pod p did not become unschedulable"},
		{name: "create fails at the object's line", yaml: head + "- create:\n  - {kind: Pod, metadata: {name: q}}\n" +
			"  - {kind: Pod, metadata: {name: p}}\n",
			want: "x.yaml:7: steps[2] create: creating pod yaml-run-errors/p: "},
		{name: "delete a pod twice", yaml: head + "- delete: {pod: p}\n- delete: {pod: p}\n",
			want: "x.yaml:6: steps[3] delete: deleting pod p: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("x.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			out, err := runFileScenario(t, s)
			if err == nil {
				t.Fatalf("the scenario passed, want an error starting %q\n%s", tt.want, out)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error:\n  %v\nwant it to start with\n  %s", err, tt.want)
			}
			if !strings.Contains(out, "--- FAIL yaml-run-errors") {
				t.Errorf("the report has no FAIL line:\n%s", out)
			}
		})
	}
}

// TestFileCreateDefaults checks what create gives short manifests, and that
// it creates any kind the apiserver serves, in the scenario's namespace
// unless the manifest names one.
func TestFileCreateDefaults(t *testing.T) {
	// Namespaces are never deleted here (no controller finishes it): each
	// run makes its own.
	other := fmt.Sprintf("yaml-other-%d", time.Now().UnixNano())
	file := fmt.Sprintf(`name: yaml-create-defaults
steps:
- create:
  - {kind: Node, metadata: {name: short}}
  - kind: Node
    metadata: {name: small, labels: {kubernetes.io/hostname: custom}}
    status: {capacity: {cpu: "1"}, allocatable: {cpu: 500m}}
  - {kind: Namespace, metadata: {name: %[1]s}}
  - {kind: ConfigMap, metadata: {name: settings}, data: {a: b}}
  - {kind: PriorityClass, metadata: {name: yaml-test-class}, value: 7}
  - {kind: PriorityClass, metadata: {name: yaml-test-class}, value: 7}
  - kind: PodDisruptionBudget
    metadata: {name: budget}
    spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}
    status: {disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 1, expectedPods: 1}
  - {kind: Pod, metadata: {name: p, namespace: %[1]s}}
  - {kind: Pod, metadata: {name: q}, spec: {containers: [{name: main}, {image: example.com/x}]}}
- expectNode: {pod: q, oneOf: [short, small]}
`, other)
	s, err := Parse("defaults.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	mustPass(t, s)
	ctx := context.Background()
	client, err := kubernetes.NewForConfig(testEnv.Config)
	if err != nil {
		t.Fatal(err)
	}

	short, err := client.CoreV1().Nodes().Get(ctx, "short", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := scenario.MakeNode("short").Obj()
	for res, q := range want.Status.Capacity {
		if got := short.Status.Allocatable[res]; got.Cmp(q) != 0 {
			t.Errorf("node short: allocatable %s %s, want %s (as MakeNode)", res, got.String(), q.String())
		}
	}
	if short.Labels[v1.LabelHostname] != "short" {
		t.Errorf("node short: hostname label %q, want short", short.Labels[v1.LabelHostname])
	}
	if c := nodeCondition(short, v1.NodeReady); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("node short: Ready condition %v, want True", c)
	}
	small, err := client.CoreV1().Nodes().Get(ctx, "small", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := small.Status.Allocatable[v1.ResourceCPU]; got.Cmp(resource.MustParse("500m")) != 0 {
		t.Errorf("node small: allocatable cpu %s, want the manifest's 500m", got.String())
	}
	if got := small.Status.Allocatable[v1.ResourceMemory]; got.Cmp(resource.MustParse("16Gi")) != 0 {
		t.Errorf("node small: allocatable memory %s, want the default 16Gi", got.String())
	}
	if small.Labels[v1.LabelHostname] != "custom" {
		t.Errorf("node small: hostname label %q, want the manifest's custom", small.Labels[v1.LabelHostname])
	}

	if _, err := client.CoreV1().ConfigMaps(s.Name).Get(ctx, "settings", metav1.GetOptions{}); err != nil {
		t.Errorf("the ConfigMap is not in the scenario's namespace: %v", err)
	}
	pdb, err := client.PolicyV1().PodDisruptionBudgets(s.Name).Get(ctx, "budget", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pdb.Status.ObservedGeneration != pdb.Generation || pdb.Status.CurrentHealthy != 1 {
		t.Errorf("PDB status %+v, want the manifest's, observed at generation %d", pdb.Status, pdb.Generation)
	}

	p, err := client.CoreV1().Pods(other).Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pod p is not in the namespace its manifest names: %v", err)
	}
	if want := *scheduler.DefaultConfig().Profiles[0].SchedulerName; p.Spec.SchedulerName != want {
		t.Errorf("pod p: schedulerName %q, want the scenario's, %q", p.Spec.SchedulerName, want)
	}
	grace := ptr.Deref(p.Spec.TerminationGracePeriodSeconds, -1)
	if len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Name != "c0" ||
		p.Spec.Containers[0].Image != builders.PauseImage || grace != 0 {
		t.Errorf("pod p: containers %+v, grace period %d; want one c0 running %s, 0", p.Spec.Containers, grace,
			builders.PauseImage)
	}
	q, err := client.CoreV1().Pods(s.Name).Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := q.Spec.Containers; len(c) != 2 || c[0].Name != "main" || c[0].Image != builders.PauseImage ||
		c[1].Name != "c1" || c[1].Image != "example.com/x" {
		t.Errorf("pod q: containers %+v, want main (pause) and c1 (example.com/x)", c)
	}
	if c := podstatus.Condition(&q.Status, v1.PodScheduled); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("pod q: PodScheduled %v, want True", c)
	}

	// The same priority class with another value is an error naming it.
	clash, err := Parse("clash.yaml", []byte("name: yaml-create-defaults\nsteps:\n"+
		"- create: [{kind: PriorityClass, metadata: {name: yaml-test-class}, value: 8}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = runFileScenario(t, clash)
	wantErr := "clash.yaml:3: steps[0] create: priority class yaml-test-class exists already"
	if err == nil || !strings.HasPrefix(err.Error(), wantErr) {
		t.Errorf("error %v, want it to start with %q", err, wantErr)
	}
}

func nodeCondition(n *v1.Node, t v1.NodeConditionType) *v1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// TestFileShippedDocsExample keeps docs/scenarios.md's worked example valid:
// the file it shows is one of scenarios/.
func TestFileShippedDocsExample(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "scenarios.md"))
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile(filepath.Join(root, "scenarios", "ch2-nodeunschedulable.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, shipped) {
		t.Error("docs/scenarios.md's worked example is not scenarios/ch2-nodeunschedulable.yaml as it is: copy it again")
	}
}
