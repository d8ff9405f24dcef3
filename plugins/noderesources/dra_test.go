// Tests for extended resources backed by DeviceClasses: Filter leaving them
// to DynamicResources, scoring counting their devices, and the queueing
// hints that wake pods requesting them. The cases follow kube-scheduler's
// fit_test.go, balanced_allocation_test.go and resource_allocation_test.go.
package noderesources

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

const (
	// draResource is an extended resource the class gpuClass backs.
	draResource v1.ResourceName = "extended.resource.dra.io/something"
	// gpuClass is the DeviceClass that backs draResource.
	gpuClass = "device-class-name"
	// implicitResource is gpuClass's implicit extended resource name.
	implicitResource = v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + gpuClass)
	testDriver       = "test-driver"
)

// deviceClass returns a DeviceClass named name backing extendedResource
// (none when empty), with CEL selectors.
func deviceClass(name string, extendedResource v1.ResourceName, selectors ...string) *resourceapi.DeviceClass {
	c := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if extendedResource != "" {
		c.Spec.ExtendedResourceName = ptr.To(string(extendedResource))
	}
	for _, expr := range selectors {
		c.Spec.Selectors = append(c.Spec.Selectors,
			resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: expr}})
	}
	return c
}

// nodeSlice returns a ResourceSlice of testDriver on node (its pool is named
// after the node) with devices of those names.
func nodeSlice(node string, devices ...string) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + testDriver},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   testDriver,
			Pool:     resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1},
			NodeName: ptr.To(node),
		},
	}
	for _, d := range devices {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: d})
	}
	return s
}

// allocated returns an AllocatedState holding testDriver's devices of
// pool, taken whole.
func allocated(pool string, devices ...string) *structured.AllocatedState {
	s := &structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
	}
	for _, d := range devices {
		s.AllocatedDevices.Insert(structured.MakeDeviceID(testDriver, pool, d))
	}
	return s
}

// testDRAManager is a SharedDRAManager over fixed slices and allocated
// devices, with a real extended-resource cache for the classes. The
// framework's interfaces it does not need stay nil.
type testDRAManager struct {
	resolver  *extendedresourcecache.ExtendedResourceCache
	slices    []*resourceapi.ResourceSlice
	allocated *structured.AllocatedState
	// err, if set, fails GatherAllocatedState.
	err error
}

var _ framework.SharedDRAManager = &testDRAManager{}

// newTestDRAManager feeds classes to an ExtendedResourceCache as the
// DeviceClass informer would.
func newTestDRAManager(t *testing.T, classes []*resourceapi.DeviceClass, slices []*resourceapi.ResourceSlice,
	allocatedState *structured.AllocatedState) *testDRAManager {
	logger, _ := ktesting.NewTestContext(t)
	resolver := extendedresourcecache.NewExtendedResourceCache(logger)
	for _, c := range classes {
		resolver.OnAdd(c, true)
	}
	if allocatedState == nil {
		allocatedState = allocated("")
	}
	return &testDRAManager{resolver: resolver, slices: slices, allocated: allocatedState}
}

func (m *testDRAManager) ResourceClaims() framework.ResourceClaimTracker { return testClaims{m: m} }
func (m *testDRAManager) ResourceSlices() framework.ResourceSliceLister  { return testSlices{m} }
func (m *testDRAManager) DeviceClasses() framework.DeviceClassLister     { return nil }
func (m *testDRAManager) DeviceClassResolver() framework.DeviceClassResolver {
	return m.resolver
}

// testClaims answers GatherAllocatedState; the rest of the tracker is
// unused here (the nil embedded interface).
type testClaims struct {
	framework.ResourceClaimTracker
	m *testDRAManager
}

func (c testClaims) GatherAllocatedState() (*structured.AllocatedState, error) {
	return c.m.allocated, c.m.err
}

// testSlices lists the manager's slices.
type testSlices struct {
	m *testDRAManager
}

func (s testSlices) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) {
	return s.m.slices, nil
}

// draHandle is a Handle that only knows the DRA manager, for the plugins'
// factories.
type draHandle struct {
	framework.Handle
	m framework.SharedDRAManager
}

func (h draHandle) SharedDRAManager() framework.SharedDRAManager { return h.m }

