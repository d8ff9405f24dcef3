// Tests for VolumeBinding's registered events and its queueing hints
// (kube-scheduler's TestIsSchedulableAfter* cases).
package volumebinding

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
)

func TestEventsToRegister(t *testing.T) {
	evs, err := (&VolumeBinding{}).EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	type registration struct {
		Event  framework.ClusterEvent
		Hinted bool
	}
	var got []registration
	for _, e := range evs {
		got = append(got, registration{e.Event, e.QueueingHintFn != nil})
	}
	addUpdate := framework.Add | framework.Update
	want := []registration{
		{framework.ClusterEvent{Resource: framework.StorageClass, ActionType: addUpdate}, true},
		{framework.ClusterEvent{Resource: framework.PersistentVolumeClaim, ActionType: addUpdate}, true},
		{framework.ClusterEvent{Resource: framework.PersistentVolume, ActionType: addUpdate}, false},
		{framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel}, false},
		{framework.ClusterEvent{Resource: framework.CSINode, ActionType: addUpdate}, true},
		{framework.ClusterEvent{Resource: framework.CSIDriver, ActionType: framework.Update}, true},
		{framework.ClusterEvent{Resource: framework.CSIStorageCapacity, ActionType: addUpdate}, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EventsToRegister (-want +got):\n%s", diff)
	}
}

// hintCase is one call of a queueing hint.
type hintCase struct {
	name           string
	pod            *v1.Pod
	oldObj, newObj interface{}
	want           framework.QueueingHint
	wantErr        bool
}

func runHints(t *testing.T, fn framework.QueueingHintFn, tests []hintCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			pod := tt.pod
			if pod == nil {
				pod = st.MakePod().Name("pod-a").Obj()
			}
			got, err := fn(logger, pod, tt.oldObj, tt.newObj)
			if (err != nil) != tt.wantErr {
				t.Errorf("error = %v, want error: %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsSchedulableAfterCSINodeChange(t *testing.T) {
	csiNode := func(migrated string) *storagev1.CSINode {
		return &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "csinode-a",
			Annotations: map[string]string{v1.MigratedPluginsAnnotationKey: migrated}}}
	}
	runHints(t, isSchedulableAfterCSINodeChange, []hintCase{
		{name: "unexpected objects are passed", oldObj: new(struct{}), newObj: new(struct{}), want: framework.Queue,
			wantErr: true},
		{name: "CSINode is newly created", newObj: csiNode(""), want: framework.Queue},
		{name: "CSINode's migrated-plugins annotations is added", oldObj: csiNode("test1"),
			newObj: csiNode("test1, test2"), want: framework.Queue},
		{name: "CSINode's migrated-plugins annotation is updated", oldObj: csiNode("test1"),
			newObj: csiNode("test2"), want: framework.Queue},
		{name: "CSINode is updated but migrated-plugins annotation gets unchanged", oldObj: csiNode("test1"),
			newObj: csiNode("test1"), want: framework.QueueSkip},
	})
}

func TestIsSchedulableAfterPersistentVolumeClaimChange(t *testing.T) {
	pvc := func(name string) *v1.PersistentVolumeClaim { return st.MakePVC().Name(name).Obj() }
	withEphemeral := func(names ...string) *v1.Pod {
		w := st.MakePod().Name("pod-a")
		for _, n := range names {
			w.Volume(ephemeralVolume(n))
		}
		return w.Obj()
	}
	runHints(t, isSchedulableAfterPersistentVolumeClaimChange, []hintCase{
		{name: "pod has no pvc or ephemeral volumes",
			pod:    st.MakePod().Name("pod-a").Volume(v1.Volume{Name: "e", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}).Obj(),
			oldObj: pvc("pvc-b"), newObj: pvc("pvc-b"), want: framework.QueueSkip},
		{name: "pvc with the same name as the one used by the pod in a different namespace is modified",
			pod:    st.MakePod().Name("pod-a").Namespace("ns-a").PVC("pvc-a").PVC("pvc-b").Obj(),
			newObj: pvc("pvc-b"), want: framework.QueueSkip},
		{name: "pod has no pvc that is being modified", pod: st.MakePod().Name("pod-a").PVC("pvc-a").PVC("pvc-c").Obj(),
			oldObj: pvc("pvc-b"), newObj: pvc("pvc-b"), want: framework.QueueSkip},
		{name: "pod has no generic ephemeral volume that is being modified",
			pod:    withEphemeral("ephemeral-a", "ephemeral-c"),
			oldObj: pvc("pod-a-ephemeral-b"), newObj: pvc("pod-a-ephemeral-b"), want: framework.QueueSkip},
		{name: "pod has the pvc that is being modified", pod: st.MakePod().Name("pod-a").PVC("pvc-a").PVC("pvc-b").Obj(),
			oldObj: pvc("pvc-b"), newObj: pvc("pvc-b"), want: framework.Queue},
		{name: "pod has the generic ephemeral volume that is being modified",
			pod:    withEphemeral("ephemeral-a", "ephemeral-b"),
			oldObj: pvc("pod-a-ephemeral-b"), newObj: pvc("pod-a-ephemeral-b"), want: framework.Queue},
		{name: "type conversion error", oldObj: new(struct{}), newObj: new(struct{}), want: framework.Queue,
			wantErr: true},
	})
}

