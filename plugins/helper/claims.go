// This file names the PersistentVolumeClaims a pod's volumes stand for:
// the claim a persistentVolumeClaim volume names, or the one the ephemeral
// volume controller creates for a generic ephemeral volume.

package helper

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"
)

// VolumeClaimName returns the name of the claim that vol of pod stands
// for: the claim a persistentVolumeClaim volume names (possibly empty, for
// the caller to reject), or <pod>-<volume> for a generic ephemeral volume.
// isEphemeral says it is the latter: such a claim is the pod's only if the
// pod controls it (ephemeral.VolumeIsForPod). ok is false for a volume that
// is no claim.
func VolumeClaimName(pod *v1.Pod, vol *v1.Volume) (name string, isEphemeral, ok bool) {
	switch {
	case vol.PersistentVolumeClaim != nil:
		return vol.PersistentVolumeClaim.ClaimName, false, true
	case vol.Ephemeral != nil:
		return ephemeral.VolumeClaimName(pod, vol), true, true
	}
	return "", false, false
}

// PodUsesClaim reports whether pod uses the claim: it is in the pod's
// namespace and a volume names it, directly (persistentVolumeClaim) or as
// the claim a generic ephemeral volume gets (<pod>-<volume>). NodeVolumeLimits'
// and VolumeBinding's queueing hints ask it of a claim event.
func PodUsesClaim(pod *v1.Pod, claim *v1.PersistentVolumeClaim) bool {
	if claim.Namespace != pod.Namespace {
		return false
	}
	for i := range pod.Spec.Volumes {
		if name, _, ok := VolumeClaimName(pod, &pod.Spec.Volumes[i]); ok && name == claim.Name {
			return true
		}
	}
	return false
}
