// Chapter 18's parts of the format: the controllers field, which runs
// kube-controller-manager controllers for the story (scenario.Controllers),
// and the steps taint, untaint and evict.

package scenariofile

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/testenv"
)

// controllers reads the controllers field: a list of
// kube-controller-manager's controller names, checked as the runner would
// (testenv.CheckControllers), at the field's line.
func (p *parser) controllers(n *yaml.Node, s *scenario.Scenario) error {
	names, err := p.strList(n, "controllers")
	if err != nil {
		return err
	}
	if err := testenv.CheckControllers(names); err != nil {
		return p.errorf(n.Line, "controllers: %v", err)
	}
	if slices.Contains(names, testenv.NodeLifecycleController) && !s.Parts.Has(scenario.KWOK) {
		return p.errorf(n.Line, "controllers: %s needs lifecycle: true (KWOK renews the nodes' Leases; "+
			"without them it marks every node Unknown)", testenv.NodeLifecycleController)
	}
	s.Controllers = names
	return nil
}

// checkBudgets refuses, before anything runs, a file that evicts pods
// while it creates PodDisruptionBudgets but does not run the disruption
// controller: each such eviction would hang for about 100s
// (scenario.Env.Evict says why).
func (p *parser) checkBudgets(s scenario.Scenario) error {
	if p.firstEvict == 0 || p.firstBudget == 0 || slices.Contains(s.Controllers, testenv.DisruptionController) {
		return nil
	}
	return p.errorf(p.firstEvict, "evict: the file creates a PodDisruptionBudget (line %d) but its controllers "+
		"do not name %s: nobody would write the budget's status, and the Eviction API would answer 429 with "+
		"Retry-After: 10, which client-go retries silently, ten times: about 100s for each eviction",
		p.firstBudget, testenv.DisruptionController)
}

// taintEffects are the effects a taint step may give.
var taintEffects = []v1.TaintEffect{v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute}

// taint reads {node, key, value, effect} and adds that taint to the node.
func (p *parser) taint(arg *yaml.Node, where string) (stepFunc, error) {
	node, taint, err := p.taintArg(arg, where, true)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, env *scenario.Env) error {
		if err := env.TaintNode(ctx, node, taint); err != nil {
			return err
		}
		env.Logf("node %s tainted %s=%s:%s", node, taint.Key, taint.Value, taint.Effect)
		return nil
	}, nil
}

// untaint reads {node, key, effect} and removes the node's taints with
// that key and effect.
func (p *parser) untaint(arg *yaml.Node, where string) (stepFunc, error) {
	node, taint, err := p.taintArg(arg, where, false)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, env *scenario.Env) error {
		if err := env.UntaintNode(ctx, node, taint.Key, taint.Effect); err != nil {
			return err
		}
		env.Logf("node %s's %s:%s taint removed", node, taint.Key, taint.Effect)
		return nil
	}, nil
}

// taintArg reads a taint step's node, key, effect and (withValue) value.
func (p *parser) taintArg(arg *yaml.Node, where string, withValue bool) (string, v1.Taint, error) {
	fields := []string{"node", "key", "effect"}
	if withValue {
		fields = append(fields, "value")
	}
	f, err := p.mapping(arg, where, fields...)
	if err != nil {
		return "", v1.Taint{}, err
	}
	for _, k := range []string{"node", "key", "effect"} {
		if f[k] == nil {
			return "", v1.Taint{}, p.errorf(arg.Line, "%s: %s is missing", where, k)
		}
	}
	node, err := p.nodeName(f["node"], where+".node")
	if err != nil {
		return "", v1.Taint{}, err
	}
	var t v1.Taint
	if t.Key, err = p.str(f["key"], where+".key"); err != nil {
		return "", t, err
	}
	if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
		return "", t, p.errorf(f["key"].Line, "%s.key: %s", where, strings.Join(errs, "; "))
	}
	effect, err := p.str(f["effect"], where+".effect")
	if err != nil {
		return "", t, err
	}
	t.Effect = v1.TaintEffect(effect)
	if !slices.Contains(taintEffects, t.Effect) {
		return "", t, p.errorf(f["effect"].Line, "%s.effect: want one of %v, got %q", where, taintEffects, effect)
	}
	if n := f["value"]; n != nil {
		if t.Value, err = p.str(n, where+".value"); err != nil {
			return "", t, err
		}
		if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
			return "", t, p.errorf(n.Line, "%s.value: %s", where, strings.Join(errs, "; "))
		}
	}
	return node, t, nil
}

// evict reads {pod, refused} and asks the Eviction API to evict the pod
// (scenario.Env.Evict); refused: true expects the answer to be a refusal,
// and prints it.
func (p *parser) evict(arg *yaml.Node, where string) (stepFunc, error) {
	f, err := p.mapping(arg, where, "pod", "refused")
	if err != nil {
		return nil, err
	}
	if f["pod"] == nil {
		return nil, p.errorf(arg.Line, "%s: pod is missing", where)
	}
	pod, err := p.podName(f["pod"], where+".pod")
	if err != nil {
		return nil, err
	}
	refused := false
	if n := f["refused"]; n != nil {
		if refused, err = p.boolean(n, where+".refused"); err != nil {
			return nil, err
		}
	}
	if p.firstEvict == 0 {
		p.firstEvict = arg.Line
	}
	return func(ctx context.Context, env *scenario.Env) error {
		err := env.Evict(ctx, pod)
		switch {
		case err == nil && refused:
			return fmt.Errorf("evicting %s was allowed, want a refusal", pod)
		case err == nil:
			env.Logf("evict %s: allowed", pod)
		case refused:
			env.Logf("evict %s: refused, %s", pod, scenario.DescribeRefusal(err))
		default:
			return fmt.Errorf("evicting %s: %s", pod, scenario.DescribeRefusal(err))
		}
		return nil
	}, nil
}
