// Tests for the events NodePorts registers and its queueing hint.
package nodeports

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
	evs, err := (&NodePorts{}).EventsToRegister(context.Background())
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
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EventsToRegister (-want +got):\n%s", diff)
	}
	// The node event has no hint (always Queue), as in kube-scheduler.
	if diff := cmp.Diff([]bool{true, false}, hasHint); diff != "" {
		t.Errorf("events with a hint (-want +got):\n%s", diff)
	}
}

func TestIsSchedulableAfterPodDeleted(t *testing.T) {
	pod := st.MakePod().Name("p").HostPort(v1.ProtocolTCP, "", 8080).Obj()
	tests := []struct {
		name    string
		pod     *v1.Pod
		oldObj  interface{}
		want    framework.QueueingHint
		wantErr bool
	}{
		{name: "wrong old object type", pod: pod, oldObj: "not-a-pod", want: framework.Queue, wantErr: true},
		{name: "no deleted pod", pod: pod, oldObj: nil, want: framework.Queue, wantErr: true},
		{name: "deleted pod was not on a node", pod: pod,
			oldObj: st.MakePod().Name("d").HostPort(v1.ProtocolTCP, "", 8080).Obj(), want: framework.QueueSkip},
		{name: "deleted pod had no host port", pod: pod, oldObj: st.MakePod().Name("d").NodeName("n").Obj(),
			want: framework.QueueSkip},
		{name: "deleted pod held another port", pod: pod,
			oldObj: st.MakePod().Name("d").NodeName("n").HostPort(v1.ProtocolTCP, "", 8081).Obj(), want: framework.QueueSkip},
		{name: "deleted pod held the same port with another protocol", pod: pod,
			oldObj: st.MakePod().Name("d").NodeName("n").HostPort(v1.ProtocolUDP, "", 8080).Obj(), want: framework.QueueSkip},
		{name: "deleted pod held the port", pod: pod,
			oldObj: st.MakePod().Name("d").NodeName("n").HostPort(v1.ProtocolTCP, "", 8080).Obj(), want: framework.Queue},
		{name: "deleted pod held the port on one IP, the pod wants it on all", pod: pod,
			oldObj: st.MakePod().Name("d").NodeName("n").HostPort(v1.ProtocolTCP,
				"10.0.0.1", 8080).Obj(), want: framework.Queue},
		{name: "deleted pod was nominated and held the port", pod: pod,
			oldObj: st.MakePod().Name("d").NominatedNodeName("n").HostPort(v1.ProtocolTCP,
				"", 8080).Obj(), want: framework.Queue},
		{name: "deleted pod's sidecar held the port", pod: pod,
			oldObj: st.MakePod().Name("d").NodeName("n").SidecarHostPort(v1.ProtocolTCP, "", 8080).Obj(), want: framework.Queue},
		{name: "deleted pod's ordinary init container had the port", pod: pod,
			oldObj: st.MakePod().Name("d").NodeName("n").InitHostPort(v1.ProtocolTCP,
				"", 8080).Obj(), want: framework.QueueSkip},
		{name: "the pod wants no host port", pod: st.MakePod().Name("p").Obj(),
			oldObj: st.MakePod().Name("d").NodeName("n").HostPort(v1.ProtocolTCP, "", 8080).Obj(), want: framework.QueueSkip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			got, err := isSchedulableAfterPodDeleted(logger, tt.pod, tt.oldObj, nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}
