// Package scenariofile reads scenarios written as YAML instead of Go
// (docs/scenarios.md): a name, an optional configuration and a list of
// steps — create objects, wait for the scheduler, check where pods went and
// why, change nodes — each run with scenario.Env's helpers, the same the Go
// stories use. Every error, found while reading the file or while running
// it, names the file and the line of the step or field at fault.
//
//	scenariofile.go  Parse: the file's fields, its configuration, its steps
//	create.go        the create step: manifests, and the defaults a node's gets
//	steps.go         the other steps: waits, checks, changes
//	dra.go           devices: the draDriver field, DRA kinds, waitSlices
//	                 and waitAllocated
//	eviction.go      eviction: the controllers field, taint, untaint, evict
//	podgroups.go     gangs: the featureGates field, PodGroups, expectPodGroup
//	yaml.go          reading YAML nodes, each mistake with its line
package scenariofile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
	policyv1 "k8s.io/api/policy/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/examples/dradriver"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
)

// ParseFile reads a scenario file; see Parse.
func ParseFile(file string) (scenario.Scenario, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return scenario.Scenario{}, fmt.Errorf("reading scenario file: %w", err)
	}
	return Parse(file, data)
}

// Parse turns the YAML of a scenario file into a Scenario whose Run executes
// the steps in order; file names it in errors ("file:line: …"). The whole
// file is checked here, before any apiserver starts: unknown fields, each
// step's arguments, manifests (decoded strictly into their API types), the
// configuration, and every pod or node a step names but no earlier create
// step made.
func Parse(file string, data []byte) (scenario.Scenario, error) {
	p := &parser{file: file, pods: map[string]bool{}, nodes: map[string]bool{}, podGroups: map[string]bool{},
		driverName: dradriver.DefaultDriverName}
	return p.scenario(data)
}

// parser reads one scenario file.
type parser struct {
	file string
	// name is the scenario's name, which is also its namespace.
	name string
	// pods and nodes are what the create steps read so far make: a later
	// step naming another pod (of the scenario's namespace) or node has a
	// typo.
	pods, nodes map[string]bool
	// podGroups are the PodGroups the create steps read so far make, for
	// expectPodGroup.
	podGroups map[string]bool
	// driverName is the draDriver's name (dradriver's default if the file
	// names none): whose slices waitSlices waits for.
	driverName string
	// firstEvict and firstBudget are the lines of the first evict step and
	// of the first PodDisruptionBudget created (0: none), for checkBudgets.
	firstEvict, firstBudget int
}

// stepFunc is what running one step does.
type stepFunc func(ctx context.Context, env *scenario.Env) error

// fileStep is one step of a file, ready to run.
type fileStep struct {
	// line is where the step starts; kind is its key ("waitBound").
	line int
	kind string
	run  stepFunc
}

// lineError is a step's failure that belongs to a line of its own inside the
// step (one manifest of a create step).
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return e.err.Error() }
func (e *lineError) Unwrap() error { return e.err }

// stepKinds is every step a scenario file may use, with the function that
// reads its argument (at where, "steps[3].waitBound") and returns what
// running it does. docs/scenarios.md describes each.
var stepKinds = map[string]func(p *parser, arg *yaml.Node, where string) (stepFunc, error){
	"create":            (*parser).create,
	"waitBound":         (*parser).waitBound,
	"waitUnschedulable": (*parser).waitUnschedulable,
	"waitGone":          (*parser).waitGone,
	"expectNode":        (*parser).expectNode,
	"expectReason":      (*parser).expectReason,
	"delete":            (*parser).delete,
	"patch":             (*parser).patch,
	"cordon":            (*parser).cordon,
	"uncordon":          (*parser).uncordon,
	"label":             (*parser).label,
	"waitSlices":        (*parser).waitSlices,
	"waitAllocated":     (*parser).waitAllocated,
	"taint":             (*parser).taint,
	"untaint":           (*parser).untaint,
	"evict":             (*parser).evict,
	"expectPodGroup":    (*parser).expectPodGroup,
}

