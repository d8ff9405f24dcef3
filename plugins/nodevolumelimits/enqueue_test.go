// Tests for NodeVolumeLimits' events and queueing hints: the cases of
// upstream's TestCSILimitsQHint, TestCSILimitsAddedPVCQHint,
// TestCSILimitsDeletedVolumeAttachmentQHint and
// TestCSILimitsAfterCSINodeUpdatedQHint, and a few more.
package nodevolumelimits

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	csitrans "k8s.io/csi-translation-lib"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
)

func TestEventsToRegister(t *testing.T) {
	pl := &CSILimits{translator: csitrans.New()}
	events, err := pl.EventsToRegister(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	type registration struct {
		Event    framework.ClusterEvent
		WithHint bool
	}
	var got []registration
	for _, e := range events {
		got = append(got, registration{e.Event, e.QueueingHintFn != nil})
	}
	want := []registration{
		{framework.ClusterEvent{Resource: framework.CSINode, ActionType: framework.Add}, false},
		{framework.ClusterEvent{Resource: framework.CSINode, ActionType: framework.Update}, true},
		{framework.ClusterEvent{Resource: framework.Pod, ActionType: framework.Delete}, true},
		{framework.ClusterEvent{Resource: framework.PersistentVolumeClaim, ActionType: framework.Add}, true},
		{framework.ClusterEvent{Resource: framework.VolumeAttachment, ActionType: framework.Delete}, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EventsToRegister (-want +got):\n%s", diff)
	}
}

// awsInline and gceInline are in-tree inline volumes that translate to
// ebsDriver and gceDriver.
var (
	awsInline = v1.Volume{Name: "aws", VolumeSource: v1.VolumeSource{
		AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "test"}}}
	gceInline = v1.Volume{Name: "gce", VolumeSource: v1.VolumeSource{
		GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "test"}}}
)

