// This file says which cluster events may let a pod that PodTopologySpread
// rejected fit after all, and decides per pod with queueing hints. The hints
// look at the pod's DoNotSchedule constraints (or the default ones), since
// only those reject.

package podtopologyspread

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// EventsToRegister lists what kube-scheduler registers for this plugin:
//   - an assigned pod added, deleted, or relabelled: the counts per domain
//     change;
//   - the rejected pod itself relabelled (its selectors and self-match
//     change) or given new tolerations (with nodeTaintsPolicy Honor, more
//     nodes count);
//   - a node added, deleted, relabelled or retainted: domains appear,
//     vanish or move. A cordon change is registered with the taint change,
//     since kube-scheduler reports both as UpdateNodeTaint.
func (pl *PodTopologySpread) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{
			Event: framework.ClusterEvent{Resource: framework.Pod,
				ActionType: framework.Add | framework.UpdatePodLabel | framework.Delete},
			QueueingHintFn: pl.isSchedulableAfterAssignedPodChange,
		},
		{
			Event: framework.ClusterEvent{Resource: framework.UnscheduledPod,
				ActionType: framework.UpdatePodToleration | framework.UpdatePodLabel},
			QueueingHintFn: pl.isSchedulableAfterTargetPodChange,
		},
		{
			Event: framework.ClusterEvent{Resource: framework.Node,
				ActionType: framework.Add | framework.Delete | framework.UpdateNodeLabel | framework.UpdateNodeTaint |
					framework.UpdateNodeUnschedulable},
			QueueingHintFn: pl.isSchedulableAfterNodeChange,
		},
	}, nil
}

// involvedInSpreading reports whether other (an event's pod) can count for
// pod's constraints: it must be on a node (or nominated to one) and in pod's
// namespace.
func involvedInSpreading(other, pod *v1.Pod) bool {
	if other.Spec.NodeName == "" && other.Status.NominatedNodeName == "" {
		return false
	}
	return other.Namespace == pod.Namespace
}

// isSchedulableAfterAssignedPodChange queues the pod when an assigned pod of
// its namespace that its constraints select was added or deleted, or was
// relabelled so that some constraint selects it where it did not, or the
// other way round.
func (pl *PodTopologySpread) isSchedulableAfterAssignedPodChange(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldPod, newPod, err := framework.As[*v1.Pod](oldObj, newObj)
	if err == nil && oldPod == nil && newPod == nil {
		err = fmt.Errorf("pod event without a pod")
	}
	if err != nil {
		return framework.Queue, err
	}
	if (newPod != nil && !involvedInSpreading(newPod, pod)) || (oldPod != nil && !involvedInSpreading(oldPod, pod)) {
		logger.V(5).Info("The added, updated or deleted pod is not on a node or is in another namespace; "+
			"it cannot change the spreading",
			"pod", klog.KObj(pod), "otherPod", klog.KObj(firstNonNil(newPod, oldPod)))
		return framework.QueueSkip, nil
	}
	cs, err := pl.constraintsOf(pod, v1.DoNotSchedule)
	if err != nil {
		return framework.Queue, err
	}
	switch {
	case oldPod != nil && newPod != nil:
		return labelChangeHint(logger, pod, oldPod, newPod, cs), nil
	case newPod != nil:
		if anySelectorMatches(cs, labels.Set(newPod.Labels)) {
			logger.V(5).Info("An assigned pod matching the topology spread constraints was added; the pod may fit now",
				"pod", klog.KObj(pod), "addedPod", klog.KObj(newPod))
			return framework.Queue, nil
		}
		logger.V(5).Info("An assigned pod was added, but the topology spread constraints do not select it",
			"pod", klog.KObj(pod), "addedPod", klog.KObj(newPod))
		return framework.QueueSkip, nil
	default:
		if anySelectorMatches(cs, labels.Set(oldPod.Labels)) {
			logger.V(5).Info("An assigned pod matching the topology spread constraints was deleted; the pod may fit now",
				"pod", klog.KObj(pod), "deletedPod", klog.KObj(oldPod))
			return framework.Queue, nil
		}
		logger.V(5).Info("An assigned pod was deleted, but the topology spread constraints do not select it",
			"pod", klog.KObj(pod), "deletedPod", klog.KObj(oldPod))
		return framework.QueueSkip, nil
	}
}

// isSchedulableAfterTargetPodChange queues the pod when it got new
// tolerations and some constraint honours taints, or when its labels changed
// so that some constraint's selector matches it where it did not, or the
// other way round (its own match counts towards the skew).
func (pl *PodTopologySpread) isSchedulableAfterTargetPodChange(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldPod, newPod, err := framework.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	cs, err := pl.constraintsOf(pod, v1.DoNotSchedule)
	if err != nil {
		return framework.Queue, err
	}
	if oldPod == nil || newPod == nil {
		// Not an update: nothing to compare, so retry to be safe.
		return framework.Queue, nil
	}
	if !equality.Semantic.DeepEqual(oldPod.Spec.Tolerations, newPod.Spec.Tolerations) && anyHonorsTaints(cs) {
		logger.V(5).Info("The pod got new tolerations and a topology spread constraint honours taints; it may fit now",
			"pod", klog.KObj(pod))
		return framework.Queue, nil
	}
	return labelChangeHint(logger, pod, oldPod, newPod, cs), nil
}

