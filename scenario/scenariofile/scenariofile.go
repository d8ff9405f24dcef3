// Package scenariofile reads scenarios written as YAML instead of Go
// (docs/scenarios.md): a name, an optional configuration and a list of
// steps — create objects, wait for the scheduler, check where pods went and
// why, change nodes — each run with scenario.Env's helpers, the same the Go
// stories use. Every error, found while reading the file or while running
// it, names the file and the line of the step or field at fault.
package scenariofile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
	sigsjson "sigs.k8s.io/json"

	"github.com/minisched/minisched/podstatus"
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
	p := &parser{file: file, pods: map[string]bool{}, nodes: map[string]bool{}}
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
}

// defaultAPIVersions are the kinds whose manifests may leave apiVersion out.
var defaultAPIVersions = map[string]string{
	"Node": "v1", "Pod": "v1", "Namespace": "v1", "ConfigMap": "v1",
	"PriorityClass":       schedulingv1.SchemeGroupVersion.String(),
	"PodDisruptionBudget": policyv1.SchemeGroupVersion.String(),
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
	f, err := p.mapping(root, "", "name", "chapter", "description", "config", "profile", "lifecycle", "steps")
	if err != nil {
		return scenario.Scenario{}, err
	}
	s := scenario.Scenario{}
	// The fields are read in this order, whatever the file's: steps need
	// the name (their namespace).
	if f["name"] == nil {
		return scenario.Scenario{}, p.errorf(root.Line, "name is missing")
	}
	if s.Name, err = p.str(f["name"], "name"); err != nil {
		return scenario.Scenario{}, err
	}
	if errs := validation.IsDNS1123Label(s.Name); len(errs) > 0 {
		return scenario.Scenario{}, p.errorf(f["name"].Line, "name %q is also the scenario's namespace: %s", s.Name,
			strings.Join(errs, "; "))
	}
	p.name = s.Name
	if n := f["chapter"]; n != nil {
		if s.Chapter, err = p.integer(n, "chapter"); err != nil {
			return scenario.Scenario{}, err
		}
		if s.Chapter < 0 {
			return scenario.Scenario{}, p.errorf(n.Line, "chapter: want 0 or more, got %d", s.Chapter)
		}
	}
	if n := f["description"]; n != nil {
		if s.Description, err = p.str(n, "description"); err != nil {
			return scenario.Scenario{}, err
		}
	}
	if s.Description == "" {
		s.Description = "steps from " + p.file
	}
	if f["config"] != nil && f["profile"] != nil {
		return scenario.Scenario{}, p.errorf(f["profile"].Line, "give config or profile, not both")
	}
	if n := f["config"]; n != nil {
		if s.Config, err = p.config(n); err != nil {
			return scenario.Scenario{}, err
		}
	}
	if n := f["profile"]; n != nil {
		if s.Config, err = p.profile(n); err != nil {
			return scenario.Scenario{}, err
		}
	}
	if n := f["lifecycle"]; n != nil {
		if s.Lifecycle, err = p.boolean(n, "lifecycle"); err != nil {
			return scenario.Scenario{}, err
		}
	}
	if f["steps"] == nil {
		return scenario.Scenario{}, p.errorf(root.Line, "steps are missing")
	}
	steps, err := p.steps(f["steps"])
	if err != nil {
		return scenario.Scenario{}, err
	}
	file := p.file
	s.Run = func(ctx context.Context, env *scenario.Env) error {
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
	return s, nil
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

// manifest is one object of a create step, decoded and checked.
type manifest struct {
	// line is where the object starts in the file.
	line int
	// kind and name say which object it is, in the step's narration.
	kind, name string
	// create creates it with the scenario's defaults.
	create stepFunc
}

// create reads `create:` — a list of objects, one object, or a string of
// YAML documents — and creates them in order.
func (p *parser) create(arg *yaml.Node, where string) (stepFunc, error) {
	objs, err := p.objects(arg, where)
	if err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		return nil, p.errorf(arg.Line, "%s: no objects to create", where)
	}
	var ms []manifest
	for i, o := range objs {
		m, err := p.manifest(o.node, o.line, fmt.Sprintf("%s[%d]", where, i))
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	return func(ctx context.Context, env *scenario.Env) error {
		var names []string
		for _, m := range ms {
			if err := m.create(ctx, env); err != nil {
				return &lineError{line: m.line, err: err}
			}
			names = append(names, m.kind+" "+m.name)
		}
		if len(names) > 4 {
			names = append(names[:3], fmt.Sprintf("… %s (%d objects)", names[len(names)-1], len(names)))
		}
		env.Logf("created %s", strings.Join(names, ", "))
		return nil
	}, nil
}

// located is an object of a create step and the line of the file it starts
// at (nodes read from a string count lines from the string).
type located struct {
	node *yaml.Node
	line int
}

// objects lists the objects of a create step.
func (p *parser) objects(arg *yaml.Node, where string) ([]located, error) {
	arg = resolve(arg)
	switch {
	case arg.Kind == yaml.SequenceNode:
		var out []located
		for _, item := range arg.Content {
			out = append(out, located{node: item, line: item.Line})
		}
		return out, nil
	case arg.Kind == yaml.MappingNode:
		return []located{{node: arg, line: arg.Line}}, nil
	case arg.Kind == yaml.ScalarNode && arg.Tag == "!!str":
		// A block scalar's text starts on the line after its "|"; a
		// quoted or plain one on its own line.
		base := arg.Line - 1
		if arg.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			base = arg.Line
		}
		dec := yaml.NewDecoder(strings.NewReader(arg.Value))
		var out []located
		for {
			var doc yaml.Node
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			if err != nil {
				return nil, p.yamlError(fmt.Errorf("%s: %w", where, err), base)
			}
			if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
				continue // an empty document, as between two "---"
			}
			out = append(out, located{node: doc.Content[0], line: base + doc.Content[0].Line})
		}
	default:
		return nil, p.errorf(arg.Line, "%s: want a list of objects or a string of YAML documents, got %s", where,
			describe(arg))
	}
}

