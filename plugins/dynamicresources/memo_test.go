package dynamicresources

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/framework"
)

// countingAllocator counts the allocator's Allocate calls.
type countingAllocator struct {
	structured.Allocator
	calls *atomic.Int64
}

func (c countingAllocator) Allocate(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	c.calls.Add(1)
	return c.Allocator.Allocate(ctx, node, claims)
}

// TestAllocationMemo runs cycles one after the other with one memo, each
// changing one thing the allocator's answers depend on, and checks on
// every node that the memo's answer is the allocator's, and how many nodes
// the allocator was asked about.
func TestAllocationMemo(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	views, memo := &sliceViews{}, &allocationMemo{}
	lister := classes{"gpu": viewClass("gpu", "1", gpuSelector)}
	slices := viewSlices()
	nodes := map[string]*v1.Node{}
	for _, name := range viewNodes {
		nodes[name] = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	claims := []*resourceapi.ResourceClaim{classClaim("pod-0-claim", "gpu", 1)}
	taken := sets.New[structured.DeviceID]()
	var shared sets.Set[structured.SharedDeviceID]
	take := func(node, device string) {
		taken = taken.Clone().Insert(structured.MakeDeviceID(driverName, node, device))
	}

	steps := []struct {
		name   string
		change func()
		asked  int64 // nodes the allocator is asked about
		noMemo bool  // the memo is not used
	}{
		{name: "the first cycle asks about every node", asked: 4},
		{name: "nothing changed", asked: 0},
		{name: "a device of worker-0 taken", change: func() { take("worker-0", "dev-0") }, asked: 1},
		{name: "another pod's claim, asking alike", change: func() {
			claims = []*resourceapi.ResourceClaim{classClaim("pod-1-claim", "gpu", 1)}
		}, asked: 0},
		{name: "two devices asked for", change: func() {
			claims = []*resourceapi.ResourceClaim{classClaim("pod-2-claim", "gpu", 2)}
		}, asked: 4},
		{name: "a device of worker-1 taken and one of worker-0 given back", change: func() {
			taken = sets.New(structured.MakeDeviceID(driverName, "worker-1", "dev-1"))
		}, asked: 2},
		{name: "worker-3's node changed", change: func() {
			nodes["worker-3"] = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-3", Labels: map[string]string{"a": "b"}}}
		}, asked: 1},
		{name: "worker-2's slice changed", change: func() {
			s := viewSlice("worker-2", viewDevice("dev-0", "gpu", 32), viewDevice("dev-1", "gpu", 16))
			s.ResourceVersion = "2"
			slices = append(slices[:2:2], s, slices[3])
		}, asked: 4},
		{name: "the class changed", change: func() { lister = classes{"gpu": viewClass("gpu", "2", gpuSelector)} }, asked: 4},
		{name: "nothing changed, the slices listed in another order", change: func() {
			slices = []*resourceapi.ResourceSlice{slices[3], slices[1], slices[0], slices[2]}
		}, asked: 0},
		{name: "a shared device taken: no memo", change: func() {
			shared = sets.New(structured.MakeSharedDeviceID(structured.MakeDeviceID(driverName, "worker-9", "x"), ptr.To(types.UID("u"))))
		}, asked: 4, noMemo: true},
		{name: "no shared device again", change: func() { shared = nil }, asked: 0},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if step.change != nil {
				step.change()
			}
			allocated := structured.AllocatedState{AllocatedDevices: taken, AllocatedSharedDeviceIDs: shared}
			viewClasses, input, narrowed := views.allocatorInput(ctx, NewCELCache(), lister, slices, claims)
			if !narrowed {
				t.Fatal("views not used")
			}
			inner, err := NewAllocator(ctx, allocated, viewClasses, input, NewCELCache())
			if err != nil {
				t.Fatal(err)
			}
			calls := &atomic.Int64{}
			var allocator structured.Allocator = countingAllocator{Allocator: inner, calls: calls}
			cycle, ok := memo.begin(input, viewClasses.(classWithoutSelectors).class, claims, allocated)
			if ok == step.noMemo {
				t.Fatalf("memo used: %v, want %v", ok, !step.noMemo)
			}
			if ok {
				allocator = memoAllocator{Allocator: allocator, memo: memo, cycle: cycle}
			}
			full, err := NewAllocator(ctx, allocated, lister, slices, NewCELCache())
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range viewNodes {
				want, wantErr := full.Allocate(ctx, nodes[name], claims)
				got, gotErr := allocator.Allocate(ctx, nodes[name], claims)
				if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Errorf("%s: error %v, want %v", name, gotErr, wantErr)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: allocation differs (-allocator +memo):\n%s", name, diff)
				}
			}
			if calls.Load() != step.asked {
				t.Errorf("the allocator was asked about %d nodes, want %d", calls.Load(), step.asked)
			}
		})
	}
}