// defaultAPIVersions are the kinds whose manifests may leave apiVersion out.
var defaultAPIVersions = map[string]string{
	"Node": "v1", "Pod": "v1", "Namespace": "v1", "ConfigMap": "v1",
	"PersistentVolumeClaim": "v1", "PersistentVolume": "v1",
	"PriorityClass":         schedulingv1.SchemeGroupVersion.String(),
	"PodDisruptionBudget":   policyv1.SchemeGroupVersion.String(),
	"StorageClass":          storagev1.SchemeGroupVersion.String(),
	"DeviceClass":           resourceapi.SchemeGroupVersion.String(),
	"ResourceClaim":         resourceapi.SchemeGroupVersion.String(),
	"ResourceClaimTemplate": resourceapi.SchemeGroupVersion.String(),
	"ResourceSlice":         resourceapi.SchemeGroupVersion.String(),
	"DeviceTaintRule":       resourceapi.SchemeGroupVersion.String(),
	"PodGroup":              schedulingv1beta1.SchemeGroupVersion.String(),
}

// scenario reads the file's one document.
func (p *parser) scenario(data []byte) (scenario.Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return scenario.Scenario{}, fmt.Errorf("%s: the file is empty", p.file)
		}
		return scenario.Scenario{}, p.yamlError(err, 0)
	}
	var second yaml.Node
	if err := dec.Decode(&second); err == nil {
		return scenario.Scenario{}, p.errorf(second.Line, "one scenario per file, but a second document starts here")
	} else if !errors.Is(err, io.EOF) {
		return scenario.Scenario{}, p.yamlError(err, 0)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	f, err := p.mapping(root, "", "name", "chapter", "description", "config", "profile", "lifecycle", "storage",
		"provisioner", "dra", "draDriver", "controllers", "featureGates", "steps")
	if err != nil {
		return scenario.Scenario{}, err
	}
	// The fields are read in this order, whatever the file's: steps need
	// the name (their namespace).
	s, err := p.header(root, f)
	if err != nil {
		return scenario.Scenario{}, err
	}
	if s.Config, err = p.configuration(f); err != nil {
		return scenario.Scenario{}, err
	}
	if err := p.parts(f, &s); err != nil {
		return scenario.Scenario{}, err
	}
	if f["steps"] == nil {
		return scenario.Scenario{}, p.errorf(root.Line, "steps are missing")
	}
	steps, err := p.steps(f["steps"])
	if err != nil {
		return scenario.Scenario{}, err
	}
	if err := p.checkBudgets(s); err != nil {
		return scenario.Scenario{}, err
	}
	s.Run = runSteps(p.file, steps)
	return s, nil
}

// header reads the scenario's name (also its namespace, so a DNS label),
// chapter and description.
func (p *parser) header(root *yaml.Node, f map[string]*yaml.Node) (scenario.Scenario, error) {
	s := scenario.Scenario{}
	if f["name"] == nil {
		return s, p.errorf(root.Line, "name is missing")
	}
	var err error
	if s.Name, err = p.str(f["name"], "name"); err != nil {
		return s, err
	}
	if errs := validation.IsDNS1123Label(s.Name); len(errs) > 0 {
		return s, p.errorf(f["name"].Line, "name %q is also the scenario's namespace: %s", s.Name,
			strings.Join(errs, "; "))
	}
	p.name = s.Name
	if n := f["chapter"]; n != nil {
		if s.Chapter, err = p.integer(n, "chapter"); err != nil {
			return s, err
		}
		if s.Chapter < 0 {
			return s, p.errorf(n.Line, "chapter: want 0 or more, got %d", s.Chapter)
		}
	}
	if n := f["description"]; n != nil {
		if s.Description, err = p.str(n, "description"); err != nil {
			return s, err
		}
	}
	if s.Description == "" {
		s.Description = "steps from " + p.file
	}
	return s, nil
}

