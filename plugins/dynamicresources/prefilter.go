// PreFilter: the pod's claims checked once per cycle, and the allocator
// built over everything already allocated, for Filter to ask per node.

package dynamicresources

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// stateKey is where PreFilter leaves its stateData.
const stateKey framework.StateKey = Name

// stateData is what PreFilter found, and what Filter, Reserve and PreBind
// add to it. The cycle state holds a pointer, so later steps change it in
// place.
type stateData struct {
	// claims are the pod's claims (empty: nothing to do), as the cycle
	// began, followed by the claim for its extended resources if
	// draExtendedResource says so (extended.go); PreBind replaces an entry
	// with the claim it wrote. The objects are read-only: they may be the
	// cache's.
	claims []*resourceapi.ResourceClaim
	// draExtendedResource is what PreFilter found of the pod's extended
	// resources backed by DeviceClasses.
	draExtendedResource draExtendedResource
	// informationsForClaim has one entry per claim.
	informationsForClaim []informationForClaim
	// allocator is set when some claim needs allocating.
	allocator structured.Allocator

	// mu guards what Filter writes from parallel goroutines.
	mu sync.Mutex
	// unavailableClaims are the indexes of allocated claims that some node
	// could not use, for PostFilter to pick from.
	unavailableClaims sets.Set[int]
	// nodeAllocations are Filter's results per node name.
	nodeAllocations map[string]nodeAllocation
}

// nodeAllocation is what Filter found on one node, for Score, Reserve and
// PreBind.
type nodeAllocation struct {
	// allocationResults has one allocation per unallocated claim, in the
	// order of claims.
	allocationResults []resourceapi.AllocationResult
	// extendedResourceClaim is the node's copy of the extended-resource
	// claim, with the requests this node needs (nil: none).
	extendedResourceClaim *resourceapi.ResourceClaim
	// containerResourceRequestMappings map each container's extended
	// resources to the requests of extendedResourceClaim.
	containerResourceRequestMappings []v1.ContainerExtendedResourceRequest
}

// informationForClaim is what the plugin knows of one claim.
type informationForClaim struct {
	// availableOnNodes is the allocated claim's node selector (nil: any
	// node).
	availableOnNodes *nodeaffinity.NodeSelector
	// allocation is set by Reserve and written by PreBind (nil when the
	// claim was allocated already). In a pod-group cycle, PreFilter sets it
	// to the pending allocation another member's Reserve made, and sets
	// shared.
	allocation *resourceapi.AllocationResult
	// shared says that allocation is another member's pending allocation,
	// reused: Filter does not allocate the claim again.
	shared bool
}

// Clone shares the data, as kube-scheduler's does: what preemption's dry
// runs add (a node's allocation, an unavailable claim) is true of the real
// cycle too, since claims do not depend on the pods removed.
func (s *stateData) Clone() framework.StateData { return s }

// toAllocate calls fn with the index and claim of every claim that has no
// allocation yet, in order.
func (s *stateData) toAllocate(fn func(int, *resourceapi.ResourceClaim)) {
	for i, claim := range s.claims {
		if claim.Status.Allocation == nil {
			fn(i, claim)
		}
	}
}

// getStateData reads what PreFilter wrote; framework.ErrNotFound when it
// did not run.
func getStateData(cs *framework.CycleState) (*stateData, error) {
	data, err := cs.Read(stateKey)
	if err != nil {
		return nil, err
	}
	s, ok := data.(*stateData)
	if !ok {
		return nil, errors.New("unable to convert state into stateData")
	}
	return s, nil
}

