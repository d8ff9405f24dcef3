//go:build conformance

// This file holds the cases' starting points for the shared builders, and
// the affinity terms, spread constraints and tolerations they are given.

package conformance

import (
	"context"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/scenario"
)

// R is a resource list in short form.
type R = map[v1.ResourceName]string

// node starts a node as the scenarios create it (Ready, 4 cpu, 16Gi, 110
// pods, a hostname label), with the shared builders' methods:
// node("n1").Capacity(R{"cpu": "2"}).Zone("a").Obj().
func node(name string) *builders.NodeWrapper { return scenario.MakeNode(name) }

// pod starts a pod as the scenarios create it, with the shared builders'
// methods: pod("p").Req(R{"cpu": "1"}).Label("app", "web"). A pod given no
// container gets one running pause when it is created.
func pod(name string) *builders.PodWrapper { return scenario.MakePod(name) }

// tolerate tolerates the taint key=value:effect, or every taint with key and
// effect when value is empty.
func tolerate(key, value string, effect v1.TaintEffect) v1.Toleration {
	if value == "" {
		return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: effect}
	}
	return v1.Toleration{Key: key, Operator: v1.TolerationOpEqual, Value: value, Effect: effect}
}

// requiredNodes is a node affinity requiring one of terms.
func requiredNodes(terms ...v1.NodeSelectorTerm) *v1.NodeAffinity {
	return &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms}}
}

// preferredNodes is a node affinity with the given preferred terms only.
func preferredNodes(terms ...v1.PreferredSchedulingTerm) *v1.NodeAffinity {
	return &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: terms}
}

// prefer is one preferred term of the given weight.
func prefer(weight int32, term v1.NodeSelectorTerm) v1.PreferredSchedulingTerm {
	return v1.PreferredSchedulingTerm{Weight: weight, Preference: term}
}

// matchExpr is a node selector term of one label requirement.
func matchExpr(k string, op v1.NodeSelectorOperator, vals ...string) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: k, Operator: op, Values: vals}}}
}

// matchName is a node selector term matching the nodes by name.
func matchName(names ...string) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name",
		Operator: v1.NodeSelectorOpIn, Values: names}}}
}

// spread is a topology spread constraint over the pods matching sel, each
// mut changing it further.
func spread(maxSkew int32, key string, when v1.UnsatisfiableConstraintAction, sel map[string]string,
	mut ...func(*v1.TopologySpreadConstraint)) v1.TopologySpreadConstraint {
	c := v1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when,
		LabelSelector: &metav1.LabelSelector{MatchLabels: sel}}
	for _, m := range mut {
		m(&c)
	}
	return c
}

// minDomains makes a spread constraint count at least n domains.
func minDomains(n int32) func(*v1.TopologySpreadConstraint) {
	return func(c *v1.TopologySpreadConstraint) { c.MinDomains = &n }
}

// honorTaints makes a spread constraint skip the nodes whose taints the pod
// does not tolerate.
func honorTaints(c *v1.TopologySpreadConstraint) {
	honor := v1.NodeInclusionPolicyHonor
	c.NodeTaintsPolicy = &honor
}

// podTerm is a pod affinity term over the pods matching sel, per key.
func podTerm(key string, sel map[string]string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: sel}}
}

// requiredAffinity is a pod affinity requiring t.
func requiredAffinity(t v1.PodAffinityTerm) *v1.PodAffinity {
	return &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{t}}
}

// requiredAntiAffinity is a pod anti-affinity requiring t.
func requiredAntiAffinity(t v1.PodAffinityTerm) *v1.PodAntiAffinity {
	return &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{t}}
}

// preferredAffinity is a pod affinity preferring t with weight w.
func preferredAffinity(w int32, t v1.PodAffinityTerm) *v1.PodAffinity {
	return &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{
		{Weight: w, PodAffinityTerm: t}}}
}

// preferredAntiAffinity is a pod anti-affinity preferring t with weight w.
func preferredAntiAffinity(w int32, t v1.PodAffinityTerm) *v1.PodAntiAffinity {
	return &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{
		{Weight: w, PodAffinityTerm: t}}}
}

func priorityClasses(classes map[string]int32) Step {
	return func(ctx context.Context, c *Cluster) error {
		for name, v := range classes {
			pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v}
			if _, err := c.Client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		return nil
	}
}

func labelSelector(m map[string]string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: m}
}
