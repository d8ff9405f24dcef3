package helper

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"
)

// PodUsesClaim reports whether pod uses the claim: it is in the pod's
// namespace and a volume names it, directly (persistentVolumeClaim) or as
// the claim a generic ephemeral volume gets (<pod>-<volume>). NodeVolumeLimits'
// and VolumeBinding's queueing hints ask it of a claim event.
func PodUsesClaim(pod *v1.Pod, claim *v1.PersistentVolumeClaim) bool {
	if claim.Namespace != pod.Namespace {
		return false
	}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		switch {
		case vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ClaimName == claim.Name:
			return true
		case vol.Ephemeral != nil && ephemeral.VolumeClaimName(pod, vol) == claim.Name:
			return true
		}
	}
	return false
}
