// This file turns a pod's topology spread constraints (or the default ones)
// into parsed constraints, and holds the helpers Filter, Score and the
// queueing hints share: which nodes count for a constraint, how many
// matching pods a node holds, and the selector deduced for default
// constraints from the Services and controllers selecting the pod.

package podtopologyspread

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// constraint is one topology spread constraint, parsed: its selector built
// (with matchLabelKeys merged in) and its optional fields defaulted.
type constraint struct {
	MaxSkew     int32
	TopologyKey string
	Selector    labels.Selector
	// MinDomains is 1 when the pod leaves it unset.
	MinDomains int32
	// NodeAffinityPolicy is Honor when unset: only nodes matching the pod's
	// nodeSelector and required node affinity count.
	NodeAffinityPolicy v1.NodeInclusionPolicy
	// NodeTaintsPolicy is Ignore when unset: tainted nodes count too.
	NodeTaintsPolicy v1.NodeInclusionPolicy
}

// enableTaintComparisonOperators is the TaintTolerationComparisonOperators
// feature gate (alpha in v1.37, off): tolerations match taints by Equal and
// Exists only.
const enableTaintComparisonOperators = false

// parseConstraints returns the constraints of kind action (DoNotSchedule or
// ScheduleAnyway) among cs, parsed. The values of the pod labels named by a
// constraint's matchLabelKeys are ANDed into its selector, as kube-scheduler
// v1.37 still does itself (the apiserver also merges them into labelSelector
// when MatchLabelKeysInPodTopologySpreadSelectorMerge is on; merging twice
// selects the same pods).
func parseConstraints(cs []v1.TopologySpreadConstraint, podLabels map[string]string,
	action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	var out []constraint
	for _, c := range cs {
		if c.WhenUnsatisfiable != action {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return nil, err
		}
		if len(c.MatchLabelKeys) > 0 {
			matchLabels := labels.Set{}
			for _, key := range c.MatchLabelKeys {
				if value, ok := podLabels[key]; ok {
					matchLabels[key] = value
				}
			}
			if len(matchLabels) > 0 {
				selector = mergeLabelSetWithSelector(matchLabels, selector)
			}
		}
		pc := constraint{
			MaxSkew:            c.MaxSkew,
			TopologyKey:        c.TopologyKey,
			Selector:           selector,
			MinDomains:         1,
			NodeAffinityPolicy: v1.NodeInclusionPolicyHonor,
			NodeTaintsPolicy:   v1.NodeInclusionPolicyIgnore,
		}
		if c.MinDomains != nil {
			pc.MinDomains = *c.MinDomains
		}
		if c.NodeAffinityPolicy != nil {
			pc.NodeAffinityPolicy = *c.NodeAffinityPolicy
		}
		if c.NodeTaintsPolicy != nil {
			pc.NodeTaintsPolicy = *c.NodeTaintsPolicy
		}
		out = append(out, pc)
	}
	return out, nil
}

// mergeLabelSetWithSelector ANDs the label set with the selector's
// requirements. A selector without requirements to list (Nothing) is kept
// as it is.
func mergeLabelSetWithSelector(set labels.Set, s labels.Selector) labels.Selector {
	reqs, selectable := s.Requirements()
	if !selectable {
		return s
	}
	return labels.SelectorFromSet(set).Add(reqs...)
}

// constraintsOf returns the pod's constraints of kind action: its own if it
// has any, else the default constraints with the selector deduced from the
// Services and controllers selecting it (none if nothing selects it).
func (pl *PodTopologySpread) constraintsOf(pod *v1.Pod, action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		cs, err := parseConstraints(pod.Spec.TopologySpreadConstraints, pod.Labels, action)
		if err != nil {
			return nil, fmt.Errorf("obtaining pod's %s topology spread constraints: %w", hardOrSoft(action), err)
		}
		return cs, nil
	}
	cs, err := pl.defaultConstraintsFor(pod, action)
	if err != nil {
		return nil, fmt.Errorf("setting default %s topology spread constraints: %w", hardOrSoft(action), err)
	}
	return cs, nil
}

func hardOrSoft(action v1.UnsatisfiableConstraintAction) string {
	if action == v1.DoNotSchedule {
		return "hard"
	}
	return "soft"
}

// defaultConstraintsFor applies the default constraints of kind action to
// pod, all with the selector defaultSelector deduces. A pod nothing selects
// gets no constraints.
func (pl *PodTopologySpread) defaultConstraintsFor(pod *v1.Pod,
	action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	cs, err := parseConstraints(pl.defaultConstraints, pod.Labels, action)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	selector := pl.defaultSelector(pod)
	if selector.Empty() {
		return nil, nil
	}
	for i := range cs {
		cs[i].Selector = selector
	}
	return cs, nil
}