// configuration reads the scenario's config or profile, if it has one of
// them (not both); nil means the runner's.
func (p *parser) configuration(f map[string]*yaml.Node) (func() (*configv1.KubeSchedulerConfiguration, error), error) {
	switch {
	case f["config"] != nil && f["profile"] != nil:
		return nil, p.errorf(f["profile"].Line, "give config or profile, not both")
	case f["config"] != nil:
		return p.config(f["config"])
	case f["profile"] != nil:
		return p.profile(f["profile"])
	}
	return nil, nil
}

// parts reads what the scenario needs beside the scheduler: the switches
// lifecycle (KWOK), storage and dra, each true or false, into s.Parts,
// the provisioner's and the DRA driver's options, and the story's own
// kube-controller-manager controllers.
func (p *parser) parts(f map[string]*yaml.Node, s *scenario.Scenario) error {
	if err := p.part(f, "lifecycle", scenario.KWOK, s); err != nil {
		return err
	}
	if err := p.part(f, "storage", scenario.Storage, s); err != nil {
		return err
	}
	var err error
	if n := f["provisioner"]; n != nil {
		if s.Provisioner, err = p.disks(n); err != nil {
			return err
		}
	}
	if err := p.part(f, "dra", scenario.DRA, s); err != nil {
		return err
	}
	if n := f["controllers"]; n != nil {
		if err := p.controllers(n, s); err != nil {
			return err
		}
	}
	if n := f["featureGates"]; n != nil {
		if err := p.featureGates(n, s); err != nil {
			return err
		}
	}
	if n := f["draDriver"]; n != nil {
		if s.DRADriver, err = p.draDriver(n); err != nil {
			return err
		}
		if s.DRADriver.DriverName != "" {
			p.driverName = s.DRADriver.DriverName
		}
	}
	return nil
}

// part reads the switch key, if the file has it, and adds part to s.Parts
// when it is true.
func (p *parser) part(f map[string]*yaml.Node, key string, part scenario.Part, s *scenario.Scenario) error {
	n := f[key]
	if n == nil {
		return nil
	}
	on, err := p.boolean(n, key)
	if err != nil || !on {
		return err
	}
	s.Parts = append(s.Parts, part)
	return nil
}

// runSteps is a scenario's Run: the steps in order, stopping at the first
// that fails, with an error naming the file, the line and the step.
func runSteps(file string, steps []fileStep) func(ctx context.Context, env *scenario.Env) error {
	return func(ctx context.Context, env *scenario.Env) error {
		for i, st := range steps {
			if err := st.run(ctx, env); err != nil {
				line := st.line
				var le *lineError
				if errors.As(err, &le) {
					line, err = le.line, le.err
				}
				return fmt.Errorf("%s:%d: steps[%d] %s: %w", file, line, i, st.kind, err)
			}
		}
		return nil
	}
}

// disks reads the provisioner's disk size per node: {node1: 8Gi, ...}.
func (p *parser) disks(n *yaml.Node) (map[string]string, error) {
	f, err := p.mapping(n, "provisioner")
	if err != nil {
		return nil, err
	}
	if len(f) == 0 {
		return nil, p.errorf(n.Line, "provisioner: give each node's disk size (node1: 8Gi)")
	}
	out := map[string]string{}
	for node, v := range f {
		where := "provisioner." + node
		size, err := p.str(v, where)
		if err != nil {
			return nil, err
		}
		if _, err := resource.ParseQuantity(size); err != nil {
			return nil, p.errorf(v.Line, "%s: %v", where, err)
		}
		out[node] = size
	}
	return out, nil
}

