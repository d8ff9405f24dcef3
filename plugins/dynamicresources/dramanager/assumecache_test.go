// Tests of the claim assume cache's rules (by resourceVersion) and its
// events, and of the allocated state the claim tracker gathers.
package dramanager

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
)

func claim(name, rv string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name),
		ResourceVersion: rv}}
}

// recorder writes each event as "add c@rv", "update c@rv->rv", "delete c@rv".
type recorder struct{ events []string }

func (r *recorder) OnAdd(obj any, _ bool) {
	c := obj.(*resourceapi.ResourceClaim)
	r.events = append(r.events, "add "+c.Name+"@"+c.ResourceVersion)
}
func (r *recorder) OnUpdate(o, n any) {
	oc, nc := o.(*resourceapi.ResourceClaim), n.(*resourceapi.ResourceClaim)
	r.events = append(r.events, "update "+nc.Name+"@"+oc.ResourceVersion+"->"+nc.ResourceVersion)
}
func (r *recorder) OnDelete(obj any) {
	c := obj.(*resourceapi.ResourceClaim)
	r.events = append(r.events, "delete "+c.Name+"@"+c.ResourceVersion)
}

func TestAssumeCache(t *testing.T) {
	tests := []struct {
		name string
		// steps act on the cache; each returns an error text or "".
		steps      func(c *AssumeCache) []string
		wantLatest string // resourceVersion of "a" ("" if absent)
		wantAPI    string
		wantEvents []string
		wantErrs   []string
	}{
		{
			name:       "informer add then a newer update",
			steps:      func(c *AssumeCache) []string { c.add(claim("a", "1")); c.add(claim("a", "2")); return nil },
			wantLatest: "2", wantAPI: "2",
			wantEvents: []string{"add a@1", "update a@1->2"},
		},
		{
			name:       "an older informer object is ignored",
			steps:      func(c *AssumeCache) []string { c.add(claim("a", "2")); c.add(claim("a", "1")); return nil },
			wantLatest: "2", wantAPI: "2",
			wantEvents: []string{"add a@2"},
		},
		{
			name: "assume a newer object, then the informer catches up",
			steps: func(c *AssumeCache) []string {
				c.add(claim("a", "1"))
				errs := []string{errText(c.Assume(claim("a", "3")))}
				c.add(claim("a", "2")) // older than the assumed: ignored
				c.add(claim("a", "3")) // as new: ignored too
				return errs
			},
			wantLatest: "3", wantAPI: "1",
			wantEvents: []string{"add a@1", "update a@1->3"},
			wantErrs:   []string{""},
		},
		{
			name: "assume an older object: refused",
			steps: func(c *AssumeCache) []string {
				c.add(claim("a", "2"))
				return []string{errText(c.Assume(claim("a", "1")))}
			},
			wantLatest: "2", wantAPI: "2",
			wantEvents: []string{"add a@2"},
			wantErrs:   []string{`ResourceClaim "ns/a" is out of sync (stored: 2, assume: 1)`},
		},
		{
			name:     "assume an unknown object: not found",
			steps:    func(c *AssumeCache) []string { return []string{errText(c.Assume(claim("a", "1")))} },
			wantErrs: []string{`could not find ResourceClaim "ns/a"`},
		},
		{
			name: "restore goes back to the informer's, once",
			steps: func(c *AssumeCache) []string {
				c.add(claim("a", "1"))
				_ = c.Assume(claim("a", "1"))
				c.Restore("ns", "a")
				c.Restore("ns", "a")
				return nil
			},
			wantLatest: "1", wantAPI: "1",
			wantEvents: []string{"add a@1", "update a@1->1", "update a@1->1"},
		},
		{
			name: "delete, also from a tombstone, removes what was assumed",
			steps: func(c *AssumeCache) []string {
				c.add(claim("a", "1"))
				_ = c.Assume(claim("a", "2"))
				c.delete(toolscache.DeletedFinalStateUnknown{Key: "ns/a", Obj: claim("a", "1")})
				return nil
			},
			wantEvents: []string{"add a@1", "update a@1->2", "delete a@2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			c, err := NewAssumeCache(logger, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := &recorder{}
			c.AddEventHandler(r)
			errs := tt.steps(c)
			if diff := cmp.Diff(tt.wantErrs, errs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantEvents, r.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			latest, api := "", ""
			if l, err := c.Get("ns", "a"); err == nil {
				latest = l.ResourceVersion
			}
			if a, err := c.GetAPIObj("ns", "a"); err == nil {
				api = a.ResourceVersion
			}
			if latest != tt.wantLatest || api != tt.wantAPI {
				t.Errorf("latest, informer's = %q, %q; want %q, %q", latest, api, tt.wantLatest, tt.wantAPI)
			}
		})
	}
}

func TestAddEventHandlerReplaysObjects(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	c, _ := NewAssumeCache(logger, nil)
	c.add(claim("a", "1"))
	r := &recorder{}
	if synced := c.AddEventHandler(r); !synced() {
		t.Error("a cache without informer is not synced")
	}
	if diff := cmp.Diff([]string{"add a@1"}, r.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestGatherAllocatedState(t *testing.T) {
	allocated := func(c *resourceapi.ResourceClaim, results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
		c = c.DeepCopy()
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}
		return c
	}
	dev := func(name string) resourceapi.DeviceRequestAllocationResult {
		return resourceapi.DeviceRequestAllocationResult{Request: "r", Driver: "d", Pool: "p", Device: name}
	}
	share := ptr.To(types.UID("share-1"))
	shared := dev("shared")
	shared.ShareID = share
	shared.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("1Gi")}
	admin := dev("admin")
	admin.AdminAccess = ptr.To(true)

	logger, _ := ktesting.NewTestContext(t)
	cache, _ := NewAssumeCache(logger, nil)
	cache.add(allocated(claim("whole", "1"), dev("d0"), admin))
	cache.add(claim("pending", "1"))
	cache.add(allocated(claim("sharer", "1"), shared))
	tracker := newClaimTracker(logger, cache)
	if err := tracker.SignalClaimPendingAllocation("pending", allocated(claim("pending", "1"), dev("d1"))); err != nil {
		t.Fatal(err)
	}
	// A second signal shares the pending allocation; one removal keeps it.
	if err := tracker.SignalClaimPendingAllocation("pending", allocated(claim("pending", "1"), dev("d1"))); err != nil {
		t.Fatal(err)
	}
	if tracker.MaybeRemoveClaimPendingAllocation("pending", false) {
		t.Error("the first of two sharers removed the pending allocation")
	}

	got, err := tracker.GatherAllocatedState()
	if err != nil {
		t.Fatal(err)
	}
	id := func(d string) structured.DeviceID { return structured.MakeDeviceID("d", "p", d) }
	want := &structured.AllocatedState{
		AllocatedDevices:         sets.New(id("d0"), id("d1")),
		AllocatedSharedDeviceIDs: sets.New(structured.MakeSharedDeviceID(id("shared"), share)),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	want.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id("shared"), shared.ConsumedCapacity))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GatherAllocatedState (-want +got):\n%s", diff)
	}

	if !tracker.MaybeRemoveClaimPendingAllocation("pending", false) {
		t.Error("the last sharer did not remove the pending allocation")
	}
	devices, _ := tracker.ListAllAllocatedDevices()
	if diff := cmp.Diff(sets.New(id("d0"), id("shared")), devices); diff != "" {
		t.Errorf("ListAllAllocatedDevices (-want +got):\n%s", diff)
	}
}

