// Filter: can this node serve the pod's claims? Allocated claims must be
// usable there; the others must be allocatable there, and what the
// allocator found is kept for Score, Reserve and PreBind.

package dynamicresources

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// Errors of devices whose binding conditions did not come true; their
// texts begin PreBind's and Filter's reasons.
var (
	// ErrDeviceBindingTimeout: the conditions were not all true within
	// bindingTimeout.
	ErrDeviceBindingTimeout = errors.New("device binding timeout")
	// ErrDeviceBindingFailed: a binding failure condition became true.
	ErrDeviceBindingFailed = errors.New("device binding failed")
)

// Filter checks the node for every claim of the pod:
//
//  0. The pod's extended resources: which the node's device plugins serve,
//     which need devices (filterExtendedResources). A pod without claims
//     of its own that needs no devices here is done.
//  1. An allocated claim is unavailable here if its allocation's node
//     selector does not match, or if its devices failed to bind or took
//     longer than bindingTimeout; the claim is remembered for PostFilter.
//  2. The unallocated claims are allocated on this node, within
//     filterTimeout. A timeout is an Error (the attempt is retried after
//     backoff: it may be transient); a failure particular to the node, or
//     no solution, makes the node unschedulable.
//  3. The allocations are kept per node for the later steps.
func (pl *DynamicResources) Filter(ctx context.Context, cs *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) *framework.Status {
	logger := klog.FromContext(ctx)
	state, err := getStateData(cs)
	if err != nil {
		return statusError(logger, err)
	}
	if len(state.claims) == 0 {
		return nil
	}
	node := nodeInfo.Node()

	// 0.
	nodeExtendedResourceClaim, mappings, status := pl.filterExtendedResources(state, pod, nodeInfo, logger)
	if status != nil {
		return status
	}
	if nodeExtendedResourceClaim == nil && len(state.userClaims()) == 0 {
		return nil
	}

	// 1.
	var unavailableClaims []int
	for i, claim := range state.claims {
		if selector := state.informationsForClaim[i].availableOnNodes; selector != nil && !selector.Match(node) {
			logger.V(5).Info("Allocation's node selector does not match", "pod", klog.KObj(pod), "node", klog.KObj(node),
				"resourceclaim", klog.KObj(claim))
			unavailableClaims = append(unavailableClaims, i)
			continue
		}
		if claim.Status.Allocation == nil {
			continue
		}
		// A device that failed to bind, or never did, is worth
		// deallocating in PostFilter so that other devices can be tried.
		if ready, err := isClaimReadyForBinding(claim); err != nil {
			logger.V(5).Info("Claim failed binding conditions check", "pod", klog.KObj(pod), "node", klog.KObj(node),
				"resourceclaim", klog.KObj(claim), "err", err)
			unavailableClaims = append(unavailableClaims, i)
		} else if !ready && pl.isClaimTimeout(claim) {
			logger.V(5).Info("Claim timed out waiting for binding conditions", "pod", klog.KObj(pod),
				"node", klog.KObj(node), "resourceclaim", klog.KObj(claim))
			unavailableClaims = append(unavailableClaims, i)
		}
	}

	// 2.
	var allocations []resourceapi.AllocationResult
	if state.allocator != nil {
		var status *framework.Status
		if allocations, status = pl.allocate(ctx, state, pod, node, nodeExtendedResourceClaim); status != nil {
			return status
		}
	}

	if len(unavailableClaims) > 0 || state.allocator != nil {
		state.mu.Lock()
		defer state.mu.Unlock()
	}
	if len(unavailableClaims) > 0 {
		if state.unavailableClaims == nil {
			state.unavailableClaims = sets.New[int]()
		}
		state.unavailableClaims.Insert(unavailableClaims...)
		return statusUnschedulable(logger, "resourceclaim not available on the node", "pod", klog.KObj(pod))
	}
	// 3.
	if state.allocator != nil {
		state.nodeAllocations[node.Name] = nodeAllocation{
			allocationResults:                allocations,
			extendedResourceClaim:            nodeExtendedResourceClaim,
			containerResourceRequestMappings: mappings,
		}
	}
	return nil
}

