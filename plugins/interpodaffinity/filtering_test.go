// Tests for InterPodAffinity's PreFilter, Filter and PreFilterExtensions.
package interpodaffinity

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// The statuses Filter answers with: kube-scheduler's reasons and codes,
// spelled out here so a changed constant shows up.
var (
	affinityMismatch = framework.NewStatus(framework.UnschedulableAndUnresolvable,
		"node(s) didn't match pod affinity rules")
	antiAffinityHit = framework.NewStatus(framework.Unschedulable, "node(s) didn't match pod anti-affinity rules")
	existingAntiHit = framework.NewStatus(framework.Unschedulable,
		"node(s) didn't satisfy existing pods anti-affinity rules")
)

// testNodes are two nodes in zone z1, one in z2 and one without a zone;
// every node has its hostname label.
func testNodes() []*v1.Node {
	return []*v1.Node{
		node("a", zone, "z1", hostname, "a"),
		node("b", zone, "z1", hostname, "b"),
		node("c", zone, "z2", hostname, "c"),
		node("d", hostname, "d"),
	}
}

// runFilter runs PreFilter, then Filter on every node unless PreFilter said
// otherwise, and returns PreFilter's status and the rejected nodes'.
func runFilter(t *testing.T, env *testEnv, p *v1.Pod) (*framework.Status, map[string]*framework.Status) {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	nodes := env.nodeInfos(t)
	if _, s := env.pl.PreFilter(ctx, state, p, nodes); !s.IsSuccess() {
		return s, nil
	}
	got := map[string]*framework.Status{}
	for _, ni := range nodes {
		if s := env.pl.Filter(ctx, state, p, ni); s != nil {
			got[ni.Node().Name] = s
		}
	}
	return nil, got
}

