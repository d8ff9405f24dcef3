// The steps other than create: waits, checks and changes, each read from
// its YAML and turned into a call of an Env helper.

package scenariofile

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/podstatus"
	"github.com/minisched/minisched/scenario"
)

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
		err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, env.WaitLimit(timeout), true, func(ctx context.Context) (bool, error) {
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
	timeout, err := p.timeout(f["timeout"], where)
	if err != nil {
		return nil, "", 0, err
	}
	return f, pod, timeout, nil
}

// timeout reads a step's timeout field, n (nil if the step has none:
// DefaultWait).
func (p *parser) timeout(n *yaml.Node, where string) (time.Duration, error) {
	if n == nil {
		return scenario.DefaultWait, nil
	}
	s, err := p.str(n, where+".timeout")
	if err != nil {
		return 0, err
	}
	timeout, err := time.ParseDuration(s)
	if err != nil || timeout <= 0 {
		return 0, p.errorf(n.Line, "%s.timeout: want a positive duration such as 30s or 2m, got %q", where, s)
	}
	return timeout, nil
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
