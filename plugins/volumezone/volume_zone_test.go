// Tests for VolumeZone's PreFilter and Filter: upstream's TestSingleZone,
// TestMultiZone and TestWithBinding cases, and the error, skip and parsing
// paths they leave out.
package volumezone

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// filterCase is one pod on one node: the statuses PreFilter and then Filter
// (with the state PreFilter left, as upstream's tests run them) return.
type filterCase struct {
	name            string
	pod             *v1.Pod
	node            *v1.Node
	wantPreFilter   *framework.Status
	wantFilter      *framework.Status
	wantFilterFirst bool // Filter without PreFilter: the fallback path
}

// run runs the cases against env's plugin.
func (env *testEnv) run(t *testing.T, tests []filterCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			state := framework.NewCycleState()
			if !tt.wantFilterFirst {
				_, got := env.pl.PreFilter(ctx, state, tt.pod, nil)
				if diff := cmp.Diff(tt.wantPreFilter, got); diff != "" {
					t.Errorf("PreFilter status (-want +got):\n%s", diff)
				}
			}
			got := env.pl.Filter(ctx, state, tt.pod, plugintesting.MakeNodeInfo(tt.node))
			if diff := cmp.Diff(tt.wantFilter, got); diff != "" {
				t.Errorf("Filter status (-want +got):\n%s", diff)
			}
		})
	}
}

var (
	conflict = framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonConflict)
	skip     = framework.NewStatus(framework.Skip)
)

// uau is an UnschedulableAndUnresolvable status with reason.
func uau(reason string) *framework.Status {
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, reason)
}

