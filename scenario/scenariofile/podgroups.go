// This file is the scenario format's side of pod groups (chapter 19): the
// featureGates field, PodGroup manifests in create steps, and the
// expectPodGroup step.

package scenariofile

import (
	"context"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/scenario"
)

// featureGates reads the scheduler's feature gates, in kube-scheduler's
// --feature-gates syntax: "GenericWorkload=true".
func (p *parser) featureGates(n *yaml.Node, s *scenario.Scenario) error {
	value, err := p.str(n, "featureGates")
	if err != nil {
		return err
	}
	if s.FeatureGates, err = features.Parse(value); err != nil {
		return p.errorf(n.Line, "featureGates: %v", err)
	}
	return nil
}

// podGroup reads a PodGroup manifest of a create step, strictly.
func (p *parser) podGroup(js []byte, line int, where string, m *manifest) error {
	pg := &schedulingv1beta1.PodGroup{}
	if err := p.strict(js, pg, line, where); err != nil {
		return err
	}
	p.podGroups[pg.Name] = true
	m.create = func(ctx context.Context, env *scenario.Env) error { return env.CreatePodGroups(ctx, pg.DeepCopy()) }
	return nil
}

// expectPodGroup waits until a PodGroup's PodGroupInitiallyScheduled
// condition has the status ("True" or "False"), and checks its reason and
// message if given: {podGroup: g, status: "False", reason: Unschedulable,
// contains: "minCount (3) cannot be satisfied"}.
func (p *parser) expectPodGroup(arg *yaml.Node, where string) (stepFunc, error) {
	f, err := p.mapping(arg, where, "podGroup", "status", "reason", "contains", "timeout")
	if err != nil {
		return nil, err
	}
	for _, key := range []string{"podGroup", "status"} {
		if f[key] == nil {
			return nil, p.errorf(arg.Line, "%s: %s is missing", where, key)
		}
	}
	name, err := p.str(f["podGroup"], where+".podGroup")
	if err != nil {
		return nil, err
	}
	if !p.podGroups[name] {
		return nil, p.errorf(f["podGroup"].Line, "%s.podGroup: no create step before this one makes PodGroup %q",
			where, name)
	}
	status, err := p.str(f["status"], where+".status")
	if err != nil {
		return nil, err
	}
	if status != string(metav1.ConditionTrue) && status != string(metav1.ConditionFalse) {
		return nil, p.errorf(f["status"].Line, "%s.status: want \"True\" or \"False\", got %q", where, status)
	}
	var reason, contains string
	if n := f["reason"]; n != nil {
		if reason, err = p.str(n, where+".reason"); err != nil {
			return nil, err
		}
	}
	if n := f["contains"]; n != nil {
		if contains, err = p.str(n, where+".contains"); err != nil {
			return nil, err
		}
	}
	timeout, err := p.timeout(f["timeout"], where)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, env *scenario.Env) error {
		c, err := env.WaitForPodGroupCondition(ctx, name, metav1.ConditionStatus(status), timeout)
		if err != nil {
			return err
		}
		if reason != "" && c.Reason != reason {
			return fmt.Errorf("PodGroup %s: reason %s, want %s (message %q)", name, c.Reason, reason, c.Message)
		}
		if !strings.Contains(c.Message, contains) {
			return fmt.Errorf("PodGroup %s: message %q does not contain %q", name, c.Message, contains)
		}
		env.Logf("PodGroup %s: %s %s %s", name, c.Status, c.Reason, c.Message)
		return nil
	}, nil
}
