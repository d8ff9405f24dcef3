package podstatus

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func TestSetCondition(t *testing.T) {
	unsched := func(msg string) *v1.PodCondition {
		return &v1.PodCondition{
			Type:    v1.PodScheduled,
			Status:  v1.ConditionFalse,
			Reason:  v1.PodReasonUnschedulable,
			Message: msg,
		}
	}
	tests := []struct {
		name        string
		existing    []v1.PodCondition
		cond        *v1.PodCondition
		wantChanged bool
	}{
		{
			name:        "new condition",
			cond:        unsched("a"),
			wantChanged: true,
		},
		{
			name:        "same condition is not rewritten",
			existing:    []v1.PodCondition{*unsched("a")},
			cond:        unsched("a"),
			wantChanged: false,
		},
		{
			name:        "new message",
			existing:    []v1.PodCondition{*unsched("a")},
			cond:        unsched("b"),
			wantChanged: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := &v1.PodStatus{}
			for _, c := range tt.existing {
				c.LastTransitionTime = metav1.Now()
				status.Conditions = append(status.Conditions, c)
			}
			if got := SetCondition(status, tt.cond); got != tt.wantChanged {
				t.Errorf("changed = %v, want %v", got, tt.wantChanged)
			}
			if len(status.Conditions) != 1 || status.Conditions[0].Message != tt.cond.Message ||
				status.Conditions[0].LastTransitionTime.IsZero() {
				t.Errorf("conditions = %+v, want one with message %q and a transition time", status.Conditions, tt.cond.Message)
			}
		})
	}
}

func TestCondition(t *testing.T) {
	status := &v1.PodStatus{Conditions: []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionFalse},
		{Type: v1.PodScheduled, Status: v1.ConditionTrue},
	}}
	tests := []struct {
		name string
		typ  v1.PodConditionType
		want *v1.PodCondition
	}{
		{name: "present", typ: v1.PodScheduled, want: &status.Conditions[1]},
		{name: "absent", typ: v1.ContainersReady, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Condition(status, tt.typ); got != tt.want {
				t.Errorf("Condition(%s) = %p, want %p (a pointer into the status)", tt.typ, got, tt.want)
			}
		})
	}
}

// TestUpdate checks which updates reach the apiserver and what they write:
// nothing when the pod already carries the condition and the nominated
// node, one status patch otherwise.
func TestUpdate(t *testing.T) {
	unsched := &v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable,
		Message: "no fit"}
	podWith := func(nnn string, conds ...v1.PodCondition) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
			Status: v1.PodStatus{NominatedNodeName: nnn, Conditions: conds}}
	}
	tests := []struct {
		name       string
		pod        *v1.Pod
		cond       *v1.PodCondition
		nnn        *string
		wantPatch  bool
		wantNNN    string
		wantReason string
	}{
		{name: "nothing new: no patch", pod: podWith("n1", *unsched), cond: unsched, nnn: ptr.To("n1"),
			wantNNN: "n1", wantReason: v1.PodReasonUnschedulable},
		{name: "a nil nominated node keeps the pod's", pod: podWith("n1"), cond: unsched, wantPatch: true,
			wantNNN: "n1", wantReason: v1.PodReasonUnschedulable},
		{name: "a nominated node alone", pod: podWith(""), nnn: ptr.To("n2"), wantPatch: true, wantNNN: "n2"},
		{name: "an empty nominated node clears it", pod: podWith("n1"), nnn: ptr.To(""), wantPatch: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.pod)
			client.ClearActions()
			if err := Update(context.Background(), client, tt.pod, tt.cond, tt.nnn); err != nil {
				t.Fatal(err)
			}
			if got := len(client.Actions()) > 0; got != tt.wantPatch {
				t.Fatalf("patched: %v, want %v (%v)", got, tt.wantPatch, client.Actions())
			}
			got, err := client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.NominatedNodeName != tt.wantNNN {
				t.Errorf("nominatedNodeName = %q, want %q", got.Status.NominatedNodeName, tt.wantNNN)
			}
			var reason string
			if c := Condition(&got.Status, v1.PodScheduled); c != nil {
				reason = c.Reason
			}
			if reason != tt.wantReason {
				t.Errorf("PodScheduled reason = %q, want %q", reason, tt.wantReason)
			}
		})
	}
}