func TestSingleZone(t *testing.T) {
	env := newTestEnv(t, objects(
		[]*v1.PersistentVolumeClaim{
			boundPVC("pvc-1", "vol-1"),
			boundPVC("pvc-2", "vol-2"),
			boundPVC("pvc-3", "vol-3"),
			boundPVC("pvc-4", "vol-not-exist"),
			boundPVC("pvc-stable-1", "vol-stable-1"),
			boundPVC("pvc-stable-2", "vol-stable-2"),
			boundPVC("pvc-stable-3", "vol-stable-3"),
		},
		[]*v1.PersistentVolume{
			labelledPV("vol-1", betaZone, "us-west1-a"),
			labelledPV("vol-2", betaRegion, "us-west1", "uselessLabel", "none"),
			labelledPV("vol-3", betaRegion, "us-west1"),
			labelledPV("vol-stable-1", zone, "us-west1-a"),
			labelledPV("vol-stable-2", region, "us-west1", "uselessLabel", "none"),
			labelledPV("vol-stable-3", zone, "us-west1-a", region, "us-west1-a"),
		})...)
	env.run(t, []filterCase{
		{
			name:          "pod without volume",
			pod:           st.MakePod().Name("pod-1").Namespace("default").Obj(),
			node:          node("host1", betaZone, "us-west1-a"),
			wantPreFilter: skip,
		},
		{name: "node without labels", pod: podWithClaim("pvc-1"), node: node("host1")},
		{
			name: "beta zone label matched",
			pod:  podWithClaim("pvc-1"),
			node: node("host1", betaZone, "us-west1-a", "uselessLabel", "none"),
		},
		{
			name: "beta region label matched",
			pod:  podWithClaim("pvc-2"),
			node: node("host1", betaRegion, "us-west1", "uselessLabel", "none"),
		},
		{
			name:       "beta region label doesn't match",
			pod:        podWithClaim("pvc-2"),
			node:       node("host1", betaRegion, "no_us-west1", "uselessLabel", "none"),
			wantFilter: conflict,
		},
		{
			name:       "beta zone label doesn't match",
			pod:        podWithClaim("pvc-1"),
			node:       node("host1", betaZone, "no_us-west1-a", "uselessLabel", "none"),
			wantFilter: conflict,
		},
		{
			name: "zone label matched",
			pod:  podWithClaim("pvc-stable-1"),
			node: node("host1", zone, "us-west1-a", "uselessLabel", "none"),
		},
		{
			name: "region label matched",
			pod:  podWithClaim("pvc-stable-2"),
			node: node("host1", region, "us-west1", "uselessLabel", "none"),
		},
		{
			name:       "region label doesn't match",
			pod:        podWithClaim("pvc-stable-2"),
			node:       node("host1", region, "no_us-west1", "uselessLabel", "none"),
			wantFilter: conflict,
		},
		{
			name:       "zone label doesn't match",
			pod:        podWithClaim("pvc-stable-1"),
			node:       node("host1", zone, "no_us-west1-a", "uselessLabel", "none"),
			wantFilter: conflict,
		},
		{
			name:       "pv with zone and region, node with only zone",
			pod:        podWithClaim("pvc-stable-3"),
			node:       node("host1", zone, "us-west1-a"),
			wantFilter: conflict,
		},
		{
			// GA on the volume is not met by beta on the node.
			name:       "pv with zone,node with beta zone",
			pod:        podWithClaim("pvc-stable-1"),
			node:       node("host1", betaZone, "us-west1-a"),
			wantFilter: conflict,
		},
		{
			name: "pv with beta label,node with ga label, matched",
			pod:  podWithClaim("pvc-1"),
			node: node("host1", zone, "us-west1-a"),
		},
		{
			name:       "pv with beta label,node with ga label, don't match",
			pod:        podWithClaim("pvc-1"),
			node:       node("host1", zone, "us-west1-b"),
			wantFilter: conflict,
		},
		{
			name: "pv with beta region,node with ga region, matched",
			pod:  podWithClaim("pvc-2"),
			node: node("host1", region, "us-west1"),
		},
		{
			// The beta key is looked up first; the GA key is the fallback.
			name:       "pv with beta zone,node with both keys, beta value decides",
			pod:        podWithClaim("pvc-1"),
			node:       node("host1", betaZone, "us-west1-b", zone, "us-west1-a"),
			wantFilter: conflict,
		},
		{
			// The PV lister's NotFound text, as PreFilter and Filter report it.
			name:          "bound volume not found",
			pod:           podWithClaim("pvc-4"),
			node:          node("host1", zone, "us-west1-a"),
			wantPreFilter: uau(`persistentvolume "vol-not-exist" not found`),
			wantFilter:    uau(`persistentvolume "vol-not-exist" not found`),
		},
		{
			name:          "claim not found",
			pod:           podWithClaim("pvc-missing"),
			node:          node("host1", zone, "us-west1-a"),
			wantPreFilter: uau(`persistentvolumeclaim "pvc-missing" not found`),
			wantFilter:    uau(`persistentvolumeclaim "pvc-missing" not found`),
		},
		{
			name:          "claim in another namespace is not the pod's",
			pod:           st.MakePod().Name("pod-1").UID("pod-1").Namespace("other").PVC("pvc-1").Obj(),
			node:          node("host1", zone, "us-west1-a"),
			wantPreFilter: uau(`persistentvolumeclaim "pvc-1" not found`),
			wantFilter:    uau(`persistentvolumeclaim "pvc-1" not found`),
		},
		{
			name: "volume without a claim name",
			pod: st.MakePod().Name("pod-1").Namespace("default").Volume(v1.Volume{Name: "data",
				VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{}}}).Obj(),
			node:          node("host1", zone, "us-west1-a"),
			wantPreFilter: uau("PersistentVolumeClaim had no name"),
			wantFilter:    uau("PersistentVolumeClaim had no name"),
		},
		{
			name:            "Filter without PreFilter collects the topology itself",
			pod:             podWithClaim("pvc-stable-1"),
			node:            node("host1", zone, "us-west1-b"),
			wantFilter:      conflict,
			wantFilterFirst: true,
		},
		{
			name: "every volume's labels must match",
			pod:  st.MakePod().Name("pod-1").Namespace("default").PVC("pvc-1").PVC("pvc-stable-2").Obj(),
			node: node("host1", zone, "us-west1-a", region, "us-west1"),
		},
		{
			name:       "every volume's labels must match, second one doesn't",
			pod:        st.MakePod().Name("pod-1").Namespace("default").PVC("pvc-1").PVC("pvc-stable-2").Obj(),
			node:       node("host1", zone, "us-west1-a", region, "us-east1"),
			wantFilter: conflict,
		},
		{
			// Only spec.volumes[].persistentVolumeClaim is followed, as upstream.
			name:          "generic ephemeral volume is ignored",
			pod:           st.MakePod().Name("pod-1").Namespace("default").EphemeralVolume("scratch", "fast", "1Gi").Obj(),
			node:          node("host1", zone, "us-west1-a"),
			wantPreFilter: skip,
		},
	})
}

