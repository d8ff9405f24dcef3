// This file says which cluster events may make a pod VolumeBinding rejected
// schedulable, and for each, per pod, whether it does (queueing hints).

package volumebinding

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/helper"
)

// EventsToRegister lists, as kube-scheduler does:
//
//   - StorageClass add or update: a class created, or its allowedTopologies
//     changed (its binding mode cannot change);
//   - PVC add or update of a claim the pod uses: created, bound, given a node;
//   - PV add or update (no hint): any PV may be the one a claim matches, or
//     the one a bound claim was waiting for;
//   - Node add or label change (no hint): PV node affinity and classes'
//     allowedTopologies match node labels;
//   - CSINode add, or update of its migrated-plugins annotation: in-tree
//     PVs are checked as CSI on nodes that migrated them;
//   - CSIDriver update that stops tracking capacity for a driver of the
//     pod's inline CSI volumes;
//   - CSIStorageCapacity add, or update that raises the volume limit.
func (pl *VolumeBinding) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.StorageClass, ActionType: framework.Add | framework.Update},
			QueueingHintFn: isSchedulableAfterStorageClassChange},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolumeClaim,
			ActionType: framework.Add | framework.Update},
			QueueingHintFn: isSchedulableAfterPersistentVolumeClaimChange},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolume, ActionType: framework.Add | framework.Update}},
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel}},
		{Event: framework.ClusterEvent{Resource: framework.CSINode, ActionType: framework.Add | framework.Update},
			QueueingHintFn: isSchedulableAfterCSINodeChange},
		{Event: framework.ClusterEvent{Resource: framework.CSIDriver, ActionType: framework.Update},
			QueueingHintFn: isSchedulableAfterCSIDriverChange},
		{Event: framework.ClusterEvent{Resource: framework.CSIStorageCapacity,
			ActionType: framework.Add | framework.Update},
			QueueingHintFn: isSchedulableAfterCSIStorageCapacityChange},
	}, nil
}

// isSchedulableAfterCSINodeChange queues the pod for a new CSINode, or one
// whose migrated-plugins annotation changed: a bound in-tree PV's node
// affinity may read differently as CSI.
func isSchedulableAfterCSINodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	if oldObj == nil {
		logger.V(5).Info("CSINode creation could make the pod schedulable", "pod", klog.KObj(pod))
		return framework.Queue, nil
	}
	oldCSINode, newCSINode, err := framework.As[*storagev1.CSINode](oldObj, newObj)
	if err == nil && newCSINode == nil {
		err = fmt.Errorf("CSINode update event without the new CSINode")
	}
	if err != nil {
		return framework.Queue, err
	}
	logger = klog.LoggerWithValues(logger, "pod", klog.KObj(pod), "CSINode", klog.KObj(newCSINode))
	if oldCSINode.Annotations[v1.MigratedPluginsAnnotationKey] != newCSINode.Annotations[v1.MigratedPluginsAnnotationKey] {
		logger.V(5).Info("CSINode's migrated plugins annotation is updated and that may make the pod schedulable")
		return framework.Queue, nil
	}
	logger.V(5).Info("CSINode was updated but it doesn't make this pod schedulable")
	return framework.QueueSkip, nil
}

// isSchedulableAfterPersistentVolumeClaimChange queues the pod when a claim
// it uses (by name, or its ephemeral volume's <pod>-<volume>) in its
// namespace is created or updated: almost any change to it may help.
func isSchedulableAfterPersistentVolumeClaimChange(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	_, newPVC, err := framework.As[*v1.PersistentVolumeClaim](oldObj, newObj)
	if err == nil && newPVC == nil {
		err = fmt.Errorf("PersistentVolumeClaim event without the new claim")
	}
	if err != nil {
		return framework.Queue, err
	}
	logger = klog.LoggerWithValues(logger, "pod", klog.KObj(pod), "PersistentVolumeClaim", klog.KObj(newPVC))
	if pod.Namespace != newPVC.Namespace {
		logger.V(5).Info("PersistentVolumeClaim was created or updated, but it doesn't make this pod schedulable because the PVC belongs to a different namespace")
		return framework.QueueSkip, nil
	}
	if helper.PodUsesClaim(pod, newPVC) {
		logger.V(5).Info("PersistentVolumeClaim the pod requires was created or updated, potentially making the target Pod schedulable")
		return framework.Queue, nil
	}
	logger.V(5).Info("PersistentVolumeClaim was created or updated, but it doesn't make this pod schedulable")
	return framework.QueueSkip, nil
}

