// This file says which cluster events may let a pod that NodeResourcesFit
// rejected fit after all, and decides per pod with queueing hints.

package noderesources

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/helper"
)

// EventsToRegister lists what can free or add room:
//   - an assigned pod deleted or scaled down (its requests went down);
//   - the rejected pod itself scaled down;
//   - a node added, or its allocatable changed;
//   - a DeviceClass added or updated: it may now back an extended resource
//     the pod requests, which Filter then leaves to DynamicResources.
func (pl *Fit) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.Pod, ActionType: framework.Delete | framework.UpdatePodScaleDown},
			QueueingHintFn: pl.isSchedulableAfterPodEvent},
		{Event: framework.ClusterEvent{Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodScaleDown},
			QueueingHintFn: isSchedulableAfterTargetPodScaleDown},
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeAllocatable},
			QueueingHintFn: pl.isSchedulableAfterNodeChange},
		{Event: framework.ClusterEvent{Resource: framework.DeviceClass, ActionType: framework.Add | framework.Update},
			QueueingHintFn: isSchedulableAfterDeviceClassEvent},
	}, nil
}

// isSchedulableAfterPodEvent handles an assigned pod's deletion (newObj nil)
// or scale-down.
//
// A deletion queues the pod if the deleted pod was on a node (or nominated
// to one): besides its requests, it frees a pod slot, which every pod needs,
// so kube-scheduler does not look further. A scale-down queues the pod only
// if a resource the pod requests went down on an assigned pod.
func (pl *Fit) isSchedulableAfterPodEvent(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldPod, newPod, err := framework.As[*v1.Pod](oldObj, newObj)
	if err == nil && oldPod == nil {
		err = fmt.Errorf("assigned pod event without the old pod")
	}
	if err != nil {
		return framework.Queue, err
	}
	if newPod == nil {
		if oldPod.Spec.NodeName == "" && oldPod.Status.NominatedNodeName == "" {
			logger.V(5).Info("Deleted pod was not on a node; it frees nothing",
				"pod", klog.KObj(pod), "deletedPod", klog.KObj(oldPod))
			return framework.QueueSkip, nil
		}
		logger.V(5).Info("Pod on a node was deleted; the pod may fit now",
			"pod", klog.KObj(pod), "deletedPod", klog.KObj(oldPod))
		return framework.Queue, nil
	}

	if newPod.Spec.NodeName == "" {
		logger.V(5).Info("Scaled-down pod is not on a node; it frees nothing",
			"pod", klog.KObj(pod), "modifiedPod", klog.KObj(newPod))
		return framework.QueueSkip, nil
	}
	if !requestedResourcesDecreased(pod, oldPod, newPod) {
		logger.V(5).Info("Pod was scaled down, but not in a resource this pod requests",
			"pod", klog.KObj(pod), "modifiedPod", klog.KObj(newPod))
		return framework.QueueSkip, nil
	}
	logger.V(5).Info("Pod on a node was scaled down; the pod may fit now",
		"pod", klog.KObj(pod), "modifiedPod", klog.KObj(newPod))
	return framework.Queue, nil
}

// requestedResourcesDecreased reports whether, from oldPod to newPod, the
// requests went down for some resource target requests.
func requestedResourcesDecreased(target, oldPod, newPod *v1.Pod) bool {
	want := framework.PodRequests(target)
	before, after := framework.PodRequests(oldPod), framework.PodRequests(newPod)
	if (want.MilliCPU > 0 && after.MilliCPU < before.MilliCPU) ||
		(want.Memory > 0 && after.Memory < before.Memory) ||
		(want.EphemeralStorage > 0 && after.EphemeralStorage < before.EphemeralStorage) {
		return true
	}
	for name, q := range want.ScalarResources {
		if q > 0 && after.ScalarResources[name] < before.ScalarResources[name] {
			return true
		}
	}
	return false
}

// isSchedulableAfterTargetPodScaleDown queues the pod when its own requests
// went down: it may fit where it did not.
func isSchedulableAfterTargetPodScaleDown(logger klog.Logger, pod *v1.Pod,
	_, _ interface{}) (framework.QueueingHint, error) {
	logger.V(5).Info("Pod was scaled down; it may fit now", "pod", klog.KObj(pod))
	return framework.Queue, nil
}