func TestMultiZone(t *testing.T) {
	env := newTestEnv(t, objects(
		[]*v1.PersistentVolumeClaim{
			boundPVC("pvc-1", "vol-1"),
			boundPVC("pvc-2", "vol-2"),
			boundPVC("pvc-3", "vol-3"),
			boundPVC("pvc-4", "vol-not-exist"),
			boundPVC("pvc-stable-1", "vol-stable-1"),
			boundPVC("pvc-stable-2", "vol-stable-2"),
		},
		[]*v1.PersistentVolume{
			labelledPV("vol-1", betaZone, "us-west1-a"),
			labelledPV("vol-2", betaZone, "us-west1-b", "uselessLabel", "none"),
			labelledPV("vol-3", betaZone, "us-west1-c__us-west1-a"),
			labelledPV("vol-stable-1", zone, "us-west1-a"),
			labelledPV("vol-stable-2", zone, "us-west1-c__us-west1-a"),
		})...)
	env.run(t, []filterCase{
		{name: "node without labels", pod: podWithClaim("pvc-3"), node: node("host1")},
		{
			name: "beta zone label matched",
			pod:  podWithClaim("pvc-3"),
			node: node("host1", betaZone, "us-west1-a", "uselessLabel", "none"),
		},
		{
			name:       "beta zone label doesn't match",
			pod:        podWithClaim("pvc-1"),
			node:       node("host1", betaZone, "us-west1-b", "uselessLabel", "none"),
			wantFilter: conflict,
		},
		{
			name: "zone label matched",
			pod:  podWithClaim("pvc-stable-2"),
			node: node("host1", zone, "us-west1-a", "uselessLabel", "none"),
		},
		{
			name:       "zone label doesn't match",
			pod:        podWithClaim("pvc-stable-1"),
			node:       node("host1", zone, "us-west1-b", "uselessLabel", "none"),
			wantFilter: conflict,
		},
		{
			name: "multi-zone beta label, node with ga label in one of them",
			pod:  podWithClaim("pvc-3"),
			node: node("host1", zone, "us-west1-c"),
		},
		{
			name:       "multi-zone label, node in neither zone",
			pod:        podWithClaim("pvc-stable-2"),
			node:       node("host1", zone, "us-west1-b"),
			wantFilter: conflict,
		},
	})
}

