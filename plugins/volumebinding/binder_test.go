// Tests for the binder over informer stores the tests fill (kube-scheduler's
// binder_test.go cases): FindPodVolumes without and with provisioning, with
// CSI migration and with capacity; AssumePodVolumes and its revert;
// bindAPIUpdate; checkBindings; BindPodVolumes on a fake clock.
package volumebinding

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
)

// Claims and volumes of kube-scheduler's binder tests (in namespace
// default, the pod's).
var (
	unboundPVC          = makePVC("unbound-pvc", "1G", waitClass.Name)
	unboundPVC2         = makePVC("unbound-pvc2", "5G", waitClass.Name)
	preboundPVC         = preboundTo(makePVC("prebound-pvc", "1G", waitClass.Name), "pv-node1a")
	preboundPVCNode1a   = preboundTo(makePVC("unbound-pvc", "1G", waitClass.Name), "pv-node1a")
	boundPVC            = boundTo(makePVC("bound-pvc", "1G", waitClass.Name), "pv-bound")
	boundPVCNode1a      = boundTo(makePVC("unbound-pvc", "1G", waitClass.Name), "pv-node1a")
	immediateUnboundPVC = makePVC("immediate-unbound-pvc", "1G", immediateClass.Name)
	immediateBoundPVC   = boundTo(makePVC("immediate-bound-pvc", "1G", immediateClass.Name), "pv-bound-immediate")

	provisionedPVC              = makePVC("provisioned-pvc", "1Gi", waitClassWithProvisioner.Name)
	provisionedPVC2             = makePVC("provisioned-pvc2", "1Gi", waitClassWithProvisioner.Name)
	provisionedPVCHigherVersion = withRV(provisionedPVC2, "2")
	provisionedPVCBound         = boundTo(provisionedPVC, "pv-bound")
	noProvisionerPVC            = makePVC("no-provisioner-pvc", "1Gi", waitClass.Name)
	topoMismatchPVC             = makePVC("topo-mismatch-pvc", "1Gi", topoMismatchClass.Name)
	selectedNodePVC             = withSelectedNode(provisionedPVC, "node1")

	boundMigrationPVC     = boundTo(makePVC("pvc-migration-bound", "1G", waitClass.Name), "pv-migration-bound")
	provMigrationPVCBound = boundTo(makePVC("pvc-migration-provisioned", "1Gi", waitClassWithProvisioner.Name),
		"pv-migration-bound")

	pvNode1a                   = makePV("pv-node1a", "node1", "5G", waitClass.Name)
	pvNode1b                   = makePV("pv-node1b", "node1", "10G", waitClass.Name)
	pvNode1c                   = makePV("pv-node1b", "node1", "5G", waitClass.Name)
	pvNode2                    = makePV("pv-node2", "node2", "1G", waitClass.Name)
	pvBound                    = claimedBy(makePV("pv-bound", "node1", "1G", waitClass.Name), boundPVC)
	pvNode1aBound              = claimedBy(pvNode1a, unboundPVC)
	pvNode1bBound              = claimedBy(pvNode1b, unboundPVC2)
	pvBoundImmediate           = claimedBy(makePV("pv-bound-immediate", "node1", "1G", immediateClass.Name), immediateBoundPVC)
	pvBoundImmediateNode2      = claimedBy(makePV("pv-bound-immediate", "node2", "1G", immediateClass.Name), immediateBoundPVC)
	pvNode1bBoundHigherVersion = func() *v1.PersistentVolume { pv := pvNode1bBound.DeepCopy(); pv.ResourceVersion = "2"; return pv }()

	node1         = node("node1", nodeLabelKey, "node1")
	node2         = node("node2", nodeLabelKey, "node2")
	node1NoLabels = st.MakeNode().Name("node1").Obj()
	node1Zone1    = st.MakeNode().Name("node1").Label("topology.gke.io/zone", "us-east-1").Obj()
	node1Zone2    = st.MakeNode().Name("node1").Label("topology.gke.io/zone", "us-east-2").Obj()

	csiNode1Migrated    = makeCSINode("node1", "kubernetes.io/gce-pd")
	csiNode1NotMigrated = makeCSINode("node1", "")
)

// The pod of the generic ephemeral volume cases and its claim.
var (
	ephemeralPod          = st.MakePod().Name("test-pod").UID("test-pod").NodeName("node1").Volume(ephemeralVolume("test-volume")).Obj()
	correctGenericPVC     = ownedBy(boundTo(makePVC("test-pod-test-volume", "1G", immediateClass.Name), "pv-bound"), ephemeralPod)
	conflictingGenericPVC = boundTo(makePVC("test-pod-test-volume", "1G", immediateClass.Name), "pv-bound")
	pvBoundGeneric        = claimedBy(makePV("pv-bound", "node1", "1G", waitClass.Name), correctGenericPVC)
)

// migrationPV is an in-tree volume labelled for zone us-east-1, without node
// affinity (CSI translation derives it from the labels), bound to pvc: a GCE
// PD (migrated to CSI) or, if !migrated, an RBD image (never migrated).
func migrationPV(pvc *v1.PersistentVolumeClaim, migrated bool) *v1.PersistentVolume {
	pv := claimedBy(makePV("pv-migration-bound", "", "1G", waitClass.Name), pvc)
	pv.Labels = map[string]string{v1.LabelFailureDomainBetaZone: "us-east-1", v1.LabelFailureDomainBetaRegion: "us-east-1a"}
	if migrated {
		pv.Spec.PersistentVolumeSource = v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{
			PDName: "test-disk", FSType: "ext4"}}
	} else {
		pv.Spec.PersistentVolumeSource = v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{RBDImage: "test-disk"}}
	}
	return pv
}

// makeCSINode is node's CSINode listing migratedPlugin as migrated.
func makeCSINode(node, migratedPlugin string) *storagev1.CSINode {
	return &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node,
		Annotations: map[string]string{v1.MigratedPluginsAnnotationKey: migratedPlugin}}}
}

func makeBinding(pvc *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) *bindingInfo {
	return &bindingInfo{pvc: pvc.DeepCopy(), pv: pv.DeepCopy()}
}

// ignoreManagedFields ignores what the fake clientset's field manager adds.
// (and the TypeMeta it sets on created objects).
var ignoreManagedFields = cmp.Options{cmpopts.IgnoreFields(metav1.ObjectMeta{}, "ManagedFields"),
	cmpopts.IgnoreTypes(metav1.TypeMeta{})}

// podVolumesView is podVolumes as tests compare it.
type podVolumesView struct {
	Bindings   []bindingView
	Provisions []*dynamicProvision
}

type bindingView struct {
	PVC *v1.PersistentVolumeClaim
	PV  *v1.PersistentVolume
}

func viewVolumes(bindings []*bindingInfo, provisions []*dynamicProvision) podVolumesView {
	v := podVolumesView{Provisions: provisions}
	for _, b := range bindings {
		v.Bindings = append(v.Bindings, bindingView{PVC: b.pvc, PV: b.pv})
	}
	return v
}

// findPodVolumes runs PreFilter's and Filter's halves for pod on node.
func findPodVolumes(env *binderEnv, t *testing.T, pod *v1.Pod, node *v1.Node) (*podVolumes, []ConflictReason, error) {
	logger, _ := ktesting.NewTestContext(t)
	claims, err := env.binder.GetPodVolumeClaims(logger, pod)
	if err != nil {
		return nil, nil, err
	}
	if len(claims.unboundClaimsImmediate) > 0 {
		return nil, nil, fmt.Errorf("pod has unbound immediate PersistentVolumeClaims")
	}
	return env.binder.FindPodVolumes(logger, pod, claims, node)
}

// findScenario is one FindPodVolumes case.
type findScenario struct {
	pvs     []*v1.PersistentVolume
	podPVCs []*v1.PersistentVolumeClaim
	// cachePVCs are the claims in the store, podPVCs if nil.
	cachePVCs []*v1.PersistentVolumeClaim
	// pod is podWithClaims(podPVCs...) if nil.
	pod *v1.Pod
	// node is node1 if nil; nodes and csiNodes are put in their stores.
	node     *v1.Node
	csiNodes []*storagev1.CSINode

	wantBindings   []*bindingInfo
	wantProvisions []*dynamicProvision
	wantReasons    []ConflictReason
	wantErr        bool
	// needsCapacity: with a CSIDriver tracking capacity (and no capacity
	// objects), provisioning fails with ErrReasonNotEnoughSpace instead.
	needsCapacity bool
}

