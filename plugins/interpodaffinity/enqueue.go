// This file says which cluster events may let a pod that InterPodAffinity
// rejected fit after all, and decides per pod with queueing hints.

package interpodaffinity

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/helper"
)

// EventsToRegister lists what can change an affinity verdict:
//   - an assigned pod added (it may satisfy the pod's affinity), relabelled
//     (it may start matching the pod's affinity or stop matching its
//     anti-affinity) or deleted (it may have been what the anti-affinity of
//     either side objected to);
//   - the rejected pod relabelled (an existing pod's anti-affinity may no
//     longer select it);
//   - a node added or relabelled (it may join or leave a topology domain).
func (pl *InterPodAffinity) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{
			Event: framework.ClusterEvent{Resource: framework.Pod,
				ActionType: framework.Add | framework.UpdatePodLabel | framework.Delete},
			QueueingHintFn: pl.isSchedulableAfterAssignedPodChange,
		},
		{Event: framework.ClusterEvent{Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodLabel},
			QueueingHintFn: pl.isSchedulableAfterTargetPodUpdateLabel},
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel},
			QueueingHintFn: pl.isSchedulableAfterNodeChange},
	}, nil
}

// requiredTerms parses pod's required affinity and anti-affinity terms as
// written: namespaceSelectors are not resolved (that needs the namespace
// lister, too slow for a hint), so a term with a non-empty namespaceSelector
// selects pods only in the namespaces it lists, as in kube-scheduler's hints.
func requiredTerms(pod *v1.Pod) (affinity, antiAffinity []framework.AffinityTerm, err error) {
	terms := framework.ParsePodAffinityTerms(pod)
	if terms.AffinityParseError != nil {
		return nil, nil, terms.AffinityParseError
	}
	return terms.RequiredAffinityTerms, terms.RequiredAntiAffinityTerms, nil
}

// isSchedulableAfterAssignedPodChange decides on an assigned pod's add
// (oldObj nil), label update, or delete (newObj nil):
//   - an add queues the pod if the added pod matches all its affinity terms;
//   - an update queues it if the updated pod came to match all its affinity
//     terms, or stopped matching any of its anti-affinity terms;
//   - a delete queues it if the deleted pod matched any of its anti-affinity
//     terms, or the pod matches any of the deleted pod's.
//
// A pod neither on a node nor nominated to one changes nothing.
func (pl *InterPodAffinity) isSchedulableAfterAssignedPodChange(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldPod, newPod, err := framework.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if (newPod != nil && newPod.Spec.NodeName == "" && newPod.Status.NominatedNodeName == "") ||
		(oldPod != nil && oldPod.Spec.NodeName == "" && oldPod.Status.NominatedNodeName == "") {
		logger.V(5).Info("Changed pod is not on a node; it cannot make the pod schedulable",
			"pod", klog.KObj(pod), "oldPod", klog.KObj(oldPod), "newPod", klog.KObj(newPod))
		return framework.QueueSkip, nil
	}
	terms, antiTerms, err := requiredTerms(pod)
	if err != nil {
		return framework.Queue, err
	}

	switch {
	case oldPod != nil && newPod != nil:
		// One existing pod must match all affinity terms at once, so compare
		// "matches all" before and after, not term by term.
		if !podMatchesAllTerms(terms, oldPod) && podMatchesAllTerms(terms, newPod) {
			logger.V(5).Info("Assigned pod now matches the pod's affinity; it may be schedulable",
				"pod", klog.KObj(pod), "newPod", klog.KObj(newPod))
			return framework.Queue, nil
		}
		if podMatchesAnyTerm(antiTerms, oldPod) && !podMatchesAnyTerm(antiTerms, newPod) {
			logger.V(5).Info("Assigned pod no longer matches the pod's anti-affinity; it may be schedulable",
				"pod", klog.KObj(pod), "newPod", klog.KObj(newPod))
			return framework.Queue, nil
		}
		logger.V(5).Info("Assigned pod was relabelled, but that cannot help the pod's affinity or anti-affinity",
			"pod", klog.KObj(pod), "newPod", klog.KObj(newPod))
		return framework.QueueSkip, nil

	case newPod != nil:
		if podMatchesAllTerms(terms, newPod) {
			logger.V(5).Info("Added pod matches the pod's affinity; it may be schedulable",
				"pod", klog.KObj(pod), "newPod", klog.KObj(newPod))
			return framework.Queue, nil
		}
		logger.V(5).Info("Added pod does not match the pod's affinity", "pod", klog.KObj(pod), "newPod", klog.KObj(newPod))
		return framework.QueueSkip, nil

	case oldPod != nil:
		if podMatchesAnyTerm(antiTerms, oldPod) {
			logger.V(5).Info("Deleted pod matched the pod's anti-affinity; it may be schedulable",
				"pod", klog.KObj(pod), "oldPod", klog.KObj(oldPod))
			return framework.Queue, nil
		}
		_, oldPodAntiTerms, err := requiredTerms(oldPod)
		if err != nil {
			return framework.Queue, err
		}
		if podMatchesAnyTerm(oldPodAntiTerms, pod) {
			logger.V(5).Info("The pod matched the deleted pod's anti-affinity; it may be schedulable",
				"pod", klog.KObj(pod), "oldPod", klog.KObj(oldPod))
			return framework.Queue, nil
		}
		logger.V(5).Info("Deleted pod and the pod did not repel each other",
			"pod", klog.KObj(pod), "oldPod", klog.KObj(oldPod))
		return framework.QueueSkip, nil
	}
	return framework.Queue, fmt.Errorf("pod event without a pod")
}

