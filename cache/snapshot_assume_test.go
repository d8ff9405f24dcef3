// This file tests Snapshot.AssumePod and ForgetPod, with which a pod-group
// cycle places members in the snapshot only: that each placement leaves
// the snapshot as the cache would give it had it assumed the pod itself,
// that forgetting in reverse restores the snapshot exactly, that the cache
// never changes, and what each refuses.

package cache

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/minisched/minisched/minisched/framework"
)

// cacheSummary is what a test compares of a cache: its NodeInfos (with
// their generations), assumed pods and pod-group states (with theirs).
type cacheSummary struct {
	Nodes               map[string]nodeSummary
	Generations         map[string]int64
	AssumedPods         []types.UID
	PodGroups           map[string]groupSummary
	PodGroupGenerations map[string]int64
}

// summarizeCache flattens c for comparison.
func summarizeCache(t *testing.T, c *Cache) cacheSummary {
	t.Helper()
	d := c.Dump()
	out := cacheSummary{Nodes: map[string]nodeSummary{}, Generations: map[string]int64{},
		AssumedPods: sets.List(d.AssumedPods), PodGroupGenerations: map[string]int64{}}
	for name, ni := range d.Nodes {
		out.Nodes[name] = summarizeNodeInfo(ni)
		out.Generations[name] = ni.Generation
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	out.PodGroups = summarizePodGroups(t, c.podGroups)
	for key, st := range c.podGroups {
		out.PodGroupGenerations[key] = st.generation
	}
	return out
}

// freshSnapshot returns a snapshot c fills from nothing.
func freshSnapshot(t *testing.T, c *Cache) *Snapshot {
	t.Helper()
	s := NewEmptySnapshot()
	if err := c.UpdateSnapshot(logr.Discard(), s); err != nil {
		t.Fatalf("UpdateSnapshot into an empty snapshot: %v", err)
	}
	return s
}

// inPodGroup returns pod, made a member of the pod group called group.
func inPodGroup(pod *v1.Pod, group string) *v1.Pod {
	pod.Spec.SchedulingGroup = makeMember("", group).Obj().Spec.SchedulingGroup
	return pod
}

// assumeCluster builds, from seed alone, a cache with pod groups: random
// nodes and pods (clusterModel), then three pod groups, each with or without
// its PodGroup, pending members and bound ones. It returns the cache, a
// snapshot refreshed once midway and once at the end, and the pending pods
// (members and others) a cycle may place. Two calls with one seed build
// equal caches.
func assumeCluster(t *testing.T, seed int64) (*Cache, *Snapshot, []*v1.Pod) {
	t.Helper()
	logger := logr.Discard()
	m := &clusterModel{
		rng:     rand.New(rand.NewSource(seed)),
		nodes:   map[string]*v1.Node{},
		pods:    map[types.UID]*v1.Pod{},
		assumed: sets.New[types.UID](),
	}
	c := New(0, WithPodGroups())
	s := NewEmptySnapshot()
	for i := range 150 {
		m.step(t, c)
		if i == 100 {
			if err := c.UpdateSnapshot(logger, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	var pending []*v1.Pod
	for g := range 3 {
		name := fmt.Sprintf("g%d", g)
		if m.rng.Intn(3) > 0 {
			c.AddPodGroup(makePodGroup(name))
		}
		for range 1 + m.rng.Intn(4) {
			pod := inPodGroup(m.randomPod(nil, ""), name)
			c.AddPodGroupMember(pod)
			pending = append(pending, pod)
		}
		for range m.rng.Intn(3) {
			if err := c.AddPod(logger, inPodGroup(m.randomPod(nil, pick(m.rng, modelNodeNames)), name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 2 {
		pending = append(pending, m.randomPod(nil, ""))
	}
	if err := c.UpdateSnapshot(logger, s); err != nil {
		t.Fatal(err)
	}
	return c, s, pending
}

// TestSnapshotAssumeForget is AssumePod's and ForgetPod's central property,
// over seeded random clusters: a pod-group cycle places several pending
// pods (members of groups and others, some on one node) in the snapshot,
// then forgets them in reverse. After each AssumePod and each ForgetPod the
// snapshot equals what a second, equal cache gives after assuming (or
// forgetting) the same pods itself: nodes, pods, sums, affinity lists,
// term counts, claims in use and pod-group states. At the end it equals a
// fresh snapshot of the untouched cache, down to the generations of its
// NodeInfos and group states, so that the next UpdateSnapshot copies
// nothing; and the cache never changed.
func TestSnapshotAssumeForget(t *testing.T) {
	for seed := range int64(20) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			logger := logr.Discard()
			c, s, pending := assumeCluster(t, seed)
			shadow, _, _ := assumeCluster(t, seed)
			// Generations are process-wide, so the two caches' differ.
			ignoreGenerations := cmpopts.IgnoreFields(cacheSummary{}, "Generations", "PodGroupGenerations")
			if diff := cmp.Diff(summarizeCache(t, c), summarizeCache(t, shadow), append(cmpOpts, ignoreGenerations)...); diff != "" {
				t.Fatalf("two caches built from one seed differ (-first +second):\n%s", diff)
			}
			list, _ := s.List()
			if len(list) == 0 {
				t.Skip("no nodes")
			}
			cacheBefore := summarizeCache(t, c)
			snapshotBefore := summarizeSnapshot(t, s)
			generations := map[string]int64{}
			for name, ni := range s.nodeInfoMap {
				generations[name] = ni.Generation
			}
			// The summaries sort pods; ForgetPod restores their order too.
			podOrder := func() map[string][][]types.UID {
				out := map[string][][]types.UID{}
				for name, ni := range s.nodeInfoMap {
					for _, pods := range [][]*framework.PodInfo{ni.Pods, ni.PodsWithAffinity, ni.PodsWithRequiredAntiAffinity} {
						var order []types.UID
						for _, p := range pods {
							order = append(order, p.Pod.UID)
						}
						out[name] = append(out[name], order)
					}
				}
				return out
			}
			orderBefore := podOrder()

			// Place up to six pending pods on three of the nodes, so that
			// some share a node.
			rng := rand.New(rand.NewSource(seed))
			nodes := []string{pick(rng, list).Node().Name, pick(rng, list).Node().Name, pick(rng, list).Node().Name}
			var placed []*v1.Pod
			for _, i := range rng.Perm(len(pending))[:min(6, len(pending))] {
				placed = append(placed, onNode(pending[i], pick(rng, nodes)))
			}
			check := func(what string) {
				t.Helper()
				want := summarizeSnapshot(t, freshSnapshot(t, shadow))
				if diff := diffSnapshots(want, summarizeSnapshot(t, s)); diff != "" {
					t.Fatalf("%s: the snapshot differs from the cache's that did the same (-want +got):\n%s", what, diff)
				}
				for name, ni := range s.nodeInfoMap {
					if ni.Generation != generations[name] {
						t.Fatalf("%s: node %s's generation is %d, was %d", what, name, ni.Generation, generations[name])
					}
				}
			}
			for _, pod := range placed {
				if err := s.AssumePod(framework.NewPodInfo(pod)); err != nil {
					t.Fatalf("AssumePod(%s on %s): %v", pod.Name, pod.Spec.NodeName, err)
				}
				if err := shadow.AssumePod(logger, pod); err != nil {
					t.Fatal(err)
				}
				check("after AssumePod " + pod.Name + " on " + pod.Spec.NodeName)
			}
			if diff := cmp.Diff(cacheBefore, summarizeCache(t, c), cmpOpts...); diff != "" {
				t.Fatalf("AssumePod in the snapshot changed the cache (-before +after):\n%s", diff)
			}
			for _, pod := range slices.Backward(placed) {
				if err := s.ForgetPod(logger, pod); err != nil {
					t.Fatalf("ForgetPod(%s): %v", pod.Name, err)
				}
				if err := shadow.ForgetPod(logger, pod); err != nil {
					t.Fatal(err)
				}
				check("after ForgetPod " + pod.Name)
			}

			if diff := diffSnapshots(snapshotBefore, summarizeSnapshot(t, s)); diff != "" {
				t.Errorf("the snapshot is not as it was (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(orderBefore, podOrder()); diff != "" {
				t.Errorf("the order of the pods on nodes changed (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(cacheBefore, summarizeCache(t, c), cmpOpts...); diff != "" {
				t.Errorf("the cache changed (-before +after):\n%s", diff)
			}
			groups := maps.Clone(s.podGroupStates)
			for key, st := range s.podGroupStates {
				if want := cacheBefore.PodGroupGenerations[key]; st.generation != want {
					t.Errorf("pod group %s: generation %d, the cache's %d", key, st.generation, want)
				}
			}
			// The next UpdateSnapshot finds nothing changed: no NodeInfo
			// and no group state is copied anew.
			checkUpdateCopiesNothing(t, c, s, groups)
		})
	}
}

// checkUpdateCopiesNothing runs c.UpdateSnapshot(s) on a snapshot put back
// as it was, and checks that it copied no pod-group state anew (groups are
// the states s held before) and that s equals a fresh snapshot of c.
func checkUpdateCopiesNothing(t *testing.T, c *Cache, s *Snapshot, groups map[string]*podGroupState) {
	t.Helper()
	if err := c.UpdateSnapshot(klog.Background(), s); err != nil {
		t.Fatal(err)
	}
	for key, st := range s.podGroupStates {
		if groups[key] != st {
			t.Errorf("pod group %s was copied again", key)
		}
	}
	if diff := diffSnapshots(summarizeSnapshot(t, freshSnapshot(t, c)), summarizeSnapshot(t, s)); diff != "" {
		t.Errorf("the snapshot differs from a fresh one (-want +got):\n%s", diff)
	}
}

func TestSnapshotAssumePodRefuses(t *testing.T) {
	p1 := makeMember("p1", "g").Obj()
	bound := makeMember("bound", "g").NodeName("a").Obj()
	tests := []struct {
		name string
		// before are pods assumed in the snapshot first.
		before  []*v1.Pod
		pod     *v1.Pod
		wantErr string
	}{
		{
			name:    "a node not in the snapshot",
			pod:     onNode(p1, "ghost"),
			wantErr: `cannot assume pod default/p1 in the snapshot: nodeinfo not found for node name "ghost"`,
		},
		{
			name:    "no node",
			pod:     p1,
			wantErr: `cannot assume pod default/p1 in the snapshot: nodeinfo not found for node name ""`,
		},
		{
			name:    "no UID",
			pod:     makePod("p").UID("").NodeName("a").Obj(),
			wantErr: "cannot get cache key for pod default/p with empty UID",
		},
		{
			name:    "a pod already on the node",
			pod:     bound,
			wantErr: "pod default/bound is already on node a in the snapshot",
		},
		{
			name:    "a member its group has assigned",
			pod:     onNode(bound, "b"),
			wantErr: "pod default/bound is already scheduled in pod group default/g",
		},
		{
			name:    "a member assumed already",
			before:  []*v1.Pod{onNode(p1, "a")},
			pod:     onNode(p1, "b"),
			wantErr: "pod default/p1 is already scheduled in pod group default/g",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := refusalSnapshot(t, p1, bound, tt.before)
			before := summarizeSnapshot(t, s)
			err := s.AssumePod(framework.NewPodInfo(tt.pod))
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("AssumePod: got error %v, want %q", err, tt.wantErr)
			}
			if diff := diffSnapshots(before, summarizeSnapshot(t, s)); diff != "" {
				t.Errorf("a refused AssumePod changed the snapshot (-before +after):\n%s", diff)
			}
		})
	}
}

// refusalSnapshot is the snapshot the refusal tests start from: nodes a
// and b, member (not yet scheduled) and bound (a member on a) of pod
// group g, and the assumed pods assumed in the snapshot.
func refusalSnapshot(t *testing.T, member, bound *v1.Pod, assumed []*v1.Pod) *Snapshot {
	t.Helper()
	logger, _ := ktesting.NewTestContext(t)
	c := New(0, WithPodGroups())
	c.AddNode(logger, makeNode("a").Obj())
	c.AddNode(logger, makeNode("b").Obj())
	c.AddPodGroupMember(member)
	if err := c.AddPod(logger, bound); err != nil {
		t.Fatal(err)
	}
	s := freshSnapshot(t, c)
	for _, pod := range assumed {
		if err := s.AssumePod(framework.NewPodInfo(pod)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestSnapshotForgetPodRefuses(t *testing.T) {
	p1 := onNode(makeMember("p1", "g").Obj(), "a")
	p2 := onNode(makeMember("p2", "g").Obj(), "a")
	tests := []struct {
		name    string
		assumed []*v1.Pod
		forget  *v1.Pod
		wantErr string
	}{
		{name: "nothing assumed", forget: p1, wantErr: "pod default/p1 was not assumed in the snapshot"},
		{name: "another pod assumed", assumed: []*v1.Pod{p2}, forget: p1,
			wantErr: "pod default/p1 was not assumed in the snapshot"},
		{name: "not the last assumed", assumed: []*v1.Pod{p1, p2}, forget: p1,
			wantErr: "pod default/p1 is not the last pod assumed in the snapshot: forget pods in the reverse order they were assumed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			c := New(0, WithPodGroups())
			c.AddNode(logger, makeNode("a").Obj())
			s := freshSnapshot(t, c)
			for _, pod := range tt.assumed {
				if err := s.AssumePod(framework.NewPodInfo(pod)); err != nil {
					t.Fatal(err)
				}
			}
			before := summarizeSnapshot(t, s)
			err := s.ForgetPod(logger, tt.forget)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("ForgetPod: got error %v, want %q", err, tt.wantErr)
			}
			if diff := diffSnapshots(before, summarizeSnapshot(t, s)); diff != "" {
				t.Errorf("a refused ForgetPod changed the snapshot (-before +after):\n%s", diff)
			}
		})
	}
}

// TestUpdateSnapshotForgetsAssumedPods checks the safety net: pods a cycle
// left assumed in the snapshot are forgotten by the next UpdateSnapshot,
// even when the cache changed their nodes meanwhile.
func TestUpdateSnapshotForgetsAssumedPods(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, c *Cache)
	}{
		{name: "the cache did not change", change: func(*testing.T, *Cache) {}},
		{name: "the cache added a pod on the same node", change: func(t *testing.T, c *Cache) {
			if err := c.AddPod(logr.Discard(), makePod("other").NodeName("a").Obj()); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "the cache added a member of the same group", change: func(_ *testing.T, c *Cache) {
			c.AddPodGroupMember(makeMember("p3", "g").Obj())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			c := New(0, WithPodGroups())
			c.AddNode(logger, makeNode("a").Obj())
			p1 := makeMember("p1", "g").PodAntiAffinity(requiredPodAntiAffinity("web")).PVC("data").Obj()
			c.AddPodGroupMember(p1)
			s := freshSnapshot(t, c)
			for _, pod := range []*v1.Pod{onNode(p1, "a"), onNode(makeMember("p2", "g").Obj(), "a")} {
				if err := s.AssumePod(framework.NewPodInfo(pod)); err != nil {
					t.Fatal(err)
				}
			}
			tt.change(t, c)
			if err := c.UpdateSnapshot(logger, s); err != nil {
				t.Fatal(err)
			}
			if diff := diffSnapshots(summarizeSnapshot(t, freshSnapshot(t, c)), summarizeSnapshot(t, s)); diff != "" {
				t.Errorf("the snapshot differs from a fresh one (-want +got):\n%s", diff)
			}
			if len(s.assumed) != 0 {
				t.Errorf("%d pods still assumed in the snapshot", len(s.assumed))
			}
		})
	}
}
