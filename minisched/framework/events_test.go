// This file tests what a pod's update stands for (PodUpdateActions) and how
// action types print.

package framework

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minisched/minisched/minisched/attempt"
)

func TestPodUpdateActionsIgnoreTheAttemptRecord(t *testing.T) {
	pod := func(annotations map[string]string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: annotations}}
	}
	tests := []struct {
		name     string
		old, new *v1.Pod
		want     ActionType
	}{
		{name: "the record written: no event", old: pod(nil),
			new: pod(map[string]string{attempt.Annotation: `{"v":1}`}), want: 0},
		{name: "the record rewritten: no event", old: pod(map[string]string{attempt.Annotation: `{"v":1}`}),
			new: pod(map[string]string{attempt.Annotation: `{"v":1,"attempt":2}`}), want: 0},
		{name: "both records written at once: no event", old: pod(nil),
			new: pod(map[string]string{attempt.Annotation: `{"v":1}`, attempt.PreemptionAnnotation: `{"v":1}`}), want: 0},
		{name: "another annotation beside it: an update", old: pod(map[string]string{attempt.Annotation: "a"}),
			new: pod(map[string]string{attempt.Annotation: "b", "team": "x"}), want: UpdatePodOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodUpdateActions(tt.old, tt.new); got != tt.want {
				t.Errorf("PodUpdateActions = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPodUpdateActionsGeneratedResourceClaim(t *testing.T) {
	withStatuses := func(statuses ...v1.PodResourceClaimStatus) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
			Status: v1.PodStatus{ResourceClaimStatuses: statuses}}
	}
	name := "p-gpu-x7k2"
	tests := []struct {
		name     string
		old, new *v1.Pod
		want     ActionType
	}{
		{name: "the controller names the generated claim", old: withStatuses(),
			new:  withStatuses(v1.PodResourceClaimStatus{Name: "gpu", ResourceClaimName: &name}),
			want: UpdatePodGeneratedResourceClaim},
		{name: "the claim needs none (a nil name): still news", old: withStatuses(),
			new:  withStatuses(v1.PodResourceClaimStatus{Name: "gpu"}),
			want: UpdatePodGeneratedResourceClaim},
		{name: "the same statuses: no event",
			old:  withStatuses(v1.PodResourceClaimStatus{Name: "gpu", ResourceClaimName: &name}),
			new:  withStatuses(v1.PodResourceClaimStatus{Name: "gpu", ResourceClaimName: &name}),
			want: 0},
		{name: "the extended-resource claim status set", old: withStatuses(),
			new: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: v1.PodStatus{
				ExtendedResourceClaimStatus: &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "c"}}},
			want: UpdatePodGeneratedResourceClaim},
		{name: "another status change: no event", old: withStatuses(),
			new:  &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: v1.PodStatus{Phase: v1.PodPending}},
			want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodUpdateActions(tt.old, tt.new); got != tt.want {
				t.Errorf("PodUpdateActions = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestActionTypeString(t *testing.T) {
	tests := []struct {
		a    ActionType
		want string
	}{
		{Add | UpdateNodeLabel, "Add|UpdateNodeLabel"},
		{UpdatePodGeneratedResourceClaim, "UpdatePodGeneratedResourceClaim"},
		{UpdatePodOther, "UpdatePodOther"},
		{Update, "Update"},
		{All, "All"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.a.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
	// Every bit has a name.
	for bit := ActionType(1); bit < All; bit <<= 1 {
		if strings.HasPrefix(bit.String(), "ActionType(") {
			t.Errorf("bit %d has no name", int64(bit))
		}
	}
}