// PreFilter checks the pod's claims and prepares their allocation:
//
//  1. It records an empty state first, so that later steps (PostFilter
//     above all) find one; in a pod-group cycle, the group's cycle state
//     records it too, for PodGroupPostFilter.
//  2. A missing, deleted or foreign claim is unresolvable (PreEnqueue's
//     texts). A DeviceClass backing an extended resource the pod asks for
//     adds a claim for those (extended.go). A pod without claims is then
//     done: Skip.
//  3. An allocated claim restricts the pod to its allocation's nodes.
//  4. An unallocated claim another pod's Reserve is allocating makes this
//     pod wait, unless that pod is a member of the same pod-group cycle:
//     then the pod reuses the pending allocation (it keeps the pod to the
//     allocation's nodes, and Filter does not allocate the claim again).
//     Each request of a claim to allocate must name classes that exist.
//  5. If something needs allocating, the allocator is built over every
//     device taken (allocated claims and in-flight allocations) and every
//     slice, with DeviceTaintRules applied; where it cannot change the
//     result, it gets views of the slices instead, holding only the
//     devices the claims' class selects (sliceviews.go), and a node's
//     answer is taken from the last cycle's while nothing it depends on
//     changed (memo.go).
func (pl *DynamicResources) PreFilter(ctx context.Context, cs *framework.CycleState, pod *v1.Pod,
	_ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	logger := klog.FromContext(ctx)
	// 1.
	s := &stateData{nodeAllocations: map[string]nodeAllocation{}}
	cs.Write(stateKey, s)
	groupData, err := recordInPodGroup(cs, pod, s)
	if err != nil {
		return nil, statusError(logger, err)
	}
	// 2.
	claims, err := pl.podResourceClaims(pod)
	if err != nil {
		return nil, statusUnschedulable(logger, err.Error())
	}
	extendedResourceClaim, status := pl.preFilterExtendedResources(pod, logger, s)
	if status != nil {
		return nil, status
	}
	if extendedResourceClaim != nil {
		claims = append(claims, extendedResourceClaim)
	}
	if len(claims) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	logger.V(5).Info("Pod resource claims", "pod", klog.KObj(pod), "resourceclaims", klog.KObjSlice(claims))

	s.informationsForClaim = make([]informationForClaim, len(claims))
	numClaimsToAllocate := 0
	for i, claim := range claims {
		// 3. (A claim can always be reserved: the apiserver caps
		// reservedFor, and kube-scheduler's CanBeReserved is always true.)
		if claim.Status.Allocation != nil {
			selector, err := nodeSelectorFromAllocation(claim.Status.Allocation)
			if err != nil {
				return nil, statusError(logger, err)
			}
			s.informationsForClaim[i].availableOnNodes = selector
			continue
		}
		// 4.
		numClaimsToAllocate++
		if groupData != nil && groupData.pendingAllocations[claim.UID] != nil {
			if pending := pl.draManager.ResourceClaims().GetPendingAllocation(claim.UID); pending != nil {
				selector, err := nodeSelectorFromAllocation(pending)
				if err != nil {
					return nil, statusError(logger, err)
				}
				s.informationsForClaim[i] = informationForClaim{availableOnNodes: selector, allocation: pending, shared: true}
				logger.V(5).Info("Reusing pending allocation", "pod", klog.KObj(pod), "resourceclaim", klog.KObj(claim),
					"uid", claim.UID)
				continue
			}
		}
		if pl.draManager.ResourceClaims().GetPendingAllocation(claim.UID) != nil {
			return nil, statusUnschedulable(logger,
				fmt.Sprintf("resource claim %s is in the process of being allocated", klog.KObj(claim)))
		}
		// The extended-resource claim has no requests yet, or is an
		// earlier attempt's, which Filter rejects.
		if extendedResourceClaim != nil && i == len(claims)-1 {
			continue
		}
		if status := pl.validateRequests(logger, claim); status != nil {
			return nil, status
		}
	}
	// 5.
	if numClaimsToAllocate > 0 {
		var toAllocate []*resourceapi.ResourceClaim
		for i, claim := range claims {
			if claim.Status.Allocation == nil && !s.informationsForClaim[i].shared {
				toAllocate = append(toAllocate, claim)
			}
		}
		allocator, err := pl.newAllocator(ctx, toAllocate, extendedResourceClaim != nil)
		if err != nil {
			return nil, statusError(logger, err)
		}
		s.allocator = allocator
	}
	s.claims = claims
	if extendedResourceClaim != nil {
		s.draExtendedResource.hasClaim = true
		s.draExtendedResource.initialClaimUID = extendedResourceClaim.UID
	}
	return nil, nil
}