// newDRAFit builds Fit with args and a handle giving m (none when m is nil).
func newDRAFit(t *testing.T, args *runtime.RawExtension, m *testDRAManager) *Fit {
	t.Helper()
	var h framework.Handle
	if m != nil {
		h = draHandle{m: m}
	}
	pl, err := New(context.Background(), args, h)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return pl.(*Fit)
}

func TestFilterDRAExtendedResources(t *testing.T) {
	// The node has 10m cpu, 20 bytes of memory, 5 example.com/aaa from a
	// device plugin and 32 pod slots; nothing of draResource.
	node := st.MakeNode().Name("n").Capacity(res{v1.ResourceCPU: "10m", v1.ResourceMemory: "20",
		v1.ResourcePods: "32", "example.com/aaa": "5"}).Obj()
	classes := []*resourceapi.DeviceClass{deviceClass(gpuClass, draResource)}
	unresolvable := func(reasons ...string) *framework.Status {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, reasons...)
	}
	tests := []struct {
		name  string
		args  *runtime.RawExtension
		noDRA bool
		node  *v1.Node
		pod   *v1.Pod
		want  *framework.Status
	}{
		{
			name: "extended resource backed by device plugin",
			pod:  st.MakePod().Name("p").Req(res{"example.com/aaa": "1"}).Obj(),
		},
		{
			// DynamicResources decides whether the node's devices serve it.
			name: "extended resource backed by DRA",
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "1m", v1.ResourceMemory: "1", draResource: "1"}).Obj(),
		},
		{
			name:  "extended resource backed by DRA, without a DRA manager",
			noDRA: true,
			pod:   st.MakePod().Name("p").Req(res{v1.ResourceCPU: "1m", v1.ResourceMemory: "1", draResource: "1"}).Obj(),
			want:  unresolvable("Insufficient extended.resource.dra.io/something"),
		},
		{
			name: "extended resource not backed by DRA",
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "1m", v1.ResourceMemory: "1", "example.com/bbb": "1"}).Obj(),
			want: unresolvable("Insufficient example.com/bbb"),
		},
		{
			name: "node advertising none of it delegates too",
			node: st.MakeNode().Name("n").Capacity(res{v1.ResourceCPU: "10m", draResource: "0"}).Obj(),
			pod:  st.MakePod().Name("p").Req(res{draResource: "1"}).Obj(),
		},
		{
			// A device plugin on this node serves it: checked as any
			// extended resource, classes notwithstanding.
			name: "node advertising the resource is checked as before",
			node: st.MakeNode().Name("n").Capacity(res{v1.ResourceCPU: "10m", draResource: "1"}).Obj(),
			pod:  st.MakePod().Name("p").Req(res{draResource: "2"}).Obj(),
			want: unresolvable("Insufficient extended.resource.dra.io/something"),
		},
		{
			name: "implicit name of an existing class",
			pod:  st.MakePod().Name("p").Req(res{implicitResource: "1"}).Obj(),
		},
		{
			// deviceclass.resource.kubernetes.io/* is a prefixed native
			// resource: a scalar resource kube-scheduler checks like an
			// extended one.
			name: "implicit name of no class",
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + "other"): "1"}).Obj(),
			want: unresolvable("Insufficient deviceclass.resource.kubernetes.io/other"),
		},
		{
			name: "other shortages are still reported",
			pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "11m", draResource: "1", "example.com/bbb": "1"}).Obj(),
			want: unresolvable("Insufficient cpu", "Insufficient example.com/bbb"),
		},
		{
			name: "ignored resource group wins over the class",
			args: rawArgs(`{"ignoredResourceGroups": ["extended.resource.dra.io"]}`),
			pod:  st.MakePod().Name("p").Req(res{draResource: "1"}).Obj(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			var m *testDRAManager
			if !tt.noDRA {
				m = newTestDRAManager(t, classes, nil, nil)
			}
			pl := newDRAFit(t, tt.args, m)
			n := node
			if tt.node != nil {
				n = tt.node
			}
			state := framework.NewCycleState()
			if _, s := pl.PreFilter(ctx, state, tt.pod, nil); !s.IsSuccess() {
				t.Fatalf("PreFilter: %v", s)
			}
			got := pl.Filter(ctx, state, tt.pod, plugintesting.MakeNodeInfo(n))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Filter (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFitScoreDRAExtendedResources(t *testing.T) {
	onlyDRA := rawArgs(`{"scoringStrategy": {"type": "LeastAllocated", "resources": [` +
		`{"name": "extended.resource.dra.io/something", "weight": 1}]}}`)
	nodes := []*v1.Node{st.MakeNode().Name("node1").Obj(), st.MakeNode().Name("node2").Obj()}
	classes := []*resourceapi.DeviceClass{deviceClass(gpuClass, draResource)}
	slices := []*resourceapi.ResourceSlice{
		nodeSlice("node1", "device-1", "device-2", "device-3"),
		nodeSlice("node2", "device-1", "device-2"),
	}
	tests := []struct {
		name      string
		args      *runtime.RawExtension
		nodes     []*v1.Node
		noDRA     bool
		allocated *structured.AllocatedState
		want      []int64
	}{
		{
			// node1: (3−1)×100/3 = 66; node2: (2−1)×100/2 = 50.
			name: "LeastAllocated counts the class's devices",
			args: onlyDRA,
			want: []int64{66, 50},
		},
		{
			// node1's device-1 is allocated: (3−1−1)×100/3 = 33; node2
			// as before, 50.
			name:      "allocated devices count as requested",
			args:      onlyDRA,
			allocated: allocated("node1", "device-1"),
			want:      []int64{33, 50},
		},
		{
			// No resource left to score: 0.
			name:  "without a DRA manager the resource is left out",
			args:  onlyDRA,
			noDRA: true,
			want:  []int64{0, 0},
		},
		{
			// node1's device plugin advertises 4: (4−1)×100/4 = 75.
			name: "device-plugin allocatable wins",
			args: onlyDRA,
			nodes: []*v1.Node{
				st.MakeNode().Name("node1").Capacity(res{draResource: "4"}).Obj(),
				st.MakeNode().Name("node2").Obj(),
			},
			want: []int64{75, 50},
		},
		{
			// Default resources (cpu, memory): the nodes have neither, so
			// nothing scores, and PreScore gathers no DRA state.
			name: "DRA resource not among the scored ones",
			want: []int64{0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			var m *testDRAManager
			if !tt.noDRA {
				m = newTestDRAManager(t, classes, slices, tt.allocated)
			}
			pl := newDRAFit(t, tt.args, m)
			pod := st.MakePod().Name("p").Req(res{draResource: "1"}).Obj()
			ns := nodes
			if tt.nodes != nil {
				ns = tt.nodes
			}
			var nodeInfos []*framework.NodeInfo
			for _, n := range ns {
				nodeInfos = append(nodeInfos, plugintesting.MakeNodeInfo(n))
			}
			state := framework.NewCycleState()
			if s := pl.PreScore(ctx, state, pod, nodeInfos); !s.IsSuccess() {
				t.Fatalf("PreScore: %v", s)
			}
			var got, gotWithoutPreScore []int64
			for _, ni := range nodeInfos {
				score, s := pl.Score(ctx, state, pod, ni)
				if !s.IsSuccess() {
					t.Fatalf("Score: %v", s)
				}
				got = append(got, score)
				score, s = pl.Score(ctx, framework.NewCycleState(), pod, ni)
				if !s.IsSuccess() {
					t.Fatalf("Score without PreScore: %v", s)
				}
				gotWithoutPreScore = append(gotWithoutPreScore, score)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("scores (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, gotWithoutPreScore); diff != "" {
				t.Errorf("scores without PreScore (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBalancedAllocationScoreDRAExtendedResources(t *testing.T) {
	args := rawArgs(`{"resources": [{"name": "cpu"}, {"name": "memory"},
		{"name": "extended.resource.dra.io/something"}]}`)
	node := func(name string) *v1.Node {
		return st.MakeNode().Name(name).Capacity(res{v1.ResourceCPU: "3500m", v1.ResourceMemory: "40000"}).Obj()
	}
	m := newTestDRAManager(t, []*resourceapi.DeviceClass{deviceClass(gpuClass, draResource)},
		[]*resourceapi.ResourceSlice{nodeSlice("node1", "device-1", "device-2", "device-3", "device-4",
			"device-5", "device-6", "device-7", "device-8")}, nil)
	pl, err := NewBalancedAllocation(context.Background(), args, draHandle{m: m})
	if err != nil {
		t.Fatal(err)
	}
	ba := pl.(*BalancedAllocation)
	pod := st.MakePod().Name("p").Req(res{draResource: "1"}).Obj()
	nodeInfos := []*framework.NodeInfo{
		// cpu 3000/3500, memory 0/40000, devices 0 → 1 of 8:
		// b0 = 60, b1 = 62 → 50 + (50+62−60)/2 = 76.
		plugintesting.MakeNodeInfo(node("node1"),
			st.MakePod().Name("e1").UID("e1").Req(res{v1.ResourceCPU: "1000m"}).Req(res{v1.ResourceCPU: "2000m"}).Obj()),
		// cpu 3000/3500, memory 5000/40000, no devices (left out):
		// b0 = b1 = 63 → 75.
		plugintesting.MakeNodeInfo(node("node2"),
			st.MakePod().Name("e2").UID("e2").Req(res{v1.ResourceCPU: "1000m", v1.ResourceMemory: "2000"}).
				Req(res{v1.ResourceCPU: "2000m", v1.ResourceMemory: "3000"}).Obj()),
	}
	want := []int64{76, 75}
	for _, runPreScore := range []bool{true, false} {
		ctx := context.Background()
		state := framework.NewCycleState()
		if runPreScore {
			if s := ba.PreScore(ctx, state, pod, nodeInfos); !s.IsSuccess() {
				t.Fatalf("PreScore: %v", s)
			}
		}
		var got []int64
		for _, ni := range nodeInfos {
			score, s := ba.Score(ctx, state, pod, ni)
			if !s.IsSuccess() {
				t.Fatalf("Score: %v", s)
			}
			got = append(got, score)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("scores with PreScore %v (-want +got):\n%s", runPreScore, diff)
		}
	}
}

func TestPreScoreDRAError(t *testing.T) {
	m := newTestDRAManager(t, []*resourceapi.DeviceClass{deviceClass(gpuClass, draResource)}, nil, nil)
	m.err = errors.New("claims not synced")
	pod := st.MakePod().Name("p").Req(res{draResource: "1"}).Obj()
	want := framework.AsStatus(m.err)

	fit := newDRAFit(t, rawArgs(`{"scoringStrategy": {"type": "MostAllocated", "resources": [`+
		`{"name": "extended.resource.dra.io/something", "weight": 1}]}}`), m)
	if diff := cmp.Diff(want, fit.PreScore(context.Background(), framework.NewCycleState(), pod, nil)); diff != "" {
		t.Errorf("Fit PreScore (-want +got):\n%s", diff)
	}
	pl, err := NewBalancedAllocation(context.Background(),
		rawArgs(`{"resources": [{"name": "extended.resource.dra.io/something"}]}`), draHandle{m: m})
	if err != nil {
		t.Fatal(err)
	}
	got := pl.(*BalancedAllocation).PreScore(context.Background(), framework.NewCycleState(), pod, nil)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("BalancedAllocation PreScore (-want +got):\n%s", diff)
	}
}

func TestCalculateResourceAllocatableRequest(t *testing.T) {
	const nodeName = "resource-node"
	explicitClass := deviceClass(gpuClass, draResource)
	zoneSelector := &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"us-east-1a"}}},
	}}}
	gpu := func(name, model, memory string) resourceapi.Device {
		return resourceapi.Device{
			Name:       name,
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": {StringValue: ptr.To(model)}},
			Capacity:   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse(memory)}},
		}
	}
	onNode := func(d resourceapi.Device, node string) resourceapi.Device { d.NodeName = ptr.To(node); return d }
	selected := func(d resourceapi.Device) resourceapi.Device { d.NodeSelector = zoneSelector; return d }
	perDeviceSlice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "per-device-slice"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:                 testDriver,
			Pool:                   resourceapi.ResourcePool{Name: "per-device-pool", ResourceSliceCount: 1},
			PerDeviceNodeSelection: ptr.To(true),
			Devices: []resourceapi.Device{
				onNode(gpu("device-1", "SOME-XYZ", "16Gi"), nodeName),
				onNode(gpu("device-2", "SOME-ZYX", "12Gi"), "other-node"),
				selected(gpu("device-3", "SOME-XZY", "24Gi")),
				gpu("device-4", "SOME-XXX", "24Gi"), // no node selection: nobody's
			},
		},
	}
	gpuSelector := `device.driver == "test-driver" && ` +
		`device.capacity["test-driver"].memory.compareTo(quantity("8Gi")) >= 0 && ` +
		`device.attributes["test-driver"].model.startsWith("SOME-")`
	withSlice := func(mutate func(*resourceapi.ResourceSlice)) *resourceapi.ResourceSlice {
		s := nodeSlice(nodeName, "device-1", "device-2")
		s.Spec.NodeName = nil
		mutate(s)
		return s
	}
	sharedState := allocated(nodeName)
	sharedState.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(
		structured.MakeDeviceID(testDriver, nodeName, "device-1"), ptr.To(types.UID("share-123"))))
	mixedState := allocated(nodeName, "device-1")
	mixedState.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(
		structured.MakeDeviceID(testDriver, nodeName, "device-2"), ptr.To(types.UID("share-456"))))

	tests := []struct {
		name          string
		noDRA         bool
		node          *v1.Node
		resource      v1.ResourceName
		classes       []*resourceapi.DeviceClass
		slices        []*resourceapi.ResourceSlice
		allocated     *structured.AllocatedState
		wantAlloc     int64
		wantAllocated int64
	}{
		{
			name:      "device-plugin resource without DRA",
			noDRA:     true,
			node:      st.MakeNode().Name(nodeName).Capacity(res{draResource: "4"}).Obj(),
			resource:  draResource,
			wantAlloc: 4,
		},
		{
			name:      "device-plugin resource with DRA",
			node:      st.MakeNode().Name(nodeName).Capacity(res{draResource: "4"}).Obj(),
			resource:  draResource,
			classes:   []*resourceapi.DeviceClass{explicitClass},
			slices:    []*resourceapi.ResourceSlice{nodeSlice(nodeName, "device-1")},
			wantAlloc: 4,
		},
		{
			name:      "DRA-backed resource, explicit name",
			resource:  draResource,
			classes:   []*resourceapi.DeviceClass{explicitClass},
			slices:    []*resourceapi.ResourceSlice{nodeSlice(nodeName, "device-1")},
			wantAlloc: 1,
		},
		{
			name:      "DRA-backed resource, implicit name",
			resource:  implicitResource,
			classes:   []*resourceapi.DeviceClass{deviceClass(gpuClass, "")},
			slices:    []*resourceapi.ResourceSlice{nodeSlice(nodeName, "device-1")},
			wantAlloc: 1,
		},
		{
			name:     "DRA-backed resource without slices",
			resource: draResource,
			classes:  []*resourceapi.DeviceClass{explicitClass},
		},
		{
			name:     "resource no class backs",
			resource: "example.com/other",
			classes:  []*resourceapi.DeviceClass{explicitClass},
			slices:   []*resourceapi.ResourceSlice{nodeSlice(nodeName, "device-1")},
		},
		{
			name:          "allocated device",
			resource:      draResource,
			classes:       []*resourceapi.DeviceClass{explicitClass},
			slices:        []*resourceapi.ResourceSlice{nodeSlice(nodeName, "device-1", "device-2")},
			allocated:     allocated(nodeName, "device-1"),
			wantAlloc:     2,
			wantAllocated: 1,
		},
		{
			name:          "shared device allocation counts as allocated",
			resource:      draResource,
			classes:       []*resourceapi.DeviceClass{explicitClass},
			slices:        []*resourceapi.ResourceSlice{nodeSlice(nodeName, "device-1", "device-2")},
			allocated:     sharedState,
			wantAlloc:     2,
			wantAllocated: 1,
		},
		{
			name:          "whole and shared allocations",
			resource:      draResource,
			classes:       []*resourceapi.DeviceClass{explicitClass},
			slices:        []*resourceapi.ResourceSlice{nodeSlice(nodeName, "device-1", "device-2", "device-3")},
			allocated:     mixedState,
			wantAlloc:     3,
			wantAllocated: 2,
		},
		{
			// device-1 by name and device-3 by its selector match both the
			// node and the class's CEL selector.
			name:     "per-device node selection and a CEL selector",
			node:     st.MakeNode().Name(nodeName).Label("zone", "us-east-1a").Obj(),
			resource: draResource,
			classes:  []*resourceapi.DeviceClass{deviceClass(gpuClass, draResource, gpuSelector)},
			slices:   []*resourceapi.ResourceSlice{perDeviceSlice},
			allocated: func() *structured.AllocatedState {
				s := allocated("")
				s.AllocatedDevices.Insert(structured.MakeDeviceID(testDriver, "per-device-pool", "device-1"))
				return s
			}(),
			wantAlloc:     2,
			wantAllocated: 1,
		},
		{
			name:     "CEL selector excludes devices",
			node:     st.MakeNode().Name(nodeName).Label("zone", "us-east-1a").Obj(),
			resource: draResource,
			classes: []*resourceapi.DeviceClass{deviceClass(gpuClass, draResource,
				`device.capacity["test-driver"].memory.compareTo(quantity("20Gi")) >= 0`)},
			slices:    []*resourceapi.ResourceSlice{perDeviceSlice},
			wantAlloc: 1, // device-3
		},
		{
			// The resource is left out of the score; the error is logged.
			name:     "CEL selector that does not compile",
			resource: draResource,
			classes:  []*resourceapi.DeviceClass{deviceClass(gpuClass, draResource, `device.no_such_field`)},
			slices:   []*resourceapi.ResourceSlice{nodeSlice(nodeName, "device-1")},
		},
		{
			name:     "slice of another node",
			resource: draResource,
			classes:  []*resourceapi.DeviceClass{explicitClass},
			slices:   []*resourceapi.ResourceSlice{nodeSlice("other-node", "device-1")},
		},
		{
			name:     "slice for all nodes",
			resource: draResource,
			classes:  []*resourceapi.DeviceClass{explicitClass},
			slices: []*resourceapi.ResourceSlice{withSlice(func(s *resourceapi.ResourceSlice) {
				s.Spec.AllNodes = ptr.To(true)
			})},
			wantAlloc: 2,
		},
		{
			name:     "slice selecting the node",
			node:     st.MakeNode().Name(nodeName).Label("zone", "us-east-1a").Obj(),
			resource: draResource,
			classes:  []*resourceapi.DeviceClass{explicitClass},
			slices: []*resourceapi.ResourceSlice{withSlice(func(s *resourceapi.ResourceSlice) {
				s.Spec.NodeSelector = zoneSelector
			})},
			wantAlloc: 2,
		},
		{
			name:     "slice selecting other nodes",
			node:     st.MakeNode().Name(nodeName).Label("zone", "us-west-1a").Obj(),
			resource: draResource,
			classes:  []*resourceapi.DeviceClass{explicitClass},
			slices: []*resourceapi.ResourceSlice{withSlice(func(s *resourceapi.ResourceSlice) {
				s.Spec.NodeSelector = zoneSelector
			})},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			var m framework.SharedDRAManager
			if !tt.noDRA {
				m = newTestDRAManager(t, tt.classes, tt.slices, tt.allocated)
			}
			r := &resourceAllocationScorer{resources: []configv1.ResourceSpec{{Name: string(tt.resource), Weight: 1}},
				dra: newDRAScorer(m)}
			draState, status := r.dra.getDRAPreScoredParams(r.resources)
			if status != nil {
				t.Fatalf("getDRAPreScoredParams: %v", status)
			}
			node := tt.node
			if node == nil {
				node = st.MakeNode().Name(nodeName).Obj()
			}
			gotAlloc, gotAllocated := r.allocatableAndAllocated(ctx, plugintesting.MakeNodeInfo(node), tt.resource, draState)
			if diff := cmp.Diff([]int64{tt.wantAlloc, tt.wantAllocated}, []int64{gotAlloc, gotAllocated}); diff != "" {
				t.Errorf("allocatable, allocated (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDRAScorerCaches pins kube-scheduler's caching: node matches are
// remembered by node name, so a relabelled node keeps its first answer,
// and only selector matches are remembered.
func TestDRAScorerCaches(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	selector := &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"a"}}},
	}}}
	d := newDRAScorer(newTestDRAManager(t, nil, nil, nil))

	inZone := st.MakeNode().Name("n").Label("zone", "a").Obj()
	moved := st.MakeNode().Name("n").Label("zone", "b").Obj()
	var got []bool
	for _, node := range []*v1.Node{inZone, moved} {
		matches, err := d.nodeMatches(node, "", false, selector)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, matches)
	}
	if diff := cmp.Diff([]bool{true, true}, got); diff != "" {
		t.Errorf("node matches before and after relabelling (-want +got):\n%s", diff)
	}

	class := deviceClass(gpuClass, draResource, `device.attributes["test-driver"].model == "A"`)
	model := func(m string) resourceapi.Device {
		return resourceapi.Device{Name: "device-1",
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": {StringValue: ptr.To(m)}}}
	}
	got = nil
	// B does not match and is not remembered; A matches and is; the
	// device republished as B keeps the remembered match.
	for _, device := range []resourceapi.Device{model("B"), model("A"), model("B")} {
		matches, err := d.deviceMatchesClass(ctx, device, class, testDriver, "pool")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, matches)
	}
	if diff := cmp.Diff([]bool{false, true, true}, got); diff != "" {
		t.Errorf("device matches (-want +got):\n%s", diff)
	}
}

