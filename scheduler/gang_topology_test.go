// Tests of topology-aware gangs on the apiserver (the
// TopologyAwareWorkloadScheduling gate): a gang whose PodGroup names a
// topology key is placed whole within one rack, the rack that holds it; a
// gang no rack holds is not placed, with kube-scheduler's "0/2 placements"
// message.

package scheduler_test

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/scenario"
)

// rackKey is the topology key of the tests' racks: no other test's node
// has it, so only the racks' nodes are in placements.
const rackKey = "minisched.test/rack"

func TestGangTopology(t *testing.T) {
	tests := []struct {
		name string
		// racks gives each rack's number of nodes; a node holds one member.
		racks map[string]int
		// wantRack is where every member is bound ("": none is).
		wantRack string
		// wantMessages are each member's PodScheduled message prefixes.
		wantMessages  map[string]string
		wantCondition string
	}{
		{name: "one rack holds the gang", racks: map[string]int{"a": 2, "b": 3}, wantRack: "b"},
		{name: "no rack holds the gang", racks: map[string]int{"a": 2, "b": 2},
			// a and b were placed in rack a, the first placement, and undone;
			// c fit none of rack a's two nodes: only those are counted.
			wantMessages: map[string]string{
				"a": "pod group is unschedulable, pod group is unschedulable, 0/2 placements are available, " +
					"first placement status: minCount (3) cannot be satisfied: 2 scheduled, 0 remaining",
				"b": "pod group is unschedulable, pod group is unschedulable, 0/2 placements are available, " +
					"first placement status: minCount (3) cannot be satisfied: 2 scheduled, 0 remaining",
				"c": "0/2 nodes are available: 2 Insufficient cpu.",
			},
			wantCondition: "pod group is unschedulable, 0/2 placements are available, first placement status: " +
				"minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			ns := fmt.Sprintf("gang-topology-%d", i)
			env := runWithGates(ctx, t, testEnv.Config, ns,
				features.Gates{GenericWorkload: true, TopologyAwareWorkloadScheduling: true})
			rackOf := map[string]string{}
			for rack, count := range tt.racks {
				for n := range count {
					name := fmt.Sprintf("%s-%s%d", ns, rack, n)
					rackOf[name] = rack
					createCPUNode(ctx, t, env, name, rackKey, rack)
				}
			}
			pg := builders.MakePodGroup().Name("gang").Namespace(ns).Gang(3).TopologyKey(rackKey).Obj()
			if _, err := env.Client.SchedulingV1beta1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			members := []string{"a", "b", "c"}
			for _, m := range members {
				pod := scenario.MakePod(m).PodGroup("gang").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
				if err := env.CreatePods(ctx, pod); err != nil {
					t.Fatal(err)
				}
			}
			if tt.wantRack != "" {
				nodes, err := env.WaitForPodsBound(ctx, members)
				if err != nil {
					t.Fatal(err)
				}
				for i, node := range nodes {
					if rackOf[node] != tt.wantRack {
						t.Errorf("%s bound to %s, in rack %q; want rack %q", members[i], node, rackOf[node], tt.wantRack)
					}
				}
			} else {
				for _, m := range members {
					msg, err := env.WaitForPodUnschedulable(ctx, m, scenario.DefaultWait)
					if err != nil {
						t.Fatal(err)
					}
					t.Logf("%s: %s", m, msg)
					if !strings.HasPrefix(msg, tt.wantMessages[m]) {
						t.Errorf("%s: PodScheduled message %q, want it to start with %q", m, msg, tt.wantMessages[m])
					}
				}
			}
			cond := waitForPodGroupCondition(ctx, t, env, "gang", "")
			wantStatus, wantReason := metav1.ConditionTrue, "Scheduled"
			if tt.wantRack == "" {
				wantStatus, wantReason = metav1.ConditionFalse, "Unschedulable"
			}
			t.Logf("PodGroupInitiallyScheduled: %s/%s %q", cond.Status, cond.Reason, cond.Message)
			if cond.Status != wantStatus || cond.Reason != wantReason || !strings.HasPrefix(cond.Message, tt.wantCondition) {
				t.Errorf("condition %s/%s %q, want %s/%s starting %q", cond.Status, cond.Reason, cond.Message,
					wantStatus, wantReason, tt.wantCondition)
			}
		})
	}
}
