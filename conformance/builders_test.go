//go:build conformance

package conformance

import (
	"context"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/scenario"
)

// R is a resource list in short form.
type R = map[v1.ResourceName]string

// node starts a node as the scenarios create it (Ready, 4 cpu, 16Gi, 110
// pods, a hostname label), with the shared builders' methods:
// node("n1").Capacity(R{"cpu": "2"}).Zone("a").Obj().
func node(name string) *builders.NodeWrapper { return scenario.MakeNode(name) }

type podOpt func(*v1.Pod)

// pod makes a pod with one container.
func pod(name string, opts ...podOpt) *v1.Pod {
	p := scenario.MakePod(name).Obj()
	for _, o := range opts {
		o(p)
	}
	return p
}

func req(r R) podOpt {
	return func(p *v1.Pod) {
		c := &p.Spec.Containers[0]
		c.Resources.Requests = v1.ResourceList{}
		for k, v := range r {
			c.Resources.Requests[k] = resource.MustParse(v)
			if len(k) > 0 && containsSlash(string(k)) {
				// Extended resources cannot be overcommitted: limit = request.
				if c.Resources.Limits == nil {
					c.Resources.Limits = v1.ResourceList{}
				}
				c.Resources.Limits[k] = resource.MustParse(v)
			}
		}
	}
}

func containsSlash(s string) bool {
	for _, r := range s {
		if r == '/' {
			return true
		}
	}
	return false
}

func initContainer(r R, sidecar bool) podOpt {
	return func(p *v1.Pod) {
		c := v1.Container{Name: "init", Image: "registry.k8s.io/pause:3.10",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{}}}
		for k, v := range r {
			c.Resources.Requests[k] = resource.MustParse(v)
		}
		if sidecar {
			c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
}

func image(img string) podOpt { return func(p *v1.Pod) { p.Spec.Containers[0].Image = img } }

func podLabel(k, v string) podOpt {
	return func(p *v1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

func inNamespace(ns string) podOpt { return func(p *v1.Pod) { p.Namespace = ns } }

func schedulerName(n string) podOpt { return func(p *v1.Pod) { p.Spec.SchedulerName = n } }

func priorityClass(c string) podOpt { return func(p *v1.Pod) { p.Spec.PriorityClassName = c } }

func tolerate(k, v string, e v1.TaintEffect) podOpt {
	return func(p *v1.Pod) {
		op := v1.TolerationOpEqual
		if v == "" {
			op = v1.TolerationOpExists
		}
		p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: k, Operator: op, Value: v, Effect: e})
	}
}

func nodeSelector(k, v string) podOpt {
	return func(p *v1.Pod) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[k] = v
	}
}

func affinity(p *v1.Pod) *v1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	return p.Spec.Affinity
}

// requiredNode adds a required node affinity term.
func requiredNode(term v1.NodeSelectorTerm) podOpt {
	return func(p *v1.Pod) {
		a := affinity(p)
		if a.NodeAffinity == nil {
			a.NodeAffinity = &v1.NodeAffinity{}
		}
		if a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{}
		}
		rs := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		rs.NodeSelectorTerms = append(rs.NodeSelectorTerms, term)
	}
}

func preferredNode(weight int32, term v1.NodeSelectorTerm) podOpt {
	return func(p *v1.Pod) {
		a := affinity(p)
		if a.NodeAffinity == nil {
			a.NodeAffinity = &v1.NodeAffinity{}
		}
		terms := &a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		*terms = append(*terms, v1.PreferredSchedulingTerm{Weight: weight, Preference: term})
	}
}

func matchExpr(k string, op v1.NodeSelectorOperator, vals ...string) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: k, Operator: op, Values: vals}}}
}

func matchName(names ...string) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name",
		Operator: v1.NodeSelectorOpIn, Values: names}}}
}

func hostPort(port int32, protocol v1.Protocol, ip string) podOpt {
	return func(p *v1.Pod) {
		c := &p.Spec.Containers[0]
		c.Ports = append(c.Ports, v1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: protocol, HostIP: ip})
	}
}

func spread(maxSkew int32, key string, when v1.UnsatisfiableConstraintAction, sel map[string]string,
	mut ...func(*v1.TopologySpreadConstraint)) podOpt {
	return func(p *v1.Pod) {
		c := v1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when,
			LabelSelector: &metav1.LabelSelector{MatchLabels: sel}}
		for _, m := range mut {
			m(&c)
		}
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	}
}

func podTerm(key string, sel map[string]string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: sel}}
}

func requiredPodAffinity(t v1.PodAffinityTerm) podOpt {
	return func(p *v1.Pod) {
		a := affinity(p)
		if a.PodAffinity == nil {
			a.PodAffinity = &v1.PodAffinity{}
		}
		terms := &a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		*terms = append(*terms, t)
	}
}

func requiredPodAntiAffinity(t v1.PodAffinityTerm) podOpt {
	return func(p *v1.Pod) {
		a := affinity(p)
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &v1.PodAntiAffinity{}
		}
		terms := &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		*terms = append(*terms, t)
	}
}

func preferredPodAffinity(w int32, t v1.PodAffinityTerm) podOpt {
	return func(p *v1.Pod) {
		a := affinity(p)
		if a.PodAffinity == nil {
			a.PodAffinity = &v1.PodAffinity{}
		}
		terms := &a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		*terms = append(*terms, v1.WeightedPodAffinityTerm{Weight: w, PodAffinityTerm: t})
	}
}

func preferredPodAntiAffinity(w int32, t v1.PodAffinityTerm) podOpt {
	return func(p *v1.Pod) {
		a := affinity(p)
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &v1.PodAntiAffinity{}
		}
		terms := &a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		*terms = append(*terms, v1.WeightedPodAffinityTerm{Weight: w, PodAffinityTerm: t})
	}
}

func gates(names ...string) podOpt {
	return func(p *v1.Pod) {
		for _, n := range names {
			p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, v1.PodSchedulingGate{Name: n})
		}
	}
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
