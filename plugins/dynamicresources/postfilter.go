// PostFilter: no node fits; free an allocated claim nobody else uses, so
// that the next attempt may allocate it where the pod fits.

package dynamicresources

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// PostFilter deallocates one claim that Filter found unavailable on some
// node and that is reserved for no pod but this one: its allocation,
// reservations and device statuses are cleared. Which one is random (set
// iteration), as upstream: there is no better heuristic. The claim's update
// event then brings the pod (and any pod the devices may help) back.
//
// Failing that, an extended-resource claim an earlier attempt created (one
// Filter rejected everywhere) is deleted, so that the next attempt makes a
// new one; its delete event brings the pod back. (Should the random pick
// meet that claim among the unavailable ones first, it is deleted instead
// of another being deallocated.)
//
// It returns Unschedulable either way, so DefaultPreemption still runs. If
// PreFilter never ran (an earlier PreFilter was unresolvable), reading its
// state fails, and that Error, as in kube-scheduler, stops the PostFilter
// chain with "not found".
func (pl *DynamicResources) PostFilter(ctx context.Context, cs *framework.CycleState, pod *v1.Pod,
	_ *framework.NodeToStatus) (*framework.PostFilterResult, *framework.Status) {
	logger := klog.FromContext(ctx)
	state, err := getStateData(cs)
	if err != nil {
		return nil, statusError(logger, err)
	}
	if len(state.claims) == 0 {
		logger.V(5).Info("No new claims to deallocate", "pod", klog.KObj(pod))
		return nil, framework.NewStatus(framework.Unschedulable)
	}
	return nil, pl.deallocateOrDeletePodClaims(ctx, pod, state)
}

// deallocateOrDeletePodClaims frees one of the pod's claims as PostFilter
// describes: it deallocates an unavailable claim only this pod holds, or
// else deletes the extended-resource claim an earlier attempt created.
// It returns Unschedulable, with what it did as the reason ("deallocation
// of ResourceClaim completed", "deletion of ResourceClaim completed"; none
// if it did nothing), or an Error if writing to the apiserver failed.
func (pl *DynamicResources) deallocateOrDeletePodClaims(ctx context.Context, pod *v1.Pod,
	state *stateData) *framework.Status {
	logger := klog.FromContext(ctx)
	extendedResourceClaim := state.extendedResourceClaim()
	createdExtendedClaim := extendedResourceClaim != nil && !isSpecialClaimName(extendedResourceClaim.Name)
	for index := range state.unavailableClaims {
		claim := state.claims[index]
		if state.isExtendedResourceClaim(index) {
			if createdExtendedClaim {
				break
			}
			continue
		}
		reserved := claim.Status.ReservedFor
		if len(reserved) > 1 || (len(reserved) == 1 && reserved[0].UID != pod.UID) {
			continue // in use by another pod
		}
		claim = claim.DeepCopy()
		claim.Status.ReservedFor = nil
		claim.Status.Allocation = nil
		claim.Status.Devices = nil
		logger.V(5).Info("Deallocation of ResourceClaim", "pod", klog.KObj(pod), "resourceclaim", klog.KObj(claim))
		if _, err := pl.clientset.ResourceV1().ResourceClaims(claim.Namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
			return statusError(logger, err)
		}
		return framework.NewStatus(framework.Unschedulable, "deallocation of ResourceClaim completed")
	}
	if createdExtendedClaim {
		if err := pl.deleteClaim(ctx, extendedResourceClaim.DeepCopy()); err != nil {
			return statusError(logger, err)
		}
		return framework.NewStatus(framework.Unschedulable, "deletion of ResourceClaim completed")
	}
	return framework.NewStatus(framework.Unschedulable)
}
