// This file says which cluster events may let a gang's member that
// GangScheduling held back go on, and decides per pod with queueing hints.

package gangscheduling

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// EventsToRegister lists what can complete a gang, as kube-scheduler does:
//   - a pod of the same group added, pending or already bound (the queue
//     sends the pending pod's add only with GenericWorkload); no pod update
//     is listed, as spec.schedulingGroup is immutable;
//   - the group's PodGroup added (its members wait for it);
//   - the group's PodGroup updated with a lower gang minCount.
func (pl *GangScheduling) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.UnscheduledPod, ActionType: framework.Add},
			QueueingHintFn: isSchedulableAfterPodAdded},
		{Event: framework.ClusterEvent{Resource: framework.Pod, ActionType: framework.Add},
			QueueingHintFn: isSchedulableAfterPodAdded},
		{Event: framework.ClusterEvent{Resource: framework.PodGroup, ActionType: framework.Add},
			QueueingHintFn: isSchedulableAfterPodGroupAdded},
		{Event: framework.ClusterEvent{Resource: framework.PodGroup, ActionType: framework.Update},
			QueueingHintFn: isSchedulableAfterPodGroupUpdated},
	}, nil
}

// inGroup reports whether pod is a member of the pod group namespace/name.
func inGroup(pod *v1.Pod, namespace, name string) bool {
	podGroupName, ok := framework.PodGroupName(pod)
	return ok && framework.PodGroupKey(pod.Namespace, podGroupName) == framework.PodGroupKey(namespace, name)
}

// isSchedulableAfterPodAdded queues the pod when the added pod (pending or
// bound) is a member of its group: it may be the one that brings the gang
// to minCount.
func isSchedulableAfterPodAdded(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	_, addedPod, err := framework.As[*v1.Pod](oldObj, newObj)
	if err == nil && addedPod == nil {
		err = fmt.Errorf("pod add event without the added pod")
	}
	if err != nil {
		return framework.Queue, err
	}
	addedGroup, ok := framework.PodGroupName(addedPod)
	if !ok || !inGroup(pod, addedPod.Namespace, addedGroup) {
		return framework.QueueSkip, nil
	}
	logger.V(5).Info("A pod of the same pod group was added; the gang may be complete now",
		"pod", klog.KObj(pod), "addedPod", klog.KObj(addedPod))
	return framework.Queue, nil
}

// isSchedulableAfterPodGroupAdded queues the pod when the added PodGroup is
// its group's.
func isSchedulableAfterPodGroupAdded(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	_, added, err := framework.As[*schedulingv1beta1.PodGroup](oldObj, newObj)
	if err == nil && added == nil {
		err = fmt.Errorf("pod group add event without the added pod group")
	}
	if err != nil {
		return framework.Queue, err
	}
	if !inGroup(pod, added.Namespace, added.Name) {
		return framework.QueueSkip, nil
	}
	logger.V(5).Info("The pod's pod group was added", "pod", klog.KObj(pod), "podGroup", klog.KObj(added))
	return framework.Queue, nil
}

// isSchedulableAfterPodGroupUpdated queues the pod when its group's gang
// minCount went down: fewer members may now be enough. The policy's kind
// cannot change, and nothing else of a PodGroup counts here.
func isSchedulableAfterPodGroupUpdated(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldPodGroup, newPodGroup, err := framework.As[*schedulingv1beta1.PodGroup](oldObj, newObj)
	if err == nil && (oldPodGroup == nil || newPodGroup == nil) {
		err = fmt.Errorf("pod group update event without the old or the new pod group")
	}
	if err != nil {
		return framework.Queue, err
	}
	if !inGroup(pod, newPodGroup.Namespace, newPodGroup.Name) {
		return framework.QueueSkip, nil
	}
	oldGang, newGang := oldPodGroup.Spec.SchedulingPolicy.Gang, newPodGroup.Spec.SchedulingPolicy.Gang
	if oldGang == nil || newGang == nil {
		return framework.QueueSkip, nil
	}
	if newGang.MinCount >= oldGang.MinCount {
		logger.V(5).Info("PodGroup minCount did not decrease, skipping", "pod", klog.KObj(pod),
			"podGroup", klog.KObj(newPodGroup), "oldMinCount", oldGang.MinCount, "newMinCount", newGang.MinCount)
		return framework.QueueSkip, nil
	}
	logger.V(5).Info("pod group was updated and minCount decreased, enqueuing pod", "pod", klog.KObj(pod),
		"podGroup", klog.KObj(newPodGroup), "oldMinCount", oldGang.MinCount, "newMinCount", newGang.MinCount)
	return framework.Queue, nil
}
