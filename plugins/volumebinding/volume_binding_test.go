// Tests for VolumeBinding's extension points on the plugin as the framework
// builds it: PreFilter, Filter, PreScore and Score (kube-scheduler's
// TestVolumeBinding cases, StorageCapacityScoring on), PreFilter's claim
// checks, Reserve and Unreserve against the next cycle, and
// PreBindPreFlight.
package volumebinding

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// statusView is a Status as tests compare it.
type statusView struct {
	Code    framework.Code
	Reasons []string
}

func view(s *framework.Status) statusView { return statusView{Code: s.Code(), Reasons: s.Reasons()} }

func uau(reasons ...string) *framework.Status {
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, reasons...)
}

// zonalPV is a volume of waitSC in region/zone.
func zonalPV(name, capacity, region, zone string) *v1.PersistentVolume {
	return pvAffinity(makePV(name, "", capacity, waitSC.Name),
		map[string][]string{v1.LabelTopologyRegion: {region}, v1.LabelTopologyZone: {zone}})
}

// localPV is a volume of class on host.
func localPV(name, capacity, class, host string) *v1.PersistentVolume {
	return pvAffinity(makePV(name, "", capacity, class), map[string][]string{v1.LabelHostname: {host}})
}

// zonalNodes are two nodes in each of three zones.
func zonalNodes() []*v1.Node {
	var nodes []*v1.Node
	for _, z := range []string{"a", "b", "c"} {
		for _, n := range []string{"a", "b"} {
			nodes = append(nodes, node("zone-"+z+"-node-"+n, v1.LabelTopologyRegion, "region-"+z,
				v1.LabelTopologyZone, "zone-"+z))
		}
	}
	return nodes
}

// capacityNodes are node-a, node-b and node-c labelled for makeCapacity.
func capacityNodes() []*v1.Node {
	return []*v1.Node{node("node-a", nodeLabelKey, "node-a"), node("node-b", nodeLabelKey, "node-b"),
		node("node-c", nodeLabelKey, "node-c")}
}

