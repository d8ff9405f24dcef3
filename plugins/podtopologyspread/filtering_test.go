// Tests for PodTopologySpread's PreFilter and Filter: skew across zones and
// hosts, minDomains, the node inclusion policies, missing labels,
// matchLabelKeys, default constraints, and the exact codes and reasons.
package podtopologyspread

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// verdict renders a Filter status as "Code: message", "" for success.
func verdict(s *framework.Status) string {
	if s.IsSuccess() {
		return ""
	}
	return s.Code().String() + ": " + s.Message()
}

const (
	skewViolated = "Unschedulable: " + ErrReasonConstraintsNotMatch
	labelMissing = "UnschedulableAndUnresolvable: " + ErrReasonNodeLabelNotMatch
)

func TestFilter(t *testing.T) {
	// Four nodes in two zones; most cases place app=web pods on them.
	fourNodes := []*v1.Node{
		zonedNode("a", "z1").Obj(), zonedNode("b", "z1").Obj(),
		zonedNode("x", "z2").Obj(), zonedNode("y", "z2").Obj(),
	}
	webPod := func(cs ...v1.TopologySpreadConstraint) *v1.Pod {
		p := st.MakePod().Name("p").UID("p").Label("app", "web")
		for _, c := range cs {
			p.SpreadConstraint(c)
		}
		return p.Obj()
	}
	tests := []struct {
		name  string
		args  string
		pod   *v1.Pod
		pods  []*v1.Pod
		nodes []*v1.Node
		objs  []runtime.Object
		// want is each node's verdict ("" fits).
		want map[string]string
		// wantSkip: PreFilter returns Skip (no hard constraints).
		wantSkip bool
	}{
		{
			// z1 holds 2, z2 holds 1: z1 → 2+1-1 = 2 > 1, z2 → 1+1-1 = 1.
			name:  "zone skew",
			pod:   webPod(hard(1, zoneKey, web)),
			pods:  concat(podsOn("a", 1), podsOn("b", 1), podsOn("x", 1)),
			nodes: fourNodes,
			want:  map[string]string{"a": skewViolated, "b": skewViolated, "x": "", "y": ""},
		},
		{
			// Same pods, maxSkew 2: z1 → 2 <= 2.
			name:  "zone skew within a larger maxSkew",
			pod:   webPod(hard(2, zoneKey, web)),
			pods:  concat(podsOn("a", 1), podsOn("b", 1), podsOn("x", 1)),
			nodes: fourNodes,
			want:  map[string]string{"a": "", "b": "", "x": "", "y": ""},
		},
		{
			// Per host: a 2, b 1, x 0, y 0; min 0. a → 3, b → 2, x,y → 1.
			name:  "hostname skew",
			pod:   webPod(hard(1, hostKey, web)),
			pods:  concat(podsOn("a", 2), podsOn("b", 1)),
			nodes: fourNodes,
			want:  map[string]string{"a": skewViolated, "b": skewViolated, "x": "", "y": ""},
		},
		{
			// The pod does not match its own selector: no +1. a → 2-0 > 1,
			// b → 1 <= 1.
			name: "pod not matching its own selector",
			pod: st.MakePod().Name("p").Label("app", "other").
				SpreadConstraint(hard(1, hostKey, web)).Obj(),
			pods:  concat(podsOn("a", 2), podsOn("b", 1)),
			nodes: fourNodes,
			want:  map[string]string{"a": skewViolated, "b": "", "x": "", "y": ""},
		},
		{
			// Node c has no zone label: it does not count as a domain and is
			// rejected as unresolvable. z1 1, z2 1: every labelled node fits.
			name:  "node missing the topology key",
			pod:   webPod(hard(1, zoneKey, web)),
			pods:  concat(podsOn("a", 1), podsOn("x", 1), podsOn("c", 5)),
			nodes: []*v1.Node{zonedNode("a", "z1").Obj(), zonedNode("x", "z2").Obj(), zonedNode("c", "").Obj()},
			want:  map[string]string{"a": "", "x": "", "c": labelMissing},
		},
		{
			// The missing label is reported even where the other constraint
			// is violated, since constraints are checked in order.
			name:  "missing label checked per constraint in order",
			pod:   webPod(hard(1, hostKey, web), hard(1, zoneKey, web)),
			pods:  concat(podsOn("a", 3)),
			nodes: []*v1.Node{zonedNode("a", "z1").Obj(), zonedNode("x", "z2").Obj(), zonedNode("c", "").Obj()},
			want:  map[string]string{"a": skewViolated, "x": "", "c": labelMissing},
		},
		{
			// Two constraints: zone is fine everywhere (z1 2, z2 2), the
			// host constraint rejects a (2+1-0 = 3 > 2).
			name:  "every constraint must hold",
			pod:   webPod(hard(1, zoneKey, web), hard(2, hostKey, web)),
			pods:  concat(podsOn("a", 2), podsOn("x", 1), podsOn("y", 1)),
			nodes: fourNodes,
			want:  map[string]string{"a": skewViolated, "b": "", "x": "", "y": ""},
		},
		{
			// z1 1, z2 1. Without minDomains: 1+1-1 = 1 fits.
			name:  "minDomains met",
			pod:   webPod(hard(1, zoneKey, web, minDomains(2))),
			pods:  concat(podsOn("a", 1), podsOn("x", 1)),
			nodes: fourNodes,
			want:  map[string]string{"a": "", "b": "", "x": "", "y": ""},
		},
		{
			// minDomains 3 > 2 zones: the global minimum is 0, 1+1-0 = 2 > 1.
			name:  "fewer domains than minDomains",
			pod:   webPod(hard(1, zoneKey, web, minDomains(3))),
			pods:  concat(podsOn("a", 1), podsOn("x", 1)),
			nodes: fourNodes,
			want:  map[string]string{"a": skewViolated, "b": skewViolated, "x": skewViolated, "y": skewViolated},
		},
		{
			// Node c (zone z3) does not match the pod's nodeSelector: with
			// the default Honor policy its empty zone does not count, the
			// minimum is 1 and a fits (1+1-1 = 1).
			name: "nodeAffinityPolicy Honor (default) leaves out nodes the pod cannot use",
			pod: st.MakePod().Name("p").Label("app", "web").NodeSelector("pool", "x").
				SpreadConstraint(hard(1, zoneKey, web)).Obj(),
			pods: concat(podsOn("a", 1), podsOn("b", 1)),
			nodes: []*v1.Node{
				zonedNode("a", "z1").Label("pool", "x").Obj(),
				zonedNode("b", "z2").Label("pool", "x").Obj(),
				zonedNode("c", "z3").Obj(),
			},
			want: map[string]string{"a": "", "b": "", "c": ""},
		},
		{
			// With Ignore, z3 counts with 0 pods: a → 1+1-0 = 2 > 1.
			name: "nodeAffinityPolicy Ignore counts every node",
			pod: st.MakePod().Name("p").Label("app", "web").NodeSelector("pool", "x").
				SpreadConstraint(hard(1, zoneKey, web, affinityPolicy(v1.NodeInclusionPolicyIgnore))).Obj(),
			pods: concat(podsOn("a", 1), podsOn("b", 1)),
			nodes: []*v1.Node{
				zonedNode("a", "z1").Label("pool", "x").Obj(),
				zonedNode("b", "z2").Label("pool", "x").Obj(),
				zonedNode("c", "z3").Obj(),
			},
			want: map[string]string{"a": skewViolated, "b": skewViolated, "c": ""},
		},
		{
			// Node c is tainted and the pod does not tolerate it. With the
			// default Ignore policy its empty zone counts: a → 2 > 1.
			name: "nodeTaintsPolicy Ignore (default) counts tainted nodes",
			pod:  webPod(hard(1, zoneKey, web)),
			pods: concat(podsOn("a", 1), podsOn("b", 1)),
			nodes: []*v1.Node{
				zonedNode("a", "z1").Obj(), zonedNode("b", "z2").Obj(),
				zonedNode("c", "z3").Taint("dedicated", "x", v1.TaintEffectNoSchedule).Obj(),
			},
			want: map[string]string{"a": skewViolated, "b": skewViolated, "c": ""},
		},
		{
			// With Honor, c does not count: minimum 1, a → 1.
			name: "nodeTaintsPolicy Honor leaves out untolerated tainted nodes",
			pod:  webPod(hard(1, zoneKey, web, taintsPolicy(v1.NodeInclusionPolicyHonor))),
			pods: concat(podsOn("a", 1), podsOn("b", 1)),
			nodes: []*v1.Node{
				zonedNode("a", "z1").Obj(), zonedNode("b", "z2").Obj(),
				zonedNode("c", "z3").Taint("dedicated", "x", v1.TaintEffectNoSchedule).Obj(),
			},
			want: map[string]string{"a": "", "b": "", "c": ""},
		},
		{
			// A PreferNoSchedule taint does not keep pods off: c counts.
			name: "nodeTaintsPolicy Honor ignores PreferNoSchedule taints",
			pod:  webPod(hard(1, zoneKey, web, taintsPolicy(v1.NodeInclusionPolicyHonor))),
			pods: concat(podsOn("a", 1), podsOn("b", 1)),
			nodes: []*v1.Node{
				zonedNode("a", "z1").Obj(), zonedNode("b", "z2").Obj(),
				zonedNode("c", "z3").Taint("dedicated", "x", v1.TaintEffectPreferNoSchedule).Obj(),
			},
			want: map[string]string{"a": skewViolated, "b": skewViolated, "c": ""},
		},
		{
			// A tolerated taint does not exclude the node either.
			name: "nodeTaintsPolicy Honor counts tolerated tainted nodes",
			pod: st.MakePod().Name("p").Label("app", "web").
				Toleration(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpExists}).
				SpreadConstraint(hard(1, zoneKey, web, taintsPolicy(v1.NodeInclusionPolicyHonor))).Obj(),
			pods: concat(podsOn("a", 1), podsOn("b", 1)),
			nodes: []*v1.Node{
				zonedNode("a", "z1").Obj(), zonedNode("b", "z2").Obj(),
				zonedNode("c", "z3").Taint("dedicated", "x", v1.TaintEffectNoSchedule).Obj(),
			},
			want: map[string]string{"a": skewViolated, "b": skewViolated, "c": ""},
		},
		{
			// matchLabelKeys [version] narrows the selector to version=v2:
			// the two v1 pods on a do not count, so a fits (0+1-0).
			name: "matchLabelKeys narrow the selector",
			pod: st.MakePod().Name("p").Label("app", "web").Label("version", "v2").
				SpreadConstraint(hard(1, hostKey, web, matchLabelKeys("version"))).Obj(),
			pods: []*v1.Pod{
				st.MakePod().Name("old1").Label("app", "web").Label("version", "v1").NodeName("a").Obj(),
				st.MakePod().Name("old2").Label("app", "web").Label("version", "v1").NodeName("a").Obj(),
			},
			nodes: []*v1.Node{zonedNode("a", "z1").Obj(), zonedNode("b", "z1").Obj()},
			want:  map[string]string{"a": "", "b": ""},
		},
		{
			// Without matchLabelKeys the same pods count: a → 2+1-0 > 1.
			name: "without matchLabelKeys every app=web pod counts",
			pod: st.MakePod().Name("p").Label("app", "web").Label("version", "v2").
				SpreadConstraint(hard(1, hostKey, web)).Obj(),
			pods: []*v1.Pod{
				st.MakePod().Name("old1").Label("app", "web").Label("version", "v1").NodeName("a").Obj(),
				st.MakePod().Name("old2").Label("app", "web").Label("version", "v1").NodeName("a").Obj(),
			},
			nodes: []*v1.Node{zonedNode("a", "z1").Obj(), zonedNode("b", "z1").Obj()},
			want:  map[string]string{"a": skewViolated, "b": ""},
		},
		{
			// Terminating pods and pods of other namespaces are not counted:
			// a holds one countable pod, 1+1-0 = 2 > 1 would fail, so there
			// must be none.
			name: "terminating pods and other namespaces do not count",
			pod:  webPod(hard(1, hostKey, web)),
			pods: []*v1.Pod{
				func() *v1.Pod {
					p := st.MakePod().Name("dying").Label("app", "web").NodeName("a").Obj()
					p.DeletionTimestamp = &metav1.Time{}
					return p
				}(),
				st.MakePod().Name("elsewhere").Namespace("other").Label("app", "web").NodeName("a").Obj(),
			},
			nodes: []*v1.Node{zonedNode("a", "z1").Obj(), zonedNode("b", "z1").Obj()},
			want:  map[string]string{"a": "", "b": ""},
		},
		{
			name:     "only soft constraints: Skip",
			pod:      webPod(soft(1, zoneKey, web)),
			nodes:    fourNodes,
			wantSkip: true,
		},
		{
			// System defaults are all ScheduleAnyway: nothing to filter.
			name:     "no constraints with system defaults: Skip",
			pod:      webPod(),
			nodes:    fourNodes,
			objs:     []runtime.Object{service("web", web)},
			wantSkip: true,
		},
		{
			// List defaults with a DoNotSchedule zone constraint; the
			// Service selects the pod, so its selector (app=web) applies:
			// z1 2, z2 0 → z1 nodes 3 > 1.
			name: "default constraint with a Service's selector",
			args: `{"defaultingType":"List","defaultConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone",` +
				`"whenUnsatisfiable":"DoNotSchedule"}]}`,
			pod:   webPod(),
			pods:  podsOn("a", 2),
			nodes: fourNodes,
			objs:  []runtime.Object{service("web", web)},
			want:  map[string]string{"a": skewViolated, "b": skewViolated, "x": "", "y": ""},
		},
		{
			// No Service or controller selects the pod: no constraints.
			name: "default constraint without a selecting Service: Skip",
			args: `{"defaultingType":"List","defaultConstraints":[{"maxSkew":1,` +
				`"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}]}`,
			pod:      webPod(),
			pods:     podsOn("a", 2),
			nodes:    fourNodes,
			objs:     []runtime.Object{service("db", map[string]string{"app": "db"})},
			wantSkip: true,
		},
		{
			// The pod's own (soft) constraint replaces the defaults.
			name: "own constraints replace the defaults",
			args: `{"defaultingType":"List","defaultConstraints":[{"maxSkew":1,` +
				`"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}]}`,
			pod:      webPod(soft(1, hostKey, web)),
			pods:     podsOn("a", 2),
			nodes:    fourNodes,
			objs:     []runtime.Object{service("web", web)},
			wantSkip: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := newPlugin(t, ctx, tt.args, tt.pods, tt.nodes, tt.objs...)
			state := framework.NewCycleState()
			_, s := pl.PreFilter(ctx, state, tt.pod, nodeInfos(t, pl))
			if tt.wantSkip {
				if !s.IsSkip() {
					t.Fatalf("PreFilter = %v, want Skip", s)
				}
				return
			}
			if !s.IsSuccess() {
				t.Fatalf("PreFilter: %v", s)
			}
			got := map[string]string{}
			for _, n := range tt.nodes {
				got[n.Name] = verdict(pl.Filter(ctx, state, tt.pod, nodeInfo(t, pl, n.Name)))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Filter verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilterWithoutPreFilter(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	node := zonedNode("a", "z1").Obj()
	pl := newPlugin(t, ctx, "", nil, []*v1.Node{node})
	s := pl.Filter(ctx, framework.NewCycleState(), st.MakePod().Name("p").Obj(), nodeInfo(t, pl, "a"))
	if s.Code() != framework.Error {
		t.Errorf("Filter without PreFilter state = %v, want Error", s)
	}
}

// TestPreFilterExtensions checks the counts and critical paths PreFilter leaves,
// and that AddPod and RemovePod update them, on a clone, as preemption
// does.
func TestPreFilterExtensions(t *testing.T) {
	nodes := []*v1.Node{
		zonedNode("a", "z1").Obj(), zonedNode("b", "z1").Obj(),
		zonedNode("x", "z2").Obj(), zonedNode("c", "").Obj(),
		zonedNode("t", "z3").Taint("dedicated", "x", v1.TaintEffectNoSchedule).Obj(),
	}
	// z1 2 pods, z2 1; z3 is tainted and, with Honor, not a domain.
	pods := concat(podsOn("a", 1), podsOn("b", 1), podsOn("x", 1))
	pod := st.MakePod().Name("p").Label("app", "web").
		SpreadConstraint(hard(1, zoneKey, web, taintsPolicy(v1.NodeInclusionPolicyHonor))).Obj()
	webOn := func(name string) *framework.PodInfo {
		return framework.NewPodInfo(st.MakePod().Name(name).UID(name).Label("app", "web").Obj())
	}
	type counts struct {
		Zones map[string]int
		Paths criticalPaths
	}
	initial := counts{
		Zones: map[string]int{"z1": 2, "z2": 1},
		Paths: criticalPaths{{"z2", 1}, {"z1", 2}},
	}
	tests := []struct {
		name string
		// update runs AddPod or RemovePod on the state.
		update func(context.Context, *PodTopologySpread, *framework.CycleState) *framework.Status
		want   counts
		// wantA is Filter's verdict on node a afterwards.
		wantA string
	}{
		{
			name:   "PreFilter",
			update: func(context.Context, *PodTopologySpread, *framework.CycleState) *framework.Status { return nil },
			want:   initial,
			wantA:  skewViolated, // 2+1-1 = 2 > 1
		},
		{
			// z2 grows to 2: both zones equal, a → 2+1-2 = 1 fits.
			name: "AddPod in z2",
			update: func(ctx context.Context, pl *PodTopologySpread, s *framework.CycleState) *framework.Status {
				return pl.AddPod(ctx, s, pod, webOn("new"), plugintesting.MakeNodeInfo(nodes[2]))
			},
			want:  counts{Zones: map[string]int{"z1": 2, "z2": 2}, Paths: criticalPaths{{"z2", 2}, {"z1", 2}}},
			wantA: "",
		},
		{
			// z1 shrinks to 1: a → 1+1-1 = 1 fits.
			name: "RemovePod in z1",
			update: func(ctx context.Context, pl *PodTopologySpread, s *framework.CycleState) *framework.Status {
				return pl.RemovePod(ctx, s, pod, framework.NewPodInfo(pods[0]), plugintesting.MakeNodeInfo(nodes[0]))
			},
			want:  counts{Zones: map[string]int{"z1": 1, "z2": 1}, Paths: criticalPaths{{"z2", 1}, {"z1", 1}}},
			wantA: "",
		},
		{
			name: "AddPod of another namespace changes nothing",
			update: func(ctx context.Context, pl *PodTopologySpread, s *framework.CycleState) *framework.Status {
				other := st.MakePod().Name("o").Namespace("other").Label("app", "web").Obj()
				return pl.AddPod(ctx, s, pod, framework.NewPodInfo(other), plugintesting.MakeNodeInfo(nodes[2]))
			},
			want:  initial,
			wantA: skewViolated,
		},
		{
			name: "AddPod of a pod the selector does not match changes nothing",
			update: func(ctx context.Context, pl *PodTopologySpread, s *framework.CycleState) *framework.Status {
				db := st.MakePod().Name("db").Label("app", "db").Obj()
				return pl.AddPod(ctx, s, pod, framework.NewPodInfo(db), plugintesting.MakeNodeInfo(nodes[2]))
			},
			want:  initial,
			wantA: skewViolated,
		},
		{
			name: "AddPod on a node without the topology key changes nothing",
			update: func(ctx context.Context, pl *PodTopologySpread, s *framework.CycleState) *framework.Status {
				return pl.AddPod(ctx, s, pod, webOn("new"), plugintesting.MakeNodeInfo(nodes[3]))
			},
			want:  initial,
			wantA: skewViolated,
		},
		{
			name: "AddPod on an untolerated tainted node changes nothing under Honor",
			update: func(ctx context.Context, pl *PodTopologySpread, s *framework.CycleState) *framework.Status {
				return pl.AddPod(ctx, s, pod, webOn("new"), plugintesting.MakeNodeInfo(nodes[4]))
			},
			want:  initial,
			wantA: skewViolated,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := newPlugin(t, ctx, "", pods, nodes)
			original := framework.NewCycleState()
			if _, s := pl.PreFilter(ctx, original, pod, nodeInfos(t, pl)); !s.IsSuccess() {
				t.Fatal(s)
			}
			// Preemption works on a clone; the original must not change.
			state := original.Clone()
			if s := tt.update(ctx, pl, state); !s.IsSuccess() {
				t.Fatal(s)
			}
			got, err := getPreFilterState(state)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, counts{Zones: got.TpValueToMatchNum[0], Paths: *got.CriticalPaths[0]}); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantA, verdict(pl.Filter(ctx, state, pod, nodeInfo(t, pl, "a")))); diff != "" {
				t.Errorf("Filter on a (-want +got):\n%s", diff)
			}
			orig, _ := getPreFilterState(original)
			if diff := cmp.Diff(initial, counts{Zones: orig.TpValueToMatchNum[0], Paths: *orig.CriticalPaths[0]}); diff != "" {
				t.Errorf("original state changed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCriticalPaths(t *testing.T) {
	tests := []struct {
		name    string
		updates []criticalPath
		want    criticalPaths
	}{
		{
			name:    "two smallest kept, smallest first",
			updates: []criticalPath{{"z1", 3}, {"z2", 1}, {"z3", 2}, {"z4", 5}},
			want:    criticalPaths{{"z2", 1}, {"z3", 2}},
		},
		{
			name:    "a tracked domain growing swaps places",
			updates: []criticalPath{{"z1", 1}, {"z2", 2}, {"z1", 3}},
			want:    criticalPaths{{"z2", 2}, {"z1", 3}},
		},
		{
			name:    "a tracked domain shrinking stays in place",
			updates: []criticalPath{{"z1", 1}, {"z2", 2}, {"z2", 0}},
			want:    criticalPaths{{"z2", 0}, {"z1", 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newCriticalPaths()
			for _, u := range tt.updates {
				p.update(u.TopologyValue, u.MatchNum)
			}
			if diff := cmp.Diff(tt.want, *p); diff != "" {
				t.Errorf("critical paths (-want +got):\n%s", diff)
			}
		})
	}
}
