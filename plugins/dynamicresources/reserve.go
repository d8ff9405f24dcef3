// Reserve and Unreserve: the chosen node's allocations go in flight, so
// that the next cycle, of any profile, counts their devices as taken before
// PreBind writes them; Unreserve takes them back.

package dynamicresources

import (
	"context"
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// Reserve signals the allocation Filter found on nodeName for each
// unallocated claim as pending (in flight), and keeps it for PreBind; in a
// pod-group cycle, the claim is recorded as shared by this member, for the
// next members' PreFilter.
// Nothing is written to the apiserver: allocated claims are reserved for
// the pod only in PreBind, and if another pod was faster then, this one
// tries again. The extended-resource claim goes in flight as the node's
// copy, with the requests the node needs; if it was the only claim to
// allocate and the node's device plugins serve the resources, there is
// nothing to do.
func (pl *DynamicResources) Reserve(ctx context.Context, cs *framework.CycleState, pod *v1.Pod,
	nodeName string) *framework.Status {
	logger := klog.FromContext(ctx)
	state, err := getStateData(cs)
	if err != nil {
		return statusError(logger, err)
	}
	numClaimsToAllocate := 0
	needToAllocateUserClaims := false
	state.toAllocate(func(index int, _ *resourceapi.ResourceClaim) {
		numClaimsToAllocate++
		if !state.isExtendedResourceClaim(index) {
			needToAllocateUserClaims = true
		}
	})
	if numClaimsToAllocate == 0 {
		return nil
	}
	nodeAllocation, found := state.nodeAllocations[nodeName]
	allocations := nodeAllocation.allocationResults
	if !found || len(allocations) == 0 {
		if !needToAllocateUserClaims {
			return nil
		}
		// Filter passed this node, so it has allocations: a broken
		// invariant, reported as an Error.
		return statusError(logger, errors.New("claim allocation not found for node"))
	}
	if len(allocations) != numClaimsToAllocate {
		return statusError(logger, fmt.Errorf("internal error, have %d allocations, %d claims to allocate, want %d claims",
			len(allocations), numClaimsToAllocate, numClaimsToAllocate))
	}
	// In a pod-group cycle, the later members may share what is reserved.
	groupData := podGroupStateOf(cs)
	next := 0
	var signalErr error
	state.toAllocate(func(index int, claim *resourceapi.ResourceClaim) {
		if signalErr != nil {
			return
		}
		// A copy: PreBind stamps it, and the node's allocations may be
		// the memo's, given to later cycles too (memo.go).
		allocation := allocations[next].DeepCopy()
		next++
		state.informationsForClaim[index].allocation = allocation
		if state.isExtendedResourceClaim(index) {
			claim = nodeAllocation.extendedResourceClaim
		}
		// The whole claim, as PreBind will write it, not just the
		// allocation: it is what the allocator of the next cycles reads.
		claim = claim.DeepCopy()
		if !slices.Contains(claim.Finalizers, resourceapi.Finalizer) {
			claim.Finalizers = append(claim.Finalizers, resourceapi.Finalizer)
		}
		claim.Status.Allocation = allocation
		if err := pl.draManager.ResourceClaims().SignalClaimPendingAllocation(claim.UID, claim); err != nil {
			signalErr = fmt.Errorf("internal error, couldn't signal allocation for claim %s: %w", claim.Name, err)
			return
		}
		logger.V(5).Info("Reserved resource in allocation result", "claim", klog.KObj(claim), "uid", claim.UID,
			"resourceVersion", claim.ResourceVersion)
		if groupData != nil {
			if groupData.pendingAllocations[claim.UID] == nil {
				groupData.pendingAllocations[claim.UID] = sets.New[types.UID]()
			}
			groupData.pendingAllocations[claim.UID].Insert(pod.UID)
		}
	})
	if signalErr != nil {
		return statusError(logger, signalErr)
	}
	return nil
}

// Unreserve undoes Reserve and the reservations PreBind may have made:
//
//  1. An in-flight allocation loses this pod as a sharer; with the last
//     sharer it is dropped (and no longer shared in the pod-group cycle)
//     and the claim in the assume cache goes back to the informer's.
//  2. An allocated claim reserved for this pod gets the pod removed from
//     status.reservedFor, by a strategic-merge patch of the status that
//     needs no fresh copy of the claim. A failure is only logged: the
//     next attempt comes here again.
//  3. The extended-resource claim leaves flight too, and is deleted if
//     PreBind created it (unreserveExtendedResourceClaim).
//
// The pod's own claims stay allocated; PostFilter or the resourceclaim
// controller deallocates them. Unreserve is idempotent: a second call
// finds nothing in flight, the pod no longer reserved, and the created
// claim gone (the failed update of the missing claim is logged).
func (pl *DynamicResources) Unreserve(ctx context.Context, cs *framework.CycleState, pod *v1.Pod, _ string) {
	state, err := getStateData(cs)
	if err != nil {
		return
	}
	logger := klog.FromContext(ctx)
	groupData := podGroupStateOf(cs)
	for _, claim := range state.userClaims() {
		// 1.
		if deleted := pl.draManager.ResourceClaims().MaybeRemoveClaimPendingAllocation(claim.UID, false); deleted {
			logger.V(5).Info("Released resource in allocation result", "claim", klog.KObj(claim), "uid", claim.UID)
			pl.draManager.ResourceClaims().AssumedClaimRestore(claim.Namespace, claim.Name)
			// No member of this pod-group cycle shares it any more.
			if groupData != nil {
				delete(groupData.pendingAllocations, claim.UID)
			}
		}
		// 2.
		if claim.Status.Allocation != nil && resourceclaim.IsReservedForPod(pod, claim, false) {
			patch := fmt.Sprintf(`{"metadata": {"uid": %q}, "status": { "reservedFor": [ {"$patch": "delete", "uid": %q} ] }}`,
				claim.UID, pod.UID)
			logger.V(5).Info("Unreserve", "resourceclaim", klog.KObj(claim), "pod", klog.KObj(pod))
			if _, err := pl.clientset.ResourceV1().ResourceClaims(claim.Namespace).Patch(ctx, claim.Name,
				types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
				logger.Error(err, "Unreserve", "resourceclaim", klog.KObj(claim))
			}
		}
	}
	// 3.
	pl.unreserveExtendedResourceClaim(ctx, pod, state)
}
