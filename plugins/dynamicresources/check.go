// This file lets a reader of the cluster that is not the scheduler
// (`minisched explain`) ask this plugin what it decides, and its allocator
// what it can allocate, instead of keeping rules of its own: Check runs
// PreFilter and Filter, with the default args, over a SharedDRAManager of
// the reader's objects (dramanager.NewStatic); NewAllocator builds the
// allocator as PreFilter does, over whatever taken devices, classes and
// slices the reader asks about. Neither writes anything: PreFilter and
// Filter never do.

package dynamicresources

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/framework"
)

// Verdict is what PreFilter and Filter say of one pod.
type Verdict struct {
	// PreFilter is PreFilter's status: nil, Skip (the pod asks for no
	// devices: every node passes), or a rejection or an Error of the whole
	// pod, when no node is examined.
	PreFilter *framework.Status
	// Nodes holds Filter's status on each node, in the order asked (nil:
	// the node passes); none when PreFilter rejected the pod.
	Nodes []*framework.Status
}

// Check runs PreFilter for pod and then, unless PreFilter rejected it or
// had nothing to check, Filter on each node in turn, over dra, as one
// scheduling cycle of a scheduler with this plugin's default args would. It
// fails only when the plugin cannot be built.
func Check(ctx context.Context, dra framework.SharedDRAManager, pod *v1.Pod, nodes []*v1.Node) (Verdict, error) {
	plugin, err := New(ctx, nil, checkHandle{dra: dra})
	if err != nil {
		return Verdict{}, fmt.Errorf("building %s: %w", Name, err)
	}
	pl := plugin.(*DynamicResources)
	state := framework.NewCycleState()
	_, status := pl.PreFilter(ctx, state, pod, nil)
	v := Verdict{PreFilter: status}
	switch {
	case status.IsSkip():
		v.Nodes = make([]*framework.Status, len(nodes))
	case status.IsSuccess():
		for _, node := range nodes {
			ni := framework.NewNodeInfo()
			ni.SetNode(node)
			v.Nodes = append(v.Nodes, pl.Filter(ctx, state, pod, ni))
		}
	}
	return v, nil
}

// checkHandle is the handle Check builds the plugin with: the DRA state,
// no client, for PreFilter and Filter write nothing, and the default
// feature gates. Its other methods are the embedded nil Handle's and
// panic; New, PreFilter and Filter call none of them.
type checkHandle struct {
	framework.Handle
	dra framework.SharedDRAManager
}

// SharedDRAManager returns the reader's DRA state.
func (h checkHandle) SharedDRAManager() framework.SharedDRAManager { return h.dra }

// ClientSet returns nil: nothing is written.
func (h checkHandle) ClientSet() kubernetes.Interface { return nil }

// FeatureGates returns kube-scheduler v1.37.1's defaults: a reader asks
// what the plugin decides of one pod, which no gate minisched sets changes.
func (h checkHandle) FeatureGates() features.Gates { return features.Gates{} }

// NewAllocator returns the structured allocator PreFilter builds, with the
// plugin's features and CEL cache, over the devices allocated says are
// taken, the classes and the slices (with DeviceTaintRules applied, as
// the manager's ResourceSlices lists them).
func NewAllocator(ctx context.Context, allocated structured.AllocatedState, classes structured.DeviceClassLister,
	slices []*resourceapi.ResourceSlice, celCache *cel.Cache) (structured.Allocator, error) {
	return structured.NewAllocator(ctx, allocatorFeatures, allocated, classes, slices, celCache)
}

// NewCELCache returns a cache of compiled selectors as the plugin keeps
// one: celCacheSize entries, compiled with v1.37's default CEL features
// (consumable capacity is on, beta; list-type attributes are not, alpha).
func NewCELCache() *cel.Cache {
	return cel.NewCache(celCacheSize, cel.Features{EnableConsumableCapacity: true})
}

// BindingFailure returns the error Filter finds in an allocated claim one
// of whose devices failed binding (a binding failure condition is true in
// the claim's status), or nil. Such a claim is usable on no node until it
// is deallocated, by PostFilter or its owner.
func BindingFailure(claim *resourceapi.ResourceClaim) error {
	_, err := isClaimReadyForBinding(claim)
	return err
}