// validateRequests checks that each request of an unallocated claim names
// device classes that exist: a missing class is unresolvable until a
// DeviceClass event.
func (pl *DynamicResources) validateRequests(logger klog.Logger, claim *resourceapi.ResourceClaim) *framework.Status {
	for _, request := range claim.Spec.Devices.Requests {
		switch {
		case request.Exactly != nil:
			if status := pl.validateDeviceClass(logger, request.Exactly.DeviceClassName, request.Name); status != nil {
				return status
			}
		case len(request.FirstAvailable) > 0:
			for _, sub := range request.FirstAvailable {
				name := strings.Join([]string{request.Name, sub.Name}, "/")
				if status := pl.validateDeviceClass(logger, sub.DeviceClassName, name); status != nil {
					return status
				}
			}
		default:
			return statusUnschedulable(logger,
				fmt.Sprintf("resource claim %s, request %s: unknown request type", klog.KObj(claim), request.Name))
		}
	}
	return nil
}

// validateDeviceClass reports a class that does not exist. Other lister
// errors are let through, as upstream does: the allocator reports them.
func (pl *DynamicResources) validateDeviceClass(logger klog.Logger, className, requestName string) *framework.Status {
	if className == "" {
		return statusError(logger, fmt.Errorf("request %s: unsupported request type", requestName))
	}
	if _, err := pl.draManager.DeviceClasses().Get(className); apierrors.IsNotFound(err) {
		return statusUnschedulable(logger, fmt.Sprintf("request %s: device class %s does not exist", requestName, className))
	}
	return nil
}

// allocatorFeatures are the allocator features kube-scheduler v1.37.1 turns
// on with its default gates: admin access (GA), prioritized lists (GA),
// partitionable devices (beta), device taints (GA), binding conditions
// with device status (beta and GA), consumable capacity (beta). Fractional
// capacity ranges, list-type attributes, optional node operations, derived
// attributes and compatibility groups are alpha or need a newer
// compatibility version: off.
var allocatorFeatures = structured.Features{
	AdminAccess:            true,
	PrioritizedList:        true,
	PartitionableDevices:   true,
	DeviceTaints:           true,
	DeviceBindingAndStatus: true,
	ConsumableCapacity:     true,
}

// newAllocator builds the allocator over what is taken now, to allocate
// the claims toAllocate (and, when extended, the extended-resource claim
// Filter makes per node, whose classes are not known yet: the allocator
// then gets every slice). The taken set does not change while Filter runs:
// only Reserve adds to it, later in this same cycle.
func (pl *DynamicResources) newAllocator(ctx context.Context, toAllocate []*resourceapi.ResourceClaim,
	extended bool) (structured.Allocator, error) {
	allocated, err := pl.draManager.ResourceClaims().GatherAllocatedState()
	if err != nil {
		return nil, fmt.Errorf("gather allocation state: %w", err)
	}
	slices, err := pl.draManager.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		return nil, err
	}
	var classes structured.DeviceClassLister = pl.draManager.DeviceClasses()
	narrowed := false
	if !extended {
		classes, slices, narrowed = pl.views.allocatorInput(ctx, pl.celCache, classes, slices, toAllocate)
	}
	allocator, err := NewAllocator(ctx, *allocated, classes, slices, pl.celCache)
	if err != nil || !narrowed {
		return allocator, err
	}
	stripped, ok := classes.(classWithoutSelectors)
	if !ok {
		return allocator, nil
	}
	if cycle, ok := pl.memo.begin(slices, stripped.class, toAllocate, *allocated); ok {
		return memoAllocator{Allocator: allocator, memo: pl.memo, cycle: cycle}, nil
	}
	return allocator, nil
}

// PreFilterExtensions returns nil: claims do not change with the pods on a
// node.
func (pl *DynamicResources) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// nodeSelectorFromAllocation returns the allocation's node selector, or nil
// when the devices are reachable from every node.
func nodeSelectorFromAllocation(allocation *resourceapi.AllocationResult) (*nodeaffinity.NodeSelector, error) {
	if allocation.NodeSelector == nil {
		return nil, nil
	}
	return nodeaffinity.NewNodeSelector(allocation.NodeSelector)
}
