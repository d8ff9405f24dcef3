// The create step: objects given as a list, one object or a string of YAML
// documents, each decoded strictly into its API type and created through
// the same Env helpers as the Go stories' objects.

package scenariofile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsjson "sigs.k8s.io/json"

	"github.com/minisched/minisched/scenario"
)

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
		if p.firstBudget == 0 {
			p.firstBudget = line
		}
		m.create = func(ctx context.Context, env *scenario.Env) error { return env.CreatePDB(ctx, pdb.DeepCopy()) }
	case schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroup"):
		if err := p.podGroup(js, line, where, &m); err != nil {
			return manifest{}, err
		}
	default:
		if err := p.checkDRAObject(u.GroupVersionKind(), js, line, where); err != nil {
			return manifest{}, err
		}
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
