// Tests for the events GangScheduling registers and its queueing hints.

package gangscheduling

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
	got := plugintesting.HintedEvents(t, &GangScheduling{})
	want := []framework.ClusterEvent{
		{Resource: framework.UnscheduledPod, ActionType: framework.Add},
		{Resource: framework.Pod, ActionType: framework.Add},
		{Resource: framework.PodGroup, ActionType: framework.Add},
		{Resource: framework.PodGroup, ActionType: framework.Update},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EventsToRegister (-want +got):\n%s", diff)
	}
	// The events the scheduler sends for a pod's add must match them.
	for _, e := range []framework.ClusterEvent{framework.UnscheduledPodAdd, framework.AssignedPodAdd} {
		if !want[0].Match(e) && !want[1].Match(e) {
			t.Errorf("no registered event matches %v", e)
		}
	}
}

// hint is a QueueingHintFn's answer: the hint, and whether it erred.
type hint struct {
	Hint framework.QueueingHint
	Err  bool
}

// runHint calls fn and returns its answer.
func runHint(t *testing.T, fn framework.QueueingHintFn, pod *v1.Pod, oldObj, newObj interface{}) hint {
	t.Helper()
	logger, _ := ktesting.NewTestContext(t)
	h, err := fn(logger, pod, oldObj, newObj)
	return hint{Hint: h, Err: err != nil}
}

var (
	queue = hint{Hint: framework.Queue}
	skip  = hint{Hint: framework.QueueSkip}
	erred = hint{Hint: framework.Queue, Err: true}
)

func TestIsSchedulableAfterPodAdded(t *testing.T) {
	pod := member("ns", "p", "pg")
	bound := member("ns", "b", "pg")
	bound.Spec.NodeName = "node"
	tests := []struct {
		name   string
		pod    *v1.Pod
		newObj interface{}
		want   hint
	}{
		{name: "pending member of the same group", pod: pod, newObj: member("ns", "q", "pg"), want: queue},
		{name: "bound member of the same group", pod: pod, newObj: bound, want: queue},
		{name: "member of another group", pod: pod, newObj: member("ns", "q", "other"), want: skip},
		{name: "same group name in another namespace", pod: pod, newObj: member("other", "q", "pg"), want: skip},
		{name: "added pod in no group", pod: pod, newObj: st.MakePod().Namespace("ns").Name("q").Obj(), want: skip},
		{name: "rejected pod in no group", pod: st.MakePod().Namespace("ns").Name("p").Obj(),
			newObj: member("ns", "q", "pg"), want: skip},
		{name: "not a pod", pod: pod, newObj: gang("ns", "pg", 2), want: erred},
		{name: "no added pod", pod: pod, newObj: nil, want: erred},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, runHint(t, isSchedulableAfterPodAdded, tt.pod, nil, tt.newObj)); diff != "" {
				t.Errorf("hint (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIsSchedulableAfterPodGroupAdded(t *testing.T) {
	pod := member("ns", "p", "pg")
	tests := []struct {
		name   string
		pod    *v1.Pod
		newObj interface{}
		want   hint
	}{
		{name: "the pod's group", pod: pod, newObj: gang("ns", "pg", 2), want: queue},
		{name: "the pod's basic group", pod: pod, newObj: basic("ns", "pg"), want: queue},
		{name: "another group", pod: pod, newObj: gang("ns", "other", 2), want: skip},
		{name: "same name in another namespace", pod: pod, newObj: gang("other", "pg", 2), want: skip},
		{name: "pod in no group", pod: st.MakePod().Namespace("ns").Name("p").Obj(), newObj: gang("ns", "pg", 2),
			want: skip},
		{name: "not a PodGroup", pod: pod, newObj: member("ns", "q", "pg"), want: erred},
		{name: "no added PodGroup", pod: pod, newObj: nil, want: erred},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, runHint(t, isSchedulableAfterPodGroupAdded, tt.pod, nil, tt.newObj)); diff != "" {
				t.Errorf("hint (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIsSchedulableAfterPodGroupUpdated(t *testing.T) {
	pod := member("ns", "p", "pg")
	tests := []struct {
		name           string
		pod            *v1.Pod
		oldObj, newObj interface{}
		want           hint
	}{
		{name: "minCount decreased", pod: pod, oldObj: gang("ns", "pg", 4), newObj: gang("ns", "pg", 3), want: queue},
		{name: "minCount unchanged", pod: pod, oldObj: gang("ns", "pg", 4), newObj: gang("ns", "pg", 4), want: skip},
		{name: "minCount increased", pod: pod, oldObj: gang("ns", "pg", 3), newObj: gang("ns", "pg", 4), want: skip},
		{name: "basic policy", pod: pod, oldObj: basic("ns", "pg"), newObj: basic("ns", "pg"), want: skip},
		{name: "another group's minCount decreased", pod: pod, oldObj: gang("ns", "other", 4),
			newObj: gang("ns", "other", 3), want: skip},
		{name: "same name in another namespace", pod: pod, oldObj: gang("other", "pg", 4),
			newObj: gang("other", "pg", 3), want: skip},
		{name: "pod in no group", pod: st.MakePod().Namespace("ns").Name("p").Obj(), oldObj: gang("ns", "pg", 4),
			newObj: gang("ns", "pg", 3), want: skip},
		{name: "not PodGroups", pod: pod, oldObj: pod, newObj: pod, want: erred},
		{name: "no old PodGroup", pod: pod, oldObj: nil, newObj: gang("ns", "pg", 3), want: erred},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runHint(t, isSchedulableAfterPodGroupUpdated, tt.pod, tt.oldObj, tt.newObj)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("hint (-want +got):\n%s", diff)
			}
		})
	}
}