// allocate runs the allocator for the pod's unallocated claims on node and
// returns one allocation per claim, in order, or the node's status. The
// node's copy of the extended-resource claim (if not nil) stands in for
// the cycle's. A claim whose pending allocation PreFilter reused from
// another member of the pod group is not allocated again: that allocation
// is its result.
func (pl *DynamicResources) allocate(ctx context.Context, state *stateData, pod *v1.Pod,
	node *v1.Node, nodeExtendedResourceClaim *resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, *framework.Status) {
	logger := klog.FromContext(ctx)
	allocCtx := ctx
	if loggerV := logger.V(5); loggerV.Enabled() {
		allocCtx = klog.NewContext(allocCtx, klog.LoggerWithValues(logger, "node", klog.KObj(node)))
	}
	if pl.filterTimeout > 0 {
		c, cancel := context.WithTimeout(allocCtx, pl.filterTimeout)
		defer cancel()
		allocCtx = c
	}
	var claimsToAllocate []*resourceapi.ResourceClaim
	// shared holds, by position among the claims to allocate, the pending
	// allocations reused from another member of the pod group.
	var shared map[int]*resourceapi.AllocationResult
	n := 0 // the claims to allocate so far
	state.toAllocate(func(index int, claim *resourceapi.ResourceClaim) {
		pos := n
		n++
		if info := state.informationsForClaim[index]; info.shared {
			if shared == nil {
				shared = map[int]*resourceapi.AllocationResult{}
			}
			shared[pos] = info.allocation
			return
		}
		if state.isExtendedResourceClaim(index) && nodeExtendedResourceClaim != nil {
			claim = nodeExtendedResourceClaim
		}
		claimsToAllocate = append(claimsToAllocate, claim)
	})

	result, err := state.allocator.Allocate(allocCtx, node, claimsToAllocate)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		// Perhaps transient, perhaps this node's slices: an Error sends
		// the pod to backoff rather than waiting for an event, and names
		// the node.
		return nil, statusError(logger, fmt.Errorf("node %s: timed out trying to allocate devices", node.Name),
			"pod", klog.KObj(pod), "node", klog.KObj(node), "resourceclaims", klog.KObjSlice(claimsToAllocate))
	case errors.Is(err, structured.ErrFailedAllocationOnNode):
		// Other nodes may still do.
		return nil, statusUnschedulable(logger, err.Error(), "pod", klog.KObj(pod), "node", klog.KObj(node))
	case ctx.Err() != nil:
		return nil, statusUnschedulable(logger,
			fmt.Sprintf("asked by caller to stop allocating devices: %v", context.Cause(ctx)),
			"pod", klog.KObj(pod), "node", klog.KObj(node), "resourceclaims", klog.KObjSlice(claimsToAllocate))
	case err != nil:
		// A broken claim or class (bad CEL): abort the attempt.
		return nil, statusError(logger, err, "pod", klog.KObj(pod), "node", klog.KObj(node),
			"resourceclaims", klog.KObjSlice(claimsToAllocate))
	}
	// All or nothing in practice; the length check is upstream's.
	if len(result) != len(claimsToAllocate) {
		return nil, statusUnschedulable(logger, "cannot allocate all claims", "pod", klog.KObj(pod), "node", klog.KObj(node),
			"resourceclaims", klog.KObjSlice(claimsToAllocate))
	}
	if len(shared) == 0 {
		return result, nil
	}
	// The reused allocations take their claims' places, so that Reserve
	// pairs each claim with its own. (kube-scheduler appends them after the
	// new ones, which pairs them wrongly in Reserve when a claim it reuses
	// comes before one it allocates; with one shared claim, or the shared
	// ones last, the two agree.)
	all := make([]resourceapi.AllocationResult, 0, n)
	for pos, next := 0, 0; pos < n; pos++ {
		if a, ok := shared[pos]; ok {
			all = append(all, *a)
			continue
		}
		all = append(all, result[next])
		next++
	}
	return all, nil
}

// isClaimReadyForBinding reports whether every binding condition of the
// claim's devices is true (vacuously so without conditions). A true
// binding failure condition is an ErrDeviceBindingFailed naming it.
func isClaimReadyForBinding(claim *resourceapi.ResourceClaim) (bool, error) {
	if claim.Status.Allocation == nil {
		return false, nil
	}
	for i := range claim.Status.Allocation.Devices.Results {
		result := &claim.Status.Allocation.Devices.Results[i]
		if len(result.BindingConditions) == 0 {
			continue
		}
		status := allocatedDeviceStatus(claim, result)
		if status == nil {
			return false, nil
		}
		for _, cond := range result.BindingFailureConditions {
			if failed := apimeta.FindStatusCondition(status.Conditions, cond); failed != nil && failed.Status == metav1.ConditionTrue {
				return false, fmt.Errorf("%w: claim=%s, reason=%s, message=%q",
					ErrDeviceBindingFailed, claim.Name, failed.Reason, failed.Message)
			}
		}
		for _, cond := range result.BindingConditions {
			if !apimeta.IsStatusConditionTrue(status.Conditions, cond) {
				return false, nil
			}
		}
	}
	return true, nil
}

// isClaimTimeout reports whether the claim has a device with binding
// conditions and was allocated longer than bindingTimeout ago.
func (pl *DynamicResources) isClaimTimeout(claim *resourceapi.ResourceClaim) bool {
	allocation := claim.Status.Allocation
	if allocation == nil || allocation.AllocationTimestamp == nil {
		return false
	}
	for _, result := range allocation.Devices.Results {
		if result.BindingConditions != nil &&
			allocation.AllocationTimestamp.Add(pl.bindingTimeout).Before(pl.clock.Now()) {
			return true
		}
	}
	return false
}

// allocatedDeviceStatus returns the claim's status entry of one allocated
// device, or nil.
func allocatedDeviceStatus(claim *resourceapi.ResourceClaim,
	result *resourceapi.DeviceRequestAllocationResult) *resourceapi.AllocatedDeviceStatus {
	for i := range claim.Status.Devices {
		d := &claim.Status.Devices[i]
		if d.Device == result.Device && d.Driver == result.Driver && d.Pool == result.Pool {
			return d
		}
	}
	return nil
}