// manifest decodes one object strictly into its API type, gives it the
// defaults a short manifest needs, and returns how to create it.
func (p *parser) manifest(n *yaml.Node, line int, where string) (manifest, error) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return manifest{}, p.errorf(line, "%s: want an object, got %s", where, describe(n))
	}
	var obj map[string]any
	if err := n.Decode(&obj); err != nil {
		return manifest{}, p.errorf(line, "%s: %v", where, err)
	}
	kind, _ := obj["kind"].(string)
	if kind == "" {
		return manifest{}, p.errorf(line, "%s: kind is missing", where)
	}
	apiVersion, _ := obj["apiVersion"].(string)
	if apiVersion == "" {
		if apiVersion = defaultAPIVersions[kind]; apiVersion == "" {
			return manifest{}, p.errorf(line, "%s: apiVersion is missing (only %s may leave it out)", where,
				strings.Join(slices.Sorted(maps.Keys(defaultAPIVersions)), ", "))
		}
		obj["apiVersion"] = apiVersion
	}
	if _, ok := obj["status"]; ok && kind != "Node" && kind != "PodDisruptionBudget" {
		return manifest{}, p.errorf(line, "%s: a %s's status is not written from a scenario (only a Node's and "+
			"a PodDisruptionBudget's)", where, kind)
	}
	js, err := json.Marshal(obj)
	if err != nil {
		return manifest{}, p.errorf(line, "%s: %v", where, err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	if err := u.UnmarshalJSON(js); err != nil {
		return manifest{}, p.errorf(line, "%s: %v", where, err)
	}
	m := manifest{line: line, kind: kind, name: u.GetName()}
	if m.name == "" {
		return manifest{}, p.errorf(line, "%s: metadata.name is missing", where)
	}
	where = fmt.Sprintf("%s (%s %s)", where, kind, m.name)
	switch gvk := u.GroupVersionKind(); gvk {
	case v1.SchemeGroupVersion.WithKind("Node"):
		node := &v1.Node{}
		if err := p.strict(js, node, line, where); err != nil {
			return manifest{}, err
		}
		defaultNode(node)
		p.nodes[node.Name] = true
		m.create = func(ctx context.Context, env *scenario.Env) error { return env.CreateNodes(ctx, node.DeepCopy()) }
	case v1.SchemeGroupVersion.WithKind("Pod"):
		pod := &v1.Pod{}
		if err := p.strict(js, pod, line, where); err != nil {
			return manifest{}, err
		}
		if pod.Namespace == "" || pod.Namespace == p.name {
			p.pods[pod.Name] = true
		}
		m.create = func(ctx context.Context, env *scenario.Env) error { return env.CreatePods(ctx, pod.DeepCopy()) }
	case schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"):
		pc := &schedulingv1.PriorityClass{}
		if err := p.strict(js, pc, line, where); err != nil {
			return manifest{}, err
		}
		m.create = func(ctx context.Context, env *scenario.Env) error { return env.CreatePriorityClass(ctx, pc.DeepCopy()) }
	case policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"):
		pdb := &policyv1.PodDisruptionBudget{}
		if err := p.strict(js, pdb, line, where); err != nil {
			return manifest{}, err
		}
		m.create = func(ctx context.Context, env *scenario.Env) error { return env.CreatePDB(ctx, pdb.DeepCopy()) }
	default:
		m.create = func(ctx context.Context, env *scenario.Env) error { return env.CreateObject(ctx, u.DeepCopy()) }
	}
	return m, nil
}

// strict decodes an object's JSON into its API type, rejecting unknown and
// duplicate fields.
func (p *parser) strict(js []byte, into any, line int, where string) error {
	strictErrs, err := sigsjson.UnmarshalStrict(js, into)
	if err != nil {
		return p.errorf(line, "%s: %v", where, err)
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		return p.errorf(line, "%s: %s", where, strings.Join(msgs, "; "))
	}
	return nil
}

// defaultNode gives a node what MakeNode gives the Go scenarios' nodes,
// wherever its manifest says nothing: the hostname label, capacity (4 cpu,
// 16Gi memory, 100Gi ephemeral storage, 110 pods), allocatable equal to
// capacity, and a Ready condition.
func defaultNode(n *v1.Node) {
	base := scenario.MakeNode(n.Name).Obj()
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if _, ok := n.Labels[v1.LabelHostname]; !ok {
		n.Labels[v1.LabelHostname] = n.Name
	}
	if n.Status.Capacity == nil {
		n.Status.Capacity = v1.ResourceList{}
	}
	for res, q := range base.Status.Capacity {
		if _, ok := n.Status.Capacity[res]; !ok {
			n.Status.Capacity[res] = q
		}
	}
	if n.Status.Allocatable == nil {
		n.Status.Allocatable = v1.ResourceList{}
	}
	for res, q := range n.Status.Capacity {
		if _, ok := n.Status.Allocatable[res]; !ok {
			n.Status.Allocatable[res] = q.DeepCopy()
		}
	}
	if len(n.Status.Conditions) == 0 {
		n.Status.Conditions = base.Status.Conditions
	}
}

// waitBound reads {pod, timeout}: wait until the pod is bound.
func (p *parser) waitBound(arg *yaml.Node, where string) (stepFunc, error) {
	_, pod, timeout, err := p.podStep(arg, where)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, env *scenario.Env) error {
		got, err := env.WaitForPodBound(ctx, pod, timeout)
		if err != nil {
			return err
		}
		env.Logf("%s → %s", pod, got.Spec.NodeName)
		return nil
	}, nil
}

