// Tests for NodeAffinity's registered events and its node queueing hint.
package nodeaffinity

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestEventsToRegister(t *testing.T) {
	got := plugintesting.HintedEvents(t, newPlugin(t, nil))
	want := []framework.ClusterEvent{
		{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EventsToRegister (-want +got):\n%s", diff)
	}
}

func TestIsSchedulableAfterNodeChange(t *testing.T) {
	affinityFooBar := st.MakePod().Name("p").NodeAffinity(required(labelTerm(expr("foo", v1.NodeSelectorOpIn,
		"bar")))).Obj()
	selectorFooBar := st.MakePod().Name("p").NodeSelector("foo", "bar").Obj()
	plain := st.MakePod().Name("p").Obj()
	addedFooBar := rawArgs(`{"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
		{"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}]}}}`)
	bare := st.MakeNode().Name("n").Obj()
	fooBar := st.MakeNode().Name("n").Label("foo", "bar").Obj()
	tests := []struct {
		name           string
		args           *runtime.RawExtension
		pod            *v1.Pod
		oldObj, newObj interface{}
		want           framework.QueueingHint
		wantErr        bool
	}{
		{name: "wrong new object type", pod: affinityFooBar, newObj: "not-a-node", want: framework.Queue, wantErr: true},
		{name: "wrong old object type", pod: affinityFooBar, oldObj: "not-a-node", newObj: bare, want: framework.Queue,
			wantErr: true},
		{name: "no new node", pod: affinityFooBar, oldObj: bare, want: framework.Queue, wantErr: true},
		{name: "added node does not match", pod: affinityFooBar, newObj: bare, want: framework.QueueSkip},
		{name: "added node matches", pod: affinityFooBar, newObj: fooBar, want: framework.Queue},
		{name: "added node matches the nodeSelector", pod: selectorFooBar, newObj: fooBar, want: framework.Queue},
		{name: "added node does not match the nodeSelector", pod: selectorFooBar,
			newObj: st.MakeNode().Name("n").Label("foo", "baz").Obj(), want: framework.QueueSkip},
		{
			name: "unrelated change, no match", pod: affinityFooBar,
			oldObj: bare, newObj: st.MakeNode().Name("n").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Obj(),
			want: framework.QueueSkip,
		},
		{
			name: "unrelated label added, no match", pod: affinityFooBar,
			oldObj: bare, newObj: st.MakeNode().Name("n").Label("k", "v").Obj(),
			want: framework.QueueSkip,
		},
		{
			name: "matching label replaced: match to no match", pod: affinityFooBar,
			oldObj: fooBar, newObj: st.MakeNode().Name("n").Label("k", "v").Obj(),
			want: framework.QueueSkip,
		},
		{name: "label added makes the node match", pod: affinityFooBar, oldObj: bare, newObj: fooBar, want: framework.Queue},
		{name: "label added makes the node match the nodeSelector", pod: selectorFooBar, oldObj: bare, newObj: fooBar,
			want: framework.Queue},
		{
			name: "unrelated change keeps the node matching", pod: affinityFooBar,
			oldObj: fooBar, newObj: st.MakeNode().Name("n").Label("foo", "bar").Label("k", "v").Obj(),
			want: framework.QueueSkip,
		},
		{name: "added node does not match addedAffinity", args: addedFooBar, pod: affinityFooBar, newObj: bare,
			want: framework.QueueSkip},
		{name: "added node matches addedAffinity and the pod", args: addedFooBar, pod: affinityFooBar, newObj: fooBar,
			want: framework.Queue},
		{name: "added node matches addedAffinity, pod without selectors", args: addedFooBar, pod: plain, newObj: fooBar,
			want: framework.Queue},
		{
			name: "added node matches addedAffinity but not the pod", args: addedFooBar,
			pod: st.MakePod().Name("p").NodeSelector("zone", "a").Obj(), newObj: fooBar,
			want: framework.QueueSkip,
		},
		{
			// kube-scheduler compares the old node with the pod's own
			// selector only: a pod without one matched it already.
			name: "update makes the node match addedAffinity, pod without selectors", args: addedFooBar,
			pod: plain, oldObj: bare, newObj: fooBar,
			want: framework.QueueSkip,
		},
		{
			// A required term that does not parse makes Match fail with an
			// error: the pod is queued.
			name: "invalid pod affinity", pod: st.MakePod().Name("p").NodeAffinity(required(labelTerm(expr("foo",
				v1.NodeSelectorOpGt, "bar")))).Obj(),
			newObj: fooBar, want: framework.Queue, wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			pl := newPlugin(t, tt.args)
			got, err := pl.isSchedulableAfterNodeChange(logger, tt.pod, tt.oldObj, tt.newObj)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}
