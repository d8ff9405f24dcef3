// This file tests the nominator through the queue: nominations taken from a
// pod's status or made in memory, moved or cleared by updates, overrides,
// deletes and assumes, and what NominatedPodsForNode returns.

package queue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
