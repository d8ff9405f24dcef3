// This file is Reserve's and Unreserve's part of the binder: the chosen
// node's bindings and provisionings go into the assume caches, as they will
// be written, so that the next cycles see those PVs taken and those claims
// given to the node; Unreserve takes them out again.

package volumebinding

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"
)

// AssumePodVolumes assumes, for the pod on nodeName, what FindPodVolumes
// found there (vols), and rewrites vols with the assumed objects, which
// PreBind will write:
//
//  1. If every claim of the pod is bound already (per the PVC cache), there
//     is nothing to do: it returns true.
//  2. Each static binding's PV, pre-bound to its claim (spec.claimRef, and
//     the bound-by-controller annotation unless the user pre-bound it), is
//     assumed in the PV cache.
//  3. Each claim to provision, with volume.kubernetes.io/selected-node set
//     to nodeName, is assumed in the PVC cache.
//
// On error every assumption made here is restored.
func (b *volumeBinder) AssumePodVolumes(logger klog.Logger, pod *v1.Pod, nodeName string,
	vols *podVolumes) (allBound bool, err error) {
	logger.V(4).Info("AssumePodVolumes", "pod", klog.KObj(pod), "node", klog.KRef("", nodeName))
	// 1.
	if b.arePodVolumesBound(logger, pod) {
		logger.V(4).Info("AssumePodVolumes: all PVCs bound and nothing to do", "pod", klog.KObj(pod),
			"node", klog.KRef("", nodeName))
		return true, nil
	}

	// 2.
	bindings := []*bindingInfo{}
	for _, binding := range vols.StaticBindings {
		newPV, dirty, err := volume.GetBindVolumeToClaim(binding.pv, binding.pvc)
		if err != nil {
			logger.Error(err, "AssumePodVolumes: fail to GetBindVolumeToClaim", "pod", klog.KObj(pod),
				"PV", klog.KObj(binding.pv), "PVC", klog.KObj(binding.pvc))
			b.revertAssumedPVs(bindings)
			return false, err
		}
		logger.V(5).Info("AssumePodVolumes: GetBindVolumeToClaim", "pod", klog.KObj(pod), "PV", klog.KObj(binding.pv),
			"PVC", klog.KObj(binding.pvc), "dirty", dirty)
		// A PV already pre-bound to the claim (with the annotation) is written
		// unchanged and needs no assumption.
		if dirty {
			if err := b.pvCache.Assume(newPV); err != nil {
				b.revertAssumedPVs(bindings)
				return false, err
			}
		}
		bindings = append(bindings, &bindingInfo{pv: newPV, pvc: binding.pvc})
	}

	// 3.
	provisions := []*dynamicProvision{}
	for _, p := range vols.DynamicProvisions {
		// The claim is the informer's: change a copy.
		claim := p.PVC.DeepCopy()
		metav1.SetMetaDataAnnotation(&claim.ObjectMeta, volume.AnnSelectedNode, nodeName)
		if err := b.pvcCache.Assume(claim); err != nil {
			b.revertAssumedPVs(bindings)
			b.revertAssumedPVCs(convertDynamicProvisionsToPVCs(provisions))
			return false, err
		}
		provisions = append(provisions, &dynamicProvision{PVC: claim})
	}

	vols.StaticBindings = bindings
	vols.DynamicProvisions = provisions
	return false, nil
}

// RevertAssumedPodVolumes restores what AssumePodVolumes assumed for vols.
// It may be called any number of times: an object no longer assumed in
// that version is left alone.
func (b *volumeBinder) RevertAssumedPodVolumes(vols *podVolumes) {
	b.revertAssumedPVs(vols.StaticBindings)
	b.revertAssumedPVCs(convertDynamicProvisionsToPVCs(vols.DynamicProvisions))
}

// revertAssumedPVs restores the PVs of bindings.
func (b *volumeBinder) revertAssumedPVs(bindings []*bindingInfo) {
	for _, binding := range bindings {
		b.pvCache.Restore(binding.pv)
	}
}

// revertAssumedPVCs restores claims.
func (b *volumeBinder) revertAssumedPVCs(claims []*v1.PersistentVolumeClaim) {
	for _, claim := range claims {
		b.pvcCache.Restore(claim)
	}
}
