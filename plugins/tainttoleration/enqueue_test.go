// Tests for the events TaintToleration registers and its queueing hints.
package tainttoleration

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestEventsToRegister(t *testing.T) {
	got := plugintesting.HintedEvents(t, (&TaintToleration{}))
	want := []framework.ClusterEvent{
		{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeTaint | framework.UpdateNodeUnschedulable},
		{Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodToleration},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EventsToRegister (-want +got):\n%s", diff)
	}
}

func TestIsSchedulableAfterNodeChange(t *testing.T) {
	plain := st.MakePod().Name("p").Obj()
	tolerating := st.MakePod().Name("p").Toleration(v1.Toleration{Key: "foo", Operator: v1.TolerationOpEqual,
		Value: "bar", Effect: v1.TaintEffectNoSchedule}).Obj()
	untainted := st.MakeNode().Name("n").Obj()
	tainted := st.MakeNode().Name("n").Taint("foo", "bar", v1.TaintEffectNoSchedule).Obj()
	otherTaint := st.MakeNode().Name("n").Taint("baz", "qux", v1.TaintEffectNoExecute).Obj()
	softTaint := st.MakeNode().Name("n").Taint("foo", "bar", v1.TaintEffectPreferNoSchedule).Obj()
	cordoned := st.MakeNode().Name("n").Taint("foo", "bar", v1.TaintEffectNoSchedule).Unschedulable(true).Obj()
	tests := []struct {
		name           string
		pod            *v1.Pod
		oldObj, newObj interface{}
		want           framework.QueueingHint
		wantErr        bool
	}{
		{name: "wrong new object type", pod: plain, newObj: plain, want: framework.Queue, wantErr: true},
		{name: "wrong old object type", pod: plain, oldObj: plain, newObj: untainted, want: framework.Queue, wantErr: true},
		{name: "no new node", pod: plain, oldObj: untainted, want: framework.Queue, wantErr: true},
		{name: "node with an untolerated taint added", pod: plain, newObj: tainted, want: framework.QueueSkip},
		{name: "node with a tolerated taint added", pod: tolerating, newObj: tainted, want: framework.Queue},
		{name: "untainted node added", pod: plain, newObj: untainted, want: framework.Queue},
		{name: "node with only a PreferNoSchedule taint added", pod: plain, newObj: softTaint, want: framework.Queue},
		{name: "untolerated taint removed", pod: plain, oldObj: tainted, newObj: untainted, want: framework.Queue},
		{name: "untolerated taint weakened to PreferNoSchedule", pod: plain, oldObj: tainted, newObj: softTaint,
			want: framework.Queue},
		{name: "untolerated taint replaced by a tolerated one", pod: tolerating, oldObj: otherTaint, newObj: tainted,
			want: framework.Queue},
		{name: "tolerated taint replaced by an untolerated one", pod: tolerating, oldObj: tainted, newObj: otherTaint,
			want: framework.QueueSkip},
		{name: "untolerated taint replaced by another untolerated one", pod: plain, oldObj: tainted, newObj: otherTaint,
			want: framework.QueueSkip},
		{name: "node was acceptable before and still is", pod: plain, oldObj: untainted, newObj: softTaint,
			want: framework.QueueSkip},
		{name: "only spec.unschedulable changed", pod: plain, oldObj: tainted, newObj: cordoned, want: framework.QueueSkip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			got, err := isSchedulableAfterNodeChange(logger, tt.pod, tt.oldObj, tt.newObj)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsSchedulableAfterPodTolerationChange(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	oldPod := st.MakePod().Name("p").Obj()
	newPod := st.MakePod().Name("p").Toleration(v1.Toleration{Key: "foo", Operator: v1.TolerationOpExists}).Obj()
	got, err := isSchedulableAfterPodTolerationChange(logger, newPod, oldPod, newPod)
	if err != nil {
		t.Fatal(err)
	}
	if got != framework.Queue {
		t.Errorf("hint = %v, want Queue", got)
	}
}
