// This file tests UpdateSnapshot: that the incremental snapshot always equals
// one built from scratch, that it recovers from an inconsistent state, and
// what it costs (BenchmarkUpdateSnapshot).

package cache

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
)

// clusterModel is what the random test believes the cache holds; it picks
// only operations the cache must accept.
type clusterModel struct {
	rng     *rand.Rand
	nodes   map[string]*v1.Node
	pods    map[types.UID]*v1.Pod
	assumed sets.Set[types.UID]
	// nextPod and nextPort make pod names and host ports unique (two pods
	// sharing a host port on a node would make the port accounting depend on
	// history, which is not what this test is about).
	nextPod  int
	nextPort int32
}

// targetPods is roughly how many pods the random test keeps in the cache.
const targetPods = 40

// The universe the random test draws from.
var (
	modelNodeNames = []string{"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9"}
	modelZones     = [][2]string{{"r1", "a"}, {"r1", "b"}, {"r2", "a"}, {"", ""}}
	modelImages    = []struct {
		size  int64
		names []string
	}{
		{100, []string{"nginx:1", "nginx@sha256:1"}},
		{200, []string{"redis:7"}},
		{300, []string{"pause:3", "pause@sha256:3"}},
		{400, []string{"busybox:1"}},
		{500, []string{"etcd:3"}},
	}
)

// pick returns a random element of a non-empty slice.
func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.Intn(len(xs))] }

// sortedKeys returns a map's keys in order, so the random choices do not
// depend on map iteration order.
func sortedKeys[K ~string, V any](m map[K]V) []K { return slices.Sorted(maps.Keys(m)) }

func (m *clusterModel) randomNode(name string) *v1.Node {
	zone := pick(m.rng, modelZones)
	b := makeNode(name).Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU:    fmt.Sprint(1 + m.rng.Intn(8)),
		v1.ResourceMemory: fmt.Sprintf("%dGi", 1+m.rng.Intn(16)),
		v1.ResourcePods:   "110",
	})
	if zone[0] != "" {
		b.Region(zone[0]).Zone(zone[1])
	}
	b.Label(v1.LabelHostname, name)
	for _, img := range modelImages {
		if m.rng.Intn(3) == 0 {
			b.Images(img.size, img.names...)
		}
	}
	return b.Obj()
}

// randomPod returns a new pod on nodeName or, if old is set, a new version of
// old (same name and UID).
func (m *clusterModel) randomPod(old *v1.Pod, nodeName string) *v1.Pod {
	var b *st.PodWrapper
	if old != nil {
		b = st.MakePod().UID(string(old.UID)).Name(old.Name).NodeName(nodeName)
	} else {
		m.nextPod++
		b = makePod(fmt.Sprintf("p%d", m.nextPod)).NodeName(nodeName)
	}
	reqs := map[v1.ResourceName]string{}
	if m.rng.Intn(4) > 0 {
		reqs[v1.ResourceCPU] = fmt.Sprintf("%dm", 50*m.rng.Intn(10))
	}
	if m.rng.Intn(4) > 0 {
		reqs[v1.ResourceMemory] = fmt.Sprintf("%dMi", 64*m.rng.Intn(10))
	}
	if m.rng.Intn(5) == 0 {
		reqs["example.com/gpu"] = fmt.Sprint(1 + m.rng.Intn(2))
	}
	b.Req(reqs)
	if m.rng.Intn(5) == 0 {
		m.nextPort++
		b.HostPort(v1.ProtocolTCP, "", 8000+m.nextPort)
	}
	for range m.rng.Intn(3) {
		// Claims shared between pods: the snapshot counts their users.
		b.PVC(pick(m.rng, []string{"data", "logs", "cache"}))
	}
	if m.rng.Intn(6) == 0 {
		b.PodAffinity(requiredPodAffinity("web"))
	}
	if m.rng.Intn(6) == 0 {
		// Anti-affinity per node or per zone (which some nodes lack), to
		// one of two groups: the snapshot's term index counts them.
		term := affinityTerm(pick(m.rng, []string{"db", "cache"}))
		term.TopologyKey = pick(m.rng, []string{v1.LabelHostname, v1.LabelTopologyZone})
		b.PodAntiAffinity(&v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term}})
	}
	return b.Obj()
}

// podsWhere lists the model's assumed (or added) pods, sorted.
func (m *clusterModel) podsWhere(assumed bool) []types.UID {
	var out []types.UID
	for _, uid := range sortedKeys(m.pods) {
		if m.assumed.Has(uid) == assumed {
			out = append(out, uid)
		}
	}
	return out
}

