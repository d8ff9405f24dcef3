// This file sees an in-tree PV (a GCE PD, an AWS EBS volume...) as the CSI
// volume a node mounts instead, when the node has migrated that plugin to
// CSI: the CSI driver may set a node affinity the in-tree PV lacks (its
// zone labels become topology keys), and that is what the node must match.

package volumebinding

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	csiplugins "k8s.io/csi-translation-lib/plugins"
	"k8s.io/klog/v2"
)

// isCSIMigrationOnForPlugin reports whether migration is on for an in-tree
// plugin: it is GA for these five, and off for every other.
func isCSIMigrationOnForPlugin(pluginName string) bool {
	switch pluginName {
	case csiplugins.AWSEBSInTreePluginName, csiplugins.GCEPDInTreePluginName, csiplugins.AzureDiskInTreePluginName,
		csiplugins.CinderInTreePluginName, csiplugins.PortworxVolumePluginName:
		return true
	}
	return false
}

// isPluginMigratedToCSIOnNode reports whether the node's CSINode lists the
// plugin in its storage.alpha.kubernetes.io/migrated-plugins annotation
// (comma-separated, written by kubelet). No CSINode means no.
func isPluginMigratedToCSIOnNode(pluginName string, csiNode *storagev1.CSINode) bool {
	if csiNode == nil {
		return false
	}
	migrated := csiNode.Annotations[v1.MigratedPluginsAnnotationKey]
	if migrated == "" {
		return false
	}
	for _, p := range strings.Split(migrated, ",") {
		if p == pluginName {
			return true
		}
	}
	return false
}

// tryTranslatePVToCSI returns pv as CSI if it is a migratable in-tree PV
// whose plugin is migrated, both in the scheduler and on the node;
// otherwise pv itself.
func (b *volumeBinder) tryTranslatePVToCSI(logger klog.Logger, pv *v1.PersistentVolume,
	csiNode *storagev1.CSINode) (*v1.PersistentVolume, error) {
	if !b.translator.IsPVMigratable(pv) {
		return pv, nil
	}
	pluginName, err := b.translator.GetInTreePluginNameFromSpec(pv, nil)
	if err != nil {
		return nil, fmt.Errorf("could not get plugin name from pv: %v", err)
	}
	if !isCSIMigrationOnForPlugin(pluginName) || !isPluginMigratedToCSIOnNode(pluginName, csiNode) {
		return pv, nil
	}
	translated, err := b.translator.TranslateInTreePVToCSI(logger, pv)
	if err != nil {
		return nil, fmt.Errorf("could not translate pv: %v", err)
	}
	return translated, nil
}