func runFind(t *testing.T, s findScenario, driver *storagev1.CSIDriver) {
	env := newBinderEnv(t)
	env.addPVs(t, true, s.pvs...)
	if s.cachePVCs == nil {
		s.cachePVCs = s.podPVCs
	}
	env.addPVCs(t, true, s.cachePVCs...)
	if driver != nil {
		env.addObjects(t, driver)
	}
	for _, n := range s.csiNodes {
		env.addObjects(t, n)
	}
	if s.pod == nil {
		s.pod = podWithClaims(s.podPVCs...)
	}
	if s.node == nil {
		s.node = node1
	}
	vols, reasons, err := findPodVolumes(env, t, s.pod, s.node)
	if (err != nil) != s.wantErr {
		t.Fatalf("error = %v, want error: %v", err, s.wantErr)
	}
	if err != nil {
		return
	}
	wantReasons, wantProvisions := s.wantReasons, s.wantProvisions
	if s.needsCapacity && driver != nil && *driver.Spec.StorageCapacity {
		wantReasons = append(append([]ConflictReason{}, wantReasons...), ErrReasonNotEnoughSpace)
		wantProvisions = nil
	}
	if diff := cmp.Diff(wantReasons, reasons); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(viewVolumes(s.wantBindings, wantProvisions),
		viewVolumes(vols.StaticBindings, vols.DynamicProvisions)); diff != "" {
		t.Errorf("pod volumes (-want +got):\n%s", diff)
	}
}

// drivers runs each case without a CSIDriver for the provisioner, with one
// tracking capacity and with one not tracking it.
var drivers = []struct {
	name   string
	driver *storagev1.CSIDriver
}{
	{"no CSIDriver", nil},
	{"CSIDriver with capacity tracking", st.MakeCSIDriver(provisioner, true, nil)},
	{"CSIDriver without capacity tracking", st.MakeCSIDriver(provisioner, false, nil)},
}

func TestFindPodVolumesWithoutProvisioning(t *testing.T) {
	scenarios := []struct {
		name string
		findScenario
	}{
		{"no-volumes", findScenario{pod: st.MakePod().Name("test-pod").NodeName("node1").Obj()}},
		{"no-pvcs", findScenario{pod: st.MakePod().Name("test-pod").NodeName("node1").Volume(v1.Volume{Name: "e",
			VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}).Obj()}},
		{"pvc-not-found", findScenario{cachePVCs: []*v1.PersistentVolumeClaim{}, podPVCs: []*v1.PersistentVolumeClaim{boundPVC},
			wantErr: true}},
		{"bound-pvc", findScenario{podPVCs: []*v1.PersistentVolumeClaim{boundPVC}, pvs: []*v1.PersistentVolume{pvBound}}},
		{"bound-pvc,pv-not-exists", findScenario{podPVCs: []*v1.PersistentVolumeClaim{boundPVC},
			wantReasons: []ConflictReason{ErrReasonPVNotExist}}},
		{"prebound-pvc", findScenario{podPVCs: []*v1.PersistentVolumeClaim{preboundPVC},
			pvs: []*v1.PersistentVolume{pvNode1aBound}, wantErr: true}},
		{"unbound-pvc,pv-same-node", findScenario{podPVCs: []*v1.PersistentVolumeClaim{unboundPVC},
			pvs:          []*v1.PersistentVolume{pvNode2, pvNode1a, pvNode1b},
			wantBindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1a)}}},
		{"unbound-pvc,pv-different-node", findScenario{podPVCs: []*v1.PersistentVolumeClaim{unboundPVC},
			pvs: []*v1.PersistentVolume{pvNode2}, wantReasons: []ConflictReason{ErrReasonBindConflict}}},
		{"two-unbound-pvcs", findScenario{podPVCs: []*v1.PersistentVolumeClaim{unboundPVC, unboundPVC2},
			pvs:          []*v1.PersistentVolume{pvNode1a, pvNode1b},
			wantBindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1a), makeBinding(unboundPVC2, pvNode1b)}}},
		{"two-unbound-pvcs,order-by-size", findScenario{podPVCs: []*v1.PersistentVolumeClaim{unboundPVC2, unboundPVC},
			pvs:          []*v1.PersistentVolume{pvNode1a, pvNode1b},
			wantBindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1a), makeBinding(unboundPVC2, pvNode1b)}}},
		{"two-unbound-pvcs,partial-match", findScenario{podPVCs: []*v1.PersistentVolumeClaim{unboundPVC, unboundPVC2},
			pvs:          []*v1.PersistentVolume{pvNode1a},
			wantBindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1a)},
			wantReasons:  []ConflictReason{ErrReasonBindConflict}}},
		{"one-bound,one-unbound", findScenario{podPVCs: []*v1.PersistentVolumeClaim{unboundPVC, boundPVC},
			pvs:          []*v1.PersistentVolume{pvBound, pvNode1a},
			wantBindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1a)}}},
		{"one-bound,one-unbound,no-match", findScenario{podPVCs: []*v1.PersistentVolumeClaim{unboundPVC, boundPVC},
			pvs: []*v1.PersistentVolume{pvBound, pvNode2}, wantReasons: []ConflictReason{ErrReasonBindConflict}}},
		{"one-prebound,one-unbound", findScenario{podPVCs: []*v1.PersistentVolumeClaim{unboundPVC, preboundPVC},
			pvs: []*v1.PersistentVolume{pvNode1a, pvNode1b}, wantErr: true}},
		{"immediate-bound-pvc", findScenario{podPVCs: []*v1.PersistentVolumeClaim{immediateBoundPVC},
			pvs: []*v1.PersistentVolume{pvBoundImmediate}}},
		{"immediate-bound-pvc-wrong-node", findScenario{podPVCs: []*v1.PersistentVolumeClaim{immediateBoundPVC},
			pvs: []*v1.PersistentVolume{pvBoundImmediateNode2}, wantReasons: []ConflictReason{ErrReasonNodeConflict}}},
		{"immediate-unbound-pvc", findScenario{podPVCs: []*v1.PersistentVolumeClaim{immediateUnboundPVC}, wantErr: true}},
		{"immediate-unbound-pvc,delayed-mode-bound", findScenario{
			podPVCs: []*v1.PersistentVolumeClaim{immediateUnboundPVC, boundPVC}, pvs: []*v1.PersistentVolume{pvBound},
			wantErr: true}},
		{"immediate-unbound-pvc,delayed-mode-unbound", findScenario{
			podPVCs: []*v1.PersistentVolumeClaim{immediateUnboundPVC, unboundPVC}, wantErr: true}},
		{"generic-ephemeral,no-pvc", findScenario{
			pod:     st.MakePod().Name("test-pod").NodeName("node1").Volume(ephemeralVolume("no-such-pvc")).Obj(),
			wantErr: true}},
		{"generic-ephemeral,with-pvc", findScenario{pod: ephemeralPod,
			cachePVCs: []*v1.PersistentVolumeClaim{correctGenericPVC}, pvs: []*v1.PersistentVolume{pvBoundGeneric}}},
		{"generic-ephemeral,wrong-pvc", findScenario{pod: ephemeralPod,
			cachePVCs: []*v1.PersistentVolumeClaim{conflictingGenericPVC}, pvs: []*v1.PersistentVolume{pvBoundGeneric},
			wantErr: true}},
	}
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			for _, s := range scenarios {
				t.Run(s.name, func(t *testing.T) { runFind(t, s.findScenario, d.driver) })
			}
		})
	}
}