// step performs one random operation on c and the model, and describes it.
func (m *clusterModel) step(t *testing.T, c *Cache) string {
	t.Helper()
	logger := logr.Discard()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("cache refused a valid operation: %v", err)
		}
	}
	absent := slices.DeleteFunc(slices.Clone(modelNodeNames), func(n string) bool { return m.nodes[n] != nil })
	present := sortedKeys(m.nodes)
	added, assumed := m.podsWhere(false), m.podsWhere(true)

	for {
		switch m.rng.Intn(10) {
		case 0: // a node joins
			if len(absent) == 0 {
				continue
			}
			node := m.randomNode(pick(m.rng, absent))
			c.AddNode(logger, node)
			m.nodes[node.Name] = node
			return "AddNode " + node.Name
		case 1: // a node changes: allocatable, images, maybe zone
			if len(present) == 0 {
				continue
			}
			old := m.nodes[pick(m.rng, present)]
			node := m.randomNode(old.Name)
			c.UpdateNode(logger, old, node)
			m.nodes[node.Name] = node
			return "UpdateNode " + node.Name
		case 2: // a node goes, possibly with pods still on it
			if len(present) == 0 || m.rng.Intn(2) == 0 {
				continue
			}
			name := pick(m.rng, present)
			must(c.RemoveNode(logger, m.nodes[name]))
			delete(m.nodes, name)
			return "RemoveNode " + name
		case 3: // the scheduler assumes a new pod, on any node name
			pod := m.randomPod(nil, pick(m.rng, modelNodeNames))
			must(c.AssumePod(logger, pod))
			if m.rng.Intn(2) == 0 {
				must(c.FinishBinding(logger, pod))
			}
			m.pods[pod.UID] = pod
			m.assumed.Insert(pod.UID)
			return "AssumePod " + pod.Name + " on " + pod.Spec.NodeName
		case 4: // binding failed
			if len(assumed) == 0 {
				continue
			}
			pod := m.pods[pick(m.rng, assumed)]
			must(c.ForgetPod(logger, pod))
			delete(m.pods, pod.UID)
			m.assumed.Delete(pod.UID)
			return "ForgetPod " + pod.Name
		case 5: // the informer confirms an assumed pod, maybe elsewhere
			if len(assumed) == 0 {
				continue
			}
			pod := m.pods[pick(m.rng, assumed)].DeepCopy()
			if m.rng.Intn(4) == 0 {
				pod.Spec.NodeName = pick(m.rng, modelNodeNames)
			}
			must(c.AddPod(logger, pod))
			m.pods[pod.UID] = pod
			m.assumed.Delete(pod.UID)
			return "AddPod (confirm) " + pod.Name + " on " + pod.Spec.NodeName
		case 6: // the informer reports a pod bound by someone else
			pod := m.randomPod(nil, pick(m.rng, modelNodeNames))
			must(c.AddPod(logger, pod))
			m.pods[pod.UID] = pod
			return "AddPod " + pod.Name + " on " + pod.Spec.NodeName
		case 7: // an added pod changes (resize, new affinity)
			if len(added) == 0 {
				continue
			}
			old := m.pods[pick(m.rng, added)]
			pod := m.randomPod(old, old.Spec.NodeName)
			must(c.UpdatePod(logger, old, pod))
			m.pods[pod.UID] = pod
			return "UpdatePod " + old.Name
		case 8, 9: // a pod is deleted (twice as likely: pods come from two cases)
			known := append(slices.Clone(added), assumed...)
			// The fuller the cluster, the likelier a deletion: the number of
			// pods hovers around a few dozen instead of growing for ever.
			if len(known) == 0 || m.rng.Intn(targetPods) >= len(known) {
				continue
			}
			pod := m.pods[pick(m.rng, known)]
			gone := pod
			if m.rng.Intn(4) == 0 {
				// A missed delete arrives with a stale object.
				gone = pod.DeepCopy()
				gone.Spec.NodeName = ""
			}
			must(c.RemovePod(logger, gone))
			delete(m.pods, pod.UID)
			m.assumed.Delete(pod.UID)
			return "RemovePod " + pod.Name
		}
	}
}