func TestVolumeBinding(t *testing.T) {
	notFound := uau(string(ErrReasonBindConflict))
	zonalPVs := []*v1.PersistentVolume{
		zonalPV("pv-a-0", "200Gi", "region-a", "zone-a"), zonalPV("pv-a-1", "200Gi", "region-a", "zone-a"),
		zonalPV("pv-b-0", "100Gi", "region-b", "zone-b"), zonalPV("pv-b-1", "100Gi", "region-b", "zone-b"),
	}
	localPVs := []*v1.PersistentVolume{
		localPV("pv-a-0", "200Gi", waitSC.Name, "node-a"), localPV("pv-a-1", "200Gi", waitSC.Name, "node-a"),
		localPV("pv-b-0", "100Gi", waitSC.Name, "node-b"), localPV("pv-b-1", "100Gi", waitSC.Name, "node-b"),
	}
	threeCapacities := func(a, b, c string) []*storagev1.CSIStorageCapacity {
		return []*storagev1.CSIStorageCapacity{
			makeCapacity("node-a", waitSCWithStorageCapacity.Name, "node-a", a, ""),
			makeCapacity("node-b", waitSCWithStorageCapacity.Name, "node-b", b, ""),
			makeCapacity("node-c", waitSCWithStorageCapacity.Name, "node-c", c, ""),
		}
	}
	tests := []struct {
		name       string
		pod        *v1.Pod
		nodes      []*v1.Node
		pvcs       []*v1.PersistentVolumeClaim
		pvs        []*v1.PersistentVolume
		capacities []*storagev1.CSIStorageCapacity
		args       *runtime.RawExtension
		// wantPreFilter is PreFilter's status; when it is not Success or
		// Skip, nothing else runs.
		wantPreFilter *framework.Status
		// wantClaims is the state PreFilter leaves (nil for none to check).
		wantClaims *podVolumeClaims
		// wantFilter is per node; wantScores per node (0 for a node Filter
		// rejected).
		wantFilter []*framework.Status
		wantScores []int64
	}{
		{
			name:          "pod has not pvcs",
			pod:           st.MakePod().Name("pod-a").Obj(),
			nodes:         []*v1.Node{node("node-a")},
			wantPreFilter: framework.NewStatus(framework.Skip),
			wantFilter:    []*framework.Status{nil},
			wantScores:    []int64{0},
		},
		{
			name:  "all bound",
			pod:   st.MakePod().Name("pod-a").PVC("pvc-a").Obj(),
			nodes: []*v1.Node{node("node-a")},
			pvcs:  []*v1.PersistentVolumeClaim{boundTo(makePVC("pvc-a", "", waitSC.Name), "pv-a")},
			pvs:   []*v1.PersistentVolume{makePV("pv-a", "", "", waitSC.Name)},
			wantClaims: &podVolumeClaims{
				boundClaims:                []*v1.PersistentVolumeClaim{boundTo(makePVC("pvc-a", "", waitSC.Name), "pv-a")},
				unboundClaimsDelayBinding:  []*v1.PersistentVolumeClaim{},
				unboundVolumesDelayBinding: map[string][]*v1.PersistentVolume{},
			},
			wantFilter: []*framework.Status{nil},
			wantScores: []int64{0},
		},
		{
			name:          "PVC does not exist",
			pod:           st.MakePod().Name("pod-a").PVC("pvc-a").Obj(),
			nodes:         []*v1.Node{node("node-a")},
			wantPreFilter: uau(`persistentvolumeclaim "pvc-a" not found`),
		},
		{
			name:          "Part of PVCs do not exist",
			pod:           st.MakePod().Name("pod-a").PVC("pvc-a").PVC("pvc-b").Obj(),
			nodes:         []*v1.Node{node("node-a")},
			pvcs:          []*v1.PersistentVolumeClaim{boundTo(makePVC("pvc-a", "", waitSC.Name), "pv-a")},
			wantPreFilter: uau(`persistentvolumeclaim "pvc-b" not found`),
		},
		{
			name:          "immediate claims not bound",
			pod:           st.MakePod().Name("pod-a").PVC("pvc-a").Obj(),
			nodes:         []*v1.Node{node("node-a")},
			pvcs:          []*v1.PersistentVolumeClaim{makePVC("pvc-a", "", immediateSC.Name)},
			wantPreFilter: uau("pod has unbound immediate PersistentVolumeClaims"),
		},
		{
			name:          "pre-bound claim counts as immediate, even of a WaitForFirstConsumer class",
			pod:           st.MakePod().Name("pod-a").PVC("pvc-a").Obj(),
			nodes:         []*v1.Node{node("node-a")},
			pvcs:          []*v1.PersistentVolumeClaim{preboundTo(makePVC("pvc-a", "", waitSC.Name), "pv-a")},
			wantPreFilter: uau("pod has unbound immediate PersistentVolumeClaims"),
		},
		{
			name:          "claim of a class that does not exist counts as immediate",
			pod:           st.MakePod().Name("pod-a").PVC("pvc-a").Obj(),
			nodes:         []*v1.Node{node("node-a")},
			pvcs:          []*v1.PersistentVolumeClaim{makePVC("pvc-a", "", "no-such-class")},
			wantPreFilter: uau("pod has unbound immediate PersistentVolumeClaims"),
		},
		{
			name:  "unbound claims no matches",
			pod:   st.MakePod().Name("pod-a").PVC("pvc-a").Obj(),
			nodes: []*v1.Node{node("node-a")},
			pvcs:  []*v1.PersistentVolumeClaim{makePVC("pvc-a", "", waitSC.Name)},
			wantClaims: &podVolumeClaims{
				boundClaims:                []*v1.PersistentVolumeClaim{},
				unboundClaimsDelayBinding:  []*v1.PersistentVolumeClaim{makePVC("pvc-a", "", waitSC.Name)},
				unboundVolumesDelayBinding: map[string][]*v1.PersistentVolume{waitSC.Name: {}},
			},
			wantFilter: []*framework.Status{notFound},
			wantScores: []int64{0},
		},
		{
			name:  "bound and unbound unsatisfied",
			pod:   st.MakePod().Name("pod-a").PVC("pvc-a").PVC("pvc-b").Obj(),
			nodes: []*v1.Node{node("node-a", "foo", "barbar")},
			pvcs: []*v1.PersistentVolumeClaim{boundTo(makePVC("pvc-a", "", waitSC.Name), "pv-a"),
				makePVC("pvc-b", "", waitSC.Name)},
			pvs: []*v1.PersistentVolume{pvAffinity(makePV("pv-a", "", "", waitSC.Name),
				map[string][]string{"foo": {"bar"}})},
			wantClaims: &podVolumeClaims{
				boundClaims:               []*v1.PersistentVolumeClaim{boundTo(makePVC("pvc-a", "", waitSC.Name), "pv-a")},
				unboundClaimsDelayBinding: []*v1.PersistentVolumeClaim{makePVC("pvc-b", "", waitSC.Name)},
				unboundVolumesDelayBinding: map[string][]*v1.PersistentVolume{waitSC.Name: {
					pvAffinity(makePV("pv-a", "", "", waitSC.Name), map[string][]string{"foo": {"bar"}})}},
			},
			wantFilter: []*framework.Status{uau(string(ErrReasonNodeConflict), string(ErrReasonBindConflict))},
			wantScores: []int64{0},
		},
		{
			name:  "pv not found",
			pod:   st.MakePod().Name("pod-a").PVC("pvc-a").Obj(),
			nodes: []*v1.Node{node("node-a")},
			pvcs:  []*v1.PersistentVolumeClaim{boundTo(makePVC("pvc-a", "", waitSC.Name), "pv-a")},
			wantClaims: &podVolumeClaims{
				boundClaims:                []*v1.PersistentVolumeClaim{boundTo(makePVC("pvc-a", "", waitSC.Name), "pv-a")},
				unboundClaimsDelayBinding:  []*v1.PersistentVolumeClaim{},
				unboundVolumesDelayBinding: map[string][]*v1.PersistentVolume{},
			},
			wantFilter: []*framework.Status{uau(`node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)`)},
			wantScores: []int64{0},
		},
		{
			name:  "pv not found claim lost",
			pod:   st.MakePod().Name("pod-a").PVC("pvc-a").Obj(),
			nodes: []*v1.Node{node("node-a")},
			pvcs: []*v1.PersistentVolumeClaim{func() *v1.PersistentVolumeClaim {
				pvc := boundTo(makePVC("pvc-a", "", waitSC.Name), "pv-a")
				pvc.Status.Phase = v1.ClaimLost
				return pvc
			}()},
			wantPreFilter: uau(`persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"`),
		},
		{
			name:  "local volumes with close capacity are preferred",
			pod:   st.MakePod().Name("pod-a").PVC("pvc-a").Obj(),
			nodes: []*v1.Node{node("node-a"), node("node-b"), node("node-c")},
			pvcs:  []*v1.PersistentVolumeClaim{makePVC("pvc-a", "50Gi", waitSC.Name)},
			pvs:   localPVs,
			wantClaims: &podVolumeClaims{
				boundClaims:                []*v1.PersistentVolumeClaim{},
				unboundClaimsDelayBinding:  []*v1.PersistentVolumeClaim{makePVC("pvc-a", "50Gi", waitSC.Name)},
				unboundVolumesDelayBinding: map[string][]*v1.PersistentVolume{waitSC.Name: localPVs},
			},
			wantFilter: []*framework.Status{nil, nil, notFound},
			wantScores: []int64{75, 50, 0},
		},
		{
			name:  "local volumes with close capacity are preferred (multiple pvcs)",
			pod:   st.MakePod().Name("pod-a").PVC("pvc-0").PVC("pvc-1").Obj(),
			nodes: []*v1.Node{node("node-a"), node("node-b"), node("node-c")},
			pvcs: []*v1.PersistentVolumeClaim{makePVC("pvc-0", "50Gi", waitSC.Name),
				makePVC("pvc-1", "100Gi", waitHDDSC.Name)},
			pvs: append(append([]*v1.PersistentVolume{}, localPVs...),
				localPV("pv-a-2", "200Gi", waitHDDSC.Name, "node-a"), localPV("pv-a-3", "200Gi", waitHDDSC.Name, "node-a"),
				localPV("pv-b-2", "100Gi", waitHDDSC.Name, "node-b"), localPV("pv-b-3", "100Gi", waitHDDSC.Name, "node-b")),
			wantFilter: []*framework.Status{nil, nil, notFound},
			wantScores: []int64{63, 25, 0},
		},
		{
			name:  "zonal volumes with close capacity are preferred",
			pod:   st.MakePod().Name("pod-a").PVC("pvc-a").Obj(),
			nodes: zonalNodes(),
			pvcs:  []*v1.PersistentVolumeClaim{makePVC("pvc-a", "50Gi", waitSC.Name)},
			pvs:   zonalPVs,
			wantClaims: &podVolumeClaims{
				boundClaims:                []*v1.PersistentVolumeClaim{},
				unboundClaimsDelayBinding:  []*v1.PersistentVolumeClaim{makePVC("pvc-a", "50Gi", waitSC.Name)},
				unboundVolumesDelayBinding: map[string][]*v1.PersistentVolume{waitSC.Name: zonalPVs},
			},
			wantFilter: []*framework.Status{nil, nil, nil, nil, notFound, notFound},
			wantScores: []int64{75, 75, 50, 50, 0, 0},
		},
		{
			name:  "zonal volumes with close capacity are preferred (custom shape)",
			pod:   st.MakePod().Name("pod-a").PVC("pvc-a").Obj(),
			nodes: zonalNodes(),
			pvcs:  []*v1.PersistentVolumeClaim{makePVC("pvc-a", "50Gi", waitSC.Name)},
			pvs:   zonalPVs,
			args: rawArgs(`{"bindTimeoutSeconds": 300, "shape": [{"utilization": 0, "score": 0},
				{"utilization": 50, "score": 3}, {"utilization": 100, "score": 5}]}`),
			wantFilter: []*framework.Status{nil, nil, nil, nil, notFound, notFound},
			wantScores: []int64{15, 15, 30, 30, 0, 0},
		},
		{
			name:       "storage capacity score",
			pod:        st.MakePod().Name("pod-a").PVC("pvc-dynamic").Obj(),
			nodes:      capacityNodes(),
			pvcs:       []*v1.PersistentVolumeClaim{makePVC("pvc-dynamic", "10Gi", waitSCWithStorageCapacity.Name)},
			capacities: threeCapacities("100Gi", "50Gi", "10Gi"),
			wantClaims: &podVolumeClaims{
				boundClaims: []*v1.PersistentVolumeClaim{},
				unboundClaimsDelayBinding: []*v1.PersistentVolumeClaim{
					makePVC("pvc-dynamic", "10Gi", waitSCWithStorageCapacity.Name)},
				unboundVolumesDelayBinding: map[string][]*v1.PersistentVolume{waitSCWithStorageCapacity.Name: {}},
			},
			wantFilter: []*framework.Status{nil, nil, nil},
			wantScores: []int64{90, 80, 0},
		},
		{
			name:  "storage capacity score with static binds",
			pod:   st.MakePod().Name("pod-a").PVC("pvc-dynamic").PVC("pvc-static").Obj(),
			nodes: capacityNodes(),
			pvcs: []*v1.PersistentVolumeClaim{makePVC("pvc-dynamic", "10Gi", waitSCWithStorageCapacity.Name),
				makePVC("pvc-static", "50Gi", waitSC.Name)},
			pvs: []*v1.PersistentVolume{localPV("pv-static-a", "100Gi", waitSC.Name, "node-a"),
				localPV("pv-static-b", "100Gi", waitSC.Name, "node-b"),
				localPV("pv-static-c", "100Gi", waitSC.Name, "node-c")},
			capacities: threeCapacities("100Gi", "50Gi", "10Gi"),
			wantFilter: []*framework.Status{nil, nil, nil},
			wantScores: []int64{50, 50, 50},
		},
		{
			name:  "dynamic provisioning with multiple PVCs of the same StorageClass",
			pod:   st.MakePod().Name("pod-a").PVC("pvc-dynamic-0").PVC("pvc-dynamic-1").Obj(),
			nodes: []*v1.Node{node("node-a", nodeLabelKey, "node-a")},
			pvcs: []*v1.PersistentVolumeClaim{makePVC("pvc-dynamic-0", "50Gi", waitSCWithStorageCapacity.Name),
				makePVC("pvc-dynamic-1", "50Gi", waitSCWithStorageCapacity.Name)},
			capacities: []*storagev1.CSIStorageCapacity{
				makeCapacity("node-a", waitSCWithStorageCapacity.Name, "node-a", "100Gi", "")},
			wantFilter: []*framework.Status{nil},
			wantScores: []int64{0},
		},
		{
			name:       "prefer node with least allocatable",
			pod:        st.MakePod().Name("pod-a").PVC("pvc-dynamic").Obj(),
			nodes:      capacityNodes(),
			pvcs:       []*v1.PersistentVolumeClaim{makePVC("pvc-dynamic", "10Gi", waitSCWithStorageCapacity.Name)},
			capacities: threeCapacities("100Gi", "20Gi", "10Gi"),
			args: rawArgs(`{"bindTimeoutSeconds": 300, "shape": [{"utilization": 0, "score": 0},
				{"utilization": 100, "score": 10}]}`),
			wantFilter: []*framework.Status{nil, nil, nil},
			wantScores: []int64{10, 50, 100},
		},
		{
			name:       "prefer node with maximum allocatable",
			pod:        st.MakePod().Name("pod-a").PVC("pvc-dynamic").Obj(),
			nodes:      capacityNodes(),
			pvcs:       []*v1.PersistentVolumeClaim{makePVC("pvc-dynamic", "10Gi", waitSCWithStorageCapacity.Name)},
			capacities: threeCapacities("100Gi", "20Gi", "10Gi"),
			args:       rawArgs(`{"bindTimeoutSeconds": 300}`),
			wantFilter: []*framework.Status{nil, nil, nil},
			wantScores: []int64{90, 50, 0},
		},
		{
			name:       "not enough capacity on a node",
			pod:        st.MakePod().Name("pod-a").PVC("pvc-dynamic").Obj(),
			nodes:      capacityNodes(),
			pvcs:       []*v1.PersistentVolumeClaim{makePVC("pvc-dynamic", "30Gi", waitSCWithStorageCapacity.Name)},
			capacities: threeCapacities("100Gi", "20Gi", "10Gi"),
			wantFilter: []*framework.Status{nil, uau(string(ErrReasonNotEnoughSpace)), uau(string(ErrReasonNotEnoughSpace))},
			wantScores: []int64{70, 0, 0},
		},
		{
			name:  "claim given to another node (selected-node) fits only there",
			pod:   st.MakePod().Name("pod-a").PVC("pvc-dynamic").Obj(),
			nodes: capacityNodes(),
			pvcs: []*v1.PersistentVolumeClaim{withSelectedNode(makePVC("pvc-dynamic", "10Gi",
				waitSCWithStorageCapacity.Name), "node-b")},
			capacities: threeCapacities("100Gi", "20Gi", "10Gi"),
			wantFilter: []*framework.Status{notFound, nil, notFound},
			wantScores: []int64{0, 50, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, n := range tt.nodes {
				objs = append(objs, n)
			}
			for _, o := range tt.pvcs {
				objs = append(objs, o)
			}
			for _, o := range tt.pvs {
				objs = append(objs, o)
			}
			for _, o := range tt.capacities {
				objs = append(objs, o)
			}
			env := newPluginEnv(t, tt.args, objs...)
			_, ctx := ktesting.NewTestContext(t)
			state := framework.NewCycleState()

			_, status := env.pl.PreFilter(ctx, state, tt.pod, nil)
			if diff := cmp.Diff(view(tt.wantPreFilter), view(status)); diff != "" {
				t.Fatalf("PreFilter (-want +got):\n%s", diff)
			}
			if !status.IsSuccess() && !status.IsSkip() {
				return
			}
			if tt.wantClaims != nil {
				got, err := getStateData(state)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.wantClaims, got.podVolumeClaims, cmp.AllowUnexported(podVolumeClaims{}),
					cmpopts.SortSlices(func(a, b *v1.PersistentVolume) bool { return a.Name < b.Name }),
					cmpopts.IgnoreFields(metav1.ObjectMeta{}, "ManagedFields")); diff != "" {
					t.Errorf("state after PreFilter (-want +got):\n%s", diff)
				}
			}
			nodeInfos := make([]*framework.NodeInfo, 0, len(tt.nodes))
			for _, n := range tt.nodes {
				nodeInfos = append(nodeInfos, plugintesting.MakeNodeInfo(n))
			}
			for i, ni := range nodeInfos {
				// Filter is skipped after PreFilter's Skip, as the framework does.
				if status.IsSkip() {
					break
				}
				if diff := cmp.Diff(view(tt.wantFilter[i]), view(env.pl.Filter(ctx, state, tt.pod, ni))); diff != "" {
					t.Errorf("Filter on %s (-want +got):\n%s", ni.Node().Name, diff)
				}
			}
			if s := env.pl.PreScore(ctx, state, tt.pod, nodeInfos); !s.IsSuccess() {
				t.Fatalf("PreScore: %v, want Success (it never skips with StorageCapacityScoring on)", s)
			}
			for i, ni := range nodeInfos {
				score, s := env.pl.Score(ctx, state, tt.pod, ni)
				if !s.IsSuccess() {
					t.Errorf("Score on %s: %v", ni.Node().Name, s)
				}
				if score != tt.wantScores[i] {
					t.Errorf("Score on %s = %d, want %d", ni.Node().Name, score, tt.wantScores[i])
				}
			}
		})
	}
}