func TestFindPodVolumesWithProvisioning(t *testing.T) {
	scenarios := []struct {
		name string
		findScenario
	}{
		{"one-provisioned", findScenario{podPVCs: []*v1.PersistentVolumeClaim{provisionedPVC},
			wantProvisions: []*dynamicProvision{{PVC: provisionedPVC}}, needsCapacity: true}},
		{"two-unbound-pvcs,one-matched,one-provisioned", findScenario{
			podPVCs: []*v1.PersistentVolumeClaim{unboundPVC, provisionedPVC}, pvs: []*v1.PersistentVolume{pvNode1a},
			wantBindings:   []*bindingInfo{makeBinding(unboundPVC, pvNode1a)},
			wantProvisions: []*dynamicProvision{{PVC: provisionedPVC}}, needsCapacity: true}},
		{"one-bound,one-provisioned", findScenario{podPVCs: []*v1.PersistentVolumeClaim{boundPVC, provisionedPVC},
			pvs: []*v1.PersistentVolume{pvBound}, wantProvisions: []*dynamicProvision{{PVC: provisionedPVC}},
			needsCapacity: true}},
		{"one-binding,one-selected-node", findScenario{podPVCs: []*v1.PersistentVolumeClaim{boundPVC, selectedNodePVC},
			pvs: []*v1.PersistentVolume{pvBound}, wantProvisions: []*dynamicProvision{{PVC: selectedNodePVC}},
			needsCapacity: true}},
		{"selected-node-of-another-node", findScenario{podPVCs: []*v1.PersistentVolumeClaim{boundPVC, selectedNodePVC},
			pvs: []*v1.PersistentVolume{pvBound}, node: node2,
			wantReasons: []ConflictReason{ErrReasonNodeConflict, ErrReasonBindConflict}}},
		{"immediate-unbound-pvc", findScenario{podPVCs: []*v1.PersistentVolumeClaim{immediateUnboundPVC}, wantErr: true}},
		{"one-immediate-bound,one-provisioned", findScenario{
			podPVCs: []*v1.PersistentVolumeClaim{immediateBoundPVC, provisionedPVC},
			pvs:     []*v1.PersistentVolume{pvBoundImmediate}, wantProvisions: []*dynamicProvision{{PVC: provisionedPVC}},
			needsCapacity: true}},
		{"invalid-provisioner", findScenario{podPVCs: []*v1.PersistentVolumeClaim{noProvisionerPVC},
			wantReasons: []ConflictReason{ErrReasonBindConflict}}},
		{"volume-topology-unsatisfied", findScenario{podPVCs: []*v1.PersistentVolumeClaim{topoMismatchPVC},
			wantReasons: []ConflictReason{ErrReasonBindConflict}}},
	}
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			for _, s := range scenarios {
				t.Run(s.name, func(t *testing.T) { runFind(t, s.findScenario, d.driver) })
			}
		})
	}
}

func TestFindPodVolumesWithCSIMigration(t *testing.T) {
	scenarios := []struct {
		name string
		findScenario
	}{
		{"pvc-bound", findScenario{podPVCs: []*v1.PersistentVolumeClaim{boundMigrationPVC},
			pvs:  []*v1.PersistentVolume{migrationPV(boundMigrationPVC, true)},
			node: node1Zone1, csiNodes: []*storagev1.CSINode{csiNode1Migrated}}},
		{"pvc-bound,csinode-not-migrated", findScenario{podPVCs: []*v1.PersistentVolumeClaim{boundMigrationPVC},
			pvs:  []*v1.PersistentVolume{migrationPV(boundMigrationPVC, true)},
			node: node1Zone1, csiNodes: []*storagev1.CSINode{csiNode1NotMigrated}}},
		{"pvc-bound,missing-csinode", findScenario{podPVCs: []*v1.PersistentVolumeClaim{boundMigrationPVC},
			pvs: []*v1.PersistentVolume{migrationPV(boundMigrationPVC, true)}, node: node1Zone1}},
		{"pvc-bound,node-different-zone", findScenario{podPVCs: []*v1.PersistentVolumeClaim{boundMigrationPVC},
			pvs:  []*v1.PersistentVolume{migrationPV(boundMigrationPVC, true)},
			node: node1Zone2, csiNodes: []*storagev1.CSINode{csiNode1Migrated},
			wantReasons: []ConflictReason{ErrReasonNodeConflict}}},
		{"pvc-bound,node-different-zone,plugin-not-migrated-on-node", findScenario{
			podPVCs: []*v1.PersistentVolumeClaim{boundMigrationPVC},
			pvs:     []*v1.PersistentVolume{migrationPV(boundMigrationPVC, true)},
			node:    node1Zone2, csiNodes: []*storagev1.CSINode{csiNode1NotMigrated}}},
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) { runFind(t, s.findScenario, nil) })
	}
}

func TestCapacity(t *testing.T) {
	networkAttached := makeCapacity("net", waitClassWithProvisioner.Name, "", "1Gi", "")
	node1Capacity := makeCapacity("net", waitClassWithProvisioner.Name, "node1", "1Gi", "")
	node2Capacity := makeCapacity("net", waitClassWithProvisioner.Name, "node2", "1Gi", "")
	scenarios := []struct {
		name       string
		capacities []*storagev1.CSIStorageCapacity
		// want is the capacity object Filter keeps, when the driver tracks
		// capacity; nil for ErrReasonNotEnoughSpace.
		want *storagev1.CSIStorageCapacity
	}{
		{name: "network-attached", capacities: []*storagev1.CSIStorageCapacity{networkAttached}, want: networkAttached},
		{name: "local-storage", capacities: []*storagev1.CSIStorageCapacity{node1Capacity}, want: node1Capacity},
		{name: "multiple", capacities: []*storagev1.CSIStorageCapacity{networkAttached, node2Capacity, node1Capacity},
			want: node1Capacity},
		{name: "no-storage"},
		{name: "wrong-node", capacities: []*storagev1.CSIStorageCapacity{node2Capacity}},
		{name: "wrong-storage-class",
			capacities: []*storagev1.CSIStorageCapacity{makeCapacity("net", waitClass.Name, "node1", "1Gi", "")}},
		{name: "insufficient-storage",
			capacities: []*storagev1.CSIStorageCapacity{makeCapacity("net", waitClassWithProvisioner.Name, "node1", "1Mi", "")}},
		{name: "insufficient-volume-size",
			capacities: []*storagev1.CSIStorageCapacity{makeCapacity("net", waitClassWithProvisioner.Name, "node1", "1Gi", "1Mi")}},
		{name: "zero-storage",
			capacities: []*storagev1.CSIStorageCapacity{makeCapacity("net", waitClassWithProvisioner.Name, "node1", "0Mi", "")}},
		{name: "zero-volume-size",
			capacities: []*storagev1.CSIStorageCapacity{makeCapacity("net", waitClassWithProvisioner.Name, "node1", "", "0Mi")}},
		{name: "nil-storage",
			capacities: []*storagev1.CSIStorageCapacity{makeCapacity("net", waitClassWithProvisioner.Name, "node1", "", "")}},
		{name: "no-node-topology",
			capacities: []*storagev1.CSIStorageCapacity{makeCapacity("net", waitClassWithProvisioner.Name, "-", "1Gi", "")}},
	}
	for _, optIn := range []bool{true, false} {
		t.Run(fmt.Sprintf("CSIDriver.StorageCapacity=%v", optIn), func(t *testing.T) {
			for _, s := range scenarios {
				t.Run(s.name, func(t *testing.T) {
					env := newBinderEnv(t)
					env.addObjects(t, st.MakeCSIDriver(provisioner, optIn, nil))
					for _, c := range s.capacities {
						env.addObjects(t, c)
					}
					env.addPVCs(t, true, provisionedPVC)
					vols, reasons, err := findPodVolumes(env, t, podWithClaims(provisionedPVC), node1)
					if err != nil {
						t.Fatal(err)
					}
					var wantReasons []ConflictReason
					wantProvisions := []*dynamicProvision{{PVC: provisionedPVC, NodeCapacity: s.want}}
					switch {
					case !optIn:
						wantProvisions[0].NodeCapacity = nil
					case s.want == nil:
						wantReasons, wantProvisions = []ConflictReason{ErrReasonNotEnoughSpace}, nil
					}
					if diff := cmp.Diff(wantReasons, reasons); diff != "" {
						t.Errorf("reasons (-want +got):\n%s", diff)
					}
					if diff := cmp.Diff(wantProvisions, vols.DynamicProvisions); diff != "" {
						t.Errorf("provisions (-want +got):\n%s", diff)
					}
				})
			}
		})
	}
}