// TestGatherAllocatedStateFollowsClaims calls GatherAllocatedState as
// claims change between calls: what it remembers of each claim object must
// never outlive the object.
func TestGatherAllocatedStateFollowsClaims(t *testing.T) {
	allocated := func(name, rv string, devices ...string) *resourceapi.ResourceClaim {
		c := claim(name, rv)
		c.Status.Allocation = &resourceapi.AllocationResult{}
		for _, d := range devices {
			c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
				resourceapi.DeviceRequestAllocationResult{Request: "r", Driver: "d", Pool: "p", Device: d})
		}
		return c
	}
	id := func(d string) structured.DeviceID { return structured.MakeDeviceID("d", "p", d) }
	logger, _ := ktesting.NewTestContext(t)
	cache, _ := NewAssumeCache(logger, nil)
	tracker := newClaimTracker(logger, cache)
	steps := []struct {
		name   string
		change func()
		want   []structured.DeviceID
	}{
		{name: "two claims", change: func() {
			cache.add(allocated("a", "1", "d0"))
			cache.add(allocated("b", "1", "d1", "d2"))
		}, want: []structured.DeviceID{id("d0"), id("d1"), id("d2")}},
		{name: "the same again", want: []structured.DeviceID{id("d0"), id("d1"), id("d2")}},
		{name: "b now holds another device", change: func() { cache.add(allocated("b", "2", "d3")) },
			want: []structured.DeviceID{id("d0"), id("d3")}},
		{name: "a deallocated", change: func() { cache.add(claim("a", "2")) }, want: []structured.DeviceID{id("d3")}},
		{name: "b deleted", change: func() { cache.delete(allocated("b", "2", "d3")) }},
		{name: "b again, in flight", change: func() {
			cache.add(claim("b", "3"))
			if err := tracker.SignalClaimPendingAllocation("b", allocated("b", "3", "d4")); err != nil {
				t.Fatal(err)
			}
		}, want: []structured.DeviceID{id("d4")}},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if step.change != nil {
				step.change()
			}
			got, err := tracker.GatherAllocatedState()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(sets.New(step.want...), got.AllocatedDevices); diff != "" {
				t.Errorf("taken devices (-want +got):\n%s", diff)
			}
			if len(tracker.devices) > 2 {
				t.Errorf("%d claims remembered, at most 2 exist", len(tracker.devices))
			}
		})
	}
}