// TestAllocationMemoKeepsACopy checks that the memo keeps its own copy of
// an answer: changing the allocator's answer afterwards does not change
// what the memo gives.
func TestAllocationMemoKeepsACopy(t *testing.T) {
	memo := &allocationMemo{}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-0"}}
	cycle, ok := memo.begin(nil, nil, nil, structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID]()})
	if !ok {
		t.Fatal("memo not used")
	}
	answer := []resourceapi.AllocationResult{{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{{Request: "req-1", Driver: driverName, Pool: "worker-0", Device: "dev-0"}}}}}
	memo.keep(node, cycle, answer)
	answer[0].Devices.Results[0].Device = "changed"
	if got, ok := memo.lookup(node, cycle); !ok || got[0].Devices.Results[0].Device != "dev-0" {
		t.Fatalf("lookup: %v, %v; want the answer kept, dev-0", got, ok)
	}
}

// TestMemoAnswerUnstamped: PreBind stamps the allocation it writes. When
// the write fails and the pod is tried again with nothing changed,
// Filter's answer for the node comes from the memo, and must be the
// allocator's, without an earlier attempt's stamp: Reserve keeps a copy
// (the memo keeps its own too, so the stamp would show at the third).
func TestMemoAnswerUnstamped(t *testing.T) {
	// Stored objects, with versions: the views and the memo keep what
	// they know of them from one cycle to the next.
	slice, class := makeSlice(nodeName, "device-0"), deviceClass.DeepCopy()
	slice.UID, slice.ResourceVersion, class.UID, class.ResourceVersion = "slice-uid", "1", "class-uid", "1"
	env := newPluginEnv(t, nil, makeClaim(claimName), slice, class)
	env.client.PrependReactor("update", "resourceclaims", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() == "status" {
			return true, nil, errors.New("injected")
		}
		return false, nil, nil
	})
	_, ctx := ktesting.NewTestContext(t)
	pod, node := makePod(claimName), makeNode(nodeName)
	for attempt := range 3 {
		cs := framework.NewCycleState()
		if _, s := env.pl.PreFilter(ctx, cs, pod, nil); !s.IsSuccess() {
			t.Fatalf("attempt %d: PreFilter: %v", attempt, s)
		}
		if s := env.pl.Filter(ctx, cs, pod, node); !s.IsSuccess() {
			t.Fatalf("attempt %d: Filter: %v", attempt, s)
		}
		state, err := getStateData(cs)
		if err != nil {
			t.Fatal(err)
		}
		if _, fromMemo := state.allocator.(memoAllocator); !fromMemo {
			t.Fatalf("attempt %d: the memo is not used", attempt)
		}
		if stamp := state.nodeAllocations[nodeName].allocationResults[0].AllocationTimestamp; stamp != nil {
			t.Fatalf("attempt %d: Filter's allocation is stamped %v", attempt, stamp)
		}
		if s := env.pl.Reserve(ctx, cs, pod, nodeName); !s.IsSuccess() {
			t.Fatalf("attempt %d: Reserve: %v", attempt, s)
		}
		if s := env.pl.PreBind(ctx, cs, pod, nodeName); s.IsSuccess() {
			t.Fatalf("attempt %d: PreBind succeeded despite the injected error", attempt)
		}
		env.pl.Unreserve(ctx, cs, pod, nodeName)
	}
}