func TestIsSchedulableAfterDeviceClassEvent(t *testing.T) {
	gpuPod := st.MakePod().Name("p").Req(res{"example.com/gpu": "1"}).Obj()
	implicitPod := st.MakePod().Name("p").Req(res{v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + "gpuclass"): "1"}).Obj()
	memoryPod := st.MakePod().Name("p").Req(res{v1.ResourceMemory: "2"}).Obj()
	tests := []struct {
		name           string
		pod            *v1.Pod
		oldObj, newObj interface{}
		want           framework.QueueingHint
		wantErr        bool
	}{
		{
			name:    "wrong new object",
			pod:     memoryPod,
			newObj:  "not-a-class",
			want:    framework.Queue,
			wantErr: true,
		},
		{
			name:    "wrong old object",
			pod:     memoryPod,
			oldObj:  "not-a-class",
			newObj:  &resourceapi.DeviceClass{},
			want:    framework.Queue,
			wantErr: true,
		},
		{
			name:   "update, no extended resource name before or after",
			pod:    memoryPod,
			oldObj: &resourceapi.DeviceClass{},
			newObj: &resourceapi.DeviceClass{},
			want:   framework.QueueSkip,
		},
		{
			name:   "update keeping the extended resource name the pod requests",
			pod:    gpuPod,
			oldObj: deviceClass("gpuclass", "example.com/gpu"),
			newObj: deviceClass("gpuclass", "example.com/gpu"),
			want:   framework.QueueSkip,
		},
		{
			name:   "added class whose implicit name the pod requests",
			pod:    implicitPod,
			newObj: deviceClass("gpuclass", "example.com/gpu"),
			want:   framework.Queue,
		},
		{
			name:   "added class whose implicit name the pod does not request",
			pod:    implicitPod,
			newObj: deviceClass("myclass", "example.com/gpu"),
			want:   framework.QueueSkip,
		},
		{
			name:   "added class with an extended resource name the pod does not request",
			pod:    st.MakePod().Name("p").Req(res{"example.com/othergpu": "1"}).Obj(),
			newObj: deviceClass("myclass", "example.com/gpu"),
			want:   framework.QueueSkip,
		},
		{
			// The implicit name existed before the update: the class's
			// name cannot change.
			name:   "update adding an extended resource name, pod requesting the implicit one",
			pod:    implicitPod,
			oldObj: deviceClass("gpuclass", ""),
			newObj: deviceClass("gpuclass", "example.com/gpu"),
			want:   framework.QueueSkip,
		},
		{
			name:   "added class with the extended resource name the pod requests",
			pod:    gpuPod,
			newObj: deviceClass("gpuclass", "example.com/gpu"),
			want:   framework.Queue,
		},
		{
			name:   "update changing to the extended resource name the pod requests",
			pod:    gpuPod,
			oldObj: deviceClass("gpuclass", "example.com/gpu1"),
			newObj: deviceClass("gpuclass", "example.com/gpu"),
			want:   framework.Queue,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			got, err := isSchedulableAfterDeviceClassEvent(logger, tt.pod, tt.oldObj, tt.newObj)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsSchedulableAfterNodeChangeDRA(t *testing.T) {
	m := newTestDRAManager(t, []*resourceapi.DeviceClass{deviceClass(gpuClass, draResource)}, nil, nil)
	node := func(c res) *v1.Node { return st.MakeNode().Name("n").Capacity(c).Obj() }
	pod := st.MakePod().Name("p").Req(res{v1.ResourceCPU: "2", v1.ResourceMemory: "2", draResource: "2"}).Obj()
	tests := []struct {
		name           string
		noDRA          bool
		pod            *v1.Pod
		oldObj, newObj *v1.Node
		want           framework.QueueingHint
	}{
		{
			name:   "added node without the resource: DynamicResources may serve it",
			pod:    pod,
			newObj: node(res{v1.ResourceCPU: "4", v1.ResourceMemory: "4"}),
			want:   framework.Queue,
		},
		{
			name:   "added node without the resource, no DRA manager",
			noDRA:  true,
			pod:    pod,
			newObj: node(res{v1.ResourceCPU: "4", v1.ResourceMemory: "4"}),
			want:   framework.QueueSkip,
		},
		{
			// The device plugin's allocatable is checked: too little.
			name:   "node advertising too little of the resource",
			pod:    pod,
			oldObj: node(res{v1.ResourceCPU: "1", v1.ResourceMemory: "2", draResource: "4"}),
			newObj: node(res{v1.ResourceCPU: "4", v1.ResourceMemory: "2", draResource: "1"}),
			want:   framework.QueueSkip,
		},
		{
			// Any allocatable update of a node without the resource
			// counts as an increase, even one that took from it.
			name:   "updated node without the resource",
			pod:    pod,
			oldObj: node(res{v1.ResourceCPU: "4", v1.ResourceMemory: "2", v1.ResourceEphemeralStorage: "3"}),
			newObj: node(res{v1.ResourceCPU: "4", v1.ResourceMemory: "2", v1.ResourceEphemeralStorage: "1"}),
			want:   framework.Queue,
		},
		{
			name:   "updated node advertising none of the resource",
			pod:    st.MakePod().Name("p").Req(res{draResource: "1"}).Obj(),
			oldObj: node(res{draResource: "0"}),
			newObj: node(res{draResource: "0"}),
			want:   framework.Queue,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			dra := m
			if tt.noDRA {
				dra = nil
			}
			var oldObj interface{}
			if tt.oldObj != nil {
				oldObj = tt.oldObj
			}
			got, err := newDRAFit(t, nil, dra).isSchedulableAfterNodeChange(logger, tt.pod, oldObj, tt.newObj)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRequestedAllocatableIncreasedDRA(t *testing.T) {
	m := newTestDRAManager(t, []*resourceapi.DeviceClass{deviceClass(gpuClass, draResource)}, nil, nil)
	node := func(c res) *v1.Node { return st.MakeNode().Name("n").Capacity(c).Obj() }
	podRequest := func(c res) *framework.Resource {
		r := framework.PodRequests(st.MakePod().Name("p").Req(c).Obj())
		return &r
	}
	full := res{v1.ResourceCPU: "2", v1.ResourceMemory: "2", v1.ResourceEphemeralStorage: "2", draResource: "2"}
	tests := []struct {
		name             string
		request          *framework.Resource
		oldNode, newNode *v1.Node
		want             bool
	}{
		{
			name:    "resource in the node, decreased",
			request: podRequest(full),
			oldNode: node(res{v1.ResourceCPU: "1", v1.ResourceMemory: "2", v1.ResourceEphemeralStorage: "3", draResource: "4"}),
			newNode: node(res{v1.ResourceCPU: "1", v1.ResourceMemory: "2", v1.ResourceEphemeralStorage: "1", draResource: "1"}),
			want:    false,
		},
		{
			name:    "resource not in the node",
			request: podRequest(full),
			oldNode: node(res{v1.ResourceCPU: "1", v1.ResourceMemory: "2", v1.ResourceEphemeralStorage: "3"}),
			newNode: node(res{v1.ResourceCPU: "1", v1.ResourceMemory: "2", v1.ResourceEphemeralStorage: "1"}),
			want:    true,
		},
		{
			name:    "resource with zero capacity",
			request: podRequest(res{draResource: "1"}),
			oldNode: node(res{draResource: "0"}),
			newNode: node(res{draResource: "0"}),
			want:    true,
		},
		{
			name:    "resource no class backs, not in the node",
			request: podRequest(res{v1.ResourceCPU: "2", "example.com/aaa": "2"}),
			oldNode: node(res{v1.ResourceCPU: "1"}),
			newNode: node(res{v1.ResourceCPU: "1"}),
			want:    false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := requestedAllocatableIncreased(tt.request, tt.oldNode, tt.newNode, m); got != tt.want {
				t.Errorf("requestedAllocatableIncreased = %v, want %v", got, tt.want)
			}
		})
	}
}