// TestIncrementalSnapshotMatchesRebuild is the cache's central property:
// after every operation, in a long deterministic random sequence, the
// snapshot refreshed incrementally equals a snapshot the cache builds from
// nothing, and both equal one built from the model's pods and nodes without
// the cache. A second snapshot, refreshed only every few operations, checks
// that changes accumulated over several operations are picked up too.
func TestIncrementalSnapshotMatchesRebuild(t *testing.T) {
	tests := []struct {
		seed int64
		ops  int
	}{{1, 1500}, {2, 1500}, {3, 1500}}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("seed=%d", tt.seed), func(t *testing.T) {
			logger := logr.Discard()
			m := &clusterModel{
				rng:     rand.New(rand.NewSource(tt.seed)),
				nodes:   map[string]*v1.Node{},
				pods:    map[types.UID]*v1.Pod{},
				assumed: sets.New[types.UID](),
			}
			c := New(0)
			every, lagging := NewEmptySnapshot(), NewEmptySnapshot()
			var history []string
			for i := range tt.ops {
				history = append(history, m.step(t, c))
				fail := func(format string, args ...any) {
					t.Helper()
					last := history[max(0, len(history)-5):]
					t.Fatalf("after op %d (last ops: %q): "+format, append([]any{i, last}, args...)...)
				}

				if err := c.UpdateSnapshot(logger, every); err != nil {
					fail("UpdateSnapshot: %v", err)
				}
				fresh := NewEmptySnapshot()
				if err := c.UpdateSnapshot(logger, fresh); err != nil {
					fail("UpdateSnapshot into an empty snapshot: %v", err)
				}
				want := summarizeSnapshot(t, fresh)
				if diff := diffSnapshots(want, summarizeSnapshot(t, every)); diff != "" {
					fail("incremental snapshot differs from a fresh one (-want +got):\n%s", diff)
				}

				// Without the cache: the model's pods and nodes, the nodes in
				// the cache's order (NewSnapshot keeps an interleaved order).
				var nodes []*v1.Node
				for _, ni := range fresh.nodeInfoList {
					nodes = append(nodes, m.nodes[ni.Node().Name])
				}
				if len(nodes) != len(m.nodes) {
					fail("snapshot has %d nodes, the model %d", len(nodes), len(m.nodes))
				}
				scratch := NewSnapshot(slices.Collect(maps.Values(m.pods)), nodes)
				if diff := diffSnapshots(summarizeSnapshot(t, scratch), want); diff != "" {
					fail("cache's snapshot differs from one built from scratch (-want +got):\n%s", diff)
				}

				if m.rng.Intn(4) == 0 {
					if err := c.UpdateSnapshot(logger, lagging); err != nil {
						fail("UpdateSnapshot (lagging): %v", err)
					}
					if diff := diffSnapshots(want, summarizeSnapshot(t, lagging)); diff != "" {
						fail("lagging snapshot differs from a fresh one (-want +got):\n%s", diff)
					}
				}

				d := c.Dump()
				if diff := cmp.Diff(m.assumed, d.AssumedPods); diff != "" {
					fail("assumed pods (-want +got):\n%s", diff)
				}
				if got, _ := c.PodCount(); got != len(m.pods) {
					fail("PodCount() = %d, want %d", got, len(m.pods))
				}
			}
			t.Logf("%d ops: %d nodes, %d pods (%d assumed) at the end", tt.ops, len(m.nodes), len(m.pods), m.assumed.Len())
		})
	}
}

func TestUpdateSnapshotRecoversFromInconsistency(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	c := New(0)
	for _, name := range []string{"a", "b", "c"} {
		c.AddNode(logger, makeNode(name).Obj())
	}
	s := NewEmptySnapshot()
	if err := c.UpdateSnapshot(logger, s); err != nil {
		t.Fatal(err)
	}
	// Lose a node behind the cache's back: nothing changed since s's
	// generation, so only the final count check can notice.
	delete(s.nodeInfoMap, "b")
	s.rebuildLists([]string{"a", "c"})
	if err := c.UpdateSnapshot(logger, s); err == nil {
		t.Fatal("UpdateSnapshot did not report the inconsistent snapshot")
	}
	fresh := NewEmptySnapshot()
	if err := c.UpdateSnapshot(logger, fresh); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(summarizeSnapshot(t, fresh), summarizeSnapshot(t, s), cmpOpts...); diff != "" {
		t.Errorf("snapshot after recovery (-want +got):\n%s", diff)
	}
	if err := c.UpdateSnapshot(logger, s); err != nil {
		t.Errorf("UpdateSnapshot after recovery: %v", err)
	}
}