// waitUnschedulable reads {pod, timeout}: wait until the pod is marked
// unschedulable (PodScheduled=False, reason Unschedulable).
func (p *parser) waitUnschedulable(arg *yaml.Node, where string) (stepFunc, error) {
	_, pod, timeout, err := p.podStep(arg, where)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, env *scenario.Env) error {
		msg, err := env.WaitForPodUnschedulable(ctx, pod, timeout)
		if err != nil {
			return err
		}
		env.Logf("%s is pending: %s", pod, msg)
		return nil
	}, nil
}

// waitGone reads {pod, timeout}: wait until the pod no longer exists (a
// preemption victim, say).
func (p *parser) waitGone(arg *yaml.Node, where string) (stepFunc, error) {
	_, pod, timeout, err := p.podStep(arg, where)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, env *scenario.Env) error {
		if err := env.WaitForPodGone(ctx, pod, timeout); err != nil {
			return err
		}
		env.Logf("%s is gone", pod)
		return nil
	}, nil
}

// expectNode reads {pod, node | oneOf, timeout}: wait until the pod is
// bound, and check it is on that node (one of those), not being deleted.
func (p *parser) expectNode(arg *yaml.Node, where string) (stepFunc, error) {
	f, pod, timeout, err := p.podStep(arg, where, "node", "oneOf")
	if err != nil {
		return nil, err
	}
	if (f["node"] == nil) == (f["oneOf"] == nil) {
		return nil, p.errorf(arg.Line, "%s: give node or oneOf (exactly one)", where)
	}
	var want []string
	oneOf := f["oneOf"] != nil
	if n := f["node"]; n != nil {
		node, err := p.nodeName(n, where+".node")
		if err != nil {
			return nil, err
		}
		want = []string{node}
	} else {
		if want, err = p.strList(f["oneOf"], where+".oneOf"); err != nil {
			return nil, err
		}
		if len(want) == 0 {
			return nil, p.errorf(f["oneOf"].Line, "%s.oneOf: the list is empty", where)
		}
		for i, w := range want {
			if !p.nodes[w] {
				return nil, p.errorf(resolve(f["oneOf"]).Content[i].Line,
					"%s.oneOf[%d]: no earlier step creates node %q", where, i, w)
			}
		}
	}
	return func(ctx context.Context, env *scenario.Env) error {
		got, err := env.WaitForPodBound(ctx, pod, timeout)
		if err != nil {
			return err
		}
		if len(env.PodAttempts(pod)) > 0 {
			env.ShowAttempt(pod)
		} else {
			env.Logf("%s → %s", pod, got.Spec.NodeName)
		}
		if got.DeletionTimestamp != nil {
			return fmt.Errorf("pod %s on %s is being deleted", pod, got.Spec.NodeName)
		}
		if !slices.Contains(want, got.Spec.NodeName) {
			if !oneOf {
				return fmt.Errorf("pod %s on %s, want %s", pod, got.Spec.NodeName, want[0])
			}
			return fmt.Errorf("pod %s on %s, want one of %s", pod, got.Spec.NodeName, strings.Join(want, ", "))
		}
		return nil
	}, nil
}

