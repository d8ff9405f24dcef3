// This file decides which victims a PodDisruptionBudget protects.

package defaultpreemption

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/minisched/minisched/minisched/framework"
)

// filterPodsWithPDBViolation splits pods (in order) into those whose
// eviction would violate a PodDisruptionBudget and the others, counting as
// kube-scheduler does: each budget allows status.disruptionsAllowed
// evictions; a pod its budget already lists in status.disruptedPods costs
// nothing; a budget with an empty selector, or in another namespace,
// matches nothing; a pod without labels matches no budget. Pods are charged
// in order, so the first ones use up the allowance, and a pod stops being
// charged at the first budget it violates.
func filterPodsWithPDBViolation(pods []*framework.PodInfo,
	pdbs []*policyv1.PodDisruptionBudget) (violating, nonViolating []*framework.PodInfo) {
	allowed := make([]int32, len(pdbs))
	for i, pdb := range pdbs {
		allowed[i] = pdb.Status.DisruptionsAllowed
	}
	for _, pi := range pods {
		pod := pi.Pod
		violates := false
		if len(pod.Labels) != 0 {
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
					violates = true
					break // later budgets are not charged for this pod
				}
			}
		}
		if violates {
			violating = append(violating, pi)
		} else {
			nonViolating = append(nonViolating, pi)
		}
	}
	return violating, nonViolating
}
