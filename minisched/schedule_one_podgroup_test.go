// Tests for the pod-group algorithm under TopologyAwareWorkloadScheduling:
// the group tried in each rack, the snapshot restricted to a rack during
// its try and given back whole afterwards, the best feasible rack chosen,
// kube-scheduler's "0/N placements" message when none holds the group, and
// the placement metrics.

package minisched

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/minisched/metrics"
	"github.com/minisched/minisched/plugins"
	"github.com/minisched/minisched/queue"
)

const rackKey = "topology.kubernetes.io/rack"

// rackNodes are count nodes of rack r, each with cpu CPUs.
func rackNodes(r string, count int, cpu string) []*v1.Node {
	var out []*v1.Node
	for i := range count {
		out = append(out, st.MakeNode().Name(fmt.Sprintf("%s-%d", r, i)).Label(rackKey, r).
			Capacity(map[v1.ResourceName]string{v1.ResourceCPU: cpu, v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"}).Obj())
	}
	return out
}

// podGroupTest is a Scheduler whose cache holds nodes, a PodGroup and its
// pending members, with the default profile's pod-group plugins.
type podGroupTest struct {
	s       *Scheduler
	fw      *framework.Framework
	group   *framework.QueuedPodGroupInfo
	metrics *metrics.Metrics
}

func newPodGroupTest(t *testing.T, gates features.Gates, nodes []*v1.Node, pg *schedulingv1beta1.PodGroup,
	members []*v1.Pod) *podGroupTest {
	t.Helper()
	logger, ctx := ktesting.NewTestContext(t)
	c := cache.New(0, cache.WithPodGroups())
	for _, n := range nodes {
		c.AddNode(logger, n)
	}
	c.AddPodGroup(pg)
	now := time.Now()
	group := framework.NewQueuedPodGroupInfo(pg, now)
	for i, m := range members {
		c.AddPodGroupMember(m)
		group.AddMember(framework.NewQueuedPodInfo(m, now.Add(time.Duration(i))))
	}
	snapshot := cache.NewEmptySnapshot()
	if err := c.UpdateSnapshot(logger, snapshot); err != nil {
		t.Fatal(err)
	}
	enabled := []configv1.Plugin{{Name: "PrioritySort"}, {Name: "NodeResourcesFit", Weight: ptr.To[int32](1)},
		{Name: "DefaultBinder"}, {Name: "GangScheduling"}}
	if gates.TopologyAwareWorkloadScheduling {
		enabled = append(enabled, configv1.Plugin{Name: "TopologyPlacementGenerator"},
			configv1.Plugin{Name: "PodGroupPodsCount", Weight: ptr.To[int32](1)})
	}
	m := metrics.New()
	m.RegisterPlacement()
	profile := &configv1.KubeSchedulerProfile{SchedulerName: ptr.To("p"),
		Plugins: &configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: enabled}}}
	fw, err := framework.NewFramework(ctx, plugins.NewInTreeRegistry(), profile,
		framework.WithSnapshotSharedLister(snapshot), framework.WithParallelism(1), framework.WithFeatureGates(gates),
		framework.WithPodGroupManager(c), framework.WithMetrics(m), framework.WithEventRecorder(events.NewFakeRecorder(100)))
	if err != nil {
		t.Fatal(err)
	}
	s := &Scheduler{Cache: c, Profiles: map[string]*framework.Framework{"p": fw}, snapshot: snapshot,
		profilePercentage: map[string]*int32{}, logger: logger, gates: gates, metrics: m,
		rng: newTestScheduler().rng, bindSlots: make(chan struct{}, maxConcurrentBinds)}
	s.Queue = queue.New(fw.QueueSortFunc(), map[string]queue.Profile{"p": fw}, queue.WithPodGroups())
	return &podGroupTest{s: s, fw: fw, group: group, metrics: m}
}

// placedOn maps each member the result placed to its node, and each other
// member to its status's message.
func placedOn(res *podGroupResult) map[string]string {
	out := map[string]string{}
	for _, mr := range res.members {
		if mr.status.IsSuccess() {
			out[mr.podInfo.Pod.Name] = mr.result.suggestedHost
		} else {
			out[mr.podInfo.Pod.Name] = mr.status.Message()
		}
	}
	return out
}

// counterValues reads the placement counters: generated, and evaluations
// by result.
func counterValues(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	families, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			switch f.GetName() {
			case "scheduler_generated_placements_total":
				out["generated"] += metric.GetCounter().GetValue()
			case "scheduler_placement_evaluations_total":
				out[label(metric, "result")] += metric.GetCounter().GetValue()
			case "scheduler_placement_evaluation_duration_seconds":
				out["observed "+label(metric, "result")] += float64(metric.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func TestPlacementPodGroupAlgorithm(t *testing.T) {
	tas := features.Gates{GenericWorkload: true, TopologyAwareWorkloadScheduling: true}
	gang := func(minCount int32) *schedulingv1beta1.PodGroup {
		return st.MakePodGroup().Name("g").Gang(minCount).TopologyKey(rackKey).Obj()
	}
	members := func(n int) []*v1.Pod {
		var out []*v1.Pod
		for i := range n {
			name := fmt.Sprintf("m%d", i)
			out = append(out, st.MakePod().Name(name).UID(name).PodGroup("g").
				Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj())
		}
		return out
	}
	join := func(lists ...[]*v1.Node) []*v1.Node {
		var out []*v1.Node
		for _, l := range lists {
			out = append(out, l...)
		}
		return out
	}
	tests := []struct {
		name    string
		gates   features.Gates
		nodes   []*v1.Node
		pg      *schedulingv1beta1.PodGroup
		members []*v1.Pod
		// wantCode and wantMsg are the group's status.
		wantCode framework.Code
		wantMsg  string
		// wantPlaced is each member's node, or its message.
		wantPlaced map[string]string
		// wantCounters are the placement metrics.
		wantCounters map[string]float64
		// parent, if set, are the nodes of a placement the snapshot
		// presents when the algorithm starts (a caller nesting them).
		parent []string
	}{
		{
			name:  "the one rack that holds the gang",
			gates: tas, nodes: join(rackNodes("a", 2, "1"), rackNodes("b", 3, "1")), pg: gang(3), members: members(3),
			wantCode:   framework.Success,
			wantPlaced: map[string]string{"m0": "b-0", "m1": "b-1", "m2": "b-2"},
			wantCounters: map[string]float64{"generated": 2, "feasible": 1, "infeasible": 1,
				"observed feasible": 1, "observed infeasible": 1},
		},
		{
			name:  "no rack holds the gang: the first rack's story",
			gates: tas, nodes: join(rackNodes("a", 2, "1"), rackNodes("b", 2, "1")), pg: gang(3), members: members(3),
			wantCode: framework.Unschedulable,
			wantMsg: "pod group is unschedulable, 0/2 placements are available, first placement status: " +
				"minCount (3) cannot be satisfied: 2 scheduled, 0 remaining",
			// Placed in rack a, then undone; the third fits none of its
			// two nodes, counted without rack b's.
			wantPlaced:   map[string]string{"m0": "a-0", "m1": "a-1", "m2": "0/2 nodes are available: 2 Insufficient cpu."},
			wantCounters: map[string]float64{"generated": 2, "infeasible": 2, "observed infeasible": 2},
		},
		{
			// Both hold it; NodeResourcesFit's MostAllocated prefers the
			// rack the gang fills (b: 3 of 3 CPUs) to the roomier one
			// (a: 3 of 6), PodGroupPodsCount scoring both alike.
			name:  "two racks hold the gang: the fuller one",
			gates: tas, nodes: join(rackNodes("a", 3, "2"), rackNodes("b", 3, "1")), pg: gang(3), members: members(3),
			wantCode:   framework.Success,
			wantPlaced: map[string]string{"m0": "b-0", "m1": "b-1", "m2": "b-2"},
			wantCounters: map[string]float64{"generated": 2, "feasible": 2,
				"observed feasible": 2},
		},
		{
			name:  "within a parent placement: its nodes divided, and it is given back",
			gates: tas, nodes: join(rackNodes("a", 2, "1"), rackNodes("b", 3, "1")), pg: gang(3), members: members(3),
			parent:   []string{"a-0", "a-1", "b-0", "b-1"},
			wantCode: framework.Unschedulable,
			wantMsg: "pod group is unschedulable, 0/2 placements are available, first placement status: " +
				"minCount (3) cannot be satisfied: 2 scheduled, 0 remaining",
			wantPlaced:   map[string]string{"m0": "a-0", "m1": "a-1", "m2": "0/2 nodes are available: 2 Insufficient cpu."},
			wantCounters: map[string]float64{"generated": 2, "infeasible": 2, "observed infeasible": 2},
		},
		{
			name:  "no topology key: one placement of every node",
			gates: tas, nodes: join(rackNodes("a", 2, "1"), rackNodes("b", 1, "1")),
			pg: st.MakePodGroup().Name("g").Gang(4).Obj(), members: members(4),
			wantCode: framework.Unschedulable,
			wantMsg: "pod group is unschedulable, 0/1 placements are available, first placement status: " +
				"minCount (4) cannot be satisfied: 3 scheduled, 0 remaining",
			wantPlaced: map[string]string{"m0": "a-0", "m1": "a-1", "m2": "b-0",
				"m3": "0/3 nodes are available: 3 Insufficient cpu."},
			wantCounters: map[string]float64{"generated": 1, "infeasible": 1, "observed infeasible": 1},
		},
		{
			name:  "a topology key no node has",
			gates: tas, nodes: rackNodes("a", 2, "1"),
			pg: st.MakePodGroup().Name("g").Gang(2).TopologyKey("zone").Obj(), members: members(2),
			wantCode: framework.Unschedulable, wantMsg: "no feasible placements found",
			wantPlaced: map[string]string{}, wantCounters: map[string]float64{},
		},
		{
			name:  "without the gate the topology key is not read",
			gates: features.Gates{GenericWorkload: true}, nodes: join(rackNodes("a", 2, "1"), rackNodes("b", 1, "1")),
			pg: gang(3), members: members(3),
			wantCode:     framework.Success,
			wantPlaced:   map[string]string{"m0": "a-0", "m1": "a-1", "m2": "b-0"},
			wantCounters: map[string]float64{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newPodGroupTest(t, tt.gates, tt.nodes, tt.pg, tt.members)
			_, ctx := ktesting.NewTestContext(t)
			var parent *framework.Placement
			if tt.parent != nil {
				parent = &framework.Placement{Name: "parent"}
				for _, n := range tt.parent {
					ni, err := env.s.snapshot.Get(n)
					if err != nil {
						t.Fatal(err)
					}
					parent.Nodes = append(parent.Nodes, ni)
				}
				if err := env.s.snapshot.AssumePlacement(parent); err != nil {
					t.Fatal(err)
				}
			}
			groupState := framework.NewCycleState()
			res := env.s.podGroupAlgorithm(ctx, env.fw, groupState, env.group)
			if res.status.Code() != tt.wantCode || tt.wantMsg != "" && res.status.Message() != tt.wantMsg {
				t.Errorf("group status = %v %q, want %v %q", res.status.Code(), res.status.Message(), tt.wantCode, tt.wantMsg)
			}
			got := placedOn(res)
			// Nodes in a rack are tried from the search's start index on:
			// compare which nodes, not which member got which.
			if diff := cmp.Diff(summarize(tt.wantPlaced), summarize(got)); diff != "" {
				t.Errorf("members (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCounters, counterValues(t, env.metrics)); diff != "" {
				t.Errorf("placement metrics (-want +got):\n%s", diff)
			}
			// Every try was undone, and the snapshot presents what it did
			// before: every node, or the parent placement.
			if p := env.s.snapshot.GetPlacement(); p != parent {
				t.Errorf("placement %v left assumed in the snapshot, want %v", p, parent)
			}
			want := len(tt.nodes)
			if tt.parent != nil {
				want = len(tt.parent)
			}
			if n := env.s.snapshot.NumNodesInPlacement(); n != want {
				t.Errorf("the snapshot presents %d nodes, want %d", n, want)
			}
			all, _ := env.s.snapshot.List()
			for _, ni := range all {
				if len(ni.Pods) != 0 {
					t.Errorf("node %s still holds %d pods the cycle placed", ni.Node().Name, len(ni.Pods))
				}
			}
			state, err := env.s.snapshot.PodGroupStates().Get("default", "g")
			if err != nil || state.ScheduledPodsCount() != 0 {
				t.Errorf("the group's state counts %v scheduled pods (%v), want 0", state, err)
			}
		})
	}
}

// summarize turns member → node-or-message into the sorted list of what
// the members got, which does not depend on the order nodes were tried in.
func summarize(placed map[string]string) []string {
	return slices.Sorted(maps.Values(placed))
}
