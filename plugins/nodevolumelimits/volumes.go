// This file counts volumes: which CSI driver and handle each volume of a pod
// stands for, if any.

package nodevolumelimits

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/component-helpers/storage/ephemeral"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	csilibplugins "k8s.io/csi-translation-lib/plugins"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/helper"
)

// pvcLookupError is a claim of a pod that the lister could not give. For the
// pod being scheduled it fails Filter (UnschedulableAndUnresolvable when the
// claim does not exist); for a pod already on the node the volume is simply
// not counted, as nothing says it belongs to that pod.
type pvcLookupError struct {
	namespace, name string
	err             error
}

func (e *pvcLookupError) Error() string {
	return fmt.Sprintf("looking up PVC %s/%s: %v", e.namespace, e.name, e.err)
}

func (e *pvcLookupError) Unwrap() error { return e.err }

// podsVolumes returns the volumes the pods on the node use, as
// "<driver>/<handle>" → driver. Claims that cannot be looked up are left
// out; any other error is returned.
func (pl *CSILimits) podsVolumes(logger klog.Logger, nodeInfo *framework.NodeInfo,
	csiNode *storagev1.CSINode) (map[string]string, error) {
	volumes := map[string]string{}
	for _, pi := range nodeInfo.Pods {
		pod := pi.Pod
		for i := range pod.Spec.Volumes {
			err := pl.addVolume(logger, pod, &pod.Spec.Volumes[i], csiNode, volumes)
			var lookupErr *pvcLookupError
			if errors.As(err, &lookupErr) {
				logger.V(5).Info("Unable to look up PVC info", "pod", klog.KObj(pod),
					"PVC", klog.KRef(pod.Namespace, lookupErr.name))
				continue
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return volumes, nil
}

// addVolume adds vol of pod to result ("<driver>/<handle>" → driver) if it
// is a CSI volume, or a volume that counts as one. A claim (named, or the
// claim <pod>-<volume> of a generic ephemeral volume) counts through its
// PV or class; an inline volume only if it is an in-tree volume migrated to
// CSI. The claim of an ephemeral volume must be controlled by the pod.
func (pl *CSILimits) addVolume(logger klog.Logger, pod *v1.Pod, vol *v1.Volume, csiNode *storagev1.CSINode,
	result map[string]string) error {
	pvcName, isEphemeral, ok := helper.VolumeClaimName(pod, vol)
	if !ok {
		return pl.addInlineVolume(logger, pod, vol, csiNode, result)
	}
	if pvcName == "" {
		return fmt.Errorf("PersistentVolumeClaim had no name")
	}
	pvc, err := pl.pvcLister.PersistentVolumeClaims(pod.Namespace).Get(pvcName)
	if err != nil {
		return &pvcLookupError{namespace: pod.Namespace, name: pvcName, err: err}
	}
	if isEphemeral {
		if err := ephemeral.VolumeIsForPod(pod, pvc); err != nil {
			return err
		}
	}
	driver, handle := pl.csiDriverInfo(logger, csiNode, pvc)
	if driver == "" || handle == "" {
		logger.V(5).Info("Could not find a CSI driver name or volume handle, not counting volume",
			"pod", klog.KObj(pod), "PVC", klog.KObj(pvc))
		return nil
	}
	result[volumeUniqueName(driver, handle)] = driver
	return nil
}

// addInlineVolume adds an inline in-tree volume, translated to CSI, if its
// plugin is migrated on the node. Other inline volumes (configMaps,
// emptyDirs, in-tree volumes without a CSI driver) attach nothing CSI.
func (pl *CSILimits) addInlineVolume(logger klog.Logger, pod *v1.Pod, vol *v1.Volume, csiNode *storagev1.CSINode,
	result map[string]string) error {
	if !pl.translator.IsInlineMigratable(vol) {
		return nil
	}
	pluginName, err := pl.translator.GetInTreePluginNameFromSpec(nil, vol)
	if err != nil {
		return fmt.Errorf("looking up provisioner name for volume %s: %w", vol.Name, err)
	}
	if !isCSIMigrationOn(csiNode, pluginName) {
		logger.V(5).Info("CSI Migration is not enabled for provisioner", "provisioner", pluginName,
			"pod", klog.KObj(pod), "csiNode", klog.KObj(csiNode))
		return nil
	}
	pv, err := pl.translator.TranslateInTreeInlineVolumeToCSI(logger, vol, pod.Namespace)
	if err != nil || pv == nil {
		return fmt.Errorf("converting volume(%s) from inline to csi: %w", vol.Name, err)
	}
	driver, err := pl.translator.GetCSINameFromInTreeName(pluginName)
	if err != nil {
		return fmt.Errorf("looking up CSI driver name for provisioner %s: %w", pluginName, err)
	}
	// A plugin that cannot translate inline volumes leaves the source unset.
	if pv.Spec.CSI == nil {
		return nil
	}
	result[volumeUniqueName(driver, pv.Spec.CSI.VolumeHandle)] = driver
	return nil
}

// csiDriverInfo returns the CSI driver and volume handle of pvc: those of
// its PV's CSI source, or of the CSI driver a migrated in-tree PV
// translates to. A claim not bound yet, or bound to a PV that is missing,
// counts through its class (csiDriverInfoFromSC). Empty strings mean the
// claim is not counted.
func (pl *CSILimits) csiDriverInfo(logger klog.Logger, csiNode *storagev1.CSINode,
	pvc *v1.PersistentVolumeClaim) (string, string) {
	pvName := pvc.Spec.VolumeName
	if pvName == "" {
		logger.V(5).Info("Persistent volume had no name for claim", "PVC", klog.KObj(pvc))
		return pl.csiDriverInfoFromSC(logger, csiNode, pvc)
	}
	pv, err := pl.pvLister.Get(pvName)
	if err != nil {
		// Deleted, or the claim was pre-bound to a PV not created yet.
		logger.V(5).Info("Unable to look up PV info for PVC and PV", "PVC", klog.KObj(pvc), "PV", klog.KRef("", pvName))
		return pl.csiDriverInfoFromSC(logger, csiNode, pvc)
	}
	if pv.Spec.CSI != nil {
		return pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle
	}
	if !pl.translator.IsPVMigratable(pv) {
		return "", ""
	}
	pluginName, err := pl.translator.GetInTreePluginNameFromSpec(pv, nil)
	if err != nil {
		logger.V(5).Info("Unable to look up plugin name from PV spec", "err", err)
		return "", ""
	}
	if !isCSIMigrationOn(csiNode, pluginName) {
		logger.V(5).Info("CSI Migration of plugin is not enabled", "plugin", pluginName)
		return "", ""
	}
	csiPV, err := pl.translator.TranslateInTreePVToCSI(logger, pv)
	if err != nil {
		logger.V(5).Info("Unable to translate in-tree volume to CSI", "err", err)
		return "", ""
	}
	if csiPV.Spec.CSI == nil {
		logger.V(5).Info("Unable to get a valid volume source for translated PV", "PV", pvName)
		return "", ""
	}
	return csiPV.Spec.CSI.Driver, csiPV.Spec.CSI.VolumeHandle
}

// csiDriverInfoFromSC returns the driver that will provision pvc (its
// class's provisioner, or the CSI driver of a migrated in-tree one) and a
// handle made up for it: "<random prefix>-<ns>/<claim>". The prefix keeps it
// apart from real handles; should the claim be bound while this runs and
// another pod on the node use the new volume, the volume is counted twice.
// A claim without a class, or whose class is missing, must use immediate
// binding and so be bound before scheduling: it is not counted.
func (pl *CSILimits) csiDriverInfoFromSC(logger klog.Logger, csiNode *storagev1.CSINode,
	pvc *v1.PersistentVolumeClaim) (string, string) {
	scName := storagehelpers.GetPersistentVolumeClaimClass(pvc)
	if scName == "" {
		logger.V(5).Info("PVC has no StorageClass", "PVC", klog.KObj(pvc))
		return "", ""
	}
	class, err := pl.scLister.Get(scName)
	if err != nil {
		logger.V(5).Info("Could not get StorageClass for PVC", "PVC", klog.KObj(pvc), "err", err)
		return "", ""
	}
	handle := fmt.Sprintf("%s-%s/%s", pl.randomVolumeIDPrefix, pvc.Namespace, pvc.Name)
	provisioner := class.Provisioner
	if !pl.translator.IsMigratableIntreePluginByName(provisioner) {
		return provisioner, handle
	}
	if !isCSIMigrationOn(csiNode, provisioner) {
		logger.V(5).Info("CSI Migration of provisioner is not enabled", "provisioner", provisioner)
		return "", ""
	}
	driver, err := pl.translator.GetCSINameFromInTreeName(provisioner)
	if err != nil {
		logger.V(5).Info("Unable to look up driver name from provisioner name", "provisioner", provisioner, "err", err)
		return "", ""
	}
	return driver, handle
}

// isCSIMigrationOn reports whether volumes of the in-tree plugin count as
// their CSI driver's on the node: for the plugins whose migration is GA
// (always on), and only on a node with a CSINode.
func isCSIMigrationOn(csiNode *storagev1.CSINode, pluginName string) bool {
	if csiNode == nil {
		return false
	}
	switch pluginName {
	case csilibplugins.AWSEBSInTreePluginName, csilibplugins.PortworxVolumePluginName,
		csilibplugins.GCEPDInTreePluginName, csilibplugins.AzureDiskInTreePluginName,
		csilibplugins.CinderInTreePluginName:
		return true
	}
	return false
}
