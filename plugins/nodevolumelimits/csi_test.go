// Tests for NodeVolumeLimits' PreFilter and Filter: the cases of upstream's
// TestCSILimits and TestVolumeLimitScalingGate (gate on), and a few more for
// behaviour upstream has but does not test.
package nodevolumelimits

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestCSILimits(t *testing.T) {
	running := pod("running").PVC("ebs-3").Obj()
	pending := pod("pending").PVC(unboundClaim).Obj()
	pending2 := pod("pending2").PVC(unboundClaim).Obj() // same unbound claim as pending
	missingPV := pod("missing-pv").PVC(missingPVClaim).Obj()
	noClass := pod("no-class").PVC(noClassClaim).Obj()
	gceTwo := pod("gce-two").PVC("gce-1").PVC("gce-2").Obj()
	ebsOne := pod("ebs-one").PVC("ebs-0").Obj()
	ebsTwo := pod("ebs-two").PVC("ebs-1").PVC("ebs-2").Obj()
	inTreeOne := pod("in-tree-one").PVC("aws-0").Obj()
	inTreeTwo := pod("in-tree-two").PVC("aws-1").PVC("aws-2").Obj()
	inTreeNonMigratable := pod("hostpath").PVC("hostpath-0").Obj()

	inlineEBS := func(volumeID string) v1.Volume {
		return v1.Volume{Name: "inline", VolumeSource: v1.VolumeSource{
			AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: volumeID}}}
	}
	configMap := v1.Volume{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}}
	secret := v1.Volume{Name: "secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{}}}
	inline := pod("inline").Volume(inlineEBS("aws-inline1")).Obj()
	// Its handle, once translated, is that of the CSI volume ebs-1.
	inlineSameHandle := pod("inline-same").Volume(inlineEBS("ebs-1")).Obj()

	ephemeral := ephemeralPod("abc", "xyz")
	ownedClaim := ephemeralClaim("abc", "xyz", ephemeral)
	notOwnedClaim := ephemeralClaim("abc", "xyz", nil)
	ephemeralTwo := ephemeralPod("def", "x", "y")
	ownedX, ownedY := ephemeralClaim("def", "x", ephemeralTwo), ephemeralClaim("def", "y", ephemeralTwo)

	unschedulable := framework.NewStatus(framework.Unschedulable, ErrReasonMaxVolumeCountExceeded)
	ebsNotInstalled := framework.NewStatus(framework.Unschedulable, "ebs.csi.aws.com CSI driver is not installed on the node")
	abcXyzMissing := framework.NewStatus(framework.UnschedulableAndUnresolvable,
		`looking up PVC default/abc-xyz: persistentvolumeclaim "abc-xyz" not found`)

	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		// drivers get claims and volumes (volumeObjects); the class's
		// provisioner is drivers[0].
		drivers []string
		// csiNode is the node's CSINode; nil: it has none.
		csiNode *storagev1.CSINode
		// objs are more objects: claims, CSIDrivers, VolumeAttachments.
		objs          []runtime.Object
		wantPreFilter *framework.Status
		want          *framework.Status
	}{
		// Limits per driver, and VolumeAttachments.
		{
			name: "should count VolumeAttachments towards volume limit when no pods exist",
			pod:  ebsOne, drivers: []string{ebsDriver}, csiNode: limits(2, ebsDriver),
			objs: attachments(2, ebsDriver),
			want: unschedulable,
		},
		{
			name: "should schedule pod when VolumeAttachments count does not exceed limit",
			pod:  ebsOne, drivers: []string{ebsDriver}, csiNode: limits(2, ebsDriver),
			objs: attachments(1, ebsDriver),
		},
		{
			name: "a VolumeAttachment of a volume a pod on the node uses counts once",
			pod:  pod("p").PVC("ebs-2").Obj(), existing: []*v1.Pod{pod("e").PVC("ebs-1").Obj()},
			drivers: []string{ebsDriver}, csiNode: limits(3, ebsDriver),
			objs: attachments(2, ebsDriver), // ebs-0 and ebs-1: 2 attached, 1 new
		},
		{
			name: "VolumeAttachments to another node, of a missing PV or of a non-CSI PV are not counted",
			pod:  ebsOne, drivers: []string{ebsDriver, ebsInTree}, csiNode: limits(1, ebsDriver),
			objs: []runtime.Object{
				volumeAttachment("other-node", "node-2", ebsDriver, "ebs-1"),
				volumeAttachment("missing-pv", nodeName, ebsDriver, "missing"),
				volumeAttachment("in-tree-pv", nodeName, ebsDriver, "aws-1"),
			},
		},
		{
			name:     "fits when node volume limit >= new pods CSI volume",
			pod:      ebsOne,
			existing: []*v1.Pod{running, ebsTwo},
			drivers:  []string{ebsDriver}, csiNode: limits(4, ebsDriver),
		},
		{
			name:     "doesn't when node volume limit <= pods CSI volume",
			pod:      ebsOne,
			existing: []*v1.Pod{running, ebsTwo},
			drivers:  []string{ebsDriver}, csiNode: limits(2, ebsDriver),
			want: unschedulable,
		},
		{
			name:     "should when driver does not support volume limits",
			pod:      ebsOne,
			existing: []*v1.Pod{running, ebsTwo},
			drivers:  []string{ebsDriver}, csiNode: limits(0, ebsDriver),
		},
		// Claims not bound yet count through their class.
		{
			name:     "count pending PVCs towards volume limit <= pods CSI volume",
			pod:      ebsOne,
			existing: []*v1.Pod{pending, ebsTwo},
			drivers:  []string{ebsDriver}, csiNode: limits(2, ebsDriver),
			want: unschedulable,
		},
		{
			name:     "count multiple pending pvcs towards volume limit >= pods CSI volume",
			pod:      ebsOne,
			existing: []*v1.Pod{pending, pending2, ebsTwo},
			drivers:  []string{ebsDriver}, csiNode: limits(4, ebsDriver),
		},
		{
			name:     "should count PVCs with invalid PV name but valid SC",
			pod:      ebsOne,
			existing: []*v1.Pod{missingPV, ebsTwo},
			drivers:  []string{ebsDriver}, csiNode: limits(2, ebsDriver),
			want: unschedulable,
		},
		{
			name:     "don't count pvcs with missing SC towards volume limit",
			pod:      ebsOne,
			existing: []*v1.Pod{running, noClass},
			drivers:  []string{ebsDriver}, csiNode: limits(2, ebsDriver),
		},
		// Several drivers.
		{
			name:     "count pvcs with the same type towards volume limit",
			pod:      ebsOne,
			existing: []*v1.Pod{gceTwo, ebsTwo},
			drivers:  []string{ebsDriver, gceDriver}, csiNode: limits(2, ebsDriver, gceDriver),
			want: unschedulable,
		},
		{
			name:     "don't count pvcs with different type towards volume limit",
			pod:      gceTwo,
			existing: []*v1.Pod{ebsTwo, running},
			drivers:  []string{ebsDriver, gceDriver}, csiNode: limits(2, ebsDriver, gceDriver),
		},
		// In-tree volumes, migrated to CSI.
		{
			name:     "should count in-tree volumes if migration is enabled",
			pod:      inTreeOne,
			existing: []*v1.Pod{inTreeTwo},
			drivers:  []string{ebsInTree, ebsDriver}, csiNode: limits(2, ebsInTree, ebsDriver),
			want: unschedulable,
		},
		{
			name:     "nil csi node",
			pod:      inline,
			existing: []*v1.Pod{inTreeTwo},
			drivers:  []string{ebsInTree, ebsDriver},
		},
		{
			name:     "should count unbound in-tree volumes if migration is enabled",
			pod:      pending,
			existing: []*v1.Pod{inTreeTwo},
			drivers:  []string{ebsInTree, ebsDriver}, csiNode: limits(2, ebsInTree, ebsDriver),
			want: unschedulable,
		},
		{
			name:     "should not limit pod if volume used does not report limits",
			pod:      inTreeOne,
			existing: []*v1.Pod{inTreeTwo},
			drivers:  []string{ebsInTree, ebsDriver}, csiNode: limits(0, ebsInTree, ebsDriver),
		},
		{
			name:     "should not count non-migratable in-tree volumes",
			pod:      inTreeNonMigratable,
			existing: []*v1.Pod{ebsTwo},
			drivers:  []string{hostPath, ebsDriver}, csiNode: limits(2, hostPath, ebsDriver),
		},
		{
			name:     "should count in-tree inline volumes if migration is enabled",
			pod:      inline,
			existing: []*v1.Pod{inTreeTwo},
			drivers:  []string{ebsInTree, ebsDriver}, csiNode: limits(2, ebsInTree, ebsDriver),
			want: unschedulable,
		},
		{
			name:     "should count in-tree and csi volumes if migration is enabled (when scheduling in-tree volumes)",
			pod:      inTreeOne,
			existing: []*v1.Pod{ebsTwo},
			drivers:  []string{ebsInTree, ebsDriver}, csiNode: limits(2, ebsInTree, ebsDriver),
			want: unschedulable,
		},
		{
			name:     "should count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)",
			pod:      inline,
			existing: []*v1.Pod{ebsTwo, inTreeOne},
			drivers:  []string{ebsInTree, ebsDriver}, csiNode: limits(3, ebsInTree, ebsDriver),
			want: unschedulable,
		},
		{
			name:     "should not count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)",
			pod:      inlineSameHandle,
			existing: []*v1.Pod{ebsTwo, inTreeOne},
			drivers:  []string{ebsInTree, ebsDriver}, csiNode: limits(3, ebsInTree, ebsDriver),
		},
		{
			name:     "should count in-tree and csi volumes if migration is enabled (when scheduling csi volumes)",
			pod:      ebsOne,
			existing: []*v1.Pod{inTreeTwo},
			drivers:  []string{ebsInTree, ebsDriver}, csiNode: limits(2, ebsInTree, ebsDriver),
			want: unschedulable,
		},
		{
			name:    "an in-tree volume is not translated on a node without CSINode, so its driver need not be installed",
			pod:     inTreeOne,
			drivers: []string{ebsInTree, ebsDriver},
			objs:    []runtime.Object{csiDriver(ebsDriver, ptrTo(true))},
		},
		// Generic ephemeral volumes.
		{
			name:    "ephemeral volume missing",
			pod:     ephemeral,
			drivers: []string{ebsDriver}, csiNode: limits(0, ebsDriver),
			want: abcXyzMissing,
		},
		{
			name:    "ephemeral volume not owned",
			pod:     ephemeral,
			drivers: []string{ebsDriver}, csiNode: limits(0, ebsDriver),
			objs: []runtime.Object{notOwnedClaim},
			want: framework.AsStatus(errors.New("PVC default/abc-xyz was not created for pod default/abc (pod is not owner)")),
		},
		{
			name:    "ephemeral volume unbound",
			pod:     ephemeral,
			drivers: []string{ebsDriver}, csiNode: limits(0, ebsDriver),
			objs: []runtime.Object{ownedClaim},
		},
		{
			name:     "ephemeral doesn't when node volume limit <= pods CSI volume",
			pod:      ephemeral,
			existing: []*v1.Pod{running, ebsTwo},
			drivers:  []string{ebsDriver}, csiNode: limits(2, ebsDriver),
			objs: []runtime.Object{ownedClaim},
			want: unschedulable,
		},
		{
			name:     "ephemeral doesn't when node volume limit <= pods ephemeral CSI volume",
			pod:      ebsOne,
			existing: []*v1.Pod{running, ephemeralTwo},
			drivers:  []string{ebsDriver}, csiNode: limits(2, ebsDriver),
			objs: []runtime.Object{ownedX, ownedY},
			want: unschedulable,
		},
		{
			name:     "persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume",
			pod:      ebsOne,
			existing: []*v1.Pod{running, ephemeral, ebsTwo},
			drivers:  []string{ebsDriver}, csiNode: limits(3, ebsDriver),
			objs: []runtime.Object{ownedClaim},
			want: unschedulable,
		},
		{
			name:     "persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume",
			pod:      ebsOne,
			existing: []*v1.Pod{running, ephemeral, ebsTwo},
			drivers:  []string{ebsDriver}, csiNode: limits(5, ebsDriver),
			objs: []runtime.Object{ownedClaim},
		},
		{
			name:     "an ephemeral claim of a pod on the node that the pod does not own fails Filter",
			pod:      ebsOne,
			existing: []*v1.Pod{ephemeral},
			drivers:  []string{ebsDriver}, csiNode: limits(5, ebsDriver),
			objs: []runtime.Object{notOwnedClaim},
			want: framework.AsStatus(errors.New("PVC default/abc-xyz was not created for pod default/abc (pod is not owner)")),
		},
		// Claims that cannot be read.
		{
			name:    "a missing claim of the pod is unresolvable",
			pod:     pod("p").PVC("nope").Obj(),
			drivers: []string{ebsDriver}, csiNode: limits(2, ebsDriver),
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable,
				`looking up PVC default/nope: persistentvolumeclaim "nope" not found`),
		},
		{
			name:    "a claim without a name is an error",
			pod:     pod("p").PVC("").Obj(),
			drivers: []string{ebsDriver}, csiNode: limits(2, ebsDriver),
			want: framework.AsStatus(errors.New("PersistentVolumeClaim had no name")),
		},
		{
			name:     "a missing claim of a pod on the node is not counted",
			pod:      ebsOne,
			existing: []*v1.Pod{pod("e").PVC("nope").Obj(), ebsTwo},
			drivers:  []string{ebsDriver}, csiNode: limits(3, ebsDriver),
		},
		// PreFilter.
		{
			name:    "skip Filter when the pod only uses secrets and configmaps",
			pod:     pod("p").Volume(configMap).Volume(secret).Obj(),
			drivers: []string{ebsDriver}, csiNode: limits(2, ebsDriver),
			wantPreFilter: framework.NewStatus(framework.Skip),
		},
		{
			name:    "skip Filter when the pod's only inline volume cannot be migrated",
			pod:     pod("p").Volume(v1.Volume{Name: "hp", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/x"}}}).Obj(),
			drivers: []string{ebsDriver}, csiNode: limits(2, ebsDriver),
			wantPreFilter: framework.NewStatus(framework.Skip),
		},
		{
			name:    "don't skip Filter when the pod has pvcs",
			pod:     pod("p").Volume(configMap).Volume(secret).PVC("ebs-0").Obj(),
			drivers: []string{ebsDriver}, csiNode: limits(2, ebsDriver),
		},
		{
			name:    "don't skip Filter when the pod has ephemeral volumes",
			pod:     pod("abc").Volume(configMap).Volume(secret).EphemeralVolume("xyz", className, "1Gi").Obj(),
			drivers: []string{ebsDriver}, csiNode: limits(0, ebsDriver),
			want: abcXyzMissing,
		},
		{
			name:     "don't skip Filter when the pod has inline migratable volumes",
			pod:      pod("p").Volume(configMap).Volume(secret).Volume(inlineEBS("aws-inline1")).Obj(),
			existing: []*v1.Pod{inTreeTwo},
			drivers:  []string{ebsInTree, ebsDriver}, csiNode: limits(2, ebsInTree, ebsDriver),
			want: unschedulable,
		},
		// VolumeLimitScaling (on): drivers that must be installed.
		{
			name:    "gate enabled - allow scheduling when CSIDriver exists but PreventPodSchedulingIfMissing is not set",
			pod:     ebsOne,
			drivers: []string{ebsDriver}, csiNode: limits(0),
			objs: []runtime.Object{csiDriver(ebsDriver, nil)},
		},
		{
			name:    "preventPodSchedulingIfMissing false allows a node without the driver",
			pod:     ebsOne,
			drivers: []string{ebsDriver}, csiNode: limits(0),
			objs: []runtime.Object{csiDriver(ebsDriver, ptrTo(false))},
		},
		{
			name:    "gate enabled - fail when driver not installed and PreventPodSchedulingIfMissing is true",
			pod:     ebsOne,
			drivers: []string{ebsDriver}, csiNode: limits(0),
			objs: []runtime.Object{csiDriver(ebsDriver, ptrTo(true))},
			want: ebsNotInstalled,
		},
		{
			name:    "driver not installed on a node without CSINode",
			pod:     ebsOne,
			drivers: []string{ebsDriver},
			objs:    []runtime.Object{csiDriver(ebsDriver, ptrTo(true))},
			want:    ebsNotInstalled,
		},
		{
			name:    "driver not installed, of an unbound claim counted through its class",
			pod:     pending,
			drivers: []string{ebsDriver}, csiNode: limits(0),
			objs: []runtime.Object{csiDriver(ebsDriver, ptrTo(true))},
			want: ebsNotInstalled,
		},
		{
			name:    "two drivers not installed: the message names the first by name",
			pod:     pod("p").PVC("gce-0").PVC("ebs-0").Obj(),
			drivers: []string{gceDriver, ebsDriver}, csiNode: limits(0),
			objs: []runtime.Object{csiDriver(ebsDriver, ptrTo(true)), csiDriver(gceDriver, ptrTo(true))},
			want: ebsNotInstalled,
		},
		{
			name:    "gate enabled - driver installed within limit",
			pod:     ebsOne,
			drivers: []string{ebsDriver}, csiNode: limits(2, ebsDriver),
			objs: []runtime.Object{csiDriver(ebsDriver, ptrTo(true))},
		},
		{
			name:    "gate enabled - allow scheduling when CSIDriver object missing",
			pod:     ebsOne,
			drivers: []string{ebsDriver}, csiNode: limits(0),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			objs := objects(volumeObjects(tt.drivers...), tt.objs)
			if tt.csiNode != nil {
				objs = append(objs, tt.csiNode)
			}
			pl := newTestEnv(t, objs...).pl
			_, gotPreFilter := pl.PreFilter(ctx, framework.NewCycleState(), tt.pod, nil)
			if diff := cmp.Diff(tt.wantPreFilter, gotPreFilter); diff != "" {
				t.Errorf("PreFilter (-want +got):\n%s", diff)
			}
			if gotPreFilter.IsSkip() {
				return
			}
			nodeInfo := plugintesting.MakeNodeInfo(st.MakeNode().Name(nodeName).Obj(), tt.existing...)
			got := pl.Filter(ctx, framework.NewCycleState(), tt.pod, nodeInfo)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Filter (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInFramework runs the plugin as the scheduler does: a pod without
// countable volumes skips Filter, and rejections read as kube-scheduler's
// FailedScheduling.
func TestInFramework(t *testing.T) {
	objs := objects(volumeObjects(ebsDriver),
		[]runtime.Object{
			limits(1, ebsDriver),                                     // node-1: room for one ebs volume
			st.MakeCSINode("node-2", nil),                            // node-2: no driver
			csiDriver(ebsDriver, ptrTo(true)),                        // which must be there
			st.MakeCSINode("node-3", map[string]int32{ebsDriver: 2}), // node-3: room for two
		})
	nodes := []*framework.NodeInfo{
		plugintesting.MakeNodeInfo(st.MakeNode().Name(nodeName).Obj(), pod("e").NodeName(nodeName).PVC("ebs-1").Obj()),
		plugintesting.MakeNodeInfo(st.MakeNode().Name("node-2").Obj()),
		plugintesting.MakeNodeInfo(st.MakeNode().Name("node-3").Obj()),
	}
	tests := []struct {
		name        string
		pod         *v1.Pod
		wantSkip    bool
		wantFitting []string
		wantMessage string
	}{
		{name: "pod without claims skips Filter", pod: pod("p").Obj(), wantSkip: true,
			wantFitting: []string{nodeName, "node-2", "node-3"}},
		{name: "one volume fits where the driver is, with room", pod: pod("p").PVC("ebs-0").Obj(),
			wantFitting: []string{"node-3"}},
		{
			name: "three volumes fit nowhere",
			pod:  pod("p").PVC("ebs-0").PVC("ebs-2").PVC("ebs-3").Obj(),
			wantMessage: "0/3 nodes are available: 1 ebs.csi.aws.com CSI driver is not installed on the node, " +
				"2 node(s) exceed max volume count.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			schedFramework := newTestEnv(t, objs...).schedFramework
			state := framework.NewCycleState()
			if _, s, _ := schedFramework.RunPreFilterPlugins(ctx, state, tt.pod, nodes); !s.IsSuccess() {
				t.Fatal(s)
			}
			if _, skipped := state.SkipFilterPlugins[Name]; skipped != tt.wantSkip {
				t.Errorf("Filter skipped = %v, want %v", skipped, tt.wantSkip)
			}
			diagnosis := framework.NewDiagnosis()
			feasible, err := plugintesting.RunFilter(ctx, schedFramework, state, tt.pod, &diagnosis, nodes)
			if err != nil {
				t.Fatal(err)
			}
			var fitting []string
			for _, ni := range feasible {
				fitting = append(fitting, ni.Node().Name)
			}
			if diff := cmp.Diff(tt.wantFitting, fitting); diff != "" {
				t.Errorf("feasible nodes (-want +got):\n%s", diff)
			}
			if tt.wantMessage != "" {
				fitErr := &framework.FitError{Pod: tt.pod, NumAllNodes: len(nodes), Diagnosis: diagnosis}
				if got := fitErr.Error(); got != tt.wantMessage {
					t.Errorf("FailedScheduling message:\n got %q\nwant %q", got, tt.wantMessage)
				}
			}
		})
	}
}

// TestNewSharesTheIndex checks that a second profile's plugin, built on the
// same informer factory, finds the VolumeAttachment index the first added.
func TestNewSharesTheIndex(t *testing.T) {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	newFramework(t, factory)
	newFramework(t, factory)
	indexers := factory.Storage().V1().VolumeAttachments().Informer().GetIndexer().GetIndexers()
	if _, ok := indexers[vaIndexKey]; !ok {
		t.Errorf("no index %q on the VolumeAttachment informer", vaIndexKey)
	}
}
