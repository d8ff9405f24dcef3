package queue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

func TestNominator(t *testing.T) {
	override := func(node string) *framework.NominatingInfo {
		return &framework.NominatingInfo{NominatedNodeName: node, NominatingMode: framework.ModeOverride}
	}
	tests := []struct {
		name  string
		steps func(q *PriorityQueue, logger klog.Logger)
		want  map[string][]string
	}{
		{
			name: "a pod added with status.nominatedNodeName is nominated",
			steps: func(q *PriorityQueue, l klog.Logger) {
				q.Add(l, makePod("p").NominatedNodeName("n1").Obj())
				q.Add(l, makePod("plain").Obj())
			},
			want: map[string][]string{"n1": {"p"}},
		},
		{
			name: "an update that removes the nomination clears it",
			steps: func(q *PriorityQueue, l klog.Logger) {
				old := makePod("p").NominatedNodeName("n1").Obj()
				q.Add(l, old)
				q.Update(l, old, makePod("p").Label("v", "2").Obj())
			},
			want: map[string][]string{},
		},
		{
			name: "an update that moves the nomination moves it",
			steps: func(q *PriorityQueue, l klog.Logger) {
				old := makePod("p").NominatedNodeName("n1").Obj()
				q.Add(l, old)
				q.Update(l, old, makePod("p").NominatedNodeName("n2").Obj())
			},
			want: map[string][]string{"n2": {"p"}},
		},
		{
			name: "a nomination made in memory survives an update that does not mention it",
			steps: func(q *PriorityQueue, l klog.Logger) {
				old := makePod("p").Obj()
				q.Add(l, old)
				q.AddNominatedPod(l, framework.NewPodInfo(old), override("n1"))
				q.Update(l, old, makePod("p").Label("v", "2").Obj())
			},
			want: map[string][]string{"n1": {"p"}},
		},
		{
			name: "an override with no node clears",
			steps: func(q *PriorityQueue, l klog.Logger) {
				pod := makePod("p").NominatedNodeName("n1").Obj()
				q.Add(l, pod)
				q.AddNominatedPod(l, framework.NewPodInfo(pod), override(""))
			},
			want: map[string][]string{},
		},
		{
			name: "deleting the pod, or assuming it, clears",
			steps: func(q *PriorityQueue, l klog.Logger) {
				a, b := makePod("a").NominatedNodeName("n1").Obj(), makePod("b").NominatedNodeName("n1").Obj()
				q.Add(l, a)
				q.Add(l, b)
				q.Add(l, makePod("c").NominatedNodeName("n1").Obj())
				q.Delete(a)
				q.DeleteNominatedPodIfExists(b)
			},
			want: map[string][]string{"n1": {"c"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := testLogger(t)
			q, _ := newTestQueue(newProfile(nil))
			tt.steps(q, logger)
			if diff := cmp.Diff(tt.want, q.nominations()); diff != "" {
				t.Errorf("nominations (-want +got):\n%s", diff)
			}
			for node, names := range tt.want {
				if got := len(q.NominatedPodsForNode(node)); got != len(names) {
					t.Errorf("NominatedPodsForNode(%s) returned %d pods, want %d", node, got, len(names))
				}
			}
		})
	}
}

func TestActivate(t *testing.T) {
	hints := map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.NodeAdd)}}
	rejected := attempt{unschedulable: []string{fooPlugin}}
	tests := []struct {
		name string
		// setup leaves pod p somewhere; inFlight says it is still popped.
		setup    func(t *testing.T, q *PriorityQueue, l klog.Logger) *framework.QueuedPodInfo
		wantNow  Location
		wantBack Location // after a popped pod is put back, rejected again
	}{
		{
			name: "unschedulable pod: to activeQ",
			setup: func(t *testing.T, q *PriorityQueue, l klog.Logger) *framework.QueuedPodInfo {
				if err := failAttempt(t, q, l, makePod("p").Obj(), rejected); err != nil {
					t.Fatal(err)
				}
				return nil
			},
			wantNow: ActiveQ,
		},
		{
			name: "backing-off pod: to activeQ",
			setup: func(t *testing.T, q *PriorityQueue, l klog.Logger) *framework.QueuedPodInfo {
				if err := failAttempt(t, q, l, makePod("p").Obj(), attempt{}); err != nil {
					t.Fatal(err)
				}
				return nil
			},
			wantNow: ActiveQ,
		},
		{
			name: "pod in flight: retried after backoff when it comes back, not parked",
			setup: func(t *testing.T, q *PriorityQueue, l klog.Logger) *framework.QueuedPodInfo {
				q.Add(l, makePod("p").Obj())
				return mustPop(t, q, l)
			},
			wantNow:  InFlight,
			wantBack: BackoffQ,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := testLogger(t)
			q, _ := newTestQueue(newProfile(hints))
			popped := tt.setup(t, q, logger)
			q.Activate(logger, map[string]*v1.Pod{"default/p": makePod("p").Obj()})
			if got := q.Locate("p"); got != tt.wantNow {
				t.Errorf("after Activate: Locate = %q, want %q", got, tt.wantNow)
			}
			if popped == nil {
				return
			}
			popped.UnschedulablePlugins.Insert(fooPlugin)
			if err := q.AddUnschedulablePodIfNotPresent(logger, popped); err != nil {
				t.Fatal(err)
			}
			if got := q.Locate("p"); got != tt.wantBack {
				t.Errorf("after the rejected attempt: Locate = %q, want %q", got, tt.wantBack)
			}
		})
	}
}
