// Tests for NodeUnschedulable's Filter and queueing hints.
package nodeunschedulable

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

var tolerateUnschedulable = v1.Toleration{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists,
	Effect: v1.TaintEffectNoSchedule}

func TestFilter(t *testing.T) {
	tests := []struct {
		name     string
		pod      *v1.Pod
		nodeInfo *framework.NodeInfo
		want     *framework.Status
	}{
		{
			name:     "schedulable node",
			pod:      st.MakePod().Name("p").Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(st.MakeNode().Name("n").Obj()),
		},
		{
			name:     "unschedulable node, no toleration",
			pod:      st.MakePod().Name("p").Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(st.MakeNode().Name("n").Unschedulable(true).Obj()),
			want:     framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) were unschedulable"),
		},
		{
			name:     "unschedulable node, toleration for the taint",
			pod:      st.MakePod().Name("p").Toleration(tolerateUnschedulable).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(st.MakeNode().Name("n").Unschedulable(true).Obj()),
		},
		{
			name:     "unschedulable node, tolerate everything",
			pod:      st.MakePod().Name("p").Toleration(v1.Toleration{Operator: v1.TolerationOpExists}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(st.MakeNode().Name("n").Unschedulable(true).Obj()),
		},
		{
			name: "unschedulable node, toleration for another effect",
			pod: st.MakePod().Name("p").Toleration(v1.Toleration{Key: v1.TaintNodeUnschedulable,
				Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(st.MakeNode().Name("n").Unschedulable(true).Obj()),
			want:     framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) were unschedulable"),
		},
		{
			name: "unschedulable node, unrelated toleration",
			pod: st.MakePod().Name("p").Toleration(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual,
				Value: "gpu", Effect: v1.TaintEffectNoSchedule}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(st.MakeNode().Name("n").Unschedulable(true).Obj()),
			want:     framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) were unschedulable"),
		},
		{
			name:     "no node",
			pod:      st.MakePod().Name("p").Obj(),
			nodeInfo: framework.NewNodeInfo(),
			want:     framework.NewStatus(framework.UnschedulableAndUnresolvable, "node not found"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl, err := New(ctx, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := pl.(framework.FilterPlugin).Filter(ctx, framework.NewCycleState(), tt.pod, tt.nodeInfo)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Filter (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventsToRegister(t *testing.T) {
	pl := &NodeUnschedulable{}
	got := plugintesting.HintedEvents(t, pl)
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
	tolerating := st.MakePod().Name("p").Toleration(tolerateUnschedulable).Obj()
	cordoned := st.MakeNode().Name("n").Unschedulable(true).Obj()
	open := st.MakeNode().Name("n").Obj()
	tests := []struct {
		name           string
		pod            *v1.Pod
		oldObj, newObj interface{}
		want           framework.QueueingHint
		wantErr        bool
	}{
		{name: "schedulable node added", pod: plain, newObj: open, want: framework.Queue},
		{name: "unschedulable node added", pod: plain, newObj: cordoned, want: framework.QueueSkip},
		{name: "unschedulable node added, pod tolerates it", pod: tolerating, newObj: cordoned, want: framework.Queue},
		{name: "node uncordoned", pod: plain, oldObj: cordoned, newObj: open, want: framework.Queue},
		{name: "node cordoned", pod: plain, oldObj: open, newObj: cordoned, want: framework.QueueSkip},
		{name: "node stays cordoned", pod: plain, oldObj: cordoned, newObj: cordoned, want: framework.QueueSkip},
		{name: "node stays schedulable", pod: plain, oldObj: open, newObj: open, want: framework.QueueSkip},
		{name: "node uncordoned, pod tolerated it already", pod: tolerating, oldObj: cordoned, newObj: open,
			want: framework.QueueSkip},
		{name: "wrong new object type", pod: plain, newObj: plain, want: framework.Queue, wantErr: true},
		{name: "wrong old object type", pod: plain, oldObj: plain, newObj: open, want: framework.Queue, wantErr: true},
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
	plain := st.MakePod().Name("p").Obj()
	tests := []struct {
		name   string
		newPod *v1.Pod
		want   framework.QueueingHint
	}{
		{name: "toleration for the unschedulable taint added",
			newPod: st.MakePod().Name("p").Toleration(tolerateUnschedulable).Obj(), want: framework.Queue},
		{name: "unrelated toleration added",
			newPod: st.MakePod().Name("p").Toleration(v1.Toleration{Key: "foo",
				Operator: v1.TolerationOpExists}).Obj(), want: framework.QueueSkip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			got, err := isSchedulableAfterPodTolerationChange(logger, plain, plain, tt.newPod)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}
