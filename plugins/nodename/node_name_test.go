// Tests for NodeName's Filter and queueing hint.
package nodename

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestFilter(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		node *v1.Node
		want *framework.Status
	}{
		{
			name: "no node name requested",
			pod:  st.MakePod().Name("p").Obj(),
			node: st.MakeNode().Name("n1").Obj(),
		},
		{
			name: "requested node",
			pod:  st.MakePod().Name("p").NodeName("n1").Obj(),
			node: st.MakeNode().Name("n1").Obj(),
		},
		{
			name: "another node",
			pod:  st.MakePod().Name("p").NodeName("n2").Obj(),
			node: st.MakeNode().Name("n1").Obj(),
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) didn't match the requested node name"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := New(context.Background(), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := pl.(framework.FilterPlugin).Filter(context.Background(), framework.NewCycleState(), tt.pod,
				plugintesting.MakeNodeInfo(tt.node))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Filter (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventsToRegister(t *testing.T) {
	evs, err := (&NodeName{}).EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].QueueingHintFn == nil {
		t.Fatalf("want one event with a hint, got %+v", evs)
	}
	if diff := cmp.Diff(framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add},
		evs[0].Event); diff != "" {
		t.Errorf("event (-want +got):\n%s", diff)
	}
}

func TestIsSchedulableAfterNodeAdd(t *testing.T) {
	tests := []struct {
		name    string
		pod     *v1.Pod
		newObj  interface{}
		want    framework.QueueingHint
		wantErr bool
	}{
		{name: "requested node added", pod: st.MakePod().Name("p").NodeName("n1").Obj(),
			newObj: st.MakeNode().Name("n1").Obj(), want: framework.Queue},
		{name: "other node added", pod: st.MakePod().Name("p").NodeName("n1").Obj(), newObj: st.MakeNode().Name("n2").Obj(),
			want: framework.QueueSkip},
		{name: "pod asks for no node", pod: st.MakePod().Name("p").Obj(), newObj: st.MakeNode().Name("n2").Obj(),
			want: framework.Queue},
		{name: "not a node", pod: st.MakePod().Name("p").Obj(), newObj: st.MakePod().Obj(), want: framework.Queue,
			wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			got, err := isSchedulableAfterNodeAdd(logger, tt.pod, nil, tt.newObj)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}