// expectReason reads {pod, contains | equals, timeout}: wait until the
// pod's PodScheduled=False message, or the note of a FailedScheduling event
// about it, contains (is) the text. Events stay after the pod is bound, so
// a preemptor's first failure can be checked after the fact.
func (p *parser) expectReason(arg *yaml.Node, where string) (stepFunc, error) {
	f, pod, timeout, err := p.podStep(arg, where, "contains", "equals")
	if err != nil {
		return nil, err
	}
	if (f["contains"] == nil) == (f["equals"] == nil) {
		return nil, p.errorf(arg.Line, "%s: give contains or equals (exactly one)", where)
	}
	field, verb := "contains", "contains"
	if f["contains"] == nil {
		field, verb = "equals", "is"
	}
	text, err := p.str(f[field], where+"."+field)
	if err != nil {
		return nil, err
	}
	match := func(m string) bool { return m == text }
	if verb == "contains" {
		match = func(m string) bool { return strings.Contains(m, text) }
	}
	return func(ctx context.Context, env *scenario.Env) error {
		var seen []string
		var found string
		var lastErr error
		err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
			// An error (a pod not created yet, the deadline near) is
			// reported only if the time runs out.
			msgs, err := schedulingMessages(ctx, env, pod)
			if err != nil {
				lastErr = err
				return false, nil
			}
			seen = msgs
			for _, m := range msgs {
				if match(m) {
					found = m
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			got := "none"
			if len(seen) > 0 {
				got = fmt.Sprintf("%q", seen)
			} else if lastErr != nil {
				got = "none (" + lastErr.Error() + ")"
			}
			return fmt.Errorf("pod %s: no scheduling message %s %q within %v; messages: %s", pod, verb, text,
				timeout, got)
		}
		env.Logf("%s: %s", pod, found)
		return nil
	}, nil
}

// schedulingMessages returns the pod's PodScheduled=False message, if any,
// and the notes of the FailedScheduling events about it.
func schedulingMessages(ctx context.Context, e *scenario.Env, pod string) ([]string, error) {
	p, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var msgs []string
	if c := podstatus.Condition(&p.Status, v1.PodScheduled); c != nil && c.Status == v1.ConditionFalse {
		msgs = append(msgs, c.Message)
	}
	notes, err := e.EventMessages(ctx, pod, "FailedScheduling")
	if err != nil {
		return nil, err
	}
	return append(msgs, notes...), nil
}

// delete reads {pod: name} or {node: name} and deletes it at once.
func (p *parser) delete(arg *yaml.Node, where string) (stepFunc, error) {
	f, err := p.mapping(arg, where, "pod", "node")
	if err != nil {
		return nil, err
	}
	if (f["pod"] == nil) == (f["node"] == nil) {
		return nil, p.errorf(arg.Line, "%s: give pod or node (exactly one)", where)
	}
	if f["pod"] != nil {
		pod, err := p.podName(f["pod"], where+".pod")
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, env *scenario.Env) error {
			err := env.Client.CoreV1().Pods(env.Namespace).Delete(ctx, pod,
				metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			if err != nil {
				return fmt.Errorf("deleting pod %s: %w", pod, err)
			}
			env.Logf("deleted pod %s", pod)
			return nil
		}, nil
	}
	node, err := p.nodeName(f["node"], where+".node")
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, env *scenario.Env) error {
		if err := env.Client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("deleting node %s: %w", node, err)
		}
		env.Logf("deleted node %s", node)
		return nil
	}, nil
}

