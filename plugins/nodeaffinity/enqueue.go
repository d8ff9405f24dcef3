// This file says which cluster events may let a pod that NodeAffinity
// rejected fit after all, and decides per pod with a queueing hint.

package nodeaffinity

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/helper"
)

// EventsToRegister lists what kube-scheduler registers: a node added, or a
// node's labels changed. Nothing else can make a node match: node names never
// change, and the apiserver lets a pod's node selector and affinity change
// only while the pod is still held by scheduling gates, before any attempt.
func (pl *NodeAffinity) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{
			Event: framework.ClusterEvent{Resource: framework.Node,
				ActionType: framework.Add | framework.UpdateNodeLabel},
			QueueingHintFn: pl.isSchedulableAfterNodeChange,
		},
	}, nil
}

// isSchedulableAfterNodeChange queues the pod when the added or updated node
// matches both the profile's addedAffinity and the pod's nodeSelector and
// required node affinity and, for an update, when the pod's own selector and
// affinity did not match the old node (the change made it match).
//
// As in kube-scheduler, the old node is compared against the pod's selector
// only, not against addedAffinity: an update that makes a node match
// addedAffinity, for a pod whose own selector matched all along, is skipped.
func (pl *NodeAffinity) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := helper.NodesOfEvent(oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}

	if pl.addedNodeSelector != nil && !pl.addedNodeSelector.Match(newNode) {
		logger.V(4).Info("Added or updated node does not match the scheduler-enforced node affinity; "+
			"the event cannot help the pod", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return framework.QueueSkip, nil
	}

	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	matches, err := required.Match(newNode)
	if err != nil {
		return framework.Queue, err
	}
	if !matches {
		logger.V(5).Info("Node was added or updated, but does not match the pod's node affinity/selector",
			"pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return framework.QueueSkip, nil
	}
	if oldNode == nil {
		logger.V(5).Info("Node was added and matches the pod's node affinity/selector",
			"pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return framework.Queue, nil
	}

	matched, err := required.Match(oldNode)
	if err != nil {
		return framework.Queue, err
	}
	if matched {
		logger.V(5).Info("Node was updated, but it matched the pod's node affinity/selector before too",
			"pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return framework.QueueSkip, nil
	}
	logger.V(5).Info("Node was updated and now matches the pod's node affinity/selector",
		"pod", klog.KObj(pod), "node", klog.KObj(newNode))
	return framework.Queue, nil
}
