// PreBind: what Reserve only assumed is written to the claims (finalizer,
// allocation, reservation), then the pod waits for its devices' binding
// conditions, if any.

package dynamicresources

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// bindingConditionsPollInterval is how often PreBind re-reads the claims
// while it waits for binding conditions: kube-scheduler's 5s.
const bindingConditionsPollInterval = 5 * time.Second

// PreBindPreFlight tells the binding cycle whether PreBind has work: Skip
// for a pod without claims.
func (pl *DynamicResources) PreBindPreFlight(ctx context.Context, cs *framework.CycleState, _ *v1.Pod,
	_ string) *framework.Status {
	state, err := getStateData(cs)
	if err != nil {
		return statusError(klog.FromContext(ctx), err)
	}
	if len(state.claims) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	return nil
}

// PreBind reserves each claim for the pod (bindClaim), writing the
// allocation Reserve chose first. Then, if some allocated device has
// binding conditions, it waits for them (see waitForBindingConditions). The
// in-flight allocations are dropped only when all of that succeeded; on a
// failure they are Unreserve's to drop. Any failure is an Error: the pod
// goes to backoff, and its next attempt finds the claim unavailable if its
// devices failed to bind.
func (pl *DynamicResources) PreBind(ctx context.Context, cs *framework.CycleState, pod *v1.Pod,
	nodeName string) *framework.Status {
	logger := klog.FromContext(ctx)
	state, err := getStateData(cs)
	if err != nil {
		return statusError(logger, err)
	}
	if len(state.claims) == 0 {
		return nil
	}
	var written []types.UID
	for index, claim := range state.claims {
		if resourceclaim.IsReservedForPod(pod, claim, false) {
			continue
		}
		// The UID Reserve signalled: the extended-resource claim's
		// changes when PreBind creates it.
		inFlightUID := claim.UID
		claim, err := pl.bindClaim(ctx, state, index, pod, nodeName)
		if err != nil {
			return statusError(logger, err)
		}
		// Unreserve works with the written claim from now on.
		state.claims[index] = claim
		if state.informationsForClaim[index].allocation != nil {
			written = append(written, inFlightUID)
		}
	}
	if hasBindingConditions(state) {
		if status := pl.waitForBindingConditions(ctx, state, pod, nodeName); !status.IsSuccess() {
			return status
		}
	}
	for _, uid := range written {
		if pl.draManager.ResourceClaims().MaybeRemoveClaimPendingAllocation(uid, true) {
			logger.V(5).Info("Removed claim from in-flight claims", "pod", klog.KObj(pod), "uid", uid)
		}
	}
	return nil
}

// bindClaim writes the claim at index: with an allocation from Reserve, the
// finalizer (a normal update), then status.allocation; in any case the pod
// in status.reservedFor and, the first time, allocation.allocationTimestamp
// (the start of bindingTimeout). A conflict re-reads the claim and tries
// again. The claim the apiserver returns is stored in the assume cache, so
// that the next cycles see it allocated before the informer does.
//
// The extended-resource claim is first created (and kept in the state at
// once, for Unreserve to delete should what follows fail), and at the end
// named in the pod's status; when the node's device plugins serve the
// resources, it is left as it is.
func (pl *DynamicResources) bindClaim(ctx context.Context, state *stateData, index int, pod *v1.Pod,
	nodeName string) (*resourceapi.ResourceClaim, error) {
	logger := klog.FromContext(ctx)
	allocation := state.informationsForClaim[index].allocation
	claims := pl.clientset.ResourceV1().ResourceClaims(pod.Namespace)
	claim := state.claims[index]
	isExtendedResourceClaim := state.isExtendedResourceClaim(index)
	if isExtendedResourceClaim && allocation == nil && claim.Spec.Devices.Requests == nil {
		return claim, nil
	}
	modified := false
	if isExtendedResourceClaim && isSpecialClaimName(claim.Name) {
		created, err := pl.createExtendedResourceClaimInAPI(ctx, pod, nodeName, state)
		if err != nil {
			return nil, err
		}
		claim = created
		modified = true
		state.claims[index] = created
	}
	claim = claim.DeepCopy()
	logger.V(5).Info("Preparing claim status update", "claim", klog.KObj(claim), "allocation", klog.Format(allocation))

	refresh := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if refresh {
			latest, err := claims.Get(ctx, claim.Name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("get updated claim %s after conflict: %w", klog.KObj(claim), err)
			}
			logger.V(5).Info("Retrying update after conflict", "claim", klog.KObj(claim))
			claim = latest
		}
		refresh = true
		if claim.DeletionTimestamp != nil {
			return fmt.Errorf("claim %s got deleted in the meantime", klog.KObj(claim))
		}
		if allocation != nil {
			if claim.Status.Allocation != nil {
				return fmt.Errorf("claim %s got allocated elsewhere in the meantime", klog.KObj(claim))
			}
			// The finalizer cannot be set with the status; an earlier,
			// interrupted attempt may have set it already.
			if !slices.Contains(claim.Finalizers, resourceapi.Finalizer) {
				claim.Finalizers = append(claim.Finalizers, resourceapi.Finalizer)
				updated, err := claims.Update(ctx, claim, metav1.UpdateOptions{})
				if err != nil {
					return fmt.Errorf("add finalizer to claim %s: %w", klog.KObj(claim), err)
				}
				claim = updated
			}
			claim.Status.Allocation = allocation
		}
		// No precondition: the apiserver refuses what is not allowed.
		claim.Status.ReservedFor = append(claim.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{
			Resource: "pods", Name: pod.Name, UID: pod.UID,
		})
		if claim.Status.Allocation == nil {
			return fmt.Errorf("claim %s got deallocated elsewhere in the meantime", klog.KObj(claim))
		}
		if claim.Status.Allocation.AllocationTimestamp == nil {
			claim.Status.Allocation.AllocationTimestamp = &metav1.Time{Time: pl.clock.Now()}
		}
		updated, err := claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
		if err != nil {
			if allocation != nil {
				return fmt.Errorf("add allocation and reservation to claim %s: %w", klog.KObj(claim), err)
			}
			return fmt.Errorf("add reservation to claim %s: %w", klog.KObj(claim), err)
		}
		claim = updated
		modified = true
		return nil
	})
	switch {
	case modified && isExtendedResourceClaim:
		pl.waitForExtendedClaimInAssumeCache(ctx, claim)
	case modified:
		// Fails only on a concurrent delete or a newer informer object,
		// both harmless.
		if err := pl.draManager.ResourceClaims().AssumeClaimAfterAPICall(claim); err != nil {
			logger.V(5).Info("Claim not stored in assume cache", "err", err, "claim", klog.KObj(claim))
		} else {
			logger.V(5).Info("Claim stored in assume cache", "claim", klog.KObj(claim), "resourceVersion", claim.ResourceVersion)
		}
	}
	if err != nil {
		return nil, err
	}
	logger.V(5).Info("Reserved", "pod", klog.KObj(pod), "node", nodeName, "resourceclaim", klog.KObj(claim))
	if isExtendedResourceClaim {
		if err := pl.patchPodExtendedResourceClaimStatus(ctx, pod, claim, nodeName, state); err != nil {
			return nil, err
		}
	}
	return claim, nil
}

