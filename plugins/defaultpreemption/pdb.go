// This file decides which victims a PodDisruptionBudget protects.

package defaultpreemption

import (
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// violatingVictim is a victim unit whose eviction would violate a
// PodDisruptionBudget, with how many of its pods would.
type violatingVictim struct {
	victim *victim
	pods   int
}

// podDisruptionBudgets lists the budgets, none without a lister.
func (pl *DefaultPreemption) podDisruptionBudgets() ([]*policyv1.PodDisruptionBudget, error) {
	if pl.pdbLister == nil {
		return nil, nil
	}
	return pl.pdbLister.List(labels.Everything())
}

// filterVictimsWithPDBViolation splits victims (in order) into those whose
// eviction would violate a PodDisruptionBudget and the others, counting as
// kube-scheduler does: each budget allows status.disruptionsAllowed
// evictions; a pod its budget already lists in status.disruptedPods costs
// nothing; a budget with an empty selector, or in another namespace,
// matches nothing; a pod without labels matches no budget. Pods are charged
// in order, so the first ones use up the allowance, and a pod stops being
// charged at the first budget it violates. A unit is atomic: if any of its
// pods violates a budget, the whole unit is violating (a pod group's pods
// cannot be reprieved one by one).
func filterVictimsWithPDBViolation(victims []*victim,
	pdbs []*policyv1.PodDisruptionBudget) (violating []violatingVictim, nonViolating []*victim) {
	allowed := make([]int32, len(pdbs))
	for i, pdb := range pdbs {
		allowed[i] = pdb.Status.DisruptionsAllowed
	}
	violates := func(pod *v1.Pod) bool {
		if len(pod.Labels) == 0 {
			return false
		}
		for i, pdb := range pdbs {
			if pdb.Namespace != pod.Namespace {
				continue
			}
			selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err != nil || selector.Empty() || !selector.Matches(labels.Set(pod.Labels)) {
				continue
			}
			if _, disrupted := pdb.Status.DisruptedPods[pod.Name]; disrupted {
				continue
			}
			allowed[i]--
			if allowed[i] < 0 {
				return true // later budgets are not charged for this pod
			}
		}
		return false
	}
	for _, v := range victims {
		n := 0
		for _, pi := range v.pods {
			if violates(pi.Pod) {
				n++
			}
		}
		if n > 0 {
			violating = append(violating, violatingVictim{victim: v, pods: n})
		} else {
			nonViolating = append(nonViolating, v)
		}
	}
	return violating, nonViolating
}
