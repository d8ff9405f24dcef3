// The claim tracker: the assume cache plus the allocations a scheduling
// cycle made (Reserve) that no binding cycle has written yet (PreBind).

package dramanager

import (
	"fmt"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/framework"
)

// claimTracker implements framework.ResourceClaimTracker.
//
// Why in-flight allocations are kept apart from the assume cache: pod A's
// Reserve allocates claim X, and pod B, which shares X, is scheduled next.
// Were X's allocation in the cache, B would see X allocated and its PreBind
// might add B to reservedFor before A's PreBind wrote the allocation: the
// apiserver refuses that. Were B allowed to write the allocation instead, a
// failed PreBind of A (which drops the allocation) could leave the cache
// believing X unallocated after B's PreBind allocated it, and X's devices
// would be given away twice. So an in-flight claim makes every other pod
// that needs it wait (PreFilter: "is in the process of being allocated"),
// and the allocation is counted as taken until PreBind stores the written
// claim in the cache.
type claimTracker struct {
	// logger is the manager's.
	logger klog.Logger
	// cache is the claims as the informer and PreBind left them.
	cache *AssumeCache
	// mu guards inFlight.
	mu sync.RWMutex
	// inFlight maps a claim's UID to its pending allocation.
	inFlight map[types.UID]inFlightAllocation

	// devicesMu guards devices and devicesPass.
	devicesMu sync.Mutex
	// devices are, by claim UID, the devices GatherAllocatedState found
	// taken by one claim object: the same object takes the same devices,
	// so they are read again only when the claim changes.
	devices map[types.UID]takenDevices
	// devicesPass counts GatherAllocatedState's calls, to drop the
	// entries of claims a call no longer saw.
	devicesPass uint64
}

// takenDevices are the devices one claim object takes, when it shares
// none (a shared device's consumed capacity is read each time).
type takenDevices struct {
	claim *resourceapi.ResourceClaim
	ids   []structured.DeviceID
	pass  uint64
}

// inFlightAllocation is a claim with the allocation Reserve chose, and how
// many Reserve calls signalled it: more than one when members of a pod
// group share the claim (each is undone by one
// MaybeRemoveClaimPendingAllocation).
type inFlightAllocation struct {
	claim   *resourceapi.ResourceClaim
	sharers int
}

var _ framework.ResourceClaimTracker = &claimTracker{}

// SpecialClaimInMemName is the name of the claim for a pod's extended
// resources backed by DeviceClasses while DynamicResources holds it in
// memory, between PreFilter and PreBind (which creates it with a generated
// name). It is deliberately not a valid object name: no claim of the
// apiserver, and so none of the cache, ever has it.
const SpecialClaimInMemName = "<extended-resources>"

func newClaimTracker(logger klog.Logger, cache *AssumeCache) *claimTracker {
	return &claimTracker{logger: logger, cache: cache, inFlight: map[types.UID]inFlightAllocation{}}
}

// List returns every claim of the cache.
func (c *claimTracker) List() ([]*resourceapi.ResourceClaim, error) {
	return c.cache.List(), nil
}

// Get returns one claim of the cache.
func (c *claimTracker) Get(namespace, name string) (*resourceapi.ResourceClaim, error) {
	return c.cache.Get(namespace, name)
}

// GetPendingAllocation returns the in-flight allocation of the claim, or nil.
func (c *claimTracker) GetPendingAllocation(claimUID types.UID) *resourceapi.AllocationResult {
	c.mu.RLock()
	defer c.mu.RUnlock()
	inFlight, found := c.inFlight[claimUID]
	if !found {
		return nil
	}
	return inFlight.claim.Status.Allocation
}

// SignalClaimPendingAllocation records allocatedClaim as in flight, or adds
// a sharer to the allocation already in flight. A claim the cache already
// shows allocated is not recorded: the pod's cycle state was older than
// that allocation, and PreBind will find it allocated. The in-memory claim
// for extended resources (SpecialClaimInMemName) is not in the cache, and
// no other pod shares it: it is recorded without that check.
func (c *claimTracker) SignalClaimPendingAllocation(claimUID types.UID, allocatedClaim *resourceapi.ResourceClaim) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if inFlight, found := c.inFlight[claimUID]; found {
		inFlight.sharers++
		c.inFlight[claimUID] = inFlight
		c.logger.V(5).Info("Added share for in-flight claim", "claim", klog.KObj(inFlight.claim), "uid", claimUID,
			"sharers", inFlight.sharers)
		return nil
	}
	if allocatedClaim.Name != SpecialClaimInMemName {
		assumed, err := c.cache.Get(allocatedClaim.Namespace, allocatedClaim.Name)
		if err != nil {
			return fmt.Errorf("look up assumed claim %s/%s, UID=%s: %w", allocatedClaim.Namespace, allocatedClaim.Name, claimUID, err)
		}
		if assumed.UID == claimUID && assumed.Status.Allocation != nil {
			c.logger.V(6).Info("Claim is already allocated, not creating in-flight", "claim", klog.KObj(assumed), "uid", claimUID)
			return nil
		}
	}
	c.inFlight[claimUID] = inFlightAllocation{claim: allocatedClaim, sharers: 1}
	c.logger.V(5).Info("Added in-flight claim", "claim", klog.KObj(allocatedClaim), "uid", claimUID,
		"version", allocatedClaim.ResourceVersion)
	return nil
}

