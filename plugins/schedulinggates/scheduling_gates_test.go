// Tests for SchedulingGates' PreEnqueue, registered event and queueing hint.
package schedulinggates

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestPreEnqueue(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want *framework.Status
	}{
		{name: "pod without gates", pod: st.MakePod().Name("p").Obj()},
		{
			name: "pod with one gate",
			pod:  st.MakePod().Name("p").SchedulingGates("example.com/quota").Obj(),
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable,
				"waiting for scheduling gates: [example.com/quota]"),
		},
		{
			name: "pod with gates, reported in spec order",
			pod:  st.MakePod().Name("p").SchedulingGates("foo", "bar").Obj(),
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable, "waiting for scheduling gates: [foo bar]"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl, err := New(ctx, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := pl.(framework.PreEnqueuePlugin).PreEnqueue(ctx, tt.pod)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PreEnqueue (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventsToRegister(t *testing.T) {
	got := plugintesting.HintedEvents(t, (&SchedulingGates{}))
	want := []framework.ClusterEvent{{Resource: framework.UnscheduledPod,
		ActionType: framework.UpdatePodSchedulingGatesEliminated}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EventsToRegister (-want +got):\n%s", diff)
	}
}

func TestIsSchedulableAfterGatesEliminated(t *testing.T) {
	gated := st.MakePod().Name("p").SchedulingGates("foo", "bar").Obj()
	tests := []struct {
		name    string
		newObj  interface{}
		want    framework.QueueingHint
		wantErr bool
	}{
		{name: "last gate removed", newObj: st.MakePod().Name("p").Obj(), want: framework.Queue},
		{name: "a gate is left", newObj: st.MakePod().Name("p").SchedulingGates("bar").Obj(), want: framework.QueueSkip},
		{name: "wrong new object type", newObj: "not-a-pod", want: framework.Queue, wantErr: true},
		{name: "no new object", newObj: nil, want: framework.Queue, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			got, err := isSchedulableAfterGatesEliminated(logger, gated, gated, tt.newObj)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestEventMatchesPodUpdate checks that removing the last gate raises the
// event this plugin registered, and removing one of two does not.
func TestEventMatchesPodUpdate(t *testing.T) {
	registered := framework.ClusterEvent{Resource: framework.UnscheduledPod,
		ActionType: framework.UpdatePodSchedulingGatesEliminated}
	gated := st.MakePod().Name("p").SchedulingGates("foo", "bar").Obj()
	tests := []struct {
		name   string
		newPod *v1.Pod
		want   bool
	}{
		{name: "all gates removed", newPod: st.MakePod().Name("p").Obj(), want: true},
		{name: "one gate removed", newPod: st.MakePod().Name("p").SchedulingGates("bar").Obj(), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := framework.ClusterEvent{Resource: framework.UnscheduledPod,
				ActionType: framework.PodUpdateActions(gated, tt.newPod)}
			if got := registered.Match(e); got != tt.want {
				t.Errorf("registered event matches %v: %v, want %v", e, got, tt.want)
			}
		})
	}
}
