// Tests of the claim tracker's in-flight allocations.
package dramanager

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2/ktesting"
)

// TestSignalClaimPendingAllocation: a claim must be in the cache to go in
// flight, except the in-memory claim for extended resources, which never
// is; a claim the cache shows allocated does not go in flight.
func TestSignalClaimPendingAllocation(t *testing.T) {
	allocated := func(c *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
		c = c.DeepCopy()
		c.Status.Allocation = &resourceapi.AllocationResult{}
		return c
	}
	tests := []struct {
		name         string
		cached       *resourceapi.ResourceClaim
		claim        *resourceapi.ResourceClaim
		wantErr      string
		wantInFlight bool
	}{
		{name: "a claim of the cache", cached: claim("c", "1"), claim: allocated(claim("c", "1")), wantInFlight: true},
		{name: "a claim the cache does not hold", claim: allocated(claim("c", "1")),
			wantErr: `look up assumed claim ns/c, UID=c: could not find ResourceClaim "ns/c"`},
		{name: "a claim the cache shows allocated already", cached: allocated(claim("c", "1")), claim: allocated(claim("c", "1"))},
		{name: "the in-memory claim for extended resources", claim: allocated(claim(SpecialClaimInMemName, "")), wantInFlight: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			cache, _ := NewAssumeCache(logger, nil)
			if tt.cached != nil {
				cache.add(tt.cached)
			}
			tracker := newClaimTracker(logger, cache)
			err := tracker.SignalClaimPendingAllocation(tt.claim.UID, tt.claim)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if got := tracker.GetPendingAllocation(tt.claim.UID) != nil; got != tt.wantInFlight {
				t.Errorf("in flight: %v, want %v", got, tt.wantInFlight)
			}
		})
	}
}