// isSchedulableAfterTargetPodUpdateLabel queues the pod on any change of its
// own labels: an existing pod's anti-affinity may have selected the old ones.
func (pl *InterPodAffinity) isSchedulableAfterTargetPodUpdateLabel(logger klog.Logger, pod *v1.Pod,
	_, _ interface{}) (framework.QueueingHint, error) {
	logger.V(5).Info("The pod's labels changed; it may be schedulable", "pod", klog.KObj(pod))
	return framework.Queue, nil
}

// isSchedulableAfterNodeChange decides on a node's add (oldObj nil) or label
// update. For any of the pod's affinity terms, it queues the pod when the
// node is added with the term's topology label, gains that label, or moves
// to another value of it. For any anti-affinity term, it queues the pod on
// every add (a node without the label always admits the pod, and which pods
// share a new node's domain is beyond a hint), or when the node loses the
// label or moves to another value of it.
func (pl *InterPodAffinity) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := helper.NodesOfEvent(oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	terms, antiTerms, err := requiredTerms(pod)
	if err != nil {
		return framework.Queue, err
	}

	for _, t := range terms {
		newValue, newHas := newNode.Labels[t.TopologyKey]
		if oldNode == nil {
			if newHas {
				logger.V(5).Info("Added node has a topology key of the pod's affinity; it may make the pod schedulable",
					"pod", klog.KObj(pod), "node", klog.KObj(newNode))
				return framework.Queue, nil
			}
			continue
		}
		oldValue, oldHas := oldNode.Labels[t.TopologyKey]
		if !oldHas && newHas {
			logger.V(5).Info("Node gained a topology key of the pod's affinity; it may make the pod schedulable",
				"pod", klog.KObj(pod), "node", klog.KObj(newNode))
			return framework.Queue, nil
		}
		if oldHas && newHas && oldValue != newValue {
			logger.V(5).Info("Node moved to another domain of the pod's affinity; it may make the pod schedulable",
				"pod", klog.KObj(pod), "node", klog.KObj(newNode))
			return framework.Queue, nil
		}
	}

	for _, t := range antiTerms {
		if oldNode == nil {
			logger.V(5).Info("Node was added; it may make the pod with anti-affinity schedulable",
				"pod", klog.KObj(pod), "node", klog.KObj(newNode))
			return framework.Queue, nil
		}
		oldValue, oldHas := oldNode.Labels[t.TopologyKey]
		newValue, newHas := newNode.Labels[t.TopologyKey]
		// Gaining the label cannot help: without it the node already
		// admitted the pod as far as this term goes.
		if oldHas && !newHas {
			logger.V(5).Info("Node lost a topology key of the pod's anti-affinity; it may make the pod schedulable",
				"pod", klog.KObj(pod), "node", klog.KObj(newNode))
			return framework.Queue, nil
		}
		if oldHas && newHas && oldValue != newValue {
			logger.V(5).Info("Node moved to another domain of the pod's anti-affinity; it may make the pod schedulable",
				"pod", klog.KObj(pod), "node", klog.KObj(newNode))
			return framework.Queue, nil
		}
	}
	logger.V(5).Info("Node change touches no topology key of the pod's affinity or anti-affinity",
		"pod", klog.KObj(pod), "node", klog.KObj(newNode))
	return framework.QueueSkip, nil
}
