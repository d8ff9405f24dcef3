// EnqueueExtensions: the cluster events that may make a pod this plugin
// rejected schedulable, and the hints that pick the pods they help.

package dynamicresources

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// EventsToRegister returns kube-scheduler's registrations:
//
//   - a node added, or its labels or allocatable changed: a claim's
//     allocation or a device may select nodes by label;
//   - a claim added, updated or deleted (isSchedulableAfterClaimChange);
//   - the pod's generated claims named in its status
//     (isSchedulableAfterTargetPodUpdate);
//   - a DeviceClass added or updated: a missing class may now exist;
//   - a ResourceSlice added or updated (DeviceTaintRule changes arrive as
//     slice updates): new devices, or devices untainted. A deleted slice
//     frees nothing, so it is not registered.
func (pl *DynamicResources) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.Node,
			ActionType: framework.Add | framework.UpdateNodeLabel | framework.UpdateNodeAllocatable}},
		{Event: framework.ClusterEvent{Resource: framework.ResourceClaim,
			ActionType: framework.Add | framework.Update | framework.Delete},
			QueueingHintFn: pl.isSchedulableAfterClaimChange},
		{Event: framework.ClusterEvent{Resource: framework.UnscheduledPod,
			ActionType: framework.UpdatePodGeneratedResourceClaim},
			QueueingHintFn: pl.isSchedulableAfterTargetPodUpdate},
		{Event: framework.ClusterEvent{Resource: framework.DeviceClass, ActionType: framework.Add | framework.Update}},
		{Event: framework.ClusterEvent{Resource: framework.ResourceSlice, ActionType: framework.Add | framework.Update}},
	}, nil
}

// isSchedulableAfterClaimChange answers for a claim event, erring on the
// side of another attempt:
//
//  1. A claim deleted: Queue only if it was allocated (its devices are
//     free). The assume cache delivers every allocation, the scheduler's
//     own included, so a deallocation is never merged away unseen.
//  2. The pod's claims still do not all resolve: QueueSkip.
//  3. Any claim deallocated: Queue, its devices may serve this pod.
//  4. Not one of the pod's claims: QueueSkip.
//  5. The pod's claim created: Queue.
//  6. The pod's claim changed but not its status (a finalizer, say):
//     QueueSkip; a status change: Queue.
func (pl *DynamicResources) isSchedulableAfterClaimChange(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	originalClaim, modifiedClaim, err := framework.As[*resourceapi.ResourceClaim](oldObj, newObj)
	if err != nil {
		return framework.Queue, fmt.Errorf("unexpected object in isSchedulableAfterClaimChange: %w", err)
	}
	// 1.
	if modifiedClaim == nil {
		if originalClaim.Status.Allocation == nil {
			logger.V(6).Info("Claim with structured parameters got deleted, had no allocation")
			return framework.QueueSkip, nil
		}
		logger.V(6).Info("Claim with structured parameters got deleted, had an allocation")
		return framework.Queue, nil
	}
	// 2.
	usesClaim := false
	if err := pl.foreachPodResourceClaim(pod, func(claim *resourceapi.ResourceClaim) {
		if claim.UID == modifiedClaim.UID {
			usesClaim = true
		}
	}); err != nil {
		logger.V(6).Info("Pod is not schedulable after resource claim change", "pod", klog.KObj(pod),
			"claim", klog.KObj(modifiedClaim), "reason", err.Error())
		return framework.QueueSkip, nil
	}
	// 3.
	if originalClaim != nil && originalClaim.Status.Allocation != nil && modifiedClaim.Status.Allocation == nil {
		logger.V(6).Info("Claim with structured parameters got deallocated", "pod", klog.KObj(pod), "claim", klog.KObj(modifiedClaim))
		return framework.Queue, nil
	}
	// 4.
	if !usesClaim {
		logger.V(6).Info("Unrelated claim got modified", "pod", klog.KObj(pod), "claim", klog.KObj(modifiedClaim))
		return framework.QueueSkip, nil
	}
	// 5.
	if originalClaim == nil {
		logger.V(5).Info("Claim for pod got created", "pod", klog.KObj(pod), "claim", klog.KObj(modifiedClaim))
		return framework.Queue, nil
	}
	// 6.
	if apiequality.Semantic.DeepEqual(&originalClaim.Status, &modifiedClaim.Status) {
		logger.V(6).Info("Claim for pod got modified where the pod doesn't care", "pod", klog.KObj(pod), "claim", klog.KObj(modifiedClaim))
		return framework.QueueSkip, nil
	}
	logger.V(5).Info("Status of claim for pod got updated", "pod", klog.KObj(pod), "claim", klog.KObj(modifiedClaim))
	return framework.Queue, nil
}

// isSchedulableAfterTargetPodUpdate answers for the pod's own update that
// named its generated claims: Queue once all its claims resolve.
func (pl *DynamicResources) isSchedulableAfterTargetPodUpdate(logger klog.Logger, pod *v1.Pod,
	_, newObj interface{}) (framework.QueueingHint, error) {
	_, modifiedPod, err := framework.As[*v1.Pod](nil, newObj)
	if err != nil {
		return framework.Queue, fmt.Errorf("unexpected object in isSchedulableAfterTargetPodUpdate: %w", err)
	}
	if err := pl.foreachPodResourceClaim(modifiedPod, nil); err != nil {
		logger.V(6).Info("Pod is not schedulable after being updated", "pod", klog.KObj(pod))
		return framework.QueueSkip, nil
	}
	logger.V(5).Info("Pod got updated and is schedulable", "pod", klog.KObj(pod))
	return framework.Queue, nil
}
