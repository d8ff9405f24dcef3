// This file says which cluster events may let a pod that VolumeRestrictions
// rejected fit after all, and decides per pod with queueing hints.

package volumerestrictions

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// EventsToRegister lists what can lift a rejection, as kube-scheduler does:
//   - an assigned pod deleted: it releases the disk or the claim it held.
//     Pod updates are not registered: spec.volumes cannot change;
//   - a node added, with no hint (always Queue): a new node has no disk in
//     use;
//   - a claim added: PreFilter needs the pod's claims to exist, to read
//     their access modes.
func (pl *VolumeRestrictions) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.Pod, ActionType: framework.Delete},
			QueueingHintFn: isSchedulableAfterAssignedPodDeleted},
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolumeClaim, ActionType: framework.Add},
			QueueingHintFn: isSchedulableAfterPersistentVolumeClaimAdded},
	}, nil
}

// isSchedulableAfterAssignedPodDeleted queues the pod when the deleted pod,
// of the same namespace, held one of its inline disks or names one of its
// claims. The claim's access mode is not looked up (too costly for a hint,
// kubernetes#124566), so deleting the user of any shared claim queues it.
//
// As in kube-scheduler, a deleted pod of another namespace is skipped at
// once, although Filter compares inline disks across namespaces: a pod
// rejected for such a disk waits for another event, or the flush of
// unschedulable pods.
func isSchedulableAfterAssignedPodDeleted(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	deleted, _, err := framework.As[*v1.Pod](oldObj, newObj)
	if err == nil && deleted == nil {
		err = fmt.Errorf("pod deletion without the deleted pod")
	}
	if err != nil {
		return framework.Queue, fmt.Errorf("assigned pod deletion: %w", err)
	}
	if deleted.Namespace != pod.Namespace {
		logger.V(5).Info("Deleted pod is in another namespace", "pod", klog.KObj(pod), "deletedPod", klog.KObj(deleted))
		return framework.QueueSkip, nil
	}
	if disksConflict(pod, deleted) {
		logger.V(5).Info("Deleted pod held an inline disk the pod wants; the pod may fit now",
			"pod", klog.KObj(pod), "deletedPod", klog.KObj(deleted))
		return framework.Queue, nil
	}
	if sharesClaim(pod, deleted) {
		logger.V(5).Info("Deleted pod used a claim the pod names; the claim may be free now",
			"pod", klog.KObj(pod), "deletedPod", klog.KObj(deleted))
		return framework.Queue, nil
	}
	logger.V(5).Info("Deleted pod held none of the pod's disks or claims",
		"pod", klog.KObj(pod), "deletedPod", klog.KObj(deleted))
	return framework.QueueSkip, nil
}

// sharesClaim reports whether a and b name a claim of the same name in
// spec.volumes (the caller has checked they share a namespace).
func sharesClaim(a, b *v1.Pod) bool {
	for _, va := range a.Spec.Volumes {
		if va.PersistentVolumeClaim == nil {
			continue
		}
		for _, vb := range b.Spec.Volumes {
			if vb.PersistentVolumeClaim != nil && vb.PersistentVolumeClaim.ClaimName == va.PersistentVolumeClaim.ClaimName {
				return true
			}
		}
	}
	return false
}

// isSchedulableAfterPersistentVolumeClaimAdded queues the pod when the new
// claim is one its volumes name: PreFilter may have rejected it for that
// claim's absence.
func isSchedulableAfterPersistentVolumeClaimAdded(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	_, pvc, err := framework.As[*v1.PersistentVolumeClaim](oldObj, newObj)
	if err == nil && pvc == nil {
		err = fmt.Errorf("claim event without the new claim")
	}
	if err != nil {
		return framework.Queue, fmt.Errorf("claim addition: %w", err)
	}
	if pvc.Namespace != pod.Namespace {
		logger.V(5).Info("Created claim is in another namespace", "pod", klog.KObj(pod), "PVC", klog.KObj(pvc))
		return framework.QueueSkip, nil
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name {
			logger.V(5).Info("A claim the pod names was created; the pod may pass PreFilter now",
				"pod", klog.KObj(pod), "PVC", klog.KObj(pvc))
			return framework.Queue, nil
		}
	}
	logger.V(5).Info("Created claim is not one the pod names",
		"pod", klog.KObj(pod), "PVC", klog.KObj(pvc))
	return framework.QueueSkip, nil
}
