// This file is Filter's question to the binder: can this node have the
// pod's volumes? Bound claims need their PV's node affinity to accept the
// node; unbound delayed claims need a PV here (static_binding.go) or a
// provisioner that can reach the node (provisioning.go).

package volumebinding

import (
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"
)

// FindPodVolumes checks node for the pod's claims, as sorted in PreFilter,
// and returns what binding them there would take. If the node does not fit,
// it returns the reasons, each at most once and always in this order:
//
//  1. ErrReasonNodeConflict: a bound PV's node affinity excludes the node;
//  2. ErrReasonBindConflict: a delayed claim was given to another node
//     (selected-node: no PV or provisioner is then looked for), or finds
//     neither a PV nor a provisioner for the node;
//  3. ErrReasonNotEnoughSpace: provisioning lacks capacity on the node;
//  4. ErrReasonPVNotExist: a bound claim's PV does not exist.
//
// An error means something unexpected (a class or driver that cannot be
// read), not a node that does not fit; no reasons are returned with it. It
// is called for many nodes at once.
func (b *volumeBinder) FindPodVolumes(logger klog.Logger, pod *v1.Pod, claims *podVolumeClaims,
	node *v1.Node) (*podVolumes, []ConflictReason, error) {
	logger.V(5).Info("FindPodVolumes", "pod", klog.KObj(pod), "node", klog.KObj(node))
	found := podVolumes{}
	// The four conditions, true until a check says otherwise.
	boundSatisfied, unboundSatisfied, sufficientStorage, boundPVsFound := true, true, true, true
	reasons := func() []ConflictReason {
		var r []ConflictReason
		if !boundSatisfied {
			r = append(r, ErrReasonNodeConflict)
		}
		if !unboundSatisfied {
			r = append(r, ErrReasonBindConflict)
		}
		if !sufficientStorage {
			r = append(r, ErrReasonNotEnoughSpace)
		}
		if !boundPVsFound {
			r = append(r, ErrReasonPVNotExist)
		}
		return r
	}

	var err error
	if len(claims.boundClaims) > 0 {
		boundSatisfied, boundPVsFound, err = b.checkBoundClaims(logger, claims.boundClaims, node, pod)
		if err != nil {
			return &found, nil, err
		}
	}
	if len(claims.unboundClaimsDelayBinding) == 0 {
		return &found, reasons(), nil
	}

	// A claim the scheduler already gave to a node (an earlier attempt's
	// PreBind wrote selected-node) is provisioned there or nowhere.
	var toMatch, toProvision []*v1.PersistentVolumeClaim
	for _, claim := range claims.unboundClaimsDelayBinding {
		selected, ok := claim.Annotations[volume.AnnSelectedNode]
		switch {
		case !ok:
			toMatch = append(toMatch, claim)
		case selected != node.Name:
			unboundSatisfied = false
			return &found, reasons(), nil
		default:
			toProvision = append(toProvision, claim)
		}
	}

	if len(toMatch) > 0 {
		var unmatched []*v1.PersistentVolumeClaim
		unboundSatisfied, found.StaticBindings, unmatched, err = b.findMatchingVolumes(logger, pod, toMatch,
			claims.unboundVolumesDelayBinding, node)
		if err != nil {
			return &found, nil, err
		}
		toProvision = append(toProvision, unmatched...)
	}
	// What static matching left over decides alone whether unbound claims
	// are satisfied: every one of them must be provisionable here.
	if len(toProvision) > 0 {
		unboundSatisfied, sufficientStorage, found.DynamicProvisions, err = b.checkVolumeProvisions(logger, pod,
			toProvision, node)
		if err != nil {
			return &found, nil, err
		}
	}
	// Empty is reported as nil, as kube-scheduler does.
	if len(found.StaticBindings) == 0 {
		found.StaticBindings = nil
	}
	if len(found.DynamicProvisions) == 0 {
		found.DynamicProvisions = nil
	}
	return &found, reasons(), nil
}

// checkBoundClaims reports whether the PVs of bound claims all accept node
// (an in-tree PV seen as CSI if the node migrated its plugin) and whether
// they all exist. It stops at the first PV that fails either.
func (b *volumeBinder) checkBoundClaims(logger klog.Logger, claims []*v1.PersistentVolumeClaim, node *v1.Node,
	pod *v1.Pod) (affinityOK, pvsFound bool, err error) {
	csiNode, err := b.csiNodeLister.Get(node.Name)
	if err != nil {
		// Not every node has a CSINode object; without one nothing is
		// migrated.
		logger.V(5).Info("Could not get a CSINode object for the node", "node", klog.KObj(node), "err", err)
		csiNode = nil
	}
	for _, pvc := range claims {
		pvName := pvc.Spec.VolumeName
		pv, err := b.pvCache.Get(pvName)
		if apierrors.IsNotFound(err) {
			return true, false, nil
		}
		if err != nil {
			return true, false, err
		}
		if pv, err = b.tryTranslatePVToCSI(logger, pv, csiNode); err != nil {
			return false, true, err
		}
		if err := volume.CheckNodeAffinity(pv, node.Labels); err != nil {
			logger.V(5).Info("PersistentVolume and node mismatch for pod", "PV", klog.KRef("", pvName),
				"node", klog.KObj(node), "pod", klog.KObj(pod), "err", err)
			return false, true, nil
		}
		logger.V(5).Info("PersistentVolume and node matches for pod", "PV", klog.KRef("", pvName),
			"node", klog.KObj(node), "pod", klog.KObj(pod))
	}
	logger.V(5).Info("All bound volumes for pod match with node", "pod", klog.KObj(pod), "node", klog.KObj(node))
	return true, true, nil
}

// convertDynamicProvisionsToPVCs returns the claims of provisions.
func convertDynamicProvisionsToPVCs(provisions []*dynamicProvision) []*v1.PersistentVolumeClaim {
	pvcs := make([]*v1.PersistentVolumeClaim, 0, len(provisions))
	for _, p := range provisions {
		pvcs = append(pvcs, p.PVC)
	}
	return pvcs
}