func TestUpdateSnapshotKeepsNodeInfoIdentity(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	c := New(0)
	c.AddNode(logger, makeNode("a").Obj())
	c.AddNode(logger, makeNode("b").Obj())
	s := NewEmptySnapshot()
	if err := c.UpdateSnapshot(logger, s); err != nil {
		t.Fatal(err)
	}
	before, _ := s.List()
	gen := s.Generation()
	if err := c.AddPod(logger, makePod("p").NodeName("a").Obj()); err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateSnapshot(logger, s); err != nil {
		t.Fatal(err)
	}
	after, _ := s.List()
	if !slices.Equal(before, after) {
		t.Errorf("a pod change replaced NodeInfos in the list; they should be updated in place")
	}
	if len(after[0].Pods) != 1 || s.Generation() <= gen {
		t.Errorf("snapshot not updated: %d pods on a, generation %d (was %d)", len(after[0].Pods), s.Generation(), gen)
	}
}

func TestNewSnapshot(t *testing.T) {
	nodes := []*v1.Node{
		makeNode("a1").Region("r").Zone("a").Images(10, "img").Obj(),
		makeNode("a2").Region("r").Zone("a").Obj(),
		makeNode("b1").Region("r").Zone("b").Images(10, "img").Obj(),
	}
	pods := []*v1.Pod{
		makePod("p1").NodeName("a2").PodAffinity(requiredPodAffinity("x")).Obj(),
		makePod("p2").NodeName("b1").PodAntiAffinity(requiredPodAntiAffinity("y")).Obj(),
		makePod("p3").NodeName("gone").Obj(), // its node is not listed: left out
	}
	s := NewSnapshot(pods, nodes)
	got := summarizeSnapshot(t, s)
	var gotNames []string
	for _, n := range got.Nodes {
		gotNames = append(gotNames, n.Name)
	}
	if diff := cmp.Diff([]string{"a1", "b1", "a2"}, gotNames); diff != "" {
		t.Errorf("node order (-want +got):\n%s", diff)
	}
	// Pods with any pod affinity or anti-affinity count as "with affinity",
	// as in kube-scheduler: b1's pod has required anti-affinity.
	if diff := cmp.Diff([]string{"b1", "a2"}, got.HavePodsWithAffinity); diff != "" {
		t.Errorf("HavePodsWithAffinityList (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b1"}, got.HavePodsWithRequiredAntiAffinity); diff != "" {
		t.Errorf("HavePodsWithRequiredAntiAffinityList (-want +got):\n%s", diff)
	}
	if n := got.Nodes[0].ImageStates["img"].NumNodes; n != 2 {
		t.Errorf("img NumNodes = %d, want 2", n)
	}
	if _, err := s.Get("gone"); err == nil {
		t.Error(`Get("gone") found a node that does not exist`)
	}
	if s.NumNodes() != 3 || s.Generation() != 0 {
		t.Errorf("NumNodes() = %d, Generation() = %d; want 3, 0", s.NumNodes(), s.Generation())
	}
}

// BenchmarkUpdateSnapshot measures the steady state of a scheduler: a large
// cluster where one node changed between two cycles.
func BenchmarkUpdateSnapshot(b *testing.B) {
	const numNodes, podsPerNode = 1000, 10
	logger := logr.Discard()
	c := New(0)
	for i := range numNodes {
		name := fmt.Sprintf("node-%d", i)
		c.AddNode(logger, makeNode(name).Region("r").Zone(fmt.Sprintf("z%d", i%3)).
			Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "32", v1.ResourceMemory: "128Gi", v1.ResourcePods: "110"}).
			Images(100, "pause:3").Obj())
		for j := range podsPerNode {
			pod := makePod(fmt.Sprintf("%s-p%d", name, j)).NodeName(name).
				Req(map[v1.ResourceName]string{v1.ResourceCPU: "100m", v1.ResourceMemory: "128Mi"}).Obj()
			if err := c.AddPod(logger, pod); err != nil {
				b.Fatal(err)
			}
		}
	}
	s := NewEmptySnapshot()
	if err := c.UpdateSnapshot(logger, s); err != nil {
		b.Fatal(err)
	}
	pods := make([]*v1.Pod, numNodes)
	for i := range pods {
		pods[i] = makePod(fmt.Sprintf("extra-%d", i)).NodeName(fmt.Sprintf("node-%d", i)).
			Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
	}

	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		// Alternate assuming and forgetting a pod on one node, as a
		// scheduling cycle and a failed binding would.
		pod := pods[(i/2)%numNodes]
		var err error
		if i%2 == 0 {
			err = c.AssumePod(logger, pod)
		} else {
			err = c.ForgetPod(logger, pod)
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := c.UpdateSnapshot(logger, s); err != nil {
			b.Fatal(err)
		}
	}
}