func TestIsSchedulableAfterAssignedPodDeleted(t *testing.T) {
	target := pod("target").PVC("ebs-2").Obj()
	tests := []struct {
		name    string
		deleted interface{}
		want    framework.QueueingHint
		wantErr bool
	}{
		{name: "return a Queue when a deleted pod has a PVC",
			deleted: pod("d").NodeName(nodeName).PVC("placeholder").Obj(), want: framework.Queue},
		{name: "return a Queue when a deleted pod has a inline migratable volume",
			deleted: pod("d").NodeName(nodeName).Volume(awsInline).Obj(), want: framework.Queue},
		{name: "a deleted pod with an ephemeral volume queues",
			deleted: pod("d").NodeName(nodeName).EphemeralVolume("v", className, "1Gi").Obj(), want: framework.Queue},
		{name: "a deleted pod only nominated to a node queues",
			deleted: pod("d").NominatedNodeName(nodeName).PVC("placeholder").Obj(), want: framework.Queue},
		{name: "return a QueueSkip when a deleted pod doesn't have any volume",
			deleted: pod("d").NodeName(nodeName).Obj(), want: framework.QueueSkip},
		{name: "return a QueueSkip when a deleted pod is not scheduled.",
			deleted: pod("d").PVC("ebs-0").Obj(), want: framework.QueueSkip},
		{name: "a deleted pod whose volumes attach nothing CSI is skipped",
			deleted: pod("d").NodeName(nodeName).Volume(v1.Volume{Name: "cm",
				VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}}).Obj(),
			want: framework.QueueSkip},
		{name: "an object that is not a pod queues, with an error",
			deleted: st.MakeNode().Name("n").Obj(), want: framework.Queue, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			pl := &CSILimits{translator: csitrans.New()}
			got, err := pl.isSchedulableAfterAssignedPodDeleted(logger, target, tt.deleted, nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsSchedulableAfterPVCAdded(t *testing.T) {
	tests := []struct {
		name  string
		pod   *v1.Pod
		added *v1.PersistentVolumeClaim
		want  framework.QueueingHint
	}{
		{name: "a pod isn't in the same namespace as an added PVC",
			pod:   pod("p").Namespace("ns1").PVC("pvc1").Obj(),
			added: st.MakePVC().Name("pvc1").Namespace("ns2").Obj(), want: framework.QueueSkip},
		{name: "a pod is in the same namespace as an added PVC",
			pod:   pod("p").Namespace("ns1").PVC("pvc1").Obj(),
			added: st.MakePVC().Name("pvc1").Namespace("ns1").Obj(), want: framework.Queue},
		{name: "a pod has an ephemeral volume related to an added PVC",
			pod:   pod("pod1").Namespace("ns1").EphemeralVolume("ephemeral", className, "1Gi").Obj(),
			added: st.MakePVC().Name("pod1-ephemeral").Namespace("ns1").Obj(), want: framework.Queue},
		{name: "a pod doesn't have the same PVC as an added PVC",
			pod:   pod("p").Namespace("ns1").PVC("pvc1").Obj(),
			added: st.MakePVC().Name("pvc2").Namespace("ns1").Obj(), want: framework.QueueSkip},
		{name: "a pod doesn't have any PVC attached",
			pod:   pod("p").Namespace("ns1").Obj(),
			added: st.MakePVC().Name("pvc2").Namespace("ns1").Obj(), want: framework.QueueSkip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			got, err := isSchedulableAfterPVCAdded(logger, tt.pod, nil, tt.added)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsSchedulableAfterVolumeAttachmentDeleted(t *testing.T) {
	// inlineVA is the attachment of an inline volume migrated to attacher.
	inlineVA := func(attacher string) *storagev1.VolumeAttachment {
		va := volumeAttachment("volumeattachment1", "fake-node", attacher, "")
		va.Spec.Source = storagev1.VolumeAttachmentSource{InlineVolumeSpec: &v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: attacher}}}}
		return va
	}
	pvVA := volumeAttachment("volumeattachment1", "fake-node", "test.storage.gke.io", "pv1")
	tests := []struct {
		name    string
		pod     *v1.Pod
		deleted *storagev1.VolumeAttachment
		want    framework.QueueingHint
		wantErr bool
	}{
		{name: "a pod has PVC when VolumeAttachment is deleting",
			pod: pod("p").PVC("pvc1").Obj(), deleted: pvVA, want: framework.Queue},
		{name: "a pod has an Inline Migratable volume (AWSEBSDriver) when VolumeAttachment (AWSEBSDriver) is deleting (match)",
			pod: pod("p").Volume(awsInline).Obj(), deleted: inlineVA(ebsDriver), want: framework.Queue},
		{name: "a pod has an Inline Migratable volume (GCEPDDriver) when VolumeAttachment (AWSEBSDriver) is deleting (no match)",
			pod: pod("p").Volume(gceInline).Obj(), deleted: inlineVA(ebsDriver), want: framework.QueueSkip},
		{name: "a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when VolumeAttachment (AWSEBSDriver) is deleting",
			pod: pod("p").Volume(awsInline).PVC("pvc1").Obj(), deleted: inlineVA(ebsDriver), want: framework.Queue},
		{name: "a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when VolumeAttachment (other driver) is deleting",
			pod: pod("p").Volume(awsInline).PVC("pvc1").Obj(), deleted: pvVA, want: framework.Queue},
		{name: "a pod has no PVC when VolumeAttachment is deleting",
			pod: pod("p").Obj(), deleted: pvVA, want: framework.QueueSkip},
		{name: "an inline volume that fails to translate queues, with an error",
			pod: pod("p").Volume(v1.Volume{Name: "bad", VolumeSource: v1.VolumeSource{
				AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://zone/not-a-volume"}}}).Obj(),
			deleted: inlineVA(ebsDriver), want: framework.Queue, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			pl := &CSILimits{translator: csitrans.New()}
			got, err := pl.isSchedulableAfterVolumeAttachmentDeleted(logger, tt.pod, tt.deleted, nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsSchedulableAfterCSINodeUpdated(t *testing.T) {
	target := pod("target").PVC("ebs-0").Obj()
	tests := []struct {
		name     string
		old, new map[string]int32 // driver → limit, 0 for none
		want     framework.QueueingHint
	}{
		{name: "limit raised, queue", old: map[string]int32{ebsDriver: 1}, new: map[string]int32{ebsDriver: 2},
			want: framework.Queue},
		{name: "limit decreased, skip queueing", old: map[string]int32{ebsDriver: 2}, new: map[string]int32{ebsDriver: 1},
			want: framework.QueueSkip},
		{name: "limit unchanged, skip queueing", old: map[string]int32{ebsDriver: 1}, new: map[string]int32{ebsDriver: 1},
			want: framework.QueueSkip},
		{name: "a driver added with a limit queues", old: map[string]int32{ebsDriver: 1},
			new: map[string]int32{ebsDriver: 1, gceDriver: 1}, want: framework.Queue},
		{name: "a limit removed is skipped", old: map[string]int32{ebsDriver: 1}, new: map[string]int32{ebsDriver: 0},
			want: framework.QueueSkip},
		{name: "a driver added without a limit is skipped", old: map[string]int32{ebsDriver: 1},
			new: map[string]int32{ebsDriver: 1, gceDriver: 0}, want: framework.QueueSkip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			got, err := isSchedulableAfterCSINodeUpdated(logger, target,
				st.MakeCSINode(nodeName, tt.old), st.MakeCSINode(nodeName, tt.new))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}