func TestWithBinding(t *testing.T) {
	wait := st.MakeStorageClass().Name("class-wait").WaitForFirstConsumer().Obj()
	immediate := st.MakeStorageClass().Name("class-immediate").Obj()
	noMode := classWithoutMode("class-no-mode")
	env := newTestEnv(t, objects(
		[]*v1.PersistentVolumeClaim{
			boundPVC("pvc-1", "vol-1"),
			st.MakePVC().Name("pvc-no-sc").Class("class-0").Obj(),
			st.MakePVC().Name("pvc-empty-sc").Obj(),
			st.MakePVC().Name("pvc-wait-sc").Class("class-wait").Obj(),
			st.MakePVC().Name("pvc-no-mode-sc").Class("class-no-mode").Obj(),
			st.MakePVC().Name("pvc-immediate-sc").Class("class-immediate").Obj(),
			// The beta annotation wins over spec.storageClassName.
			st.MakePVC().Name("pvc-annotated-wait").Class("class-immediate").
				Annotation(v1.BetaStorageClassAnnotation, "class-wait").Obj(),
			st.MakePVC().Name("pvc-annotated-missing").Class("class-wait").
				Annotation(v1.BetaStorageClassAnnotation, "class-annotated").Obj(),
		},
		[]*v1.PersistentVolume{labelledPV("vol-1", betaZone, "us-west1-a")},
		wait, immediate, noMode)...)
	testNode := node("host1", betaZone, "us-west1-a", "uselessLabel", "none")
	env.run(t, []filterCase{
		{name: "label zone failure domain matched", pod: podWithClaim("pvc-1"), node: testNode},
		{
			name:          "unbound volume empty storage class",
			pod:           podWithClaim("pvc-empty-sc"),
			node:          testNode,
			wantPreFilter: uau("PersistentVolumeClaim had no pv name and storageClass name"),
			wantFilter:    uau("PersistentVolumeClaim had no pv name and storageClass name"),
		},
		{
			// The real StorageClass lister's NotFound text (upstream's fake
			// lister says "storageclasses").
			name:          "unbound volume no storage class",
			pod:           podWithClaim("pvc-no-sc"),
			node:          testNode,
			wantPreFilter: uau(`storageclass.storage.k8s.io "class-0" not found`),
			wantFilter:    uau(`storageclass.storage.k8s.io "class-0" not found`),
		},
		{
			// Upstream names this case "immediate binding mode"; its class has no mode.
			name:          "unbound volume, class without binding mode",
			pod:           podWithClaim("pvc-no-mode-sc"),
			node:          testNode,
			wantPreFilter: uau(`VolumeBindingMode not set for StorageClass "class-no-mode"`),
			wantFilter:    uau(`VolumeBindingMode not set for StorageClass "class-no-mode"`),
		},
		{
			name:          "unbound volume immediate binding mode",
			pod:           podWithClaim("pvc-immediate-sc"),
			node:          testNode,
			wantPreFilter: uau("PersistentVolume had no name"),
			wantFilter:    uau("PersistentVolume had no name"),
		},
		{
			name:          "unbound volume wait binding mode",
			pod:           podWithClaim("pvc-wait-sc"),
			node:          testNode,
			wantPreFilter: skip,
		},
		{
			name:          "unbound volume, wait class from the beta annotation",
			pod:           podWithClaim("pvc-annotated-wait"),
			node:          testNode,
			wantPreFilter: skip,
		},
		{
			name:          "unbound volume, beta annotation names a missing class",
			pod:           podWithClaim("pvc-annotated-missing"),
			node:          testNode,
			wantPreFilter: uau(`storageclass.storage.k8s.io "class-annotated" not found`),
			wantFilter:    uau(`storageclass.storage.k8s.io "class-annotated" not found`),
		},
		{
			name:       "wait-binding claim skipped, bound claim still checked",
			pod:        st.MakePod().Name("pod-1").Namespace("default").PVC("pvc-wait-sc").PVC("pvc-1").Obj(),
			node:       node("host1", zone, "us-west1-b"),
			wantFilter: conflict,
		},
		{
			// The first failing claim decides; later claims are not read.
			name:          "claims are read in order",
			pod:           st.MakePod().Name("pod-1").Namespace("default").PVC("pvc-immediate-sc").PVC("pvc-missing").Obj(),
			node:          testNode,
			wantPreFilter: uau("PersistentVolume had no name"),
			wantFilter:    uau("PersistentVolume had no name"),
		},
	})
}

// TestZoneLabelParsing checks labelZonesToSet's rules as Filter sees them: a
// value with an empty zone ("a____b" is a valid label value) is ignored, and
// the volume is then unconstrained by that label.
func TestZoneLabelParsing(t *testing.T) {
	env := newTestEnv(t, objects(
		[]*v1.PersistentVolumeClaim{
			boundPVC("pvc-empty-zone", "vol-empty-zone"),
			boundPVC("pvc-bad-zone-good-region", "vol-bad-zone-good-region"),
		},
		[]*v1.PersistentVolume{
			labelledPV("vol-empty-zone", zone, "us-west1-a____us-west1-b"),
			labelledPV("vol-bad-zone-good-region", zone, "a____b", region, "us-west1"),
		})...)
	env.run(t, []filterCase{
		{
			name:          "a value with an empty zone is ignored: nothing left to check",
			pod:           podWithClaim("pvc-empty-zone"),
			node:          node("host1", zone, "us-west1-c"),
			wantPreFilter: skip,
		},
		{
			name:       "unparsable zone ignored, region still checked",
			pod:        podWithClaim("pvc-bad-zone-good-region"),
			node:       node("host1", zone, "anything", region, "us-east1"),
			wantFilter: conflict,
		},
		{
			name: "unparsable zone ignored, region matched",
			pod:  podWithClaim("pvc-bad-zone-good-region"),
			node: node("host1", zone, "anything", region, "us-west1"),
		},
	})
}