// patch reads {kind, apiVersion, name, patch}: a strategic merge patch,
// written as YAML, of an object (in the scenario's namespace if its kind is
// namespaced).
func (p *parser) patch(arg *yaml.Node, where string) (stepFunc, error) {
	f, err := p.mapping(arg, where, "kind", "apiVersion", "name", "patch")
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"kind", "name", "patch"} {
		if f[k] == nil {
			return nil, p.errorf(arg.Line, "%s: %s is missing", where, k)
		}
	}
	kind, err := p.str(f["kind"], where+".kind")
	if err != nil {
		return nil, err
	}
	apiVersion := defaultAPIVersions[kind]
	if n := f["apiVersion"]; n != nil {
		if apiVersion, err = p.str(n, where+".apiVersion"); err != nil {
			return nil, err
		}
	} else if apiVersion == "" {
		return nil, p.errorf(arg.Line, "%s: apiVersion is missing (only %s may leave it out)", where,
			strings.Join(slices.Sorted(maps.Keys(defaultAPIVersions)), ", "))
	}
	var name string
	switch {
	case kind == "Pod" && apiVersion == "v1":
		name, err = p.podName(f["name"], where+".name")
	case kind == "Node" && apiVersion == "v1":
		name, err = p.nodeName(f["name"], where+".name")
	default:
		name, err = p.str(f["name"], where+".name")
	}
	if err != nil {
		return nil, err
	}
	body := resolve(f["patch"])
	if body.Kind != yaml.MappingNode {
		return nil, p.errorf(body.Line, "%s.patch: want a mapping (a strategic merge patch), got %s", where,
			describe(body))
	}
	var patch map[string]any
	if err := body.Decode(&patch); err != nil {
		return nil, p.errorf(body.Line, "%s.patch: %v", where, err)
	}
	js, err := json.Marshal(patch)
	if err != nil {
		return nil, p.errorf(body.Line, "%s.patch: %v", where, err)
	}
	return func(ctx context.Context, env *scenario.Env) error {
		objPath, _, err := env.ObjectPath(ctx, apiVersion, kind, "", name)
		if err != nil {
			return err
		}
		err = env.Client.Discovery().RESTClient().Patch(types.StrategicMergePatchType).AbsPath(objPath).
			Body(js).Do(ctx).Error()
		if err != nil {
			return fmt.Errorf("patching %s %s: %w", kind, name, err)
		}
		env.Logf("patched %s %s with %s", kind, name, js)
		return nil
	}, nil
}

