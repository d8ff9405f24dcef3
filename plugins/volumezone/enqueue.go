// This file says which cluster events may let a pod that VolumeZone rejected
// fit after all, and decides per pod with queueing hints.

package volumezone

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// EventsToRegister lists what can change this plugin's verdict, as upstream:
//   - a StorageClass added: an unbound claim whose class was missing is
//     skipped once the class exists with WaitForFirstConsumer. Class updates
//     are not registered: volumeBindingMode is immutable;
//   - a node added or relabelled: it may be in the volume's zone. No hint,
//     so it always queues the pod;
//   - a PersistentVolumeClaim added or updated: the missing claim appears,
//     or its volumeName is filled in;
//   - a PersistentVolume added or updated: the missing volume appears, or
//     its zone labels change.
func (pl *VolumeZone) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.StorageClass, ActionType: framework.Add},
			QueueingHintFn: isSchedulableAfterStorageClassAdded},
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel}},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolumeClaim, ActionType: framework.Add | framework.Update},
			QueueingHintFn: isSchedulableAfterPersistentVolumeClaimChange},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolume, ActionType: framework.Add | framework.Update},
			QueueingHintFn: isSchedulableAfterPersistentVolumeChange},
	}, nil
}

// isSchedulableAfterStorageClassAdded queues the pod for a new
// WaitForFirstConsumer class only: that is the one kind of class that lets
// PreFilter pass over an unbound claim. An Immediate class (or one without a
// mode) still fails the claim.
func isSchedulableAfterStorageClassAdded(logger klog.Logger, pod *v1.Pod,
	_, newObj interface{}) (framework.QueueingHint, error) {
	_, class, err := framework.As[*storagev1.StorageClass](nil, newObj)
	if err == nil && class == nil {
		err = fmt.Errorf("storage class add event without the class")
	}
	if err != nil {
		return framework.Queue, fmt.Errorf("unexpected objects in isSchedulableAfterStorageClassAdded: %w", err)
	}
	if class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		logger.V(5).Info("Added StorageClass does not wait for the first consumer; it cannot help the pod",
			"pod", klog.KObj(pod), "storageClass", klog.KObj(class))
		return framework.QueueSkip, nil
	}
	logger.V(5).Info("Added StorageClass waits for the first consumer; the pod may pass now",
		"pod", klog.KObj(pod), "storageClass", klog.KObj(class))
	return framework.Queue, nil
}

// isSchedulableAfterPersistentVolumeClaimChange queues the pod when the added
// or updated claim is one of its own (same namespace, named in a
// spec.volumes[].persistentVolumeClaim); other claims decide nothing for it.
func isSchedulableAfterPersistentVolumeClaimChange(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	_, pvc, err := framework.As[*v1.PersistentVolumeClaim](oldObj, newObj)
	if err != nil {
		return framework.Queue, fmt.Errorf("unexpected objects in isSchedulableAfterPersistentVolumeClaimChange: %w", err)
	}
	if pvc != nil && pvc.Namespace == pod.Namespace && slices.Contains(claimNames(pod), pvc.Name) {
		logger.V(5).Info("A claim of the pod was added or updated; the pod may pass now",
			"pod", klog.KObj(pod), "pvc", klog.KObj(pvc))
		return framework.Queue, nil
	}
	logger.V(5).Info("Added or updated claim is not the pod's", "pod", klog.KObj(pod), "pvc", klog.KObj(pvc))
	return framework.QueueSkip, nil
}

// isSchedulableAfterPersistentVolumeChange queues the pod for any new volume
// (it may be the one a claim names), and for an updated volume only when its
// topology labels changed: nothing else about a volume matters here.
func isSchedulableAfterPersistentVolumeChange(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldPV, newPV, err := framework.As[*v1.PersistentVolume](oldObj, newObj)
	if err == nil && newPV == nil {
		err = fmt.Errorf("persistent volume event without the new volume")
	}
	if err != nil {
		return framework.Queue, fmt.Errorf("unexpected objects in isSchedulableAfterPersistentVolumeChange: %w", err)
	}
	if oldPV == nil {
		logger.V(5).Info("PersistentVolume was added; the pod may pass now", "pod", klog.KObj(pod), "pv", klog.KObj(newPV))
		return framework.Queue, nil
	}
	if !slices.EqualFunc(pvTopologies(logger, oldPV), pvTopologies(logger, newPV), pvTopology.equal) {
		logger.V(5).Info("PersistentVolume's topology changed; the pod may pass now",
			"pod", klog.KObj(pod), "pv", klog.KObj(newPV))
		return framework.Queue, nil
	}
	logger.V(5).Info("PersistentVolume was updated but its topology is the same",
		"pod", klog.KObj(pod), "pv", klog.KObj(newPV))
	return framework.QueueSkip, nil
}

// equal reports whether t and o are the same label of the same volume with
// the same zones.
func (t pvTopology) equal(o pvTopology) bool {
	return t.pvName == o.pvName && t.key == o.key && t.values.Equal(o.values)
}