func TestPreFilterClaimChecks(t *testing.T) {
	pod := st.MakePod().Name("pod-a").UID("pod-a-uid").Volume(ephemeralVolume("scratch")).Obj()
	other := st.MakePod().Name("other").UID("other-uid").Obj()
	ephemeralClaim := makePVC("pod-a-scratch", "1Gi", waitSC.Name)
	deleting := makePVC("pvc-a", "1Gi", waitSC.Name)
	deleting.DeletionTimestamp = &metav1.Time{}
	deleting.Finalizers = []string{"kubernetes.io/pvc-protection"}
	tests := []struct {
		name string
		pod  *v1.Pod
		pvcs []*v1.PersistentVolumeClaim
		want *framework.Status
	}{
		{
			name: "ephemeral volume before its claim is created",
			pod:  pod,
			want: uau(`waiting for ephemeral volume controller to create the persistentvolumeclaim "pod-a-scratch"`),
		},
		{
			name: "ephemeral volume whose claim the pod does not own",
			pod:  pod,
			pvcs: []*v1.PersistentVolumeClaim{ownedBy(ephemeralClaim, other)},
			want: uau("PVC default/pod-a-scratch was not created for pod default/pod-a (pod is not owner)"),
		},
		{
			name: "ephemeral volume with its own claim",
			pod:  pod,
			pvcs: []*v1.PersistentVolumeClaim{ownedBy(ephemeralClaim, pod)},
		},
		{
			name: "claim being deleted",
			pod:  st.MakePod().Name("pod-a").PVC("pvc-a").Obj(),
			pvcs: []*v1.PersistentVolumeClaim{deleting},
			want: uau(`persistentvolumeclaim "pvc-a" is being deleted`),
		},
		{
			name: "claim in another namespace is not the pod's",
			pod:  st.MakePod().Name("pod-a").Namespace("other").PVC("pvc-a").Obj(),
			pvcs: []*v1.PersistentVolumeClaim{makePVC("pvc-a", "1Gi", waitSC.Name)},
			want: uau(`persistentvolumeclaim "pvc-a" not found`),
		},
		{
			name: "class without volumeBindingMode is an error",
			pod:  st.MakePod().Name("pod-a").PVC("pvc-a").Obj(),
			pvcs: []*v1.PersistentVolumeClaim{makePVC("pvc-a", "1Gi", "no-mode")},
			want: framework.AsStatus(errString2(`VolumeBindingMode not set for StorageClass "no-mode"`)),
		},
	}
	noMode := st.MakeStorageClass().Name("no-mode").Obj()
	noMode.VolumeBindingMode = nil
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{noMode}
			for _, p := range tt.pvcs {
				objs = append(objs, p)
			}
			env := newPluginEnv(t, nil, objs...)
			_, ctx := ktesting.NewTestContext(t)
			_, got := env.pl.PreFilter(ctx, framework.NewCycleState(), tt.pod, nil)
			if diff := cmp.Diff(view(tt.want), view(got)); diff != "" {
				t.Errorf("PreFilter (-want +got):\n%s", diff)
			}
		})
	}
}