// MaybeRemoveClaimPendingAllocation drops one sharer of the claim's
// in-flight allocation, and the allocation itself with the last sharer or
// with forceRemove (PreBind wrote it). It reports whether the allocation
// was removed.
func (c *claimTracker) MaybeRemoveClaimPendingAllocation(claimUID types.UID, forceRemove bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	inFlight, found := c.inFlight[claimUID]
	if !found {
		c.logger.V(5).Info("Redundant remove of in-flight claim, not found", "uid", claimUID)
		return false
	}
	if forceRemove || inFlight.sharers == 1 {
		delete(c.inFlight, claimUID)
		c.logger.V(5).Info("Removed in-flight claim", "claim", klog.KObj(inFlight.claim), "uid", claimUID)
		return true
	}
	inFlight.sharers--
	c.inFlight[claimUID] = inFlight
	c.logger.V(5).Info("Claim is still shared by other pods, not removing in-flight claim",
		"claim", klog.KObj(inFlight.claim), "uid", claimUID, "sharers", inFlight.sharers)
	return false
}

// AssumeClaimAfterAPICall stores the claim the apiserver returned.
func (c *claimTracker) AssumeClaimAfterAPICall(claim *resourceapi.ResourceClaim) error {
	return c.cache.Assume(claim)
}

// AssumedClaimRestore goes back to the informer's claim.
func (c *claimTracker) AssumedClaimRestore(namespace, name string) {
	c.cache.Restore(namespace, name)
}

// ListAllAllocatedDevices returns the devices every allocated or in-flight
// claim holds, shared ones included as their device.
func (c *claimTracker) ListAllAllocatedDevices() (sets.Set[structured.DeviceID], error) {
	devices := sets.New[structured.DeviceID]()
	c.foreachAllocatedClaim(func(claim *resourceapi.ResourceClaim) {
		foreachAllocatedDevice(claim, func(result *resourceapi.DeviceRequestAllocationResult) {
			devices.Insert(structured.MakeDeviceID(result.Driver, result.Pool, result.Device))
		})
	})
	return devices, nil
}

// GatherAllocatedState returns what the allocator must treat as taken:
// devices allocated whole, the share IDs of devices allocated in part
// (allowMultipleAllocations), and the capacity those shares consume.
// kube-scheduler keeps this up to date from claim events and retries when
// the claims change while it reads; recomputing it from the claims is
// simpler and, with the read order of foreachAllocatedClaim, needs no
// retry. What each claim object takes is read from it once (devices).
func (c *claimTracker) GatherAllocatedState() (*structured.AllocatedState, error) {
	state := &structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	c.devicesMu.Lock()
	defer c.devicesMu.Unlock()
	if c.devices == nil {
		c.devices = map[types.UID]takenDevices{}
	}
	c.devicesPass++
	seen := 0
	c.foreachAllocatedClaim(func(claim *resourceapi.ResourceClaim) {
		seen++
		if known, ok := c.devices[claim.UID]; ok && known.claim == claim {
			state.AllocatedDevices.Insert(known.ids...)
			known.pass = c.devicesPass
			c.devices[claim.UID] = known
			return
		}
		taken := takenDevices{claim: claim, pass: c.devicesPass}
		shares := false
		foreachAllocatedDevice(claim, func(result *resourceapi.DeviceRequestAllocationResult) {
			id := structured.MakeDeviceID(result.Driver, result.Pool, result.Device)
			if result.ShareID == nil {
				state.AllocatedDevices.Insert(id)
				taken.ids = append(taken.ids, id)
				return
			}
			shares = true
			state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, result.ShareID))
			if result.ConsumedCapacity != nil {
				state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, result.ConsumedCapacity))
			}
		})
		if shares {
			delete(c.devices, claim.UID)
			return
		}
		c.devices[claim.UID] = taken
	})
	if len(c.devices) > seen {
		for uid, known := range c.devices {
			if known.pass != c.devicesPass {
				delete(c.devices, uid)
			}
		}
	}
	return state, nil
}

// foreachAllocatedClaim calls fn on each in-flight claim, then on each
// allocated claim of the cache that is not in flight (so that a claim's
// consumed capacity counts once).
//
// The order is what makes one pass enough. PreBind stores the written claim
// in the cache before it drops the in-flight entry, and Reserve, which adds
// entries, runs in the scheduling cycle, like the PreFilter that calls
// this. So a claim missing from the in-flight copy taken first is in the
// cache read after it.
func (c *claimTracker) foreachAllocatedClaim(fn func(*resourceapi.ResourceClaim)) {
	c.mu.RLock()
	inFlight := make(map[types.UID]*resourceapi.ResourceClaim, len(c.inFlight))
	for uid, a := range c.inFlight {
		inFlight[uid] = a.claim
	}
	c.mu.RUnlock()
	for _, claim := range inFlight {
		fn(claim)
	}
	for _, claim := range c.cache.List() {
		if _, found := inFlight[claim.UID]; !found && claim.Status.Allocation != nil {
			fn(claim)
		}
	}
}

// foreachAllocatedDevice calls fn on each device result of the claim's
// allocation, except those allocated with adminAccess: an admin may use a
// device someone else holds, and holding it for admin access does not take
// it from anyone.
func foreachAllocatedDevice(claim *resourceapi.ResourceClaim, fn func(*resourceapi.DeviceRequestAllocationResult)) {
	if claim.Status.Allocation == nil {
		return
	}
	for i := range claim.Status.Allocation.Devices.Results {
		result := &claim.Status.Allocation.Devices.Results[i]
		if ptr.Deref(result.AdminAccess, false) {
			continue
		}
		fn(result)
	}
}