// anyHonorsTaints reports whether some constraint has nodeTaintsPolicy Honor.
func anyHonorsTaints(cs []constraint) bool {
	for _, c := range cs {
		if c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor {
			return true
		}
	}
	return false
}

// labelChangeHint queues the pod when the update of changed (an assigned pod,
// or the pod itself) flips whether some constraint's selector matches it.
func labelChangeHint(logger klog.Logger, pod, oldPod, newPod *v1.Pod, cs []constraint) framework.QueueingHint {
	if equality.Semantic.DeepEqual(oldPod.Labels, newPod.Labels) {
		logger.V(5).Info("The pod update does not change labels; it cannot change the spreading",
			"pod", klog.KObj(pod), "updatedPod", klog.KObj(newPod))
		return framework.QueueSkip
	}
	oldLabels, newLabels := labels.Set(oldPod.Labels), labels.Set(newPod.Labels)
	for _, c := range cs {
		if c.Selector.Matches(oldLabels) != c.Selector.Matches(newLabels) {
			logger.V(5).Info("A label change makes a pod match or stop matching a topology spread constraint; "+
				"the pod may fit now", "pod", klog.KObj(pod), "updatedPod", klog.KObj(newPod))
			return framework.Queue
		}
	}
	logger.V(5).Info("A label change does not affect the topology spread constraints",
		"pod", klog.KObj(pod), "updatedPod", klog.KObj(newPod))
	return framework.QueueSkip
}

// isSchedulableAfterNodeChange queues the pod when
//   - an added node, or a deleted one, carries every constraint's topology
//     key;
//   - an update makes the node gain or lose one of the keys;
//   - an updated node with every key changed a key's value or its taints.
func (pl *PodTopologySpread) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := framework.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	cs, err := pl.constraintsOf(pod, v1.DoNotSchedule)
	if err != nil {
		return framework.Queue, err
	}
	var oldMatches, newMatches bool
	if oldNode != nil {
		oldMatches = nodeHasAllTopologyKeys(oldNode.Labels, cs)
	}
	if newNode != nil {
		newMatches = nodeHasAllTopologyKeys(newNode.Labels, cs)
	}

	switch {
	case oldNode != nil && newNode != nil:
		if oldMatches != newMatches {
			logger.V(5).Info("The node gained or lost a topology key of the pod's constraints; the pod may fit now",
				"pod", klog.KObj(pod), "node", klog.KObj(newNode), "oldMatching", oldMatches, "newMatching", newMatches)
			return framework.Queue, nil
		}
		if newMatches &&
			(topologyValuesChanged(oldNode.Labels, newNode.Labels, cs) ||
				!equality.Semantic.DeepEqual(oldNode.Spec.Taints, newNode.Spec.Taints)) {
			logger.V(5).Info("The node changed a topology value or its taints; the pod may fit now",
				"pod", klog.KObj(pod), "node", klog.KObj(newNode))
			return framework.Queue, nil
		}
		logger.V(5).Info("The node update does not affect the pod's topology spread constraints",
			"pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return framework.QueueSkip, nil
	case newNode != nil:
		if !newMatches {
			logger.V(5).Info("The added node lacks a topology key of the pod's constraints",
				"pod", klog.KObj(pod), "node", klog.KObj(newNode))
			return framework.QueueSkip, nil
		}
		logger.V(5).Info("The added node carries the pod's topology keys; the pod may fit now",
			"pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return framework.Queue, nil
	case oldNode != nil:
		if !oldMatches {
			logger.V(5).Info("The deleted node lacked a topology key of the pod's constraints",
				"pod", klog.KObj(pod), "node", klog.KObj(oldNode))
			return framework.QueueSkip, nil
		}
		logger.V(5).Info("The deleted node carried the pod's topology keys; the pod may fit now",
			"pod", klog.KObj(pod), "node", klog.KObj(oldNode))
		return framework.Queue, nil
	}
	// No node at all: nothing to judge, retry to be safe.
	return framework.Queue, nil
}

// topologyValuesChanged reports whether any constraint's topology key has a
// different value (or presence) in the two label sets.
func topologyValuesChanged(oldLabels, newLabels map[string]string, cs []constraint) bool {
	for _, c := range cs {
		if oldLabels[c.TopologyKey] != newLabels[c.TopologyKey] {
			return true
		}
	}
	return false
}

// firstNonNil returns a if it is not nil, else b; for logging.
func firstNonNil(a, b *v1.Pod) *v1.Pod {
	if a != nil {
		return a
	}
	return b
}