// isSchedulableAfterStorageClassChange queues the pod for a new class, or a
// class whose allowedTopologies changed (a class's binding mode cannot
// change); which class the pod needs is not looked at.
func isSchedulableAfterStorageClassChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldSC, newSC, err := framework.As[*storagev1.StorageClass](oldObj, newObj)
	if err == nil && newSC == nil {
		err = fmt.Errorf("StorageClass event without the new class")
	}
	if err != nil {
		return framework.Queue, err
	}
	logger = klog.LoggerWithValues(logger, "pod", klog.KObj(pod), "StorageClass", klog.KObj(newSC))
	if oldSC == nil {
		logger.V(5).Info("A new StorageClass was created, which could make a Pod schedulable")
		return framework.Queue, nil
	}
	if !apiequality.Semantic.DeepEqual(newSC.AllowedTopologies, oldSC.AllowedTopologies) {
		logger.V(5).Info("StorageClass got an update in AllowedTopologies")
		return framework.Queue, nil
	}
	logger.V(5).Info("StorageClass was updated, but it doesn't make this pod schedulable")
	return framework.QueueSkip, nil
}

// isSchedulableAfterCSIStorageCapacityChange queues the pod for a new
// capacity object, or one whose volume limit (maximumVolumeSize, else
// capacity) rose or appeared; its class and topology cannot change.
func isSchedulableAfterCSIStorageCapacityChange(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldCap, newCap, err := framework.As[*storagev1.CSIStorageCapacity](oldObj, newObj)
	if err == nil && newCap == nil {
		err = fmt.Errorf("CSIStorageCapacity event without the new object")
	}
	if err != nil {
		return framework.Queue, err
	}
	if oldCap == nil {
		logger.V(5).Info("A new CSIStorageCapacity was created, which could make a Pod schedulable",
			"pod", klog.KObj(pod), "CSIStorageCapacity", klog.KObj(newCap))
		return framework.Queue, nil
	}
	oldLimit, newLimit := volumeLimit(oldCap), volumeLimit(newCap)
	logger = klog.LoggerWithValues(logger, "pod", klog.KObj(pod), "CSIStorageCapacity", klog.KObj(newCap),
		"volumeLimit(new)", newLimit, "volumeLimit(old)", oldLimit)
	if newLimit != nil && (oldLimit == nil || newLimit.Value() > oldLimit.Value()) {
		logger.V(5).Info("VolumeLimit was increased, which could make a Pod schedulable")
		return framework.Queue, nil
	}
	logger.V(5).Info("CSIStorageCapacity was updated, but it doesn't make this pod schedulable")
	return framework.QueueSkip, nil
}

// isSchedulableAfterCSIDriverChange queues the pod when a driver of one of
// its inline csi volumes stops tracking capacity (storageCapacity true →
// unset or false). Pods whose volumes are claims are not queued, as in
// kube-scheduler.
func isSchedulableAfterCSIDriverChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldDriver, newDriver, err := framework.As[*storagev1.CSIDriver](oldObj, newObj)
	if err == nil && (oldDriver == nil || newDriver == nil) {
		err = fmt.Errorf("CSIDriver update event without both versions of the driver")
	}
	if err != nil {
		return framework.Queue, err
	}
	logger = klog.LoggerWithValues(logger, "pod", klog.KObj(pod), "CSIDriver", klog.KObj(newDriver))
	for _, vol := range pod.Spec.Volumes {
		if vol.CSI == nil || vol.CSI.Driver != newDriver.Name {
			continue
		}
		if tracks(oldDriver) && !tracks(newDriver) {
			logger.V(5).Info("CSIDriver was updated and storage capacity got disabled, which may make the pod schedulable")
			return framework.Queue, nil
		}
	}
	logger.V(5).Info("CSIDriver was created or updated but it doesn't make this pod schedulable")
	return framework.QueueSkip, nil
}

// tracks reports whether the driver publishes storage capacity.
func tracks(d *storagev1.CSIDriver) bool {
	return d.Spec.StorageCapacity != nil && *d.Spec.StorageCapacity
}
