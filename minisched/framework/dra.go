// This file is what plugins read about dynamic resource allocation: the
// SharedDRAManager every profile shares, with its claims, slices and
// device classes.

package framework

import (
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
)

// SharedDRAManager is what the DynamicResources plugin (and NodeResourcesFit,
// for extended resources backed by devices) reads about dynamic resource
// allocation: claims, slices and classes. One manager serves every profile
// of a scheduler, so an allocation made in one profile's cycle is seen by
// the next cycle of any profile.
type SharedDRAManager interface {
	// ResourceClaims are the claims as the scheduler believes them: the
	// informer's, with this scheduler's own writes and pending allocations
	// laid over them.
	ResourceClaims() ResourceClaimTracker
	// ResourceSlices lists the slices with DeviceTaintRules applied.
	ResourceSlices() ResourceSliceLister
	// DeviceClasses reads DeviceClasses.
	DeviceClasses() DeviceClassLister
	// DeviceClassResolver maps an extended resource name to the
	// DeviceClass that backs it.
	DeviceClassResolver() DeviceClassResolver
}

// ResourceClaimTracker reads ResourceClaims and tracks the changes the
// scheduler makes to them before the informer shows them. Every read
// reflects AssumeClaimAfterAPICall and SignalClaimPendingAllocation at once.
type ResourceClaimTracker interface {
	// List returns every claim.
	List() ([]*resourceapi.ResourceClaim, error)
	// Get returns one claim, or an error naming it if there is none.
	Get(namespace, name string) (*resourceapi.ResourceClaim, error)
	// ListAllAllocatedDevices returns the devices that allocated (or
	// pending) claims hold.
	ListAllAllocatedDevices() (sets.Set[structured.DeviceID], error)
	// GatherAllocatedState returns the allocated devices, shared device IDs
	// and consumed capacity, the allocator's view of what is taken.
	GatherAllocatedState() (*structured.AllocatedState, error)

	// SignalClaimPendingAllocation records that allocatedClaim (with its
	// status.allocation set) will be written in a binding cycle. A second
	// signal for the same UID shares the pending allocation; each signal is
	// matched by one MaybeRemoveClaimPendingAllocation.
	SignalClaimPendingAllocation(claimUID types.UID, allocatedClaim *resourceapi.ResourceClaim) error
	// GetPendingAllocation returns the claim's pending allocation, or nil.
	GetPendingAllocation(claimUID types.UID) *resourceapi.AllocationResult
	// MaybeRemoveClaimPendingAllocation drops one sharer of the claim's
	// pending allocation, and the allocation with the last one (or at once
	// with forceRemove). It reports whether the allocation was removed.
	MaybeRemoveClaimPendingAllocation(claimUID types.UID, forceRemove bool) (deleted bool)

	// AssumeClaimAfterAPICall records a claim the scheduler just wrote, so
	// reads see it before the informer does.
	AssumeClaimAfterAPICall(claim *resourceapi.ResourceClaim) error
	// AssumedClaimRestore drops an assumed claim: reads go back to the
	// informer's version.
	AssumedClaimRestore(namespace, name string)
}

// ResourceSliceLister lists ResourceSlices.
type ResourceSliceLister interface {
	// ListWithDeviceTaintRules returns every slice with the DeviceTaintRules
	// that select its devices applied as device taints.
	ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error)
}

// DeviceClassLister reads DeviceClasses.
type DeviceClassLister interface {
	// List returns every DeviceClass.
	List() ([]*resourceapi.DeviceClass, error)
	// Get returns the DeviceClass with that name, or an error.
	Get(name string) (*resourceapi.DeviceClass, error)
}

// DeviceClassResolver maps extended resource names to DeviceClasses.
type DeviceClassResolver interface {
	// GetDeviceClass returns the DeviceClass that backs the extended
	// resource (through its spec.extendedResourceName, or the implicit
	// name deviceclass.resource.kubernetes.io/<class>), or nil.
	GetDeviceClass(resourceName v1.ResourceName) *resourceapi.DeviceClass
}
