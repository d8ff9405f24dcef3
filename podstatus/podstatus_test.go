package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
