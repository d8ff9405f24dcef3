// This file says which cluster events may let a pod that NodeDeclaredFeatures
// rejected fit after all, and decides per pod with queueing hints.

package nodedeclaredfeatures

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/helper"
)

// EventsToRegister lists what can undo a rejection:
//   - a node added, or a node whose declared features changed. kube-scheduler
//     has an update bit of its own for declared features; minisched's node
//     updates have none, so the plugin registers every node update and lets
//     the hint ignore those that leave the declared features alone;
//   - the pending pod itself changing what it requires.
func (pl *NodeDeclaredFeatures) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{
			Event:          framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.Update},
			QueueingHintFn: pl.isSchedulableAfterNodeChange,
		},
		{
			Event:          framework.ClusterEvent{Resource: framework.UnscheduledPod, ActionType: framework.Update},
			QueueingHintFn: pl.isSchedulableAfterTargetPodUpdate,
		},
	}, nil
}

// isSchedulableAfterNodeChange queues the pod when a node is added, or its
// declared features change, and the node now declares everything the pod
// requires. kube-scheduler queues on any such change; checking the new
// features against the pod as well only skips nodes this plugin would turn
// down again.
func (pl *NodeDeclaredFeatures) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := helper.NodesOfEvent(oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	// The API keeps the list sorted, so comparing the slices is enough.
	if oldNode != nil && slices.Equal(oldNode.Status.DeclaredFeatures, newNode.Status.DeclaredFeatures) {
		logger.V(5).Info("Node's declared features did not change", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return framework.QueueSkip, nil
	}
	reqs, err := pl.requirements(pod)
	if err != nil {
		return framework.Queue, err
	}
	ok, err := reqs.IsSubset(pl.nodeFeatures(newNode))
	if err != nil {
		return framework.Queue, err
	}
	if !ok {
		logger.V(5).Info("Node still lacks features the pod requires", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return framework.QueueSkip, nil
	}
	logger.V(4).Info("Node now declares every feature the pod requires", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
	return framework.Queue, nil
}

// isSchedulableAfterTargetPodUpdate queues the pod when its update changed
// the features it requires, as kube-scheduler does; any other change leaves
// this plugin's verdict as it was.
func (pl *NodeDeclaredFeatures) isSchedulableAfterTargetPodUpdate(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldPod, newPod, err := framework.As[*v1.Pod](oldObj, newObj)
	if err == nil && (oldPod == nil || newPod == nil) {
		err = fmt.Errorf("pod update without both the old and the new pod")
	}
	if err != nil {
		return framework.Queue, err
	}
	oldReqs, err := pl.requirements(oldPod)
	if err != nil {
		return framework.Queue, err
	}
	newReqs, err := pl.requirements(newPod)
	if err != nil {
		return framework.Queue, err
	}
	if newReqs.Equal(oldReqs) {
		logger.V(5).Info("Pod's required features did not change", "pod", klog.KObj(newPod))
		return framework.QueueSkip, nil
	}
	logger.V(4).Info("Pod's required features changed", "pod", klog.KObj(newPod))
	return framework.Queue, nil
}