// errString2 is an error with text s.
type errString2 string

func (e errString2) Error() string { return string(e) }

// cycle runs PreFilter and Filter for pod on nodes, as a scheduling cycle
// does, and returns the state and Filter's statuses.
func cycle(ctx context.Context, t *testing.T, pl *VolumeBinding, pod *v1.Pod,
	nodes ...*v1.Node) (*framework.CycleState, []*framework.Status) {
	t.Helper()
	state := framework.NewCycleState()
	if _, s := pl.PreFilter(ctx, state, pod, nil); !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	var statuses []*framework.Status
	for _, n := range nodes {
		statuses = append(statuses, pl.Filter(ctx, state, pod, plugintesting.MakeNodeInfo(n)))
	}
	return state, statuses
}

func TestReserveIsSeenByTheNextCycle(t *testing.T) {
	nodeA := node("node-a")
	pv := localPV("pv-a", "10Gi", waitSC.Name, "node-a")
	pvcA, pvcB := makePVC("pvc-a", "1Gi", waitSC.Name), makePVC("pvc-b", "1Gi", waitSC.Name)
	pvcB.UID = "pvc-b-uid"
	env := newPluginEnv(t, nil, nodeA, pv, pvcA, pvcB)
	_, ctx := ktesting.NewTestContext(t)
	podA := st.MakePod().Name("pod-a").PVC("pvc-a").Obj()
	podB := st.MakePod().Name("pod-b").PVC("pvc-b").Obj()

	stateA, statuses := cycle(ctx, t, env.pl, podA, nodeA)
	if !statuses[0].IsSuccess() {
		t.Fatalf("Filter pod-a: %v", statuses[0])
	}
	if s := env.pl.Reserve(ctx, stateA, podA, "node-a"); !s.IsSuccess() {
		t.Fatalf("Reserve: %v", s)
	}
	assumed, err := env.pl.binder.pvCache.Get("pv-a")
	if err != nil {
		t.Fatal(err)
	}
	if ref := assumed.Spec.ClaimRef; ref == nil || ref.Name != "pvc-a" || ref.UID != "pvc-uid" {
		t.Fatalf("assumed PV's claimRef = %+v, want pvc-a", ref)
	}
	if s := env.pl.PreBindPreFlight(ctx, stateA, podA, "node-a"); !s.IsSuccess() {
		t.Errorf("PreBindPreFlight after Reserve with a binding: %v, want Success", s)
	}

	// The next cycle sees pv-a taken.
	_, statuses = cycle(ctx, t, env.pl, podB, nodeA)
	if diff := cmp.Diff(view(uau(string(ErrReasonBindConflict))), view(statuses[0])); diff != "" {
		t.Errorf("Filter pod-b while pv-a is reserved (-want +got):\n%s", diff)
	}

	// Unreserve gives it back, and is idempotent.
	for range 2 {
		env.pl.Unreserve(ctx, stateA, podA, "node-a")
		_, statuses = cycle(ctx, t, env.pl, podB, nodeA)
		if !statuses[0].IsSuccess() {
			t.Errorf("Filter pod-b after Unreserve: %v, want Success", statuses[0])
		}
	}
	// Unreserve without a Reserve (no state) does nothing.
	env.pl.Unreserve(ctx, framework.NewCycleState(), podA, "node-a")
}