// cordon reads a node's name and marks it unschedulable.
func (p *parser) cordon(arg *yaml.Node, where string) (stepFunc, error) {
	return p.setUnschedulable(arg, where, true)
}

// uncordon reads a node's name and marks it schedulable again.
func (p *parser) uncordon(arg *yaml.Node, where string) (stepFunc, error) {
	return p.setUnschedulable(arg, where, false)
}

func (p *parser) setUnschedulable(arg *yaml.Node, where string, unschedulable bool) (stepFunc, error) {
	node, err := p.nodeName(arg, where)
	if err != nil {
		return nil, err
	}
	verb := map[bool]string{true: "cordoned", false: "uncordoned"}[unschedulable]
	return func(ctx context.Context, env *scenario.Env) error {
		if err := env.SetUnschedulable(ctx, node, unschedulable); err != nil {
			return fmt.Errorf("node %s: %w", node, err)
		}
		env.Logf("%s %s", verb, node)
		return nil
	}, nil
}

// label reads {node, key, value} and sets the node's label.
func (p *parser) label(arg *yaml.Node, where string) (stepFunc, error) {
	f, err := p.mapping(arg, where, "node", "key", "value")
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"node", "key", "value"} {
		if f[k] == nil {
			return nil, p.errorf(arg.Line, "%s: %s is missing", where, k)
		}
	}
	node, err := p.nodeName(f["node"], where+".node")
	if err != nil {
		return nil, err
	}
	key, err := p.str(f["key"], where+".key")
	if err != nil {
		return nil, err
	}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return nil, p.errorf(f["key"].Line, "%s.key: %s", where, strings.Join(errs, "; "))
	}
	valueNode := resolve(f["value"])
	if valueNode.Kind != yaml.ScalarNode {
		return nil, p.errorf(valueNode.Line, "%s.value: want a string, got %s", where, describe(valueNode))
	}
	value := valueNode.Value
	if valueNode.Tag == "!!null" {
		value = ""
	}
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		return nil, p.errorf(f["value"].Line, "%s.value: %s", where, strings.Join(errs, "; "))
	}
	return func(ctx context.Context, env *scenario.Env) error {
		if err := env.LabelNode(ctx, node, key, value); err != nil {
			return err
		}
		env.Logf("labelled %s %s=%s", node, key, value)
		return nil
	}, nil
}

// podStep reads a step about one pod: a mapping with the fields pod
// (required, created by an earlier step), timeout (default DefaultWait) and
// the step's own fields, which it returns for the step to read.
func (p *parser) podStep(arg *yaml.Node, where string, fields ...string) (map[string]*yaml.Node, string,
	time.Duration, error) {
	f, err := p.mapping(arg, where, append([]string{"pod"}, append(fields, "timeout")...)...)
	if err != nil {
		return nil, "", 0, err
	}
	if f["pod"] == nil {
		return nil, "", 0, p.errorf(arg.Line, "%s: pod is missing", where)
	}
	pod, err := p.podName(f["pod"], where+".pod")
	if err != nil {
		return nil, "", 0, err
	}
	timeout := scenario.DefaultWait
	if n := f["timeout"]; n != nil {
		s, err := p.str(n, where+".timeout")
		if err != nil {
			return nil, "", 0, err
		}
		if timeout, err = time.ParseDuration(s); err != nil || timeout <= 0 {
			return nil, "", 0, p.errorf(n.Line, "%s.timeout: want a positive duration such as 30s or 2m, got %q",
				where, s)
		}
	}
	return f, pod, timeout, nil
}