func TestLabelZonesToSet(t *testing.T) {
	tests := []struct {
		value   string
		want    sets.Set[string]
		wantErr string
	}{
		{value: "a", want: sets.New("a")},
		{value: "a__b__a", want: sets.New("a", "b")},
		{value: " a__ b ", want: sets.New("a", "b")},
		{value: "", wantErr: `"__" separated list ("") must not contain an empty string`},
		{value: "a____b", wantErr: `"__" separated list ("a____b") must not contain an empty string`},
		{value: "a__ ", wantErr: `"__" separated list ("a__ ") must not contain an empty string`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.value), func(t *testing.T) {
			got, err := labelZonesToSet(tt.value)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("zones (-want +got):\n%s", diff)
			}
		})
	}
}

// TestListerErrors checks that a lister error other than NotFound is an
// Error, not a rejection, in PreFilter and in Filter's fallback alike.
func TestListerErrors(t *testing.T) {
	env := newTestEnv(t, objects(
		[]*v1.PersistentVolumeClaim{
			boundPVC("pvc-1", "vol-1"),
			st.MakePVC().Name("pvc-wait-sc").Class("class-wait").Obj(),
		}, nil)...)
	wantErr := framework.AsStatus(errLister)
	tests := []struct {
		name  string
		pl    *VolumeZone
		claim string
	}{
		{
			name:  "claim lister fails",
			pl:    &VolumeZone{pvcLister: failingPVCLister{}, pvLister: env.pl.pvLister, scLister: env.pl.scLister},
			claim: "pvc-1",
		},
		{
			name:  "volume lister fails",
			pl:    &VolumeZone{pvcLister: env.pl.pvcLister, pvLister: failingPVLister{}, scLister: env.pl.scLister},
			claim: "pvc-1",
		},
		{
			name:  "class lister fails",
			pl:    &VolumeZone{pvcLister: env.pl.pvcLister, pvLister: env.pl.pvLister, scLister: failingSCLister{}},
			claim: "pvc-wait-sc",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pod := podWithClaim(tt.claim)
			state := framework.NewCycleState()
			_, got := tt.pl.PreFilter(ctx, state, pod, nil)
			if diff := cmp.Diff(wantErr, got); diff != "" {
				t.Errorf("PreFilter status (-want +got):\n%s", diff)
			}
			got = tt.pl.Filter(ctx, state, pod, plugintesting.MakeNodeInfo(node("host1", zone, "a")))
			if diff := cmp.Diff(wantErr, got); diff != "" {
				t.Errorf("Filter status (-want +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkVolumeZone is upstream's: one pod whose claim is bound to a zonal
// volume, among 1000 claims and volumes, filtered over 1000 nodes, with and
// without PreFilter (without it, Filter follows the claim on every node).
func BenchmarkVolumeZone(b *testing.B) {
	const num = 1000
	var pvcs []*v1.PersistentVolumeClaim
	var pvs []*v1.PersistentVolume
	nodeInfos := make([]*framework.NodeInfo, num)
	for i := range num {
		pvcs = append(pvcs, boundPVC(fmt.Sprintf("pvc-stable-%d", i), fmt.Sprintf("vol-stable-%d", i)))
		pvs = append(pvs, labelledPV(fmt.Sprintf("vol-stable-%d", i), zone, fmt.Sprintf("us-west-%d", i)))
		nodeInfos[i] = plugintesting.MakeNodeInfo(node(fmt.Sprintf("host-%d", i), zone, "us-west-0", "uselessLabel", "none"))
	}
	env := newTestEnv(b, objects(pvcs, pvs)...)
	pod := podWithClaim("pvc-stable-0")
	for _, preFilter := range []bool{true, false} {
		name := "without prefilter"
		if preFilter {
			name = "with prefilter"
		}
		b.Run(name, func(b *testing.B) {
			_, ctx := ktesting.NewTestContext(b)
			for b.Loop() {
				state := framework.NewCycleState()
				if preFilter {
					env.pl.PreFilter(ctx, state, pod, nil)
				}
				for _, ni := range nodeInfos {
					if s := env.pl.Filter(ctx, state, pod, ni); !s.IsSuccess() {
						b.Fatal(s)
					}
				}
			}
		})
	}
}
