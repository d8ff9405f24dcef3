// Tests for VolumeRestrictions' events and queueing hints, ported from
// kube-scheduler's Test_isSchedulableAfterAssignedPodDeleted and
// Test_isSchedulableAfterPersistentVolumeClaimChange.
package volumerestrictions

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
)

func TestEventsToRegister(t *testing.T) {
	evs, err := (&VolumeRestrictions{}).EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []framework.ClusterEvent
	var hasHint []bool
	for _, e := range evs {
		got = append(got, e.Event)
		hasHint = append(hasHint, e.QueueingHintFn != nil)
	}
	want := []framework.ClusterEvent{
		{Resource: framework.Pod, ActionType: framework.Delete},
		{Resource: framework.Node, ActionType: framework.Add},
		{Resource: framework.PersistentVolumeClaim, ActionType: framework.Add},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EventsToRegister (-want +got):\n%s", diff)
	}
	// The node event has no hint (always Queue), as in kube-scheduler.
	if diff := cmp.Diff([]bool{true, false, true}, hasHint); diff != "" {
		t.Errorf("events with a hint (-want +got):\n%s", diff)
	}
}

func TestIsSchedulableAfterAssignedPodDeleted(t *testing.T) {
	mon := []string{"a", "b"}
	iqn1, iqn2 := "iqn.2016-12.server:storage.target01", "iqn.2017-12.server:storage.target01"
	withVolume := func(name string, v v1.Volume) *v1.Pod { return pod(name).Volume(v).Obj() }
	tests := []struct {
		name    string
		pod     *v1.Pod
		oldObj  interface{}
		want    framework.QueueingHint
		wantErr bool
	}{
		{name: "queue-new-object-gcedisk-conflict", pod: withVolume("p", gcePD("foo", false)),
			oldObj: withVolume("d", gcePD("foo", false)), want: framework.Queue},
		{name: "skip-new-object-gcedisk-no-conflict", pod: withVolume("p", gcePD("foo", false)),
			oldObj: withVolume("d", gcePD("bar", false)), want: framework.QueueSkip},
		{name: "skip: gcedisk both read-only", pod: withVolume("p", gcePD("foo", true)),
			oldObj: withVolume("d", gcePD("foo", true)), want: framework.QueueSkip},
		{name: "queue-new-object-awsdisk-conflict", pod: withVolume("p", awsEBS("foo", false)),
			oldObj: withVolume("d", awsEBS("foo", false)), want: framework.Queue},
		{name: "skip-new-object-awsdisk-no-conflict", pod: withVolume("p", awsEBS("foo", false)),
			oldObj: withVolume("d", awsEBS("bar", false)), want: framework.QueueSkip},
		{name: "queue-new-object-rbddisk-conflict", pod: withVolume("p", rbd(mon, "foo", "bar", false)),
			oldObj: withVolume("d", rbd(mon, "foo", "bar", false)), want: framework.Queue},
		{name: "skip-new-object-rbddisk-no-conflict", pod: withVolume("p", rbd(mon, "foo", "bar", false)),
			oldObj: withVolume("d", rbd([]string{"c", "d"}, "foo", "bar", false)), want: framework.QueueSkip},
		{name: "queue-new-object-iscsidisk-conflict", pod: withVolume("p", iscsi(iqn1, false)),
			oldObj: withVolume("d", iscsi(iqn1, false)), want: framework.Queue},
		{name: "skip-new-object-iscsidisk-no-conflict", pod: withVolume("p", iscsi(iqn1, false)),
			oldObj: withVolume("d", iscsi(iqn2, false)), want: framework.QueueSkip},
		{name: "queue-has-same-claim", pod: pod("pod1").PVC("claim-rwop").Obj(),
			oldObj: pod("pod2").PVC("claim-rwop").Obj(), want: framework.Queue},
		{name: "skip-no-same-claim", pod: pod("pod1").PVC("claim-1-rwop").Obj(),
			oldObj: pod("pod2").PVC("claim-2-rwop").Obj(), want: framework.QueueSkip},
		{name: "queue: one of several claims shared", pod: pod("pod1").PVC("a").PVC("b").Obj(),
			oldObj: pod("pod2").PVC("c").PVC("b").Obj(), want: framework.Queue},
		{name: "skip: same claim name in another namespace", pod: pod("pod1").PVC("claim-rwop").Obj(),
			oldObj: pod("pod2").Namespace("other").PVC("claim-rwop").Obj(), want: framework.QueueSkip},
		// Upstream checks the namespace first, though Filter compares disks
		// across namespaces.
		{name: "skip: same disk in another namespace", pod: withVolume("p", gcePD("foo", false)),
			oldObj: pod("d").Namespace("other").Volume(gcePD("foo", false)).Obj(), want: framework.QueueSkip},
		{name: "skip: deleted pod without volumes", pod: withVolume("p", gcePD("foo", false)),
			oldObj: pod("d").Obj(), want: framework.QueueSkip},
		{name: "error: no deleted pod", pod: pod("p").Obj(), want: framework.Queue, wantErr: true},
		{name: "error: wrong object type", pod: pod("p").Obj(), oldObj: st.MakeNode().Name("n").Obj(),
			want: framework.Queue, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			got, err := isSchedulableAfterAssignedPodDeleted(logger, tt.pod, tt.oldObj, nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsSchedulableAfterPersistentVolumeClaimAdded(t *testing.T) {
	withOne := pod("pod-with-one-pvc").NodeName(node1).PVC("claim-with-rwx-1").Obj()
	withTwo := pod("pod-with-two-pvcs").NodeName(node1).PVC("claim-with-rwx-1").PVC("claim-with-rwx-2").Obj()
	inSystem := pod("pod-with-one-pvc").Namespace("kube-system").PVC("claim-with-rwx-1").Obj()
	pvc1 := st.MakePVC().Name("claim-with-rwx-1").AccessModes(v1.ReadWriteMany).Obj()
	pvc2 := st.MakePVC().Name("claim-with-rwx-2").AccessModes(v1.ReadWriteMany).Obj()
	tests := []struct {
		name    string
		pod     *v1.Pod
		newObj  interface{}
		want    framework.QueueingHint
		wantErr bool
	}{
		{name: "queue-new-object-pvc-belong-pod", pod: withTwo, newObj: pvc1, want: framework.Queue},
		{name: "skip-new-object-unused", pod: withOne, newObj: pvc2, want: framework.QueueSkip},
		{name: "skip-new-object-namespace-not-equal-pod", pod: inSystem, newObj: pvc1, want: framework.QueueSkip},
		{name: "skip: pod has no claims", pod: pod("p").Volume(gcePD("foo", false)).Obj(), newObj: pvc1,
			want: framework.QueueSkip},
		{name: "error: no new claim", pod: withOne, want: framework.Queue, wantErr: true},
		{name: "error: wrong object type", pod: withOne, newObj: withTwo, want: framework.Queue, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			got, err := isSchedulableAfterPersistentVolumeClaimAdded(logger, tt.pod, nil, tt.newObj)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}