func TestAssumePodVolumes(t *testing.T) {
	scenarios := []struct {
		name       string
		podPVCs    []*v1.PersistentVolumeClaim
		pvs        []*v1.PersistentVolume
		bindings   []*bindingInfo
		provisions []*dynamicProvision

		wantErr      bool
		wantAllBound bool
		// wantBindings and wantProvisions are podVolumes afterwards (the
		// inputs if nil).
		wantBindings   []*bindingInfo
		wantProvisions []*dynamicProvision
	}{
		{name: "all-bound", podPVCs: []*v1.PersistentVolumeClaim{boundPVC}, pvs: []*v1.PersistentVolume{pvBound},
			wantAllBound: true},
		{name: "one-binding", podPVCs: []*v1.PersistentVolumeClaim{unboundPVC},
			bindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1a)}, pvs: []*v1.PersistentVolume{pvNode1a},
			wantBindings:   []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound)},
			wantProvisions: []*dynamicProvision{}},
		{name: "two-bindings", podPVCs: []*v1.PersistentVolumeClaim{unboundPVC, unboundPVC2},
			bindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1a), makeBinding(unboundPVC2, pvNode1b)},
			pvs:      []*v1.PersistentVolume{pvNode1a, pvNode1b},
			wantBindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound),
				makeBinding(unboundPVC2, pvNode1bBound)},
			wantProvisions: []*dynamicProvision{}},
		{name: "pv-already-bound", podPVCs: []*v1.PersistentVolumeClaim{unboundPVC},
			bindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound)}, pvs: []*v1.PersistentVolume{pvNode1aBound},
			wantBindings:   []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound)},
			wantProvisions: []*dynamicProvision{}},
		{name: "tmpupdate-failed", podPVCs: []*v1.PersistentVolumeClaim{unboundPVC},
			bindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1a), makeBinding(unboundPVC2, pvNode1b)},
			pvs:      []*v1.PersistentVolume{pvNode1a}, wantErr: true},
		{name: "one-binding, one-pvc-provisioned", podPVCs: []*v1.PersistentVolumeClaim{unboundPVC, provisionedPVC},
			bindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1a)}, pvs: []*v1.PersistentVolume{pvNode1a},
			provisions:     []*dynamicProvision{{PVC: provisionedPVC}},
			wantBindings:   []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound)},
			wantProvisions: []*dynamicProvision{{PVC: selectedNodePVC}}},
		{name: "one-binding, one-provision-tmpupdate-failed",
			podPVCs:  []*v1.PersistentVolumeClaim{unboundPVC, provisionedPVCHigherVersion},
			bindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1a)}, pvs: []*v1.PersistentVolume{pvNode1a},
			provisions: []*dynamicProvision{{PVC: provisionedPVC2}}, wantErr: true},
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			env := newBinderEnv(t)
			env.addPVCs(t, true, s.podPVCs...)
			env.addPVs(t, true, s.pvs...)
			pod := podWithClaims(s.podPVCs...)
			vols := &podVolumes{StaticBindings: s.bindings, DynamicProvisions: s.provisions}

			allBound, err := env.binder.AssumePodVolumes(logger, pod, "node1", vols)
			if (err != nil) != s.wantErr {
				t.Fatalf("error = %v, want error: %v", err, s.wantErr)
			}
			if allBound != s.wantAllBound {
				t.Errorf("allBound = %v, want %v", allBound, s.wantAllBound)
			}
			if s.wantErr {
				env.checkRestored(t, s.bindings, convertDynamicProvisionsToPVCs(s.provisions))
				return
			}
			wantBindings, wantProvisions := s.wantBindings, s.wantProvisions
			if wantBindings == nil {
				wantBindings, wantProvisions = s.bindings, s.provisions
			}
			env.checkAssumed(t, wantBindings, convertDynamicProvisionsToPVCs(wantProvisions))
			if diff := cmp.Diff(viewVolumes(wantBindings, wantProvisions),
				viewVolumes(vols.StaticBindings, vols.DynamicProvisions)); diff != "" {
				t.Errorf("pod volumes after AssumePodVolumes (-want +got):\n%s", diff)
			}
		})
	}
}

// checkAssumed checks that the caches return bindings' PVs pre-bound to
// their claims and provisions with selected-node node1.
func (e *binderEnv) checkAssumed(t *testing.T, bindings []*bindingInfo, provisions []*v1.PersistentVolumeClaim) {
	t.Helper()
	for _, b := range bindings {
		pv, err := e.binder.pvCache.Get(b.pv.Name)
		if err != nil {
			t.Fatal(err)
		}
		if ref := pv.Spec.ClaimRef; ref == nil || ref.Name != b.pvc.Name || ref.Namespace != b.pvc.Namespace {
			t.Errorf("PV %s: claimRef %+v, want %s/%s", pv.Name, ref, b.pvc.Namespace, b.pvc.Name)
		}
	}
	for _, p := range provisions {
		pvc, err := e.binder.pvcCache.Get(getPVCName(p))
		if err != nil {
			t.Fatal(err)
		}
		if got := pvc.Annotations[volume.AnnSelectedNode]; got != "node1" {
			t.Errorf("PVC %s: selected node %q, want node1", pvc.Name, got)
		}
	}
}

// checkRestored checks that the caches return the informer's objects.
func (e *binderEnv) checkRestored(t *testing.T, bindings []*bindingInfo, provisions []*v1.PersistentVolumeClaim) {
	t.Helper()
	for _, b := range bindings {
		pv, _ := e.binder.pvCache.Get(b.pv.Name)
		api, _ := e.binder.pvCache.GetAPIObj(b.pv.Name)
		if pv != api {
			t.Errorf("PV %s is still assumed", b.pv.Name)
		}
	}
	for _, p := range provisions {
		pvc, err := e.binder.pvcCache.Get(getPVCName(p))
		if err != nil {
			t.Fatal(err)
		}
		if got := pvc.Annotations[volume.AnnSelectedNode]; got != "" {
			t.Errorf("PVC %s: selected node %q, want none", pvc.Name, got)
		}
	}
}

func TestRevertAssumedPodVolumes(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	env := newBinderEnv(t)
	env.addPVCs(t, true, unboundPVC, provisionedPVC)
	env.addPVs(t, true, pvNode1a)
	pod := podWithClaims(unboundPVC, provisionedPVC)
	bindings := []*bindingInfo{makeBinding(unboundPVC, pvNode1a)}
	provisions := []*dynamicProvision{{PVC: provisionedPVC}}
	vols := &podVolumes{StaticBindings: bindings, DynamicProvisions: provisions}

	if allBound, err := env.binder.AssumePodVolumes(logger, pod, "node1", vols); allBound || err != nil {
		t.Fatalf("AssumePodVolumes = %v, %v", allBound, err)
	}
	env.checkAssumed(t, []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound)}, []*v1.PersistentVolumeClaim{selectedNodePVC})
	for range 2 {
		env.binder.RevertAssumedPodVolumes(vols)
		env.checkRestored(t, bindings, convertDynamicProvisionsToPVCs(provisions))
	}
}

func TestFindAssumeVolumes(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	env := newBinderEnv(t)
	env.addPVs(t, true, pvNode2, pvNode1a, pvNode1c)
	env.addPVCs(t, true, unboundPVC)
	pod := podWithClaims(unboundPVC)

	vols, reasons, err := findPodVolumes(env, t, pod, node1)
	if err != nil || len(reasons) > 0 {
		t.Fatalf("FindPodVolumes = %v, %v", reasons, err)
	}
	if allBound, err := env.binder.AssumePodVolumes(logger, pod, "node1", vols); allBound || err != nil {
		t.Fatalf("AssumePodVolumes = %v, %v", allBound, err)
	}
	want := viewVolumes(vols.StaticBindings, nil)
	// pv-node1a and pv-node1b are the same size; the assumed pre-binding
	// must win every time, whatever order the PVs are listed in.
	for range 50 {
		vols, reasons, err := findPodVolumes(env, t, pod, node1)
		if err != nil || len(reasons) > 0 {
			t.Fatalf("FindPodVolumes = %v, %v", reasons, err)
		}
		if diff := cmp.Diff(want, viewVolumes(vols.StaticBindings, nil)); diff != "" {
			t.Fatalf("FindPodVolumes after assume (-want +got):\n%s", diff)
		}
	}
}

// failUpdates makes the apiserver answer updates of the named objects with
// a Conflict, as for an object changed since the informer's copy.
func failUpdates(env *binderEnv, resource string, names ...string) {
	env.client.PrependReactor("update", resource, func(action clienttesting.Action) (bool, runtime.Object, error) {
		obj := action.(clienttesting.UpdateAction).GetObject().(metav1.Object)
		for _, n := range names {
			if obj.GetName() == n {
				return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: resource}, n,
					fmt.Errorf("the object has been modified"))
			}
		}
		return false, nil, nil
	})
}

