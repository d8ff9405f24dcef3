// This file says which cluster events may let a pod that TaintToleration
// rejected fit after all, and decides per pod with queueing hints.

package tainttoleration

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/helper"
)

// EventsToRegister lists what can lift a taint rejection: a node added, or
// its taints changed (kube-scheduler's UpdateNodeTaint, which also covers
// spec.unschedulable, so minisched registers UpdateNodeUnschedulable too),
// and the rejected pod's own tolerations changing.
func (pl *TaintToleration) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{
			Event: framework.ClusterEvent{Resource: framework.Node,
				ActionType: framework.Add | framework.UpdateNodeTaint | framework.UpdateNodeUnschedulable},
			QueueingHintFn: isSchedulableAfterNodeChange,
		},
		{
			Event: framework.ClusterEvent{Resource: framework.UnscheduledPod,
				ActionType: framework.UpdatePodToleration},
			QueueingHintFn: isSchedulableAfterPodTolerationChange,
		},
	}, nil
}

// isSchedulableAfterNodeChange queues the pod when the event turns a node
// this plugin would reject into one it accepts: an added node whose taints
// the pod tolerates, or an updated node that had an untolerated
// NoSchedule/NoExecute taint before and has none now.
func isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := helper.NodesOfEvent(oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	// An added node counts as one that rejected the pod before.
	wasRejected := true
	if oldNode != nil {
		_, wasRejected = untoleratedTaint(logger, oldNode.Spec.Taints, pod.Spec.Tolerations)
	}
	_, isRejected := untoleratedTaint(logger, newNode.Spec.Taints, pod.Spec.Tolerations)
	if wasRejected && !isRejected {
		logger.V(5).Info("Node was added or updated and has no taint the pod does not tolerate; the pod may fit now",
			"pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return framework.Queue, nil
	}
	logger.V(5).Info("Node was added or updated, but TaintToleration's decision for the pod is unchanged",
		"pod", klog.KObj(pod), "node", klog.KObj(newNode))
	return framework.QueueSkip, nil
}

// isSchedulableAfterPodTolerationChange always queues the pod: its
// tolerations changed, and which node's taints they now tolerate is for the
// next attempt to find out, as in kube-scheduler.
func isSchedulableAfterPodTolerationChange(logger klog.Logger, pod *v1.Pod,
	_, _ interface{}) (framework.QueueingHint, error) {
	logger.V(5).Info("Pod's tolerations changed; it may fit now", "pod", klog.KObj(pod))
	return framework.Queue, nil
}