// hasBindingConditions reports whether some allocated device of the pod's
// claims has binding conditions (the allocator copies them from the
// slice's device).
func hasBindingConditions(state *stateData) bool {
	for _, claim := range state.claims {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, result := range claim.Status.Allocation.Devices.Results {
			if len(result.BindingConditions) > 0 {
				return true
			}
		}
	}
	return false
}

// waitForBindingConditions records the BindingConditionsPending event and
// re-reads the claims from the assume cache at once and then every 5s, until
// every binding condition is true, a failure condition is true, or
// bindingTimeout passes. The driver (or a controller of the device) sets
// those conditions in claim.status.devices.
func (pl *DynamicResources) waitForBindingConditions(ctx context.Context, state *stateData, pod *v1.Pod,
	nodeName string) *framework.Status {
	logger := klog.FromContext(ctx)
	pl.fh.EventRecorder().Eventf(pod, nil, v1.EventTypeNormal, "BindingConditionsPending", "Scheduling",
		"waiting for binding conditions for device on node %s", nodeName)
	timeout := pl.clock.NewTimer(pl.bindingTimeout)
	defer timeout.Stop()
	ticker := pl.clock.NewTicker(bindingConditionsPollInterval)
	defer ticker.Stop()
	for {
		ready, err := pl.isPodReadyForBinding(state)
		switch {
		case err != nil:
			return statusError(logger, err, "pod", klog.KObj(pod), "node", nodeName)
		case ready:
			logger.V(5).Info("BindingConditions is met", "pod", klog.KObj(pod), "node", nodeName)
			return nil
		}
		select {
		case <-ctx.Done():
			return statusError(logger, ctx.Err(), "pod", klog.KObj(pod), "node", nodeName)
		case <-timeout.C():
			return statusError(logger, fmt.Errorf("%w: %w", ErrDeviceBindingTimeout, context.DeadlineExceeded),
				"pod", klog.KObj(pod), "node", nodeName)
		case <-ticker.C():
		}
	}
}

// isPodReadyForBinding re-reads each claim from the assume cache (keeping
// it in the state) and reports whether all are ready for binding; a failed
// device, or one still pending after bindingTimeout, is an error.
func (pl *DynamicResources) isPodReadyForBinding(state *stateData) (bool, error) {
	for i, claim := range state.claims {
		claim, err := pl.draManager.ResourceClaims().Get(claim.Namespace, claim.Name)
		if err != nil {
			return false, err
		}
		state.claims[i] = claim
		ready, err := isClaimReadyForBinding(claim)
		if err != nil {
			return false, err
		}
		if !ready {
			if pl.isClaimTimeout(claim) {
				return false, fmt.Errorf("%w: claim=%s", ErrDeviceBindingTimeout, claim.Name)
			}
			return false, nil
		}
	}
	return true, nil
}