func TestBindAPIUpdate(t *testing.T) {
	scenarios := []struct {
		name       string
		bindings   []*bindingInfo
		cachedPVs  []*v1.PersistentVolume
		provisions []*v1.PersistentVolumeClaim
		cachedPVCs []*v1.PersistentVolumeClaim
		// failPVs and failPVCs are refused by the apiserver.
		failPVs, failPVCs []string

		wantErr string
		// wantPVs and wantPVCs are what the caches return afterwards,
		// wantAPIPVs and wantAPIPVCs what the apiserver holds (the same if
		// nil).
		wantPVs, wantAPIPVs   []*v1.PersistentVolume
		wantPVCs, wantAPIPVCs []*v1.PersistentVolumeClaim
	}{
		{name: "nothing-to-bind-nil", wantErr: `failed to get cached bindings for pod "default/test-pod"`},
		{name: "nothing-to-bind-bindings-nil", provisions: []*v1.PersistentVolumeClaim{},
			wantErr: `failed to get cached bindings for pod "default/test-pod"`},
		{name: "nothing-to-bind-provisionings-nil", bindings: []*bindingInfo{},
			wantErr: `failed to get cached claims to provision for pod "default/test-pod"`},
		{name: "nothing-to-bind-empty", bindings: []*bindingInfo{}, provisions: []*v1.PersistentVolumeClaim{}},
		{name: "one-binding", bindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound)},
			cachedPVs: []*v1.PersistentVolume{pvNode1a}, provisions: []*v1.PersistentVolumeClaim{},
			wantPVs: []*v1.PersistentVolume{pvNode1aBound}},
		{name: "two-bindings",
			bindings:  []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound), makeBinding(unboundPVC2, pvNode1bBound)},
			cachedPVs: []*v1.PersistentVolume{pvNode1a, pvNode1b}, provisions: []*v1.PersistentVolumeClaim{},
			wantPVs: []*v1.PersistentVolume{pvNode1aBound, pvNode1bBound}},
		{name: "api-already-updated", bindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound)},
			cachedPVs: []*v1.PersistentVolume{pvNode1aBound}, provisions: []*v1.PersistentVolumeClaim{},
			wantPVs: []*v1.PersistentVolume{pvNode1aBound}},
		{name: "api-update-failed",
			bindings:  []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound), makeBinding(unboundPVC2, pvNode1bBound)},
			cachedPVs: []*v1.PersistentVolume{pvNode1a, pvNode1b}, failPVs: []string{"pv-node1b"},
			provisions: []*v1.PersistentVolumeClaim{},
			wantErr:    `Operation cannot be fulfilled on persistentvolumes "pv-node1b": the object has been modified`,
			wantPVs:    []*v1.PersistentVolume{pvNode1aBound, pvNode1b},
			wantAPIPVs: []*v1.PersistentVolume{pvNode1aBound, pvNode1b}},
		{name: "one-provisioned-pvc", bindings: []*bindingInfo{},
			provisions: []*v1.PersistentVolumeClaim{selectedNodePVC},
			cachedPVCs: []*v1.PersistentVolumeClaim{provisionedPVC},
			wantPVCs:   []*v1.PersistentVolumeClaim{selectedNodePVC}},
		{name: "provision-api-update-failed", bindings: []*bindingInfo{},
			provisions: []*v1.PersistentVolumeClaim{selectedNodePVC, withSelectedNode(provisionedPVC2, "node1")},
			cachedPVCs: []*v1.PersistentVolumeClaim{provisionedPVC, provisionedPVC2}, failPVCs: []string{"provisioned-pvc2"},
			wantErr:     `Operation cannot be fulfilled on persistentvolumeclaims "provisioned-pvc2"`,
			wantPVCs:    []*v1.PersistentVolumeClaim{selectedNodePVC, provisionedPVC2},
			wantAPIPVCs: []*v1.PersistentVolumeClaim{selectedNodePVC, provisionedPVC2}},
		{name: "binding-succeed, provision-api-update-failed",
			bindings:   []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound)},
			cachedPVs:  []*v1.PersistentVolume{pvNode1a},
			provisions: []*v1.PersistentVolumeClaim{selectedNodePVC, withSelectedNode(provisionedPVC2, "node1")},
			cachedPVCs: []*v1.PersistentVolumeClaim{provisionedPVC, provisionedPVC2}, failPVCs: []string{"provisioned-pvc2"},
			wantErr:     `Operation cannot be fulfilled on persistentvolumeclaims "provisioned-pvc2"`,
			wantPVs:     []*v1.PersistentVolume{pvNode1aBound},
			wantPVCs:    []*v1.PersistentVolumeClaim{selectedNodePVC, provisionedPVC2},
			wantAPIPVCs: []*v1.PersistentVolumeClaim{selectedNodePVC, provisionedPVC2}},
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			env := newBinderEnv(t)
			env.addPVs(t, false, s.cachedPVs...)
			env.addPVCs(t, false, s.cachedPVCs...)
			failUpdates(env, "persistentvolumes", s.failPVs...)
			failUpdates(env, "persistentvolumeclaims", s.failPVCs...)
			for _, b := range s.bindings {
				if err := env.binder.pvCache.Assume(b.pv); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range s.provisions {
				if err := env.binder.pvcCache.Assume(p); err != nil {
					t.Fatal(err)
				}
			}

			err := env.binder.bindAPIUpdate(ctx, st.MakePod().Name("test-pod").Obj(), s.bindings, s.provisions)
			if got := errString(err); (s.wantErr == "") != (got == "") || !strings.Contains(got, s.wantErr) {
				t.Errorf("error = %q, want %q", got, s.wantErr)
			}
			if s.wantAPIPVs == nil {
				s.wantAPIPVs = s.wantPVs
			}
			if s.wantAPIPVCs == nil {
				s.wantAPIPVCs = s.wantPVCs
			}
			for i, want := range s.wantPVs {
				got, _ := env.binder.pvCache.Get(want.Name)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("cached PV (-want +got):\n%s", diff)
				}
				api, _ := env.client.CoreV1().PersistentVolumes().Get(ctx, want.Name, metav1.GetOptions{})
				if diff := cmp.Diff(s.wantAPIPVs[i], api, ignoreManagedFields); diff != "" {
					t.Errorf("apiserver's PV (-want +got):\n%s", diff)
				}
			}
			for i, want := range s.wantPVCs {
				got, _ := env.binder.pvcCache.Get(getPVCName(want))
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("cached PVC (-want +got):\n%s", diff)
				}
				api, _ := env.client.CoreV1().PersistentVolumeClaims(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
				if diff := cmp.Diff(s.wantAPIPVCs[i], api, ignoreManagedFields); diff != "" {
					t.Errorf("apiserver's PVC (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// nextVersion is obj as the apiserver returns it after an update: its
// resourceVersion one higher.
func nextVersion[T metav1.Object](obj T) T {
	rv, _ := resourceVersion(obj)
	obj.SetResourceVersion(fmt.Sprint(rv + 1))
	return obj
}

// checkScenario is one checkBindings case: what the stores hold (initPVs,
// initPVCs), what PreBind wrote (bindings, provisions, assumed), and what
// the informer saw since (apiPVs and apiPVCs, each one version later;
// deletePVs and deletePVCs remove the init objects).
type checkScenario struct {
	initPVs    []*v1.PersistentVolume
	initPVCs   []*v1.PersistentVolumeClaim
	nodes      []*v1.Node
	csiNodes   []*storagev1.CSINode
	bindings   []*bindingInfo
	provisions []*v1.PersistentVolumeClaim
	// written: bindings hold the apiserver's answers to PreBind's writes,
	// no longer what was assumed.
	written bool

	apiPVs                []*v1.PersistentVolume
	apiPVCs               []*v1.PersistentVolumeClaim
	deletePVs, deletePVCs bool

	wantErr   string
	wantBound bool
}

func runCheck(t *testing.T, s checkScenario) {
	logger, _ := ktesting.NewTestContext(t)
	env := newBinderEnv(t)
	pod := st.MakePod().Name("test-pod").NodeName("node1").Obj()
	if s.nodes == nil {
		s.nodes = []*v1.Node{node1}
	}
	env.addObjects(t, pod)
	for _, n := range s.nodes {
		env.addObjects(t, n)
	}
	for _, n := range s.csiNodes {
		env.addObjects(t, n)
	}
	env.addPVs(t, true, s.initPVs...)
	env.addPVCs(t, true, s.initPVCs...)
	for _, b := range s.bindings {
		if s.written {
			break
		}
		if err := env.binder.pvCache.Assume(b.pv); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range s.provisions {
		if err := env.binder.pvcCache.Assume(p); err != nil {
			t.Fatal(err)
		}
	}
	if s.deletePVs {
		for _, pv := range s.initPVs {
			_ = env.binder.pvCache.store.Delete(pv)
		}
	} else {
		for _, pv := range s.apiPVs {
			env.addPVs(t, true, nextVersion(pv.DeepCopy()))
		}
	}
	if s.deletePVCs {
		for _, pvc := range s.initPVCs {
			_ = env.binder.pvcCache.store.Delete(pvc)
		}
	} else {
		for _, pvc := range s.apiPVCs {
			env.addPVCs(t, true, nextVersion(pvc.DeepCopy()))
		}
	}

	bound, err := env.binder.checkBindings(logger, pod, s.bindings, s.provisions)
	if got := errString(err); got != s.wantErr {
		t.Errorf("error = %q, want %q", got, s.wantErr)
	}
	if bound != s.wantBound {
		t.Errorf("bound = %v, want %v", bound, s.wantBound)
	}
}

func TestCheckBindings(t *testing.T) {
	none := []*v1.PersistentVolumeClaim{}
	scenarios := []struct {
		name string
		checkScenario
	}{
		{"nothing-to-bind-nil", checkScenario{wantErr: `failed to get cached bindings for pod "default/test-pod"`}},
		{"nothing-to-bind-bindings-nil", checkScenario{provisions: none,
			wantErr: `failed to get cached bindings for pod "default/test-pod"`}},
		{"nothing-to-bind-provisionings-nil", checkScenario{bindings: []*bindingInfo{},
			wantErr: `failed to get cached claims to provision for pod "default/test-pod"`}},
		{"nothing-to-bind", checkScenario{bindings: []*bindingInfo{}, provisions: none, wantBound: true}},
		{"binding-bound", checkScenario{bindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound)},
			provisions: none, initPVs: []*v1.PersistentVolume{pvNode1aBound},
			initPVCs: []*v1.PersistentVolumeClaim{boundPVCNode1a}, wantBound: true}},
		{"binding-prebound", checkScenario{bindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound)},
			provisions: none, initPVs: []*v1.PersistentVolume{pvNode1aBound},
			initPVCs: []*v1.PersistentVolumeClaim{preboundPVCNode1a}}},
		{"binding-unbound", checkScenario{bindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound)},
			provisions: none, initPVs: []*v1.PersistentVolume{pvNode1aBound},
			initPVCs: []*v1.PersistentVolumeClaim{unboundPVC}}},
		{"binding-pvc-not-exists", checkScenario{bindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound)},
			provisions: none, initPVs: []*v1.PersistentVolume{pvNode1aBound},
			wantErr: `failed to check binding: persistentvolumeclaims "default/unbound-pvc" not found`}},
		{"binding-pv-not-exists", checkScenario{bindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound)},
			provisions: none, initPVs: []*v1.PersistentVolume{pvNode1aBound},
			initPVCs: []*v1.PersistentVolumeClaim{boundPVCNode1a}, deletePVs: true,
			wantErr: `failed to check binding: persistentvolumes "pv-node1a" not found`}},
		{"binding-claimref-nil", checkScenario{bindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound)},
			provisions: none, initPVs: []*v1.PersistentVolume{pvNode1a},
			initPVCs: []*v1.PersistentVolumeClaim{boundPVCNode1a}, apiPVs: []*v1.PersistentVolume{pvNode1a},
			apiPVCs: []*v1.PersistentVolumeClaim{boundPVCNode1a},
			wantErr: `ClaimRef got reset for pv "pv-node1a"`}},
		{"binding-claimref-uid-empty", checkScenario{bindings: []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound)},
			provisions: none, initPVs: []*v1.PersistentVolume{pvNode1aBound},
			initPVCs: []*v1.PersistentVolumeClaim{boundPVCNode1a},
			apiPVs: []*v1.PersistentVolume{func() *v1.PersistentVolume {
				pv := pvNode1aBound.DeepCopy()
				pv.Spec.ClaimRef.UID = ""
				return pv
			}()},
			apiPVCs: []*v1.PersistentVolumeClaim{boundPVCNode1a},
			wantErr: `ClaimRef got reset for pv "pv-node1a"`}},
		{"binding-informer-behind-the-write", checkScenario{
			bindings: []*bindingInfo{makeBinding(unboundPVC, nextVersion(pvNode1aBound.DeepCopy()))},
			written:  true, provisions: none, initPVs: []*v1.PersistentVolume{pvNode1a},
			initPVCs: []*v1.PersistentVolumeClaim{boundPVCNode1a}}},
		{"binding-one-bound,one-unbound", checkScenario{
			bindings:   []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound), makeBinding(unboundPVC2, pvNode1bBound)},
			provisions: none, initPVs: []*v1.PersistentVolume{pvNode1aBound, pvNode1bBound},
			initPVCs: []*v1.PersistentVolumeClaim{boundPVCNode1a, unboundPVC2}}},
		{"provisioning-pvc-bound", checkScenario{bindings: []*bindingInfo{},
			provisions: []*v1.PersistentVolumeClaim{selectedNodePVC}, initPVs: []*v1.PersistentVolume{pvBound},
			initPVCs: []*v1.PersistentVolumeClaim{provisionedPVCBound},
			apiPVCs:  []*v1.PersistentVolumeClaim{withSelectedNode(provisionedPVCBound, "node1")}, wantBound: true}},
		{"provisioning-pvc-unbound", checkScenario{bindings: []*bindingInfo{},
			provisions: []*v1.PersistentVolumeClaim{selectedNodePVC},
			initPVCs:   []*v1.PersistentVolumeClaim{selectedNodePVC}}},
		{"provisioning-pvc-not-exists", checkScenario{bindings: []*bindingInfo{},
			provisions: []*v1.PersistentVolumeClaim{selectedNodePVC},
			initPVCs:   []*v1.PersistentVolumeClaim{provisionedPVC}, deletePVCs: true,
			wantErr: `failed to check provisioning pvc: persistentvolumeclaims "default/provisioned-pvc" not found`}},
		{"provisioning-pvc-annotations-nil", checkScenario{bindings: []*bindingInfo{},
			provisions: []*v1.PersistentVolumeClaim{selectedNodePVC},
			initPVCs:   []*v1.PersistentVolumeClaim{provisionedPVC}, apiPVCs: []*v1.PersistentVolumeClaim{provisionedPVC},
			wantErr: `selectedNode annotation reset for PVC "provisioned-pvc"`}},
		{"provisioning-pvc-selected-node-dropped", checkScenario{bindings: []*bindingInfo{},
			provisions: []*v1.PersistentVolumeClaim{selectedNodePVC},
			initPVCs:   []*v1.PersistentVolumeClaim{provisionedPVC},
			apiPVCs: []*v1.PersistentVolumeClaim{func() *v1.PersistentVolumeClaim {
				pvc := provisionedPVC.DeepCopy()
				pvc.Annotations = map[string]string{}
				return pvc
			}()},
			wantErr: `provisioning failed for PVC "provisioned-pvc"`}},
		{"provisioning-pvc-selected-node-wrong-node", checkScenario{bindings: []*bindingInfo{},
			provisions: []*v1.PersistentVolumeClaim{selectedNodePVC},
			initPVCs:   []*v1.PersistentVolumeClaim{provisionedPVC},
			apiPVCs:    []*v1.PersistentVolumeClaim{withSelectedNode(provisionedPVC, "wrong-node")},
			wantErr:    `provisioning failed for PVC "provisioned-pvc"`}},
		{"binding-bound-provisioning-unbound", checkScenario{
			bindings:   []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound)},
			provisions: []*v1.PersistentVolumeClaim{selectedNodePVC}, initPVs: []*v1.PersistentVolume{pvNode1aBound},
			initPVCs: []*v1.PersistentVolumeClaim{boundPVCNode1a, selectedNodePVC}}},
		{"tolerate-provisioning-pvc-bound-pv-not-found", checkScenario{bindings: []*bindingInfo{},
			provisions: []*v1.PersistentVolumeClaim{selectedNodePVC}, initPVs: []*v1.PersistentVolume{pvNode1a},
			initPVCs: []*v1.PersistentVolumeClaim{provisionedPVC},
			apiPVCs:  []*v1.PersistentVolumeClaim{withSelectedNode(provisionedPVCBound, "node1")}, deletePVs: true}},
		{"node-gone", checkScenario{bindings: []*bindingInfo{}, provisions: none, nodes: []*v1.Node{},
			wantErr: `failed to get node "node1": node "node1" not found`}},
		{"node-affinity-no-longer-matches", checkScenario{
			bindings:   []*bindingInfo{makeBinding(unboundPVC, pvNode1aBound)},
			provisions: none, initPVs: []*v1.PersistentVolume{pvNode1aBound},
			initPVCs: []*v1.PersistentVolumeClaim{boundPVCNode1a}, nodes: []*v1.Node{node1NoLabels},
			wantErr: `pv "pv-node1a" node affinity doesn't match node "node1": no matching NodeSelectorTerms`}},
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) { runCheck(t, s.checkScenario) })
	}
}