func TestFilter(t *testing.T) {
	db := func(name, nodeName string) *v1.Pod { return pod(name).Label("app", "db").NodeName(nodeName).Obj() }
	web := func(name, nodeName string) *v1.Pod { return pod(name).Label("app", "web").NodeName(nodeName).Obj() }

	tests := []struct {
		name          string
		pod           *v1.Pod
		pods          []*v1.Pod
		namespaces    []*v1.Namespace
		wantPreFilter *framework.Status
		// want holds the nodes Filter rejects; the others pass.
		want map[string]*framework.Status
	}{
		{
			name:          "no affinity anywhere: PreFilter skips",
			pod:           pod("p").Label("app", "web").Obj(),
			pods:          []*v1.Pod{db("db", "a")},
			wantPreFilter: framework.NewStatus(framework.Skip),
		},
		{
			name:          "existing pods' anti-affinity does not select the pod: PreFilter skips",
			pod:           pod("p").Label("app", "web").Obj(),
			pods:          []*v1.Pod{pod("x").NodeName("a").PodAntiAffinity(requiredAnti(term(zone, "app", "db"))).Obj()},
			wantPreFilter: framework.NewStatus(framework.Skip),
		},
		{
			name: "required affinity: only the zone with a matching pod, and never a node without the zone label",
			pod:  pod("p").PodAffinity(required(term(zone, "app", "db"))).Obj(),
			pods: []*v1.Pod{db("db", "a")},
			want: map[string]*framework.Status{"c": affinityMismatch, "d": affinityMismatch},
		},
		{
			name: "required affinity: no matching pod anywhere and the pod does not match itself",
			pod:  pod("p").Label("app", "web").PodAffinity(required(term(zone, "app", "db"))).Obj(),
			pods: []*v1.Pod{web("w", "a")},
			want: map[string]*framework.Status{"a": affinityMismatch, "b": affinityMismatch, "c": affinityMismatch,
				"d": affinityMismatch},
		},
		{
			name: "self-affinity: no matching pod anywhere, the pod matches its own term, so any node with the zone label",
			pod:  pod("p").Label("app", "db").PodAffinity(required(term(zone, "app", "db"))).Obj(),
			pods: []*v1.Pod{web("w", "a")},
			want: map[string]*framework.Status{"d": affinityMismatch},
		},
		{
			name: "self-affinity does not apply once a matching pod exists: only its zone",
			pod:  pod("p").Label("app", "db").PodAffinity(required(term(zone, "app", "db"))).Obj(),
			pods: []*v1.Pod{db("db", "c")},
			want: map[string]*framework.Status{"a": affinityMismatch, "b": affinityMismatch, "d": affinityMismatch},
		},
		{
			name: "two affinity terms: one pod must match both; a pod matching one is no match, so self-affinity applies",
			pod: pod("p").Label("app", "db").Label("tier", "back").
				PodAffinity(required(term(zone, "app", "db"), term(hostname, "tier", "back"))).Obj(),
			pods: []*v1.Pod{db("db", "a"), pod("t").Label("tier", "back").NodeName("c").Obj()},
			// Every node with both labels passes; d lacks the zone.
			want: map[string]*framework.Status{"d": affinityMismatch},
		},
		{
			name: "two affinity terms matched by one pod: its zone and its host",
			pod: pod("p").
				PodAffinity(required(term(zone, "app", "db"), term(hostname, "tier", "back"))).Obj(),
			pods: []*v1.Pod{pod("x").Label("app", "db").Label("tier", "back").NodeName("a").Obj()},
			// b shares the zone but not the host.
			want: map[string]*framework.Status{"b": affinityMismatch, "c": affinityMismatch, "d": affinityMismatch},
		},
		{
			name: "required anti-affinity: not in the zone of a matching pod; a node without the zone label is fine",
			pod:  pod("p").PodAntiAffinity(requiredAnti(term(zone, "app", "web"))).Obj(),
			pods: []*v1.Pod{web("w", "a")},
			want: map[string]*framework.Status{"a": antiAffinityHit, "b": antiAffinityHit},
		},
		{
			name: "required anti-affinity on hostname: only the matching pod's node",
			pod:  pod("p").PodAntiAffinity(requiredAnti(term(hostname, "app", "web"))).Obj(),
			pods: []*v1.Pod{web("w", "a")},
			want: map[string]*framework.Status{"a": antiAffinityHit},
		},
		{
			name: "required anti-affinity towards itself (one per zone) with no matching pod: everywhere",
			pod:  pod("p").Label("app", "web").PodAntiAffinity(requiredAnti(term(zone, "app", "web"))).Obj(),
			pods: []*v1.Pod{db("db", "a")},
			want: map[string]*framework.Status{},
		},
		{
			name: "existing pod's anti-affinity selects the pod: not in that pod's zone",
			pod:  pod("p").Label("app", "web").Obj(),
			pods: []*v1.Pod{pod("x").NodeName("c").PodAntiAffinity(requiredAnti(term(zone, "app", "web"))).Obj()},
			want: map[string]*framework.Status{"c": existingAntiHit},
		},
		{
			name: "existing pod's anti-affinity on hostname: only its node",
			pod:  pod("p").Label("app", "web").Obj(),
			pods: []*v1.Pod{pod("x").NodeName("a").PodAntiAffinity(requiredAnti(term(hostname, "app", "web"))).Obj()},
			want: map[string]*framework.Status{"a": existingAntiHit},
		},
		{
			name: "affinity is checked first, then the pod's anti-affinity, then existing pods'",
			pod: pod("p").Label("app", "web").
				PodAffinity(required(term(zone, "app", "db"))).
				PodAntiAffinity(requiredAnti(term(hostname, "app", "cache"))).Obj(),
			pods: []*v1.Pod{
				db("db", "a"),
				pod("cache").Label("app", "cache").NodeName("a").Obj(),
				pod("x").NodeName("b").PodAntiAffinity(requiredAnti(term(zone, "app", "web"))).Obj(),
			},
			want: map[string]*framework.Status{
				"a": antiAffinityHit,  // affinity holds, the cache pod repels
				"b": existingAntiHit,  // affinity holds, x repels all of zone z1
				"c": affinityMismatch, // no db in z2
				"d": affinityMismatch,
			},
		},
		{
			name: "namespaces: a matching pod in another namespace than the term's does not count",
			pod:  pod("p").PodAffinity(required(inNamespaces(term(zone, "app", "db"), "prod"))).Obj(),
			pods: []*v1.Pod{db("db", "a"), pod("db2").Namespace("prod").Label("app", "db").NodeName("c").Obj()},
			want: map[string]*framework.Status{"a": affinityMismatch, "b": affinityMismatch, "d": affinityMismatch},
		},
		{
			name:       "namespaceSelector: pods in namespaces it selects count, others do not",
			pod:        pod("p").PodAffinity(required(withNamespaceSelector(term(zone, "app", "db"), "team", "a"))).Obj(),
			namespaces: []*v1.Namespace{namespace("ns1", "team", "a"), namespace("ns2", "team", "b"), namespace("default")},
			pods: []*v1.Pod{
				pod("db1").Namespace("ns1").Label("app", "db").NodeName("c").Obj(),
				pod("db2").Namespace("ns2").Label("app", "db").NodeName("a").Obj(),
			},
			want: map[string]*framework.Status{"a": affinityMismatch, "b": affinityMismatch, "d": affinityMismatch},
		},
		{
			name: "namespaceSelector merged with namespaces",
			pod: pod("p").PodAffinity(required(withNamespaceSelector(inNamespaces(term(zone, "app", "db"), "ns2"),
				"team", "a"))).Obj(),
			namespaces: []*v1.Namespace{namespace("ns1", "team", "a"), namespace("ns2", "team", "b")},
			pods:       []*v1.Pod{pod("db2").Namespace("ns2").Label("app", "db").NodeName("a").Obj()},
			want:       map[string]*framework.Status{"c": affinityMismatch, "d": affinityMismatch},
		},
		{
			name: "self-affinity with a namespaceSelector that does not select the pod's own namespace",
			pod: pod("p").Label("app", "db").PodAffinity(required(withNamespaceSelector(term(zone, "app", "db"),
				"team", "a"))).Obj(),
			namespaces: []*v1.Namespace{namespace("ns1", "team", "a"), namespace("default")},
			want: map[string]*framework.Status{"a": affinityMismatch, "b": affinityMismatch, "c": affinityMismatch,
				"d": affinityMismatch},
		},
		{
			name: "self-affinity with a namespaceSelector that selects the pod's own namespace",
			pod: pod("p").Label("app", "db").PodAffinity(required(withNamespaceSelector(term(zone, "app", "db"),
				"team", "a"))).Obj(),
			namespaces: []*v1.Namespace{namespace("default", "team", "a")},
			want:       map[string]*framework.Status{"d": affinityMismatch},
		},
		{
			name:       "empty namespaceSelector: every namespace",
			pod:        pod("p").PodAntiAffinity(requiredAnti(withNamespaceSelector(term(zone, "app", "web")))).Obj(),
			namespaces: []*v1.Namespace{namespace("ns1")},
			pods:       []*v1.Pod{pod("w").Namespace("ns1").Label("app", "web").NodeName("c").Obj()},
			want:       map[string]*framework.Status{"c": antiAffinityHit},
		},
		{
			name:       "existing pod's anti-affinity namespaceSelector matches the incoming pod's namespace labels",
			pod:        pod("p").Namespace("ns1").Label("app", "web").Obj(),
			namespaces: []*v1.Namespace{namespace("ns1", "team", "a")},
			pods: []*v1.Pod{pod("x").Namespace("other").NodeName("a").
				PodAntiAffinity(requiredAnti(withNamespaceSelector(term(zone, "app", "web"), "team", "a"))).Obj()},
			want: map[string]*framework.Status{"a": existingAntiHit, "b": existingAntiHit},
		},
		{
			name: "existing pod's anti-affinity namespaceSelector does not match the incoming pod's namespace: " +
				"PreFilter skips",
			pod:        pod("p").Namespace("ns2").Label("app", "web").Obj(),
			namespaces: []*v1.Namespace{namespace("ns2", "team", "b")},
			pods: []*v1.Pod{pod("x").Namespace("other").NodeName("a").
				PodAntiAffinity(requiredAnti(withNamespaceSelector(term(zone, "app", "web"), "team", "a"))).Obj()},
			wantPreFilter: framework.NewStatus(framework.Skip),
		},
		{
			name: "a selector that does not parse",
			pod: pod("p").PodAffinity(required(v1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app",
					Operator: "Bogus", Values: []string{"x"}}}},
				TopologyKey: zone,
			})).Obj(),
			wantPreFilter: framework.NewStatus(framework.UnschedulableAndUnresolvable,
				`parsing pod: requiredAffinityTerms: "Bogus" is not a valid label selector operator`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, nil, tt.pods, testNodes(), tt.namespaces...)
			gotPreFilter, got := runFilter(t, env, tt.pod)
			if diff := cmp.Diff(tt.wantPreFilter, gotPreFilter); diff != "" {
				t.Fatalf("PreFilter (-want +got):\n%s", diff)
			}
			if tt.wantPreFilter != nil {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Filter (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFilterThroughFramework checks the FailedScheduling view: PreFilter's
// Skip spares Filter, and each node reports its reason.
func TestFilterThroughFramework(t *testing.T) {
	ctx := context.Background()
	env := newTestEnv(t, nil, []*v1.Pod{pod("w").Label("app", "web").NodeName("a").Obj()}, testNodes())

	p := pod("p").PodAntiAffinity(requiredAnti(term(zone, "app", "web"))).Obj()
	state := framework.NewCycleState()
	if _, s, _ := env.schedFramework.RunPreFilterPlugins(ctx, state, p, env.nodeInfos(t)); !s.IsSuccess() {
		t.Fatalf("RunPreFilterPlugins = %v", s)
	}
	got := env.schedFramework.RunFilterPlugins(ctx, state, p, env.nodeInfo(t, "b"))
	if got.Code() != framework.Unschedulable || got.Message() != "node(s) didn't match pod anti-affinity rules" ||
		got.Plugin() != Name {
		t.Errorf("RunFilterPlugins on b = %v, want Unschedulable from %s", got, Name)
	}

	free := pod("q").Obj()
	state = framework.NewCycleState()
	if _, s, _ := env.schedFramework.RunPreFilterPlugins(ctx, state, free, env.nodeInfos(t)); !s.IsSuccess() {
		t.Fatalf("RunPreFilterPlugins = %v", s)
	}
	if _, skipped := state.SkipFilterPlugins[Name]; !skipped {
		t.Errorf("PreFilter did not skip a pod without affinity")
	}
}

func TestFilterWithoutPreFilter(t *testing.T) {
	env := newTestEnv(t, nil, nil, testNodes())
	got := env.pl.Filter(context.Background(), framework.NewCycleState(), pod("p").Obj(), env.nodeInfo(t, "a"))
	if got.Code() != framework.Error {
		t.Fatalf("want Error, got %v", got)
	}
	if want := `error reading "PreFilterInterPodAffinity" from cycleState: not found`; got.Message() != want {
		t.Errorf("message = %q, want %q", got.Message(), want)
	}
}

func TestPreFilterState(t *testing.T) {
	env := newTestEnv(t, nil, []*v1.Pod{
		pod("db").Label("app", "db").NodeName("a").Obj(),
		pod("db2").Label("app", "db").NodeName("c").Obj(),
		pod("web").Label("app", "web").NodeName("b").Obj(),
		pod("x").NodeName("c").PodAntiAffinity(requiredAnti(term(zone, "role", "p"), term(hostname, "role", "p"))).Obj(),
	}, testNodes())
	p := pod("p").Label("role", "p").
		PodAffinity(required(term(zone, "app", "db"))).
		PodAntiAffinity(requiredAnti(term(hostname, "app", "web"))).Obj()

	state := framework.NewCycleState()
	if _, s := env.pl.PreFilter(context.Background(), state, p, env.nodeInfos(t)); !s.IsSuccess() {
		t.Fatalf("PreFilter = %v", s)
	}
	s, err := getPreFilterState(state)
	if err != nil {
		t.Fatal(err)
	}
	got := []topologyCounts{s.existingAntiAffinityCounts, s.affinityCounts, s.antiAffinityCounts}
	want := []topologyCounts{
		// x, on c, repels p in zone z2 and on host c.
		{{zone, "z2"}: 1, {hostname, "c"}: 1},
		// one db in z1, one in z2.
		{{zone, "z1"}: 1, {zone, "z2"}: 1},
		// web is on b.
		{{hostname, "b"}: 1},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(topologyPair{})); diff != "" {
		t.Errorf("counts: existing anti-affinity, affinity, anti-affinity (-want +got):\n%s", diff)
	}
}

// TestAddRemovePod plays preemption's "what if": counts follow pods added
// and removed, Filter answers from them, and a Clone is independent.
func TestAddRemovePod(t *testing.T) {
	ctx := context.Background()
	web := pod("web").Label("app", "web").NodeName("a").Obj()
	db := pod("db").Label("app", "db").NodeName("a").Obj()
	repeller := pod("x").NodeName("c").PodAntiAffinity(requiredAnti(term(zone, "role", "p"))).Obj()
	env := newTestEnv(t, nil, []*v1.Pod{web, db, repeller}, testNodes())

	p := pod("p").Label("role", "p").
		PodAffinity(required(term(zone, "app", "db"))).
		PodAntiAffinity(requiredAnti(term(hostname, "app", "web"))).Obj()
	state := framework.NewCycleState()
	if _, s := env.pl.PreFilter(ctx, state, p, env.nodeInfos(t)); !s.IsSuccess() {
		t.Fatalf("PreFilter = %v", s)
	}
	ext := env.pl.PreFilterExtensions()

	filterAll := func(state *framework.CycleState) map[string]*framework.Status {
		got := map[string]*framework.Status{}
		for _, ni := range env.nodeInfos(t) {
			if s := env.pl.Filter(ctx, state, p, ni); s != nil {
				got[ni.Node().Name] = s
			}
		}
		return got
	}
	check := func(step string, state *framework.CycleState, want map[string]*framework.Status) {
		t.Helper()
		if diff := cmp.Diff(want, filterAll(state)); diff != "" {
			t.Errorf("%s: Filter (-want +got):\n%s", step, diff)
		}
	}
	mustOK := func(s *framework.Status) {
		t.Helper()
		if !s.IsSuccess() {
			t.Fatalf("AddPod/RemovePod = %v", s)
		}
	}

	check("initially", state, map[string]*framework.Status{
		"a": antiAffinityHit, "c": affinityMismatch, "d": affinityMismatch,
	})

	// Removing web frees a; removing x would free z2 but no db is there.
	mustOK(ext.RemovePod(ctx, state, p, framework.NewPodInfo(web), env.nodeInfo(t, "a")))
	mustOK(ext.RemovePod(ctx, state, p, framework.NewPodInfo(repeller), env.nodeInfo(t, "c")))
	check("without web and x", state, map[string]*framework.Status{
		"c": affinityMismatch, "d": affinityMismatch,
	})

	// Without db, no pod matches p's affinity and p does not match it
	// itself: nothing fits. The zero counts were dropped.
	clone := state.Clone()
	mustOK(ext.RemovePod(ctx, clone, p, framework.NewPodInfo(db), env.nodeInfo(t, "a")))
	check("clone without db", clone, map[string]*framework.Status{
		"a": affinityMismatch, "b": affinityMismatch, "c": affinityMismatch, "d": affinityMismatch,
	})
	s, err := getPreFilterState(clone)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.affinityCounts) != 0 || len(s.antiAffinityCounts) != 0 || len(s.existingAntiAffinityCounts) != 0 {
		t.Errorf("counts after removing every pod = %v, %v, %v; want all empty", s.affinityCounts, s.antiAffinityCounts,
			s.existingAntiAffinityCounts)
	}
	check("original, untouched by the clone", state, map[string]*framework.Status{
		"c": affinityMismatch, "d": affinityMismatch,
	})

	// Adding db and x back on c: z2 now has a db, but x repels p from z2.
	mustOK(ext.AddPod(ctx, clone, p, framework.NewPodInfo(db), env.nodeInfo(t, "c")))
	check("clone with db on c", clone, map[string]*framework.Status{
		"a": affinityMismatch, "b": affinityMismatch, "d": affinityMismatch,
	})
	mustOK(ext.AddPod(ctx, clone, p, framework.NewPodInfo(repeller), env.nodeInfo(t, "c")))
	check("clone with db and x on c", clone, map[string]*framework.Status{
		"a": affinityMismatch, "b": affinityMismatch, "c": existingAntiHit, "d": affinityMismatch,
	})
	// And web on c too: p's own anti-affinity (hostname) now also objects,
	// and is checked before existing pods'.
	mustOK(ext.AddPod(ctx, clone, p, framework.NewPodInfo(web), env.nodeInfo(t, "c")))
	check("clone with db, x and web on c", clone, map[string]*framework.Status{
		"a": affinityMismatch, "b": affinityMismatch, "c": antiAffinityHit, "d": affinityMismatch,
	})
}

func TestAddRemovePodWithoutPreFilter(t *testing.T) {
	env := newTestEnv(t, nil, nil, testNodes())
	pi := framework.NewPodInfo(pod("x").Obj())
	for name, s := range map[string]*framework.Status{
		"AddPod": env.pl.AddPod(context.Background(), framework.NewCycleState(), pod("p").Obj(), pi, env.nodeInfo(t, "a")),
		"RemovePod": env.pl.RemovePod(context.Background(), framework.NewCycleState(), pod("p").Obj(), pi,
			env.nodeInfo(t, "a")),
	} {
		if s.Code() != framework.Error {
			t.Errorf("%s without PreFilter = %v, want Error", name, s)
		}
	}
}
