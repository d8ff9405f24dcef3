package volumebinding

import (
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

func TestTopologySelectors(t *testing.T) {
	capacity := func(uid, version, zone string) *storagev1.CSIStorageCapacity {
		return &storagev1.CSIStorageCapacity{
			ObjectMeta:   metav1.ObjectMeta{Name: "c", UID: types.UID(uid), ResourceVersion: version},
			NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": zone}},
		}
	}
	bad := capacity("bad", "1", "a")
	bad.NodeTopology.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "zone", Operator: "Near"}}
	tests := []struct {
		name     string
		calls    []*storagev1.CSIStorageCapacity // get, in order; the last one's answer is checked
		forget   types.UID
		node     map[string]string
		want     bool
		wantErr  bool
		wantKept map[types.UID]string // the cached entries' versions afterwards
	}{
		{name: "converted and kept", calls: []*storagev1.CSIStorageCapacity{capacity("u1", "1", "a")},
			node: map[string]string{"zone": "a"}, want: true, wantKept: map[types.UID]string{"u1": "1"}},
		{name: "a newer version is converted again",
			calls: []*storagev1.CSIStorageCapacity{capacity("u1", "1", "a"), capacity("u1", "2", "b")},
			node:  map[string]string{"zone": "a"}, want: false, wantKept: map[types.UID]string{"u1": "2"}},
		{name: "the kept selector answers the same version",
			calls: []*storagev1.CSIStorageCapacity{capacity("u1", "1", "a"), capacity("u1", "1", "a")},
			node:  map[string]string{"zone": "a"}, want: true, wantKept: map[types.UID]string{"u1": "1"}},
		{name: "no UID: converted, not kept", calls: []*storagev1.CSIStorageCapacity{capacity("", "", "a")},
			node: map[string]string{"zone": "a"}, want: true, wantKept: map[types.UID]string{}},
		{name: "a conversion error is kept with its version", calls: []*storagev1.CSIStorageCapacity{bad},
			wantErr: true, wantKept: map[types.UID]string{"bad": "1"}},
		{name: "a deleted capacity is forgotten",
			calls:  []*storagev1.CSIStorageCapacity{capacity("u1", "1", "a"), capacity("u2", "1", "b")},
			forget: "u1", node: map[string]string{"zone": "b"}, want: true, wantKept: map[types.UID]string{"u2": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ts topologySelectors
			var selector labels.Selector
			var err error
			for _, c := range tt.calls {
				selector, err = ts.get(c)
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("get error = %v, want error %v", err, tt.wantErr)
			}
			if err == nil {
				if got := selector.Matches(labels.Set(tt.node)); got != tt.want {
					t.Errorf("selector %v matches %v = %v, want %v", selector, tt.node, got, tt.want)
				}
			}
			if tt.forget != "" {
				ts.forgetDeleted(toolscache.DeletedFinalStateUnknown{Obj: capacity(string(tt.forget), "1", "a")})
			}
			kept := map[types.UID]string{}
			ts.all.Range(func(uid types.UID, s topologySelector) bool {
				kept[uid] = s.resourceVersion
				return true
			})
			if len(kept) != len(tt.wantKept) {
				t.Fatalf("kept %v, want %v", kept, tt.wantKept)
			}
			for uid, v := range tt.wantKept {
				if kept[uid] != v {
					t.Errorf("kept %v, want %v", kept, tt.wantKept)
				}
			}
		})
	}
}

// TestTopologySelectorsNil checks that a binder without the cache (a nil
// *topologySelectors) converts the selector itself.
func TestTopologySelectorsNil(t *testing.T) {
	var ts *topologySelectors
	c := &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "c", UID: "u1", ResourceVersion: "1"},
		NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}}
	tests := []struct {
		name string
		node map[string]string
		want bool
	}{
		{name: "selected", node: map[string]string{"zone": "a"}, want: true},
		{name: "not selected", node: map[string]string{"zone": "b"}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			selector, err := ts.get(c)
			if err != nil {
				t.Fatal(err)
			}
			if got := selector.Matches(labels.Set(tt.node)); got != tt.want {
				t.Errorf("matches %v = %v, want %v", tt.node, got, tt.want)
			}
		})
	}
}