func TestCheckBindingsWithCSIMigration(t *testing.T) {
	none := []*v1.PersistentVolumeClaim{}
	migrated := migrationPV(unboundPVC, true)
	scenarios := []struct {
		name string
		checkScenario
	}{
		{"provisioning-pvc-bound", checkScenario{bindings: []*bindingInfo{},
			provisions: []*v1.PersistentVolumeClaim{withSelectedNode(provMigrationPVCBound, "node1")},
			initPVs:    []*v1.PersistentVolume{migrationPV(provMigrationPVCBound, true)},
			initPVCs:   []*v1.PersistentVolumeClaim{provMigrationPVCBound},
			nodes:      []*v1.Node{node1Zone1}, csiNodes: []*storagev1.CSINode{csiNode1Migrated},
			apiPVCs:   []*v1.PersistentVolumeClaim{withSelectedNode(provMigrationPVCBound, "node1")},
			wantBound: true}},
		{"binding-node-pv-same-zone", checkScenario{bindings: []*bindingInfo{makeBinding(unboundPVC, migrated)},
			provisions: none, initPVs: []*v1.PersistentVolume{migrated},
			initPVCs: []*v1.PersistentVolumeClaim{unboundPVC},
			nodes:    []*v1.Node{node1Zone1}, csiNodes: []*storagev1.CSINode{csiNode1Migrated}}},
		{"binding-without-csinode", checkScenario{bindings: []*bindingInfo{makeBinding(unboundPVC, migrated)},
			provisions: none, initPVs: []*v1.PersistentVolume{migrated},
			initPVCs: []*v1.PersistentVolumeClaim{unboundPVC}, nodes: []*v1.Node{node1Zone1}}},
		{"binding-non-migrated-plugin", checkScenario{bindings: []*bindingInfo{makeBinding(unboundPVC, migrated)},
			provisions: none, initPVs: []*v1.PersistentVolume{migrated},
			initPVCs: []*v1.PersistentVolumeClaim{unboundPVC},
			nodes:    []*v1.Node{node1Zone1}, csiNodes: []*storagev1.CSINode{csiNode1NotMigrated}}},
		{"binding-node-pv-in-different-zones", checkScenario{bindings: []*bindingInfo{makeBinding(unboundPVC, migrated)},
			provisions: none, initPVs: []*v1.PersistentVolume{migrated},
			initPVCs: []*v1.PersistentVolumeClaim{unboundPVC},
			nodes:    []*v1.Node{node1Zone2}, csiNodes: []*storagev1.CSINode{csiNode1Migrated},
			wantErr: `pv "pv-migration-bound" node affinity doesn't match node "node1": no matching NodeSelectorTerms`}},
		{"binding-node-pv-different-zones-migration-off", checkScenario{
			bindings:   []*bindingInfo{makeBinding(unboundPVC, migrationPV(unboundPVC, false))},
			provisions: none, initPVs: []*v1.PersistentVolume{migrationPV(unboundPVC, false)},
			initPVCs: []*v1.PersistentVolumeClaim{unboundPVC},
			nodes:    []*v1.Node{node1Zone2}, csiNodes: []*storagev1.CSINode{csiNode1Migrated}}},
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) { runCheck(t, s.checkScenario) })
	}
}

