// What the allocator already answered: with the views of sliceviews.go,
// the allocator's answer on a node depends only on the node, the views
// and the class given, the requests of the claims to allocate, and which
// devices of the node's pools are taken. From one cycle to the next, in a
// cluster whose pods ask alike, all of that stays the same on every node
// but the one the last pod went to. allocationMemo keeps each node's last
// answer with what it depended on, and gives it again while nothing of it
// changed, instead of asking the allocator. kube-scheduler asks the
// allocator on every node of every cycle; the answers are the same.
//
// Only answers the allocator gave without error are kept, and none holding
// a share ID (the allocator makes a new one each time). Nothing is kept
// when devices are shared (consumable capacity): the views rule out the
// rest of what could make the allocator look beyond a node's pools
// (shared counters).

package dynamicresources

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// allocationMemo is the answers kept, and the versions of what they depend
// on. PreFilter moves the versions on (begin); Filter's goroutines read
// them and the answers (lookup) and add answers (keep).
type allocationMemo struct {
	mu sync.RWMutex
	// nodes are the answers by node name.
	nodes map[string]memoEntry
	// cycle counts the calls of begin that allowed answers to be kept.
	cycle uint64
	// views and claims count the changes of the views and class given,
	// and of the claims' requests; last* are what they were.
	views, claims  uint64
	lastViews      sets.Set[*resourceapi.ResourceSlice]
	lastClass      *resourceapi.DeviceClass
	lastClaims     []resourceapi.DeviceClaim
	lastTaken      sets.Set[structured.DeviceID]
	poolChanged    map[poolName]uint64
	nodePools      map[string][]poolName
	everyNodePools []poolName
}

// poolName names a pool: its driver and name.
type poolName struct{ driver, pool string }

// memoEntry is one node's answer and what it was given.
type memoEntry struct {
	node                 *v1.Node
	views, claims, cycle uint64
	result               []resourceapi.AllocationResult
}

// memoCycle is what one cycle's answers depend on besides the node.
type memoCycle struct{ views, claims, cycle uint64 }

// begin records what this cycle's allocator is given: the views and the
// class without selectors (from allocatorInput), the claims to allocate
// and the devices taken. It says whether answers may be kept and given
// this cycle: not when devices are shared.
func (m *allocationMemo) begin(views []*resourceapi.ResourceSlice, class *resourceapi.DeviceClass,
	claims []*resourceapi.ResourceClaim, taken structured.AllocatedState) (memoCycle, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(taken.AllocatedSharedDeviceIDs) > 0 || len(taken.AggregatedCapacity) > 0 {
		return memoCycle{}, false
	}
	if m.nodes == nil {
		m.nodes = map[string]memoEntry{}
		m.poolChanged = map[poolName]uint64{}
	}
	m.cycle++
	if class != m.lastClass || !sameObjects(views, m.lastViews) {
		m.views++
		m.lastViews, m.lastClass = sets.New(views...), class
		m.indexPools(views)
		clear(m.nodes)
	}
	specs := make([]resourceapi.DeviceClaim, len(claims))
	for i, claim := range claims {
		specs[i] = claim.Spec.Devices
	}
	if !equality.Semantic.DeepEqual(specs, m.lastClaims) {
		m.claims++
		m.lastClaims = specs
	}
	// A pool whose taken devices changed since the last cycle changed now.
	for id := range taken.AllocatedDevices {
		if !m.lastTaken.Has(id) {
			m.poolChanged[poolName{id.Driver.String(), id.Pool.String()}] = m.cycle
		}
	}
	for id := range m.lastTaken {
		if !taken.AllocatedDevices.Has(id) {
			m.poolChanged[poolName{id.Driver.String(), id.Pool.String()}] = m.cycle
		}
	}
	m.lastTaken = taken.AllocatedDevices
	return memoCycle{views: m.views, claims: m.claims, cycle: m.cycle}, true
}

// indexPools records which pools each node's allocation reads: those of
// the slices on the node, and on every node those of the slices not tied
// to one.
func (m *allocationMemo) indexPools(views []*resourceapi.ResourceSlice) {
	m.nodePools, m.everyNodePools = map[string][]poolName{}, nil
	for _, slice := range views {
		p := poolName{slice.Spec.Driver, slice.Spec.Pool.Name}
		if node := ptr.Deref(slice.Spec.NodeName, ""); node != "" {
			m.nodePools[node] = append(m.nodePools[node], p)
		} else {
			m.everyNodePools = append(m.everyNodePools, p)
		}
	}
}

// lookup returns the node's kept answer, if it still holds this cycle.
// The answer is shared with the cycles it is given to: they only read it
// (Reserve copies the allocations it keeps).
func (m *allocationMemo) lookup(node *v1.Node, c memoCycle) ([]resourceapi.AllocationResult, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	entry, ok := m.nodes[node.Name]
	if !ok || entry.node != node || entry.views != c.views || entry.claims != c.claims {
		return nil, false
	}
	for _, pools := range [][]poolName{m.nodePools[node.Name], m.everyNodePools} {
		for _, p := range pools {
			if m.poolChanged[p] > entry.cycle {
				return nil, false
			}
		}
	}
	return entry.result, true
}

// keep records the allocator's answer on node this cycle, unless it holds
// a share ID.
func (m *allocationMemo) keep(node *v1.Node, c memoCycle, result []resourceapi.AllocationResult) {
	for i := range result {
		for _, device := range result[i].Devices.Results {
			if device.ShareID != nil {
				return
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.views != m.views || c.claims != m.claims || c.cycle != m.cycle {
		return // a later cycle began
	}
	m.nodes[node.Name] = memoEntry{node: node, views: c.views, claims: c.claims, cycle: c.cycle, result: copyResults(result)}
}

// copyResults is a deep copy: the memo keeps its own.
func copyResults(results []resourceapi.AllocationResult) []resourceapi.AllocationResult {
	if results == nil {
		return nil
	}
	out := make([]resourceapi.AllocationResult, len(results))
	for i := range results {
		results[i].DeepCopyInto(&out[i])
	}
	return out
}

// memoAllocator is the allocator of one cycle, answering from the memo
// where it can.
type memoAllocator struct {
	structured.Allocator
	memo  *allocationMemo
	cycle memoCycle
}

// Allocate gives the node's kept answer if it still holds, else the
// allocator's, which it keeps when the allocator returned no error.
func (a memoAllocator) Allocate(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	if result, ok := a.memo.lookup(node, a.cycle); ok {
		return result, nil
	}
	result, err := a.Allocator.Allocate(ctx, node, claims)
	if err == nil && ctx.Err() == nil {
		a.memo.keep(node, a.cycle, result)
	}
	return result, err
}