// The controller kinds whose selector joins the default selector, by their
// exact group/version/kind.
var (
	replicationControllerKind = v1.SchemeGroupVersion.WithKind("ReplicationController")
	replicaSetKind            = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	statefulSetKind           = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
)

// defaultSelector deduces the selector for the pod's default constraints,
// as kube-scheduler's helper.DefaultSelector does: the merged selectors of
// the Services in the pod's namespace that select it, ANDed with the
// selector of its controller if that is a ReplicationController, ReplicaSet
// or StatefulSet. Lister errors just leave a part out.
func (pl *PodTopologySpread) defaultSelector(pod *v1.Pod) labels.Selector {
	set := labels.Set{}
	if services, err := pl.services.Services(pod.Namespace).List(labels.Everything()); err == nil {
		for _, svc := range services {
			// A Service without a selector selects nothing, not everything.
			if svc.Spec.Selector == nil {
				continue
			}
			if labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
				// Selectors that all select the pod cannot conflict.
				set = labels.Merge(set, svc.Spec.Selector)
			}
		}
	}
	selector := set.AsSelector()

	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil {
		return selector
	}
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	if err != nil {
		return selector
	}
	// addLabelSelector ANDs a controller's label selector into selector.
	addLabelSelector := func(ls *metav1.LabelSelector) {
		other, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			return
		}
		if reqs, ok := other.Requirements(); ok {
			selector = selector.Add(reqs...)
		}
	}
	switch gv.WithKind(owner.Kind) {
	case replicationControllerKind:
		if rc, err := pl.replicationCtrls.ReplicationControllers(pod.Namespace).Get(owner.Name); err == nil {
			selector = labels.Merge(set, rc.Spec.Selector).AsSelector()
		}
	case replicaSetKind:
		if rs, err := pl.replicaSets.ReplicaSets(pod.Namespace).Get(owner.Name); err == nil {
			addLabelSelector(rs.Spec.Selector)
		}
	case statefulSetKind:
		if ss, err := pl.statefulSets.StatefulSets(pod.Namespace).Get(owner.Name); err == nil {
			addLabelSelector(ss.Spec.Selector)
		}
	}
	return selector
}

// nodeHasAllTopologyKeys reports whether the node carries the topology key of
// every constraint.
func nodeHasAllTopologyKeys(nodeLabels map[string]string, cs []constraint) bool {
	for _, c := range cs {
		if _, ok := nodeLabels[c.TopologyKey]; !ok {
			return false
		}
	}
	return true
}

// includesNode reports whether node counts for constraint c when spreading
// pod: with NodeAffinityPolicy Honor only nodes matching the pod's required
// node affinity and nodeSelector do, with NodeTaintsPolicy Honor only nodes
// whose NoSchedule/NoExecute taints the pod tolerates.
func (c *constraint) includesNode(logger klog.Logger, pod *v1.Pod, node *v1.Node,
	affinity nodeaffinity.RequiredNodeAffinity) bool {
	if c.NodeAffinityPolicy == v1.NodeInclusionPolicyHonor {
		// A parse error counts as a mismatch, as in kube-scheduler.
		if match, _ := affinity.Match(node); !match {
			return false
		}
	}
	if c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor {
		if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, pod.Spec.Tolerations,
			doNotScheduleTaint, enableTaintComparisonOperators); untolerated {
			return false
		}
	}
	return true
}

// doNotScheduleTaint selects the taints that keep pods off a node.
func doNotScheduleTaint(t *v1.Taint) bool {
	return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
}

// countMatchingPods counts the pods in namespace ns that selector selects,
// leaving out terminating pods. An empty selector counts nothing.
func countMatchingPods(pods []*framework.PodInfo, selector labels.Selector, ns string) int {
	if selector.Empty() {
		return 0
	}
	n := 0
	for _, pi := range pods {
		p := pi.Pod
		if p.DeletionTimestamp != nil || p.Namespace != ns {
			continue
		}
		if selector.Matches(labels.Set(p.Labels)) {
			n++
		}
	}
	return n
}

// anySelectorMatches reports whether some constraint's selector selects the
// labels.
func anySelectorMatches(cs []constraint, podLabels labels.Set) bool {
	for _, c := range cs {
		if c.Selector.Matches(podLabels) {
			return true
		}
	}
	return false
}