// bindScenario is one BindPodVolumes case. initPVs and initPVCs are in the
// stores and the apiserver; binding and claimToProvision are assumed, as
// Reserve leaves them; after the writes, while BindPodVolumes waits, delay
// (if set) changes what the informer holds, and the fake clock then moves
// on a second at a time.
type bindScenario struct {
	bindingsNil      bool
	nodes            []*v1.Node
	initPVs          []*v1.PersistentVolume
	initPVCs         []*v1.PersistentVolumeClaim
	binding          *bindingInfo
	claimToProvision *v1.PersistentVolumeClaim
	// failPVs are refused by the apiserver with a Conflict.
	failPVs []string
	delay   func(t *testing.T, env *binderEnv, pod *v1.Pod)

	wantErr string
}

func TestBindPodVolumes(t *testing.T) {
	// bindClaim is the PV controller's part: the claim bound to pv.
	// bindClaim is the PV controller's part: the claim, as PreBind wrote
	// it, bound to pv, seen by the informer.
	bindClaim := func(pvc *v1.PersistentVolumeClaim, pv string) func(*testing.T, *binderEnv, *v1.Pod) {
		return func(t *testing.T, env *binderEnv, _ *v1.Pod) {
			written, err := env.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Get(context.Background(),
				pvc.Name, metav1.GetOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			env.addPVCs(t, true, nextVersion(boundTo(written, pv)))
		}
	}
	scenarios := []struct {
		name string
		bindScenario
	}{
		{"nothing-to-bind-nil", bindScenario{bindingsNil: true,
			wantErr: `failed to get cached bindings for pod "default/test-pod"`}},
		{"nothing-to-bind-empty", bindScenario{}},
		{"already-bound", bindScenario{binding: makeBinding(unboundPVC, pvNode1aBound),
			initPVs: []*v1.PersistentVolume{pvNode1aBound}, initPVCs: []*v1.PersistentVolumeClaim{boundPVCNode1a}}},
		{"binding-static-pv-succeeds-after-time", bindScenario{initPVs: []*v1.PersistentVolume{pvNode1a},
			initPVCs: []*v1.PersistentVolumeClaim{unboundPVC}, binding: makeBinding(unboundPVC, pvNode1aBound),
			delay: bindClaim(unboundPVC, "pv-node1a")}},
		{"binding-dynamic-pv-succeeds-after-time", bindScenario{claimToProvision: selectedNodePVC,
			initPVCs: []*v1.PersistentVolumeClaim{provisionedPVC},
			delay: func(t *testing.T, env *binderEnv, pod *v1.Pod) {
				// An external provisioner creates the PV; the PV controller binds.
				env.addPVs(t, true, claimedBy(makePV("dynamic-pv", "node1", "1G", waitClass.Name), selectedNodePVC))
				bindClaim(selectedNodePVC, "dynamic-pv")(t, env, pod)
			}}},
		{"bound-by-pv-controller-before-bind", bindScenario{initPVs: []*v1.PersistentVolume{pvNode1a},
			initPVCs: []*v1.PersistentVolumeClaim{unboundPVC}, binding: makeBinding(unboundPVC, pvNode1aBound),
			failPVs: []string{"pv-node1a"},
			wantErr: `Operation cannot be fulfilled on persistentvolumes "pv-node1a": the object has been modified`}},
		{"pod-deleted-after-time", bindScenario{binding: makeBinding(unboundPVC, pvNode1aBound),
			initPVs: []*v1.PersistentVolume{pvNode1a}, initPVCs: []*v1.PersistentVolumeClaim{unboundPVC},
			delay: func(t *testing.T, env *binderEnv, pod *v1.Pod) {
				_ = env.factory.Core().V1().Pods().Informer().GetIndexer().Delete(pod)
			},
			wantErr: `binding volumes: pod does not exist any more: pod "test-pod" not found`}},
		{"binding-times-out", bindScenario{binding: makeBinding(unboundPVC, pvNode1aBound),
			initPVs: []*v1.PersistentVolume{pvNode1a}, initPVCs: []*v1.PersistentVolumeClaim{unboundPVC},
			wantErr: "binding volumes: context deadline exceeded"}},
		{"check-fails", bindScenario{binding: makeBinding(unboundPVC, pvNode1aBound),
			initPVs: []*v1.PersistentVolume{pvNode1a}, initPVCs: []*v1.PersistentVolumeClaim{unboundPVC},
			delay:   func(t *testing.T, env *binderEnv, _ *v1.Pod) { _ = env.binder.pvcCache.store.Delete(unboundPVC) },
			wantErr: `binding volumes: failed to check binding: persistentvolumeclaims "default/unbound-pvc" not found`}},
		{"node-affinity-fails", bindScenario{binding: makeBinding(unboundPVC, pvNode1aBound),
			initPVs: []*v1.PersistentVolume{pvNode1aBound}, initPVCs: []*v1.PersistentVolumeClaim{boundPVCNode1a},
			nodes:   []*v1.Node{node1NoLabels},
			wantErr: `binding volumes: pv "pv-node1a" node affinity doesn't match node "node1": no matching NodeSelectorTerms`}},
		{"node-affinity-fails-dynamic-provisioning", bindScenario{
			initPVs: []*v1.PersistentVolume{pvNode1a, pvNode2}, initPVCs: []*v1.PersistentVolumeClaim{selectedNodePVC},
			claimToProvision: selectedNodePVC, nodes: []*v1.Node{node1, node2},
			delay:   bindClaim(selectedNodePVC, "pv-node2"),
			wantErr: `binding volumes: pv "pv-node2" node affinity doesn't match node "node1": no matching NodeSelectorTerms`}},
		{"provisioner-gives-up", bindScenario{claimToProvision: selectedNodePVC,
			initPVCs: []*v1.PersistentVolumeClaim{provisionedPVC},
			delay: func(t *testing.T, env *binderEnv, _ *v1.Pod) {
				// The PV controller named the provisioner; the provisioner
				// removed selected-node.
				pvc := nextVersion(provisionedPVC.DeepCopy())
				metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, volume.AnnStorageProvisioner, provisioner)
				env.addPVCs(t, true, pvc)
			},
			wantErr: `binding volumes: provisioning failed for PVC "provisioned-pvc"`}},
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			runBind(t, s.bindScenario)
		})
	}
}