func TestReserveProvisioningIsSeenByTheNextCycle(t *testing.T) {
	nodes := capacityNodes()
	pvc := makePVC("pvc-dynamic", "10Gi", waitSCWithStorageCapacity.Name)
	env := newPluginEnv(t, nil, nodes[0], nodes[1], pvc,
		makeCapacity("node-a", waitSCWithStorageCapacity.Name, "node-a", "100Gi", ""),
		makeCapacity("node-b", waitSCWithStorageCapacity.Name, "node-b", "100Gi", ""))
	_, ctx := ktesting.NewTestContext(t)
	pod := st.MakePod().Name("pod-a").PVC("pvc-dynamic").Obj()

	state, _ := cycle(ctx, t, env.pl, pod, nodes[0], nodes[1])
	if s := env.pl.Reserve(ctx, state, pod, "node-b"); !s.IsSuccess() {
		t.Fatalf("Reserve: %v", s)
	}
	// Another pod sharing the claim (or this pod's next attempt) is held to
	// node-b, where the claim is to be provisioned.
	_, statuses := cycle(ctx, t, env.pl, pod, nodes[0], nodes[1])
	want := []statusView{view(uau(string(ErrReasonBindConflict))), view(nil)}
	if diff := cmp.Diff(want, []statusView{view(statuses[0]), view(statuses[1])}); diff != "" {
		t.Errorf("Filter while the claim is reserved for node-b (-want +got):\n%s", diff)
	}
	env.pl.Unreserve(ctx, state, pod, "node-b")
	_, statuses = cycle(ctx, t, env.pl, pod, nodes[0], nodes[1])
	if !statuses[0].IsSuccess() || !statuses[1].IsSuccess() {
		t.Errorf("Filter after Unreserve: %v, %v; want both Success", statuses[0], statuses[1])
	}
}