// config reads an inline KubeSchedulerConfiguration; apiVersion and kind
// may be left out.
func (p *parser) config(n *yaml.Node) (func() (*configv1.KubeSchedulerConfiguration, error), error) {
	if _, err := p.mapping(n, "config"); err != nil {
		return nil, err
	}
	m := resolve(n)
	keys := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		keys[m.Content[i].Value] = true
	}
	for _, kv := range [][2]string{{"apiVersion", configv1.SchemeGroupVersion.String()},
		{"kind", "KubeSchedulerConfiguration"}} {
		if !keys[kv[0]] {
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: kv[0]},
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: kv[1]})
		}
	}
	data, err := yaml.Marshal(m)
	if err != nil {
		return nil, p.errorf(n.Line, "config: %v", err)
	}
	cfg, err := scheduler.DecodeConfig(data)
	if err != nil {
		return nil, p.errorf(n.Line, "config: %v", err)
	}
	return func() (*configv1.KubeSchedulerConfiguration, error) { return cfg.DeepCopy(), nil }, nil
}

// profile reads {plugins: [...]}: one profile with exactly those plugins,
// as withPlugins gives.
func (p *parser) profile(n *yaml.Node) (func() (*configv1.KubeSchedulerConfiguration, error), error) {
	f, err := p.mapping(n, "profile", "plugins")
	if err != nil {
		return nil, err
	}
	if f["plugins"] == nil {
		return nil, p.errorf(n.Line, "profile: plugins are missing")
	}
	names, err := p.strList(f["plugins"], "profile.plugins")
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, p.errorf(f["plugins"].Line, "profile.plugins: name at least one plugin")
	}
	cfg := withPlugins(names)
	if _, err := cfg(); err != nil {
		return nil, p.errorf(n.Line, "profile: %v", err)
	}
	return cfg, nil
}

// withPlugins returns a configuration whose single profile enables exactly
// the named plugins through multiPoint ("*" disables the defaults).
func withPlugins(names []string) func() (*configv1.KubeSchedulerConfiguration, error) {
	return func() (*configv1.KubeSchedulerConfiguration, error) {
		p := scenario.OnlyPlugins()
		for _, n := range names {
			p.MultiPoint.Enabled = append(p.MultiPoint.Enabled, configv1.Plugin{Name: n})
		}
		return scenario.ProfileConfig(p)
	}
}

// steps reads the list of steps, each a mapping with one key: its kind.
func (p *parser) steps(n *yaml.Node) ([]fileStep, error) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		return nil, p.errorf(n.Line, "steps: want a list, got %s", describe(n))
	}
	if len(n.Content) == 0 {
		return nil, p.errorf(n.Line, "steps: the list is empty")
	}
	var out []fileStep
	for i, item := range n.Content {
		where := fmt.Sprintf("steps[%d]", i)
		item = resolve(item)
		if item.Kind != yaml.MappingNode || len(item.Content) == 0 {
			return nil, p.errorf(item.Line, "%s: want a step (%s: ...), got %s", where, strings.Join(stepNames(), ", "),
				describe(item))
		}
		if len(item.Content) > 2 {
			var keys []string
			for j := 0; j < len(item.Content); j += 2 {
				keys = append(keys, item.Content[j].Value)
			}
			return nil, p.errorf(item.Line, "%s: one step per list item, got %d: %s (start each with \"- \")",
				where, len(keys), strings.Join(keys, ", "))
		}
		key, arg := item.Content[0], item.Content[1]
		parse, ok := stepKinds[key.Value]
		if !ok {
			return nil, p.errorf(key.Line, "%s: unknown step %q; steps are: %s", where, key.Value,
				strings.Join(stepNames(), ", "))
		}
		run, err := parse(p, arg, where+"."+key.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, fileStep{line: key.Line, kind: key.Value, run: run})
	}
	return out, nil
}

// stepNames lists stepKinds' keys, sorted.
func stepNames() []string {
	names := make([]string, 0, len(stepKinds))
	for k := range stepKinds {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
