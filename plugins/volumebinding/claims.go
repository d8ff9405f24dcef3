// This file sorts a pod's claims by what they need: bound ones only a node
// their PV accepts, delayed ones (WaitForFirstConsumer) a PV or a
// provisioner chosen with the node, and immediate ones nothing the scheduler
// can give: the PV controller binds them on its own.

package volumebinding

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/plugins/helper"
)

// GetPodVolumeClaims reads each claim of pod (a persistentVolumeClaim
// volume, or a generic ephemeral volume's <pod>-<volume> claim, which must
// be owned by the pod) from the PVC assume cache, and sorts it:
//
//   - bound: spec.volumeName set and the bind-completed annotation present;
//   - delayed: otherwise, if its class is WaitForFirstConsumer and it names
//     no volume;
//   - immediate: everything else, including pre-bound claims (volumeName
//     set, binding not completed), claims without a class and claims whose
//     class does not exist.
//
// It also takes, per delayed claim's class, the PVs of that class. A class
// without volumeBindingMode is an error.
func (b *volumeBinder) GetPodVolumeClaims(logger klog.Logger, pod *v1.Pod) (*podVolumeClaims, error) {
	claims := &podVolumeClaims{
		boundClaims:               []*v1.PersistentVolumeClaim{},
		unboundClaimsImmediate:    []*v1.PersistentVolumeClaim{},
		unboundClaimsDelayBinding: []*v1.PersistentVolumeClaim{},
	}
	for i := range pod.Spec.Volumes {
		bound, pvc, err := b.isVolumeBound(logger, pod, &pod.Spec.Volumes[i])
		if err != nil {
			return claims, err
		}
		switch {
		case pvc == nil:
			// Not a claim.
		case bound:
			claims.boundClaims = append(claims.boundClaims, pvc)
		default:
			delayed, err := volume.IsDelayBindingMode(pvc, b.classLister)
			if err != nil {
				return claims, err
			}
			if delayed && pvc.Spec.VolumeName == "" {
				claims.unboundClaimsDelayBinding = append(claims.unboundClaimsDelayBinding, pvc)
			} else {
				claims.unboundClaimsImmediate = append(claims.unboundClaimsImmediate, pvc)
			}
		}
	}

	claims.unboundVolumesDelayBinding = map[string][]*v1.PersistentVolume{}
	for _, pvc := range claims.unboundClaimsDelayBinding {
		class := volume.GetPersistentVolumeClaimClass(pvc)
		pvs, err := b.pvCache.ListPVs(class)
		if err != nil {
			return nil, err
		}
		claims.unboundVolumesDelayBinding[class] = pvs
	}
	return claims, nil
}

// isVolumeBound reports whether vol is a claim that is fully bound, with the
// claim; a volume that is not a claim counts as bound, with no claim. A
// generic ephemeral volume's claim not owned by the pod is an error.
func (b *volumeBinder) isVolumeBound(logger klog.Logger, pod *v1.Pod, vol *v1.Volume) (bool, *v1.PersistentVolumeClaim, error) {
	pvcName, isEphemeral, ok := helper.VolumeClaimName(pod, vol)
	if !ok {
		return true, nil, nil
	}
	bound, pvc, err := b.isPVCBound(logger, pod.Namespace, pvcName)
	if isEphemeral && err == nil && pvc != nil {
		if err := ephemeral.VolumeIsForPod(pod, pvc); err != nil {
			return false, nil, err
		}
	}
	return bound, pvc, err
}

// isPVCBound reads a claim from the PVC assume cache and reports whether it
// is fully bound.
func (b *volumeBinder) isPVCBound(logger klog.Logger, namespace, pvcName string) (bool, *v1.PersistentVolumeClaim, error) {
	key := namespace + "/" + pvcName
	pvc, err := b.pvcCache.Get(key)
	if err != nil || pvc == nil {
		return false, nil, fmt.Errorf("error getting PVC %q: %v", key, err)
	}
	bound := isPVCFullyBound(pvc)
	switch {
	case bound:
		logger.V(5).Info("PVC is fully bound to PV", "PVC", klog.KObj(pvc), "PV", klog.KRef("", pvc.Spec.VolumeName))
	case pvc.Spec.VolumeName != "":
		logger.V(5).Info("PVC is not fully bound to PV", "PVC", klog.KObj(pvc), "PV", klog.KRef("", pvc.Spec.VolumeName))
	default:
		logger.V(5).Info("PVC is not bound", "PVC", klog.KObj(pvc))
	}
	return bound, pvc, nil
}

// isPVCFullyBound: the claim names its volume and the PV controller has
// marked the binding complete. A volumeName alone is a pre-binding the
// controller has yet to finish.
func isPVCFullyBound(pvc *v1.PersistentVolumeClaim) bool {
	return pvc.Spec.VolumeName != "" && metav1.HasAnnotation(pvc.ObjectMeta, volume.AnnBindCompleted)
}

// arePodVolumesBound reports whether every claim of pod is fully bound, per
// the PVC assume cache; a claim it cannot read counts as unbound.
func (b *volumeBinder) arePodVolumesBound(logger klog.Logger, pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if bound, _, _ := b.isVolumeBound(logger, pod, &pod.Spec.Volumes[i]); !bound {
			return false
		}
	}
	return true
}