func TestIsSchedulableAfterStorageClassChange(t *testing.T) {
	sc := st.MakeStorageClass().Name("sc-a").Obj()
	withTopology := st.MakeStorageClass().Name("sc-a").AllowedTopologyIn(v1.LabelHostname, "node-a").Obj()
	runHints(t, isSchedulableAfterStorageClassChange, []hintCase{
		{name: "When a new StorageClass is created, it returns Queue", newObj: sc, want: framework.Queue},
		{name: "When the AllowedTopologies are changed, it returns Queue", oldObj: sc, newObj: withTopology,
			want: framework.Queue},
		{name: "When there are no changes to the StorageClass, it returns QueueSkip", oldObj: sc, newObj: sc.DeepCopy(),
			want: framework.QueueSkip},
		{name: "type conversion error", oldObj: new(struct{}), newObj: new(struct{}), want: framework.Queue,
			wantErr: true},
	})
}

func TestIsSchedulableAfterCSIStorageCapacityChange(t *testing.T) {
	capacity := func(capacity, maxSize int64) *storagev1.CSIStorageCapacity {
		c := &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "cap-a"}}
		if capacity >= 0 {
			c.Capacity = resource.NewQuantity(capacity, resource.DecimalSI)
		}
		if maxSize >= 0 {
			c.MaximumVolumeSize = resource.NewQuantity(maxSize, resource.DecimalSI)
		}
		return c
	}
	const unset = -1
	runHints(t, isSchedulableAfterCSIStorageCapacityChange, []hintCase{
		{name: "When a new CSIStorageCapacity is created, it returns Queue", newObj: capacity(unset, unset),
			want: framework.Queue},
		{name: "When the volume limit is increase(Capacity set), it returns Queue", oldObj: capacity(unset, unset),
			newObj: capacity(100, unset), want: framework.Queue},
		{name: "When the volume limit is increase(MaximumVolumeSize set), it returns Queue",
			oldObj: capacity(unset, unset), newObj: capacity(unset, 100), want: framework.Queue},
		{name: "When the volume limit is increase(Capacity increase), it returns Queue", oldObj: capacity(50, unset),
			newObj: capacity(100, unset), want: framework.Queue},
		{name: "When the volume limit is increase(MaximumVolumeSize unset), it returns Queue",
			oldObj: capacity(100, 50), newObj: capacity(100, unset), want: framework.Queue},
		{name: "When the volume limit is increase(MaximumVolumeSize increase), it returns Queue",
			oldObj: capacity(100, 50), newObj: capacity(100, 60), want: framework.Queue},
		{name: "When there are no changes to the CSIStorageCapacity, it returns QueueSkip",
			oldObj: capacity(100, 50), newObj: capacity(100, 50), want: framework.QueueSkip},
		{name: "When the volume limit is equal(Capacity), it returns QueueSkip", oldObj: capacity(100, unset),
			newObj: capacity(100, unset), want: framework.QueueSkip},
		{name: "When the volume limit is equal(MaximumVolumeSize unset), it returns QueueSkip",
			oldObj: capacity(100, 50), newObj: capacity(50, unset), want: framework.QueueSkip},
		{name: "When the volume limit is decrease(Capacity), it returns QueueSkip", oldObj: capacity(100, unset),
			newObj: capacity(90, unset), want: framework.QueueSkip},
		{name: "When the volume limit is decrease(MaximumVolumeSize), it returns QueueSkip",
			oldObj: capacity(unset, 100), newObj: capacity(unset, 90), want: framework.QueueSkip},
		{name: "type conversion error", oldObj: new(struct{}), newObj: new(struct{}), want: framework.Queue,
			wantErr: true},
	})
}

func TestIsSchedulableAfterCSIDriverChange(t *testing.T) {
	driver := func(name string, storageCapacity *bool) *storagev1.CSIDriver {
		return &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: storagev1.CSIDriverSpec{StorageCapacity: storageCapacity}}
	}
	withCSI := st.MakePod().Name("pod-a").Volume(v1.Volume{Name: "v",
		VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "test1"}}}).Obj()
	runHints(t, isSchedulableAfterCSIDriverChange, []hintCase{
		{name: "pod has no CSIDriver", oldObj: driver("test1", nil), newObj: driver("test1", ptr.To(true)),
			want: framework.QueueSkip},
		{name: "unexpected objects are passed", oldObj: new(struct{}), newObj: new(struct{}), want: framework.Queue,
			wantErr: true},
		{name: "driver name in pod and csidriver name are different", pod: withCSI,
			oldObj: driver("test2", ptr.To(true)), newObj: driver("test2", ptr.To(false)), want: framework.QueueSkip},
		{name: "original StorageCapacity is nil", pod: withCSI, oldObj: driver("test1", nil),
			newObj: driver("test1", nil), want: framework.QueueSkip},
		{name: "original StorageCapacity is false", pod: withCSI, oldObj: driver("test1", ptr.To(false)),
			newObj: driver("test1", ptr.To(false)), want: framework.QueueSkip},
		{name: "modified StorageCapacity is nil", pod: withCSI, oldObj: driver("test1", ptr.To(true)),
			newObj: driver("test1", nil), want: framework.Queue},
		{name: "modified StorageCapacity is true", pod: withCSI, oldObj: driver("test1", ptr.To(true)),
			newObj: driver("test1", ptr.To(true)), want: framework.QueueSkip},
		{name: "modified StorageCapacity is false", pod: withCSI, oldObj: driver("test1", ptr.To(true)),
			newObj: driver("test1", ptr.To(false)), want: framework.Queue},
		{name: "a pod using the driver through a claim is not queued",
			pod:    st.MakePod().Name("pod-a").PVC("claim").Obj(),
			oldObj: driver("test1", ptr.To(true)), newObj: driver("test1", ptr.To(false)), want: framework.QueueSkip},
	})
}
