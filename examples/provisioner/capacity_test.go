package provisioner

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestFree checks a node's free space against the PVs the informer shows
// and the reservations of PVs it does not show yet, without counting a
// volume twice; and that reserve refuses what does not fit.
func TestFree(t *testing.T) {
	tests := []struct {
		name string
		// pvs are the sizes of the PVs on n1 the informer shows, by name.
		pvs map[string]string
		// reserved are the sizes reserved on n1, by PV name.
		reserved map[string]string
		want     string
		// reserve is a size to reserve afterwards for a new PV; wantErr
		// says whether that must fail.
		reserve string
		wantErr bool
	}{
		{name: "an empty disk", want: "10Gi", reserve: "10Gi"},
		{name: "a PV shown", pvs: map[string]string{"pv-a": "4Gi"}, want: "6Gi", reserve: "7Gi", wantErr: true},
		{name: "a PV not shown yet counts by its reservation", reserved: map[string]string{"pv-a": "4Gi"},
			want: "6Gi", reserve: "7Gi", wantErr: true},
		{name: "a PV shown and still reserved counts once", pvs: map[string]string{"pv-a": "4Gi"},
			reserved: map[string]string{"pv-a": "4Gi"}, want: "6Gi", reserve: "6Gi"},
		{name: "a disk smaller than what is on it has nothing free", pvs: map[string]string{"pv-a": "12Gi"},
			want: "0", reserve: "1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The informers are never started: their stores are filled by hand.
			p := New(fake.NewClientset(), Options{Capacity: map[string]resource.Quantity{"n1": resource.MustParse("10Gi")}})
			defer p.capacityQueue.ShutDown()
			for name, size := range tt.pvs {
				pv := &v1.PersistentVolume{
					ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{NodeAnnotation: "n1"}},
					Spec:       v1.PersistentVolumeSpec{Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
				}
				if err := p.volumes.GetIndexer().Add(pv); err != nil {
					t.Fatal(err)
				}
			}
			for name, size := range tt.reserved {
				p.reserved[name] = reservation{node: "n1", size: resource.MustParse(size)}
			}
			if got := p.free("n1"); got.Cmp(resource.MustParse(tt.want)) != 0 {
				t.Errorf("free = %s, want %s", got.String(), tt.want)
			}
			if got := p.free("n2"); !got.IsZero() {
				t.Errorf("free on n2 (no capacity, no default) = %s, want 0", got.String())
			}
			err := p.reserve("pv-new", "n1", resource.MustParse(tt.reserve))
			if (err != nil) != tt.wantErr {
				t.Errorf("reserve(%s) = %v, want an error: %v", tt.reserve, err, tt.wantErr)
			}
			wantAfter := resource.MustParse(tt.want)
			if err == nil {
				wantAfter.Sub(resource.MustParse(tt.reserve))
			}
			if got := p.free("n1"); got.Cmp(wantAfter) != 0 {
				t.Errorf("after reserve(%s), free = %s, want %s", tt.reserve, got.String(), wantAfter.String())
			}
		})
	}
}
