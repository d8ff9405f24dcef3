// This file is dynamic provisioning: whether the claims no PV was found for
// can be provisioned for the node, by their class's provisioner, within its
// allowed topologies and, for CSI drivers that track it, within the storage
// capacity the node can reach.

package volumebinding

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"
)

// checkVolumeProvisions checks claims in turn and stops at the first that
// cannot be provisioned for node. It returns:
//
//   - satisfied=false (with sufficientStorage=true) when the class has no
//     provisioner (or kubernetes.io/no-provisioner) or its
//     allowedTopologies exclude the node: ErrReasonBindConflict;
//   - sufficientStorage=false (with satisfied=true) when capacity is
//     tracked and short: ErrReasonNotEnoughSpace;
//   - otherwise both true, and one dynamicProvision per claim.
//
// A claim without a class, or whose class cannot be read, is an error.
func (b *volumeBinder) checkVolumeProvisions(logger klog.Logger, pod *v1.Pod, claims []*v1.PersistentVolumeClaim,
	node *v1.Node) (satisfied, sufficientStorage bool, provisions []*dynamicProvision, err error) {
	provisions = []*dynamicProvision{}
	for _, claim := range claims {
		className := volume.GetPersistentVolumeClaimClass(claim)
		if className == "" {
			return false, false, nil, fmt.Errorf("no class for claim %q", getPVCName(claim))
		}
		class, err := b.classLister.Get(className)
		if err != nil {
			return false, false, nil, fmt.Errorf("failed to find storage class %q", className)
		}
		provisioner := class.Provisioner
		if provisioner == "" || provisioner == volume.NotSupportedProvisioner {
			logger.V(5).Info("Storage class of claim does not support dynamic provisioning",
				"storageClassName", className, "PVC", klog.KObj(claim))
			return false, true, nil, nil
		}
		if !matchTopologySelectorTerms(class.AllowedTopologies, labels.Set(node.Labels)) {
			logger.V(5).Info("Node cannot satisfy provisioning topology requirements of claim",
				"node", klog.KObj(node), "PVC", klog.KObj(claim))
			return false, true, nil, nil
		}
		sufficient, capacity, err := b.hasEnoughCapacity(logger, provisioner, claim, class, node)
		if err != nil {
			return false, false, nil, err
		}
		if !sufficient {
			return true, false, nil, nil
		}
		provisions = append(provisions, &dynamicProvision{PVC: claim, NodeCapacity: capacity})
	}
	logger.V(5).Info("Provisioning for claims of pod that has no matching volumes...",
		"claimCount", len(claims), "pod", klog.KObj(pod), "node", klog.KObj(node))
	return true, true, provisions, nil
}

// matchTopologySelectorTerms reports whether node labels satisfy a class's
// allowedTopologies: no terms allow every node; otherwise one term must
// match (terms are ORed), a term matching when each of its requirements
// finds its key with one of its values (ANDed). An empty term, or one that
// is not a valid selector, matches nothing. (kube-scheduler's
// v1helper.MatchTopologySelectorTerms, which staging does not export.)
func matchTopologySelectorTerms(terms []v1.TopologySelectorTerm, lbls labels.Set) bool {
	if len(terms) == 0 {
		return true
	}
	for _, term := range terms {
		if len(term.MatchLabelExpressions) == 0 {
			continue
		}
		selector := labels.NewSelector()
		valid := true
		for _, expr := range term.MatchLabelExpressions {
			r, err := labels.NewRequirement(expr.Key, selection.In, expr.Values)
			if err != nil {
				valid = false
				break
			}
			selector = selector.Add(*r)
		}
		if valid && selector.Matches(lbls) {
			return true
		}
	}
	return false
}

// hasEnoughCapacity reports whether a volume for claim fits on storage the
// node reaches, and which CSIStorageCapacity says so. Capacity is checked
// only for a claim that requests storage, whose provisioner is a CSIDriver
// with spec.storageCapacity true; otherwise it fits, with no capacity
// object. The first capacity object of the class whose nodeTopology matches
// the node and whose limit (maximumVolumeSize, else capacity) holds the
// request wins.
func (b *volumeBinder) hasEnoughCapacity(logger klog.Logger, provisioner string, claim *v1.PersistentVolumeClaim,
	class *storagev1.StorageClass, node *v1.Node) (bool, *storagev1.CSIStorageCapacity, error) {
	quantity, ok := claim.Spec.Resources.Requests[v1.ResourceStorage]
	if !ok {
		return true, nil, nil
	}
	driver, err := b.csiDriverLister.Get(provisioner)
	if apierrors.IsNotFound(err) {
		// Not a CSI driver, or one that does not publish capacity.
		return true, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	if driver.Spec.StorageCapacity == nil || !*driver.Spec.StorageCapacity {
		return true, nil, nil
	}
	capacities, err := b.csiStorageCapacityLister.List(labels.Everything())
	if err != nil {
		return false, nil, err
	}
	size := quantity.Value()
	for _, capacity := range capacities {
		if capacity.StorageClassName == class.Name && capacitySufficient(capacity, size) &&
			b.nodeHasAccess(logger, node, capacity) {
			return true, capacity, nil
		}
	}
	logger.V(5).Info("Node has no accessible CSIStorageCapacity with enough capacity for PVC",
		"node", klog.KObj(node), "PVC", klog.KObj(claim), "size", size, "storageClass", klog.KObj(class))
	return false, nil, nil
}

// capacitySufficient reports whether a volume of size bytes fits capacity's
// limit.
func capacitySufficient(capacity *storagev1.CSIStorageCapacity, size int64) bool {
	limit := volumeLimit(capacity)
	return limit != nil && limit.Value() >= size
}

// volumeLimit is the largest volume capacity allows: maximumVolumeSize when
// set (it is the more precise), else capacity; nil when neither is.
func volumeLimit(capacity *storagev1.CSIStorageCapacity) *resource.Quantity {
	if capacity.MaximumVolumeSize != nil {
		return capacity.MaximumVolumeSize
	}
	return capacity.Capacity
}

// nodeHasAccess reports whether capacity's nodeTopology selects node; a
// capacity without one is reachable from no node.
func (b *volumeBinder) nodeHasAccess(logger klog.Logger, node *v1.Node, capacity *storagev1.CSIStorageCapacity) bool {
	if capacity.NodeTopology == nil {
		return false
	}
	selector, err := b.topologySelectors.get(capacity)
	if err != nil {
		logger.Error(err, "Unexpected error converting to a label selector", "nodeTopology", capacity.NodeTopology)
		return false
	}
	return selector.Matches(labels.Set(node.Labels))
}