// isSchedulableAfterNodeChange queues the pod when the added or updated node
// could hold it were it empty (the event carries only the node object, not
// its pods) and, for an update, when the node gained allocatable in a
// resource the pod requests or in pod slots, or when it has none of a
// requested resource that a DeviceClass backs (DynamicResources may serve
// it there).
func (pl *Fit) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := helper.NodesOfEvent(oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	podRequest := framework.PodRequests(pod)
	if !pl.fitsEmptyNode(&podRequest, newNode) {
		logger.V(5).Info("Node was added or updated, but cannot hold the pod even empty",
			"pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return framework.QueueSkip, nil
	}
	if oldNode == nil {
		logger.V(5).Info("Node was added and may hold the pod", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return framework.Queue, nil
	}
	if !requestedAllocatableIncreased(&podRequest, oldNode, newNode, pl.draManager) {
		logger.V(5).Info("Node was updated, but gained nothing the pod requests",
			"pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return framework.QueueSkip, nil
	}
	logger.V(5).Info("Node gained allocatable the pod requests; it may hold the pod now",
		"pod", klog.KObj(pod), "node", klog.KObj(newNode))
	return framework.Queue, nil
}

// fitsEmptyNode reports whether podRequest fits node with no pods on it.
// Unlike Filter, it checks ignored resources too: kube-scheduler's hint asks
// its exported Fits, which knows no ignore lists, so a pod requesting an
// ignored resource the node lacks is not queued by this node's event.
func (pl *Fit) fitsEmptyNode(podRequest *framework.Resource, node *v1.Node) bool {
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	return len(fitsRequest(podRequest, ni, nil, nil, pl.draManager)) == 0
}

// requestedAllocatableIncreased reports whether newNode has more pod slots
// than oldNode, or more allocatable of a resource podRequest asks for, or
// none of a requested resource that a DeviceClass of draManager backs.
// kube-scheduler counts the last as an increase whatever oldNode had, so
// any allocatable update of such a node queues the pod.
func requestedAllocatableIncreased(podRequest *framework.Resource, oldNode, newNode *v1.Node,
	draManager framework.SharedDRAManager) bool {
	before, after := framework.NewResource(oldNode.Status.Allocatable), framework.NewResource(newNode.Status.Allocatable)
	if after.AllowedPodNumber > before.AllowedPodNumber {
		return true
	}
	if (podRequest.MilliCPU > 0 && after.MilliCPU > before.MilliCPU) ||
		(podRequest.Memory > 0 && after.Memory > before.Memory) ||
		(podRequest.EphemeralStorage > 0 && after.EphemeralStorage > before.EphemeralStorage) {
		return true
	}
	for name, q := range podRequest.ScalarResources {
		if q > 0 && (after.ScalarResources[name] > before.ScalarResources[name] ||
			shouldDelegateResourceToDRA(name, after.ScalarResources[name], draManager)) {
			return true
		}
	}
	return false
}

// isSchedulableAfterDeviceClassEvent queues the pod when an added or updated
// DeviceClass may now back an extended resource the pod requests: an added
// class whose implicit name (deviceclass.resource.kubernetes.io/<class>)
// the pod requests, or a class whose spec.extendedResourceName the pod
// requests and that is new or changed it. An update that keeps the name
// changes nothing Fit decides (a class's name never changes).
func isSchedulableAfterDeviceClassEvent(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldClass, newClass, err := framework.As[*resourceapi.DeviceClass](oldObj, newObj)
	if err == nil && newClass == nil {
		err = fmt.Errorf("device class event without a new class")
	}
	if err != nil {
		return framework.Queue, err
	}
	// Requested names, with or without a quantity, as kube-scheduler reads
	// them: the pod's requests without status or feature options.
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	if oldClass != nil {
		if ptr.Deref(oldClass.Spec.ExtendedResourceName, "") == ptr.Deref(newClass.Spec.ExtendedResourceName, "") {
			logger.V(5).Info("Device class kept its extended resource name", "pod", klog.KObj(pod),
				"deviceClass", klog.KObj(newClass))
			return framework.QueueSkip, nil
		}
	} else if _, ok := requests[v1.ResourceName(resourceapi.ResourceDeviceClassPrefix+newClass.Name)]; ok {
		logger.V(5).Info("Device class was added and backs the pod's implicit extended resource",
			"pod", klog.KObj(pod), "deviceClass", klog.KObj(newClass))
		return framework.Queue, nil
	}
	if newClass.Spec.ExtendedResourceName != nil {
		if _, ok := requests[v1.ResourceName(*newClass.Spec.ExtendedResourceName)]; ok {
			logger.V(5).Info("Device class was added or updated and backs an extended resource the pod requests",
				"pod", klog.KObj(pod), "deviceClass", klog.KObj(newClass))
			return framework.Queue, nil
		}
	}
	logger.V(5).Info("Device class backs no extended resource the pod requests",
		"pod", klog.KObj(pod), "deviceClass", klog.KObj(newClass))
	return framework.QueueSkip, nil
}