func runBind(t *testing.T, s bindScenario) {
	_, ctx := ktesting.NewTestContext(t)
	env := newBinderEnv(t)
	pod := st.MakePod().Name("test-pod").NodeName("node1").Obj()
	env.addObjects(t, pod)
	if s.nodes == nil {
		s.nodes = []*v1.Node{node1}
	}
	for _, n := range s.nodes {
		env.addObjects(t, n)
	}
	vols := &podVolumes{StaticBindings: []*bindingInfo{}, DynamicProvisions: []*dynamicProvision{}}
	if s.bindingsNil {
		vols.StaticBindings = nil
	} else {
		env.addPVs(t, false, s.initPVs...)
		env.addPVCs(t, false, s.initPVCs...)
		failUpdates(env, "persistentvolumes", s.failPVs...)
		if s.binding != nil {
			vols.StaticBindings = append(vols.StaticBindings, s.binding)
			if err := env.binder.pvCache.Assume(s.binding.pv); err != nil {
				t.Fatal(err)
			}
		}
		if s.claimToProvision != nil {
			vols.DynamicProvisions = append(vols.DynamicProvisions, &dynamicProvision{PVC: s.claimToProvision})
			if err := env.binder.pvcCache.Assume(s.claimToProvision); err != nil {
				t.Fatal(err)
			}
		}
	}

	done := make(chan error, 1)
	go func() { done <- env.binder.BindPodVolumes(ctx, pod, vols) }()
	err, finished := waitForPoll(t, env, done)
	if !finished {
		env.syncStores(t)
		if s.delay != nil {
			s.delay(t, env, pod)
		}
		err = stepUntilDone(t, env, done)
	}
	if got := errString(err); got != s.wantErr {
		t.Errorf("BindPodVolumes error = %q, want %q", got, s.wantErr)
	}
}

// syncStores copies the apiserver's PVs and PVCs into the stores, as the
// informers would after PreBind's writes.
func (e *binderEnv) syncStores(t *testing.T) {
	t.Helper()
	pvs, err := e.client.CoreV1().PersistentVolumes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pvs.Items {
		e.addPVs(t, true, &pvs.Items[i])
	}
	pvcs, err := e.client.CoreV1().PersistentVolumeClaims("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pvcs.Items {
		e.addPVCs(t, true, &pvcs.Items[i])
	}
}

// waitForPoll waits until BindPodVolumes returned or waits on the fake clock
// (its deadline timer and its ticker): the writes are done.
func waitForPoll(t *testing.T, env *binderEnv, done <-chan error) (error, bool) {
	t.Helper()
	var err error
	finished := false
	if pollErr := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) {
			select {
			case err = <-done:
				finished = true
				return true, nil
			default:
				return env.clock.Waiters() == 2, nil
			}
		}); pollErr != nil {
		t.Fatalf("BindPodVolumes neither returned nor started to wait: %v", pollErr)
	}
	return err, finished
}

// stepUntilDone moves the fake clock a second at a time until BindPodVolumes
// returns, past its 10s timeout if need be.
func stepUntilDone(t *testing.T, env *binderEnv, done <-chan error) error {
	t.Helper()
	for range 20 {
		env.clock.Step(time.Second)
		select {
		case err := <-done:
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("BindPodVolumes did not return 20s (fake) after its writes")
	return nil
}

func TestBindTimeoutZeroFailsAtOnce(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	env := newBinderEnv(t)
	env.binder.bindTimeout = 0
	pod := st.MakePod().Name("test-pod").NodeName("node1").Obj()
	env.addObjects(t, pod, node1)
	vols := &podVolumes{StaticBindings: []*bindingInfo{}, DynamicProvisions: []*dynamicProvision{}}
	// Even with nothing left to wait for, the wait fails before its first check.
	err := env.binder.BindPodVolumes(ctx, pod, vols)
	if got, want := errString(err), "binding volumes: context deadline exceeded"; got != want {
		t.Errorf("BindPodVolumes = %q, want %q", got, want)
	}
}

func TestPollUntil(t *testing.T) {
	clk := newBinderEnv(t).clock
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- pollUntil(ctx, clk, time.Second, time.Minute, func() (bool, error) { calls.Add(1); return false, nil })
	}()
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return clk.Waiters() == 2, nil }); err != nil {
		t.Fatalf("pollUntil never waited on the clock: %v", err)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("condition ran %d times before the first interval, want 0", n)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("pollUntil after cancel = %v, want context.Canceled", err)
	}
}

func TestMatchTopologySelectorTerms(t *testing.T) {
	term := func(kv ...string) v1.TopologySelectorTerm {
		var term v1.TopologySelectorTerm
		for i := 0; i+1 < len(kv); i += 2 {
			term.MatchLabelExpressions = append(term.MatchLabelExpressions,
				v1.TopologySelectorLabelRequirement{Key: kv[i], Values: strings.Split(kv[i+1], ",")})
		}
		return term
	}
	labels := map[string]string{"zone": "a", "rack": "1"}
	tests := []struct {
		name  string
		terms []v1.TopologySelectorTerm
		want  bool
	}{
		{name: "no terms allow every node", want: true},
		{name: "an empty term matches nothing", terms: []v1.TopologySelectorTerm{{}}},
		{name: "one value of a requirement is enough", terms: []v1.TopologySelectorTerm{term("zone", "b,a")},
			want: true},
		{name: "requirements of a term are ANDed", terms: []v1.TopologySelectorTerm{term("zone", "a", "rack", "2")}},
		{name: "terms are ORed", terms: []v1.TopologySelectorTerm{term("zone", "b"), term("rack", "1")}, want: true},
		{name: "a missing label does not match", terms: []v1.TopologySelectorTerm{term("region", "a")}},
		{name: "an invalid requirement (no values) matches nothing",
			terms: []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: "zone"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := matchTopologySelectorTerms(tt.terms, labels); got != tt.want {
				t.Errorf("matchTopologySelectorTerms = %v, want %v", got, tt.want)
			}
		})
	}
}
