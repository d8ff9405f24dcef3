// Tests for the events VolumeZone registers and its queueing hints: upstream's
// TestIsSchedulableAfter* cases, plus the beta/GA and parsing cases of the
// PersistentVolume hint.
package volumezone

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
	evs, err := (&VolumeZone{}).EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	type registration struct {
		Event   framework.ClusterEvent
		HasHint bool
	}
	var got []registration
	for _, e := range evs {
		got = append(got, registration{e.Event, e.QueueingHintFn != nil})
	}
	want := []registration{
		{framework.ClusterEvent{Resource: framework.StorageClass, ActionType: framework.Add}, true},
		{framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel}, false},
		{framework.ClusterEvent{Resource: framework.PersistentVolumeClaim, ActionType: framework.Add | framework.Update}, true},
		{framework.ClusterEvent{Resource: framework.PersistentVolume, ActionType: framework.Add | framework.Update}, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("registered events (-want +got):\n%s", diff)
	}
}

// hintCase is one event for one pod and the hint it should get.
type hintCase struct {
	name           string
	pod            *v1.Pod
	oldObj, newObj interface{}
	want           framework.QueueingHint
	wantErr        bool
}

// runHints runs the cases against fn.
func runHints(t *testing.T, fn framework.QueueingHintFn, tests []hintCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			got, err := fn(logger, tt.pod, tt.oldObj, tt.newObj)
			if (err != nil) != tt.wantErr {
				t.Errorf("error = %v, want error: %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsSchedulableAfterPersistentVolumeClaimChange(t *testing.T) {
	runHints(t, isSchedulableAfterPersistentVolumeClaimChange, []hintCase{
		{
			name:    "error-wrong-new-object",
			pod:     podWithClaim("pvc-1"),
			newObj:  "not-a-pvc",
			want:    framework.Queue,
			wantErr: true,
		},
		{
			name:   "pvc-was-added-but-pod-refers-no-pvc",
			pod:    st.MakePod().Name("pod-1").Namespace("default").Obj(),
			newObj: boundPVC("pvc-1", "vol-1"),
			want:   framework.QueueSkip,
		},
		{
			name:   "pvc-was-added-and-pod-was-bound-to-different-pvc",
			pod:    podWithClaim("pvc-2"),
			newObj: boundPVC("pvc-1", "vol-1"),
			want:   framework.QueueSkip,
		},
		{
			name:   "pvc-was-added-and-pod-was-bound-to-pvc-but-different-ns",
			pod:    podWithClaim("pvc-1"),
			newObj: st.MakePVC().Name("pvc-1").Namespace("ns1").VolumeName("vol-1").Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:   "pvc-was-added-and-pod-was-bound-to-the-pvc",
			pod:    podWithClaim("pvc-1"),
			newObj: boundPVC("pvc-1", "vol-1"),
			want:   framework.Queue,
		},
		{
			name:   "pvc-was-updated-and-pod-was-bound-to-the-pvc",
			pod:    podWithClaim("pvc-1"),
			oldObj: st.MakePVC().Name("pvc-1").Obj(),
			newObj: boundPVC("pvc-1", "vol-1"),
			want:   framework.Queue,
		},
		{
			name:   "pvc-was-updated-but-pod-refers-no-pvc",
			pod:    st.MakePod().Name("pod-1").Namespace("default").Obj(),
			oldObj: st.MakePVC().Name("pvc-1").Obj(),
			newObj: boundPVC("pvc-1", "vol-1"),
			want:   framework.QueueSkip,
		},
		{
			name:   "pvc-was-added-with-the-ephemeral-volume's-claim-name",
			pod:    st.MakePod().Name("pod-1").Namespace("default").EphemeralVolume("scratch", "fast", "1Gi").Obj(),
			newObj: st.MakePVC().Name("pod-1-scratch").Obj(),
			want:   framework.QueueSkip,
		},
	})
}

func TestIsSchedulableAfterStorageClassAdded(t *testing.T) {
	runHints(t, isSchedulableAfterStorageClassAdded, []hintCase{
		{
			name:    "error-wrong-new-object",
			pod:     podWithClaim("pvc-1"),
			newObj:  "not-a-storageclass",
			want:    framework.Queue,
			wantErr: true,
		},
		{
			name:   "sc-doesn't-have-volume-binding-mode",
			pod:    podWithClaim("pvc-1"),
			newObj: classWithoutMode("sc-1"),
			want:   framework.QueueSkip,
		},
		{
			name:   "new-sc-is-immediate-mode",
			pod:    podWithClaim("pvc-1"),
			newObj: st.MakeStorageClass().Name("sc-1").Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:   "new-sc-is-wait-for-first-consumer-mode",
			pod:    podWithClaim("pvc-1"),
			newObj: st.MakeStorageClass().Name("sc-1").WaitForFirstConsumer().Obj(),
			want:   framework.Queue,
		},
	})
}

func TestIsSchedulableAfterPersistentVolumeChange(t *testing.T) {
	runHints(t, isSchedulableAfterPersistentVolumeChange, []hintCase{
		{
			name:    "error-wrong-new-object",
			pod:     podWithClaim("pvc-1"),
			newObj:  "not-a-pv",
			want:    framework.Queue,
			wantErr: true,
		},
		{
			name:    "error-wrong-old-object",
			pod:     podWithClaim("pvc-1"),
			oldObj:  "not-a-pv",
			newObj:  st.MakePV().Name("vol-1").Obj(),
			want:    framework.Queue,
			wantErr: true,
		},
		{
			name:   "new-pv-was-added",
			pod:    podWithClaim("pvc-1"),
			newObj: labelledPV("vol-1", betaZone, "us-west1-b"),
			want:   framework.Queue,
		},
		{
			name:   "pv-was-updated-and-changed-topology",
			pod:    podWithClaim("pvc-1"),
			oldObj: labelledPV("vol-1", betaZone, "us-west1-a"),
			newObj: labelledPV("vol-1", betaZone, "us-west1-b"),
			want:   framework.Queue,
		},
		{
			name:   "pv-was-updated-and-added-topology-label",
			pod:    podWithClaim("pvc-1"),
			oldObj: labelledPV("vol-1", betaZone, "us-west1-a"),
			newObj: labelledPV("vol-1", betaZone, "us-west1-a", zone, "zone"),
			want:   framework.Queue,
		},
		{
			name:   "pv-was-updated-but-no-topology-is-changed",
			pod:    podWithClaim("pvc-1"),
			oldObj: labelledPV("vol-1", betaZone, "us-west1-a", zone, "zone"),
			newObj: labelledPV("vol-1", betaZone, "us-west1-a", zone, "zone"),
			want:   framework.QueueSkip,
		},
		{
			name:   "pv-was-updated-with-a-beta-key-moved-to-ga",
			pod:    podWithClaim("pvc-1"),
			oldObj: labelledPV("vol-1", betaZone, "us-west1-a"),
			newObj: labelledPV("vol-1", zone, "us-west1-a"),
			want:   framework.Queue,
		},
		{
			name:   "pv-was-updated-with-zones-reordered",
			pod:    podWithClaim("pvc-1"),
			oldObj: labelledPV("vol-1", zone, "us-west1-a__us-west1-b"),
			newObj: labelledPV("vol-1", zone, "us-west1-b__us-west1-a"),
			want:   framework.QueueSkip,
		},
		{
			name:   "pv-was-updated-from-unparsable-to-parsable-zone",
			pod:    podWithClaim("pvc-1"),
			oldObj: labelledPV("vol-1", zone, "a____b"),
			newObj: labelledPV("vol-1", zone, "a__b"),
			want:   framework.Queue,
		},
		{
			name:   "pv-was-updated-with-a-non-topology-label",
			pod:    podWithClaim("pvc-1"),
			oldObj: labelledPV("vol-1", zone, "us-west1-a"),
			newObj: labelledPV("vol-1", zone, "us-west1-a", "uselessLabel", "none"),
			want:   framework.QueueSkip,
		},
		{
			name:   "pv-was-updated-but-only-its-spec-changed",
			pod:    podWithClaim("pvc-1"),
			oldObj: labelledPV("vol-1", zone, "us-west1-a"),
			newObj: func() *v1.PersistentVolume {
				pv := labelledPV("vol-1", zone, "us-west1-a")
				pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "default", Name: "pvc-1"}
				return pv
			}(),
			want: framework.QueueSkip,
		},
	})
}
