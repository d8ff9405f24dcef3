// Tests for the scorer (kube-scheduler's scorer_test.go cases) and for how
// a node's volumes are grouped by class before scoring.
package volumebinding

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1 "k8s.io/kube-scheduler/config/v1"
)

func TestScorer(t *testing.T) {
	res := func(hdd, ssd int64) classResourceMap {
		m := classResourceMap{"hdd": {Requested: hdd, Capacity: 100}}
		if ssd >= 0 {
			m["ssd"] = &storageResource{Requested: ssd, Capacity: 100}
		}
		return m
	}
	tests := []struct {
		name  string
		shape []configv1.UtilizationShapePoint
		cases []struct {
			classes classResourceMap
			want    int64
		}
	}{
		{
			name:  "default shape, single class",
			shape: defaultShape,
			cases: []struct {
				classes classResourceMap
				want    int64
			}{{res(0, -1), 100}, {res(30, -1), 70}, {res(50, -1), 50}, {res(100, -1), 0}},
		},
		{
			name:  "default shape, multiple classes",
			shape: defaultShape,
			cases: []struct {
				classes classResourceMap
				want    int64
			}{{res(0, 0), 100}, {res(0, 30), 85}, {res(30, 30), 70}, {res(30, 60), 55}, {res(50, 50), 50},
				{res(50, 100), 25}, {res(100, 100), 0}},
		},
		{
			name:  "custom shape, multiple classes",
			shape: []configv1.UtilizationShapePoint{{Utilization: 50, Score: 0}, {Utilization: 80, Score: 3}, {Utilization: 100, Score: 5}},
			cases: []struct {
				classes classResourceMap
				want    int64
			}{{res(0, 0), 0}, {res(0, 30), 0}, {res(30, 30), 0}, {res(30, 60), 5}, {res(50, 100), 25},
				{res(90, 90), 40}, {res(100, 100), 50}},
		},
		{
			name:  "no classes, or no capacity",
			shape: defaultShape,
			cases: []struct {
				classes classResourceMap
				want    int64
			}{{classResourceMap{}, 0}, {classResourceMap{"hdd": {Requested: 1, Capacity: 0}}, 0},
				{classResourceMap{"hdd": {Requested: 200, Capacity: 100}}, 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := buildScorerFunction(tt.shape)
			for i, c := range tt.cases {
				if got := f(c.classes); got != c.want {
					t.Errorf("case %d: score %d, want %d", i, got, c.want)
				}
			}
		})
	}
}

func TestClassResources(t *testing.T) {
	claim := func(name, size, class string) *dynamicProvision {
		return &dynamicProvision{PVC: makePVC(name, size, class)}
	}
	tracked := func(p *dynamicProvision, capacity string) *dynamicProvision {
		p.NodeCapacity = makeCapacity("cap", "c", "", capacity, "")
		return p
	}
	gi := int64(1 << 30)
	tests := []struct {
		name string
		vols *podVolumes
		want classResourceMap
	}{
		{
			name: "static bindings by PV class, summed",
			vols: &podVolumes{StaticBindings: []*bindingInfo{
				{pvc: makePVC("a", "1Gi", "x"), pv: makePV("pv-a", "", "4Gi", "fast")},
				{pvc: makePVC("b", "2Gi", "x"), pv: makePV("pv-b", "", "4Gi", "fast")},
				{pvc: makePVC("c", "1Gi", "x"), pv: makePV("pv-c", "", "2Gi", "slow")},
			}},
			want: classResourceMap{"fast": {Requested: 3 * gi, Capacity: 8 * gi}, "slow": {Requested: gi, Capacity: 2 * gi}},
		},
		{
			name: "static bindings win over provisioning",
			vols: &podVolumes{
				StaticBindings:    []*bindingInfo{{pvc: makePVC("a", "1Gi", "x"), pv: makePV("pv-a", "", "2Gi", "fast")}},
				DynamicProvisions: []*dynamicProvision{tracked(claim("d", "1Gi", "csi"), "10Gi")},
			},
			want: classResourceMap{"fast": {Requested: gi, Capacity: 2 * gi}},
		},
		{
			name: "provisioning: requests summed against one pool",
			vols: &podVolumes{DynamicProvisions: []*dynamicProvision{
				tracked(claim("d0", "50Gi", "csi"), "100Gi"), tracked(claim("d1", "50Gi", "csi"), "100Gi"),
			}},
			want: classResourceMap{"csi": {Requested: 100 * gi, Capacity: 100 * gi}},
		},
		{
			name: "provisioning without tracked capacity is not scored",
			vols: &podVolumes{DynamicProvisions: []*dynamicProvision{claim("d", "1Gi", "csi")}},
			want: classResourceMap{},
		},
		{
			name: "capacity with only maximumVolumeSize counts as full (kube-scheduler would crash)",
			vols: &podVolumes{DynamicProvisions: []*dynamicProvision{
				{PVC: makePVC("d", "1Gi", "csi"), NodeCapacity: makeCapacity("cap", "csi", "", "", "10Gi")},
			}},
			want: classResourceMap{"csi": {Requested: gi, Capacity: 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, classResources(tt.vols)); diff != "" {
				t.Errorf("classResources (-want +got):\n%s", diff)
			}
		})
	}
}
