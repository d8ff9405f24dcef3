// This file says which cluster events may let a pod that NodeVolumeLimits
// rejected fit after all, and decides per pod with queueing hints.

package nodevolumelimits

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/helper"
)

// EventsToRegister lists what can make room or make the pod countable, as
// kube-scheduler does: a CSINode added (no hint: a new CSINode can carry any
// driver and limit) or raising a limit; an assigned pod with volumes
// deleted; a claim of the pod created; a VolumeAttachment deleted.
func (pl *CSILimits) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.CSINode, ActionType: framework.Add}},
		{Event: framework.ClusterEvent{Resource: framework.CSINode, ActionType: framework.Update},
			QueueingHintFn: isSchedulableAfterCSINodeUpdated},
		{Event: framework.ClusterEvent{Resource: framework.Pod, ActionType: framework.Delete},
			QueueingHintFn: pl.isSchedulableAfterAssignedPodDeleted},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolumeClaim, ActionType: framework.Add},
			QueueingHintFn: isSchedulableAfterPVCAdded},
		{Event: framework.ClusterEvent{Resource: framework.VolumeAttachment, ActionType: framework.Delete},
			QueueingHintFn: pl.isSchedulableAfterVolumeAttachmentDeleted},
	}, nil
}

// isSchedulableAfterAssignedPodDeleted queues the pod when the deleted pod
// was on a node (or nominated to one) and had a volume that may have
// counted: a claim, an ephemeral volume or a migratable inline volume.
func (pl *CSILimits) isSchedulableAfterAssignedPodDeleted(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	deleted, _, err := framework.As[*v1.Pod](oldObj, newObj)
	if err == nil && deleted == nil {
		err = fmt.Errorf("pod deletion without the deleted pod")
	}
	if err != nil {
		return framework.Queue, fmt.Errorf("unexpected objects in isSchedulableAfterAssignedPodDeleted: %w", err)
	}
	if len(deleted.Spec.Volumes) == 0 {
		return framework.QueueSkip, nil
	}
	if deleted.Spec.NodeName == "" && deleted.Status.NominatedNodeName == "" {
		return framework.QueueSkip, nil
	}
	for i := range deleted.Spec.Volumes {
		vol := &deleted.Spec.Volumes[i]
		if vol.PersistentVolumeClaim != nil || vol.Ephemeral != nil || pl.translator.IsInlineMigratable(vol) {
			return framework.Queue, nil
		}
	}
	logger.V(5).Info("The deleted pod does not impact the scheduling of the unscheduled pod",
		"pod", klog.KObj(pod), "deletedPod", klog.KObj(deleted))
	return framework.QueueSkip, nil
}

// isSchedulableAfterPVCAdded queues the pod when the new claim is one it
// names, directly or as the claim of one of its ephemeral volumes: Filter
// rejected the pod because that claim was missing.
func isSchedulableAfterPVCAdded(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	_, added, err := framework.As[*v1.PersistentVolumeClaim](oldObj, newObj)
	if err == nil && added == nil {
		err = fmt.Errorf("PVC addition without the new PVC")
	}
	if err != nil {
		return framework.Queue, fmt.Errorf("unexpected objects in isSchedulableAfterPVCAdded: %w", err)
	}
	if helper.PodUsesClaim(pod, added) {
		logger.V(5).Info("PVC that is referred from the pod was created, which might make this pod schedulable",
			"pod", klog.KObj(pod), "PVC", klog.KObj(added))
		return framework.Queue, nil
	}
	logger.V(5).Info("PVC irrelevant to the Pod was created, which doesn't make this pod schedulable",
		"pod", klog.KObj(pod), "PVC", klog.KObj(added))
	return framework.QueueSkip, nil
}

// isSchedulableAfterVolumeAttachmentDeleted queues the pod when a detached
// volume may have been counted against it: always if the pod has a claim
// (its driver is not known without lookups), or if it has a migratable
// inline volume whose CSI driver is the attachment's attacher.
func (pl *CSILimits) isSchedulableAfterVolumeAttachmentDeleted(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	deleted, _, err := framework.As[*storagev1.VolumeAttachment](oldObj, newObj)
	if err == nil && deleted == nil {
		err = fmt.Errorf("VolumeAttachment deletion without the deleted VolumeAttachment")
	}
	if err != nil {
		return framework.Queue, fmt.Errorf("unexpected objects in isSchedulableAfterVolumeAttachmentDeleted: %w", err)
	}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.PersistentVolumeClaim != nil {
			logger.V(5).Info("Pod volume uses PersistentVolumeClaim, which might make this pod schedulable due to VolumeAttachment deletion",
				"pod", klog.KObj(pod), "volumeAttachment", klog.KObj(deleted), "volume", vol.Name)
			return framework.Queue, nil
		}
		if !pl.translator.IsInlineMigratable(vol) {
			continue
		}
		pv, err := pl.translator.TranslateInTreeInlineVolumeToCSI(logger, vol, pod.Namespace)
		if err != nil || pv == nil {
			return framework.Queue, fmt.Errorf("converting volume(%s) from inline to csi: %w", vol.Name, err)
		}
		if pv.Spec.CSI != nil && deleted.Spec.Attacher == pv.Spec.CSI.Driver {
			logger.V(5).Info("Pod volume is an Inline Migratable volume that matches the CSI driver, which might make this pod schedulable due to VolumeAttachment deletion",
				"pod", klog.KObj(pod), "volumeAttachment", klog.KObj(deleted), "volume", vol.Name,
				"csiDriver", pv.Spec.CSI.Driver)
			return framework.Queue, nil
		}
	}
	logger.V(5).Info("the VolumeAttachment deletion wouldn't make this pod schedulable because the pod has no volume related to a deleted VolumeAttachment",
		"pod", klog.KObj(pod), "volumeAttachment", klog.KObj(deleted))
	return framework.QueueSkip, nil
}

// isSchedulableAfterCSINodeUpdated queues the pod when some driver's attach
// limit went up (a driver new to the CSINode counts as up from 0); a lower
// or unchanged limit cannot make room.
func isSchedulableAfterCSINodeUpdated(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldCSINode, newCSINode, err := framework.As[*storagev1.CSINode](oldObj, newObj)
	if err == nil && (oldCSINode == nil || newCSINode == nil) {
		err = fmt.Errorf("CSINode update without both versions")
	}
	if err != nil {
		return framework.Queue, fmt.Errorf("unexpected objects in isSchedulableAfterCSINodeUpdated: %w", err)
	}
	oldLimits := map[string]int32{}
	for _, d := range oldCSINode.Spec.Drivers {
		oldLimits[d.Name] = allocatableCount(d)
	}
	for _, d := range newCSINode.Spec.Drivers {
		if newLimit := allocatableCount(d); newLimit > oldLimits[d.Name] {
			logger.V(5).Info("CSINode driver limit increased, might make this pod schedulable",
				"pod", klog.KObj(pod), "driver", d.Name, "oldLimit", oldLimits[d.Name], "newLimit", newLimit)
			return framework.Queue, nil
		}
	}
	return framework.QueueSkip, nil
}

// allocatableCount is the driver's attach limit, 0 if it sets none.
func allocatableCount(d storagev1.CSINodeDriver) int32 {
	if d.Allocatable == nil || d.Allocatable.Count == nil {
		return 0
	}
	return *d.Allocatable.Count
}
