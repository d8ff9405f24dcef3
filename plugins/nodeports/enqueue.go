// This file says which cluster events may let a pod that NodePorts rejected
// fit after all, and decides per pod with a queueing hint.

package nodeports

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// EventsToRegister lists what can free a host port: an assigned pod deleted,
// or a node added. Pod updates are not registered, as in kube-scheduler: a
// container's ports cannot change once the pod exists. The node event has no
// hint, so it always queues the pod: a new node has no ports in use.
func (pl *NodePorts) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.Pod, ActionType: framework.Delete},
			QueueingHintFn: isSchedulableAfterPodDeleted},
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}},
	}, nil
}

// isSchedulableAfterPodDeleted queues the pod when the deleted pod was on a
// node (or nominated to one) and held a host port that clashes with one the
// pod wants; deleting any other pod frees nothing the pod needs.
func isSchedulableAfterPodDeleted(logger klog.Logger, pod *v1.Pod,
	oldObj, _ interface{}) (framework.QueueingHint, error) {
	deleted, _, err := framework.As[*v1.Pod](oldObj, nil)
	if err == nil && deleted == nil {
		err = fmt.Errorf("pod deletion without the deleted pod")
	}
	if err != nil {
		return framework.Queue, err
	}
	if deleted.Spec.NodeName == "" && deleted.Status.NominatedNodeName == "" {
		logger.V(4).Info("Deleted pod was not on a node; it frees no port",
			"pod", klog.KObj(pod), "deletedPod", klog.KObj(deleted))
		return framework.QueueSkip, nil
	}
	freed := hostPorts(deleted)
	if len(freed) == 0 {
		logger.V(4).Info("Deleted pod held no host port", "pod", klog.KObj(pod), "deletedPod", klog.KObj(deleted))
		return framework.QueueSkip, nil
	}
	held := framework.HostPortInfo{}
	for _, p := range freed {
		held.Add(p.HostIP, string(p.Protocol), p.HostPort)
	}
	if _, clash := firstConflict(hostPorts(pod), held); !clash {
		logger.V(4).Info("Deleted pod held none of the pod's host ports",
			"pod", klog.KObj(pod), "deletedPod", klog.KObj(deleted))
		return framework.QueueSkip, nil
	}
	logger.V(4).Info("Deleted pod held a host port the pod wants; the pod may fit now",
		"pod", klog.KObj(pod), "deletedPod", klog.KObj(deleted))
	return framework.Queue, nil
}