// podName reads the name of a pod of the scenario's namespace that an
// earlier create step makes.
func (p *parser) podName(n *yaml.Node, where string) (string, error) {
	name, err := p.str(n, where)
	if err != nil {
		return "", err
	}
	if !p.pods[name] {
		return "", p.errorf(n.Line, "%s: no earlier step creates pod %q", where, name)
	}
	return name, nil
}

// nodeName reads the name of a node that an earlier create step makes.
func (p *parser) nodeName(n *yaml.Node, where string) (string, error) {
	name, err := p.str(n, where)
	if err != nil {
		return "", err
	}
	if !p.nodes[name] {
		return "", p.errorf(n.Line, "%s: no earlier step creates node %q", where, name)
	}
	return name, nil
}

// mapping checks that n is a mapping whose keys are all among allowed, each
// once, and returns the values by key. With no allowed keys, any key goes.
func (p *parser) mapping(n *yaml.Node, where string, allowed ...string) (map[string]*yaml.Node, error) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n.Line, "%swant a mapping, got %s", prefix(where), describe(n))
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if len(allowed) > 0 && !slices.Contains(allowed, k.Value) {
			return nil, p.errorf(k.Line, "%sunknown field %q (fields: %s)", prefix(where), k.Value,
				strings.Join(allowed, ", "))
		}
		if _, dup := out[k.Value]; dup {
			return nil, p.errorf(k.Line, "%sfield %q given twice", prefix(where), k.Value)
		}
		out[k.Value] = n.Content[i+1]
	}
	return out, nil
}

// str reads a non-empty scalar.
func (p *parser) str(n *yaml.Node, where string) (string, error) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errorf(n.Line, "%s: want a string, got %s", where, describe(n))
	}
	if n.Value == "" {
		return "", p.errorf(n.Line, "%s: must not be empty", where)
	}
	return n.Value, nil
}

func (p *parser) integer(n *yaml.Node, where string) (int, error) {
	n = resolve(n)
	i, err := strconv.Atoi(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return 0, p.errorf(n.Line, "%s: want a whole number, got %s", where, describe(n))
	}
	return i, nil
}

func (p *parser) boolean(n *yaml.Node, where string) (bool, error) {
	n = resolve(n)
	var b bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
		return false, p.errorf(n.Line, "%s: want true or false, got %s", where, describe(n))
	}
	return b, nil
}

// strList reads a list of non-empty scalars.
func (p *parser) strList(n *yaml.Node, where string) ([]string, error) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		return nil, p.errorf(n.Line, "%s: want a list, got %s", where, describe(n))
	}
	var out []string
	for i, item := range n.Content {
		s, err := p.str(item, fmt.Sprintf("%s[%d]", where, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (p *parser) errorf(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.file, line, fmt.Sprintf(format, args...))
}

// yamlLine finds the line in the YAML library's syntax errors.
var yamlLine = regexp.MustCompile(`^(.*)yaml: line (\d+): (.*)$`)

// yamlError turns the YAML library's "yaml: line 3: …" into "file:3: …";
// base is added to its line (the line before a string that was parsed on
// its own).
func (p *parser) yamlError(err error, base int) error {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[2])
		return p.errorf(base+line, "%s%s", m[1], m[3])
	}
	return fmt.Errorf("%s: %w", p.file, err)
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// describe names what a node is, for "want X, got Y".
func describe(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return "nothing"
	case n.Kind == yaml.ScalarNode:
		return strconv.Quote(n.Value)
	default:
		return "an empty document"
	}
}

// prefix is where followed by ": ", or nothing at the top of the file.
func prefix(where string) string {
	if where == "" {
		return ""
	}
	return where + ": "
}