func TestReserveAllBound(t *testing.T) {
	nodeA := node("node-a")
	env := newPluginEnv(t, nil, nodeA, boundTo(makePVC("pvc-a", "1Gi", waitSC.Name), "pv-a"),
		makePV("pv-a", "", "1Gi", waitSC.Name))
	_, ctx := ktesting.NewTestContext(t)
	pod := st.MakePod().Name("pod-a").PVC("pvc-a").Obj()
	state, _ := cycle(ctx, t, env.pl, pod, nodeA)
	if s := env.pl.Reserve(ctx, state, pod, "node-a"); !s.IsSuccess() {
		t.Fatalf("Reserve: %v", s)
	}
	if s := env.pl.PreBindPreFlight(ctx, state, pod, "node-a"); !s.IsSkip() {
		t.Errorf("PreBindPreFlight: %v, want Skip", s)
	}
	if s := env.pl.PreBind(ctx, state, pod, "node-a"); !s.IsSuccess() {
		t.Errorf("PreBind: %v, want Success (nothing to do)", s)
	}
}

func TestPreBindPreFlight(t *testing.T) {
	tests := []struct {
		name  string
		state *stateData
		want  *framework.Status
	}{
		{name: "all bound", state: &stateData{allBound: true}, want: framework.NewStatus(framework.Skip)},
		{name: "pod without claims (Reserve found nothing to reserve)",
			state: &stateData{allBound: true, podVolumesByNode: map[string]*podVolumes{}},
			want:  framework.NewStatus(framework.Skip)},
		{name: "volume to be bound", state: &stateData{podVolumesByNode: map[string]*podVolumes{"node-a": {}}}},
		{name: "error: state is nil", want: framework.AsStatus(framework.ErrNotFound)},
		{name: "error: node is not found in podVolumesByNode",
			state: &stateData{podVolumesByNode: map[string]*podVolumes{"node-b": {}}},
			want:  framework.AsStatus(errString2(`no pod volume found for node "node-a"`))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			state := framework.NewCycleState()
			if tt.state != nil {
				state.Write(stateKey, tt.state)
			}
			got := (&VolumeBinding{}).PreBindPreFlight(ctx, state, &v1.Pod{}, "node-a")
			if diff := cmp.Diff(view(tt.want), view(got)); diff != "" {
				t.Errorf("PreBindPreFlight (-want +got):\n%s", diff)
			}
		})
	}
}
