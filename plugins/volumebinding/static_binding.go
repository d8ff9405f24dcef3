// This file is static matching: giving each unbound delayed claim an
// existing PV that the node can mount, the smallest that fits, never the
// same PV twice.

package volumebinding

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"
)

// findMatchingVolumes gives claims PVs among the PVs of their classes
// (taken in PreFilter), for node. Claims go smallest request first, so that
// a small claim does not take the PV a larger one needs; a chosen PV is
// excluded for the claims after it.
//
// volume.FindMatchingVolume, shared with the PV controller, decides for one
// claim: a PV pre-bound to it wins if its node affinity accepts the node;
// otherwise an Available, not deleted PV of the class, not bound to another
// claim, with the access modes, volume mode, volume attributes class and
// label selector asked for, big enough and accepting the node; the smallest
// such.
//
// It returns whether every claim got a PV, the bindings, and the claims left
// without one (for provisioning).
func (b *volumeBinder) findMatchingVolumes(logger klog.Logger, pod *v1.Pod, claims []*v1.PersistentVolumeClaim,
	pvsByClass map[string][]*v1.PersistentVolume, node *v1.Node) (bool, []*bindingInfo, []*v1.PersistentVolumeClaim, error) {
	sort.Sort(byPVCSize(claims))
	chosen := map[string]*v1.PersistentVolume{}
	allMatched := true
	var bindings []*bindingInfo
	var unmatched []*v1.PersistentVolumeClaim
	for _, pvc := range claims {
		pvs := pvsByClass[volume.GetPersistentVolumeClaimClass(pvc)]
		// The VolumeAttributesClass gate is GA (locked on) in v1.37.
		pv, err := volume.FindMatchingVolume(pvc, pvs, node, chosen, true, true)
		if err != nil {
			return false, nil, nil, err
		}
		if pv == nil {
			logger.V(5).Info("No matching volumes for pod", "pod", klog.KObj(pod), "PVC", klog.KObj(pvc),
				"node", klog.KObj(node))
			unmatched = append(unmatched, pvc)
			allMatched = false
			continue
		}
		chosen[pv.Name] = pv
		bindings = append(bindings, &bindingInfo{pv: pv, pvc: pvc})
		logger.V(5).Info("Found matching PV for PVC for pod", "PV", klog.KObj(pv), "PVC", klog.KObj(pvc),
			"node", klog.KObj(node), "pod", klog.KObj(pod))
	}
	if allMatched {
		logger.V(5).Info("Found matching volumes for pod", "pod", klog.KObj(pod), "node", klog.KObj(node))
	}
	return allMatched, bindings, unmatched, nil
}

// byPVCSize orders claims by storage request, smallest first. It is a
// sort.Interface, sorted with sort.Sort as kube-scheduler does, so that
// claims of equal requests end in the same order as there.
type byPVCSize []*v1.PersistentVolumeClaim

func (a byPVCSize) Len() int      { return len(a) }
func (a byPVCSize) Swap(i, j int) { a[i], a[j] = a[j], a[i] }
func (a byPVCSize) Less(i, j int) bool {
	iSize := a[i].Spec.Resources.Requests[v1.ResourceStorage]
	jSize := a[j].Spec.Resources.Requests[v1.ResourceStorage]
	return iSize.Cmp(jSize) == -1
}
