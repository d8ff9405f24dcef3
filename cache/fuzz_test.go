// This file fuzzes the cache: FuzzCacheSnapshot decodes its input into a
// sequence of node and pod operations on a few nodes and pods, valid or
// not, and checks that the cache accepts exactly the valid ones and that its
// incrementally updated snapshots always equal snapshots built from scratch.

package cache

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minisched/minisched/internal/fuzzinput"
)

// The fuzzed universe: node names (the last one is never a node, so pods
// on it have a NodeInfo without a node), pod names, and the bound on the
// operations of one input.
const (
	fuzzNodes    = 4
	fuzzPodNames = 8
	fuzzMaxOps   = 100
	// fuzzTTL is how long an assumed pod may wait after FinishBinding.
	fuzzTTL = 10 * time.Second
)

// fuzzNodeNames are the node names pods may point at: the fuzzNodes nodes,
// one that never exists, and none (which the cache refuses).
var fuzzNodeNames = []string{"n0", "n1", "n2", "n3", "ghost", ""}

// fuzzImages are the images nodes may have; names are shared across nodes
// so that NumNodes changes on nodes other than the one updated.
var fuzzImages = []struct {
	size  int64
	names []string
}{
	{100, []string{"nginx:1", "nginx@sha256:1"}},
	{200, []string{"redis:7"}},
	{300, []string{"pause:3", "pause@sha256:3"}},
	{400, []string{"etcd:3"}},
}

// cachePod is the model of one pod the cache must hold.
type cachePod struct {
	pod     *v1.Pod
	assumed bool
	// deadline is when the assumed pod expires; zero until FinishBinding.
	deadline time.Time
}

// cacheModel drives a cache and holds what it must contain.
type cacheModel struct {
	t      *testing.T
	c      *Cache
	clk    *testingclock.FakeClock
	logger klog.Logger
	nodes  map[string]*v1.Node
	pods   map[types.UID]*cachePod
	// current is the cached incarnation of each pod name, or nil.
	current [fuzzPodNames]*cachePod
	// incarnations counts the UIDs each pod name had.
	incarnations [fuzzPodNames]int
	// every is refreshed after every operation, lagging only when an
	// operation says so.
	every, lagging *Snapshot
	history        []string
}

// The operations, by opcode modulo opCount.
const (
	opAddNode = iota
	opUpdateNode
	opRemoveNode
	opAssumePod
	opFinishBinding
	opForgetPod
	opAddPod
	opUpdatePod
	opRemovePod
	opExpire
	opLaggingSnapshot
	opCount
)

// FuzzCacheSnapshot checks the cache against a model over fuzzed operation
// sequences: every operation succeeds exactly when the pod state machine
// allows it (an invalid one returns an error and changes nothing), and after
// every operation the incrementally updated snapshot equals one the cache
// builds from nothing and one NewSnapshot builds from the model's pods and
// nodes: node list, pods per node, requested resources, ports, images,
// affinity lists and the anti-affinity term counts.
//
// Each operation is one opcode byte and up to three argument bytes (see
// cacheModel.step).
func FuzzCacheSnapshot(f *testing.F) {
	for _, seed := range [][]byte{
		// Two nodes; a pod assumed, confirmed, updated and removed.
		{opAddNode, 0, 0x13, opAddNode, 1, 0x22, opAssumePod, 0, 0, 0x1c, opAddPod, 0, 0, 0, opUpdatePod, 0, 0, 0x07,
			opRemovePod, 0, 0},
		// Anti-affinity pods on zoned nodes; a node relabelled and removed under its pods.
		{opAddNode, 0, 0x01, opAddNode, 1, 0x01, opAddNode, 2, 0x02, opAddPod, 1, 0, 0x30, opAddPod, 2, 1, 0x10,
			opAddPod, 3, 2, 0x70, opAddPod, 4, 5, 0, opUpdateNode, 1, 0x02, opRemoveNode, 0, opLaggingSnapshot, opRemovePod, 1, 1},
		// Invalid operations: forget an added pod, assume twice, update an
		// assumed pod, forget it on the wrong node, remove an absent node.
		{opAddNode, 2, 0, opAddPod, 4, 2, 0, opForgetPod, 4, 0, opAssumePod, 5, 2, 0x08, opAssumePod, 5, 2, 0,
			opUpdatePod, 5, 0, 0, opForgetPod, 5, 0x80, opForgetPod, 5, 0, opRemoveNode, 3},
		// Expiry of assumed pods after FinishBinding; pods on a node not yet known.
		{opAssumePod, 6, 3, 0x04, opAssumePod, 7, 4, 0, opFinishBinding, 6, opExpire, 0, opAddNode, 3, 0xf0,
			opExpire, 2, opFinishBinding, 7, opExpire, 2, opLaggingSnapshot},
		// Images shared and dropped; confirm on another node.
		{opAddNode, 0, 0x50, opAddNode, 1, 0x70, opAddNode, 2, 0x30, opAssumePod, 0, 1, 0x08, opUpdateNode, 1, 0x10,
			opAddPod, 0, 2, 0x80, opLaggingSnapshot, opRemoveNode, 2, opUpdateNode, 0, 0},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		m := &cacheModel{
			t: t, c: New(fuzzTTL, WithClock(clk)), clk: clk, logger: logr.Discard(),
			nodes: map[string]*v1.Node{}, pods: map[types.UID]*cachePod{},
			every: NewEmptySnapshot(), lagging: NewEmptySnapshot(),
		}
		r := fuzzinput.New(data)
		for range fuzzMaxOps {
			op, ok := r.Next()
			if !ok {
				break
			}
			m.step(op, r)
			m.check()
		}
	})
}

// fail reports a broken promise with the last operations.
func (m *cacheModel) fail(format string, args ...any) {
	m.t.Helper()
	last := m.history[max(0, len(m.history)-8):]
	m.t.Fatalf("after %d operations (last: %s): %s", len(m.history), strings.Join(last, "; "), fmt.Sprintf(format, args...))
}

// fuzzNode returns the node called name as bits of v make it: zone (or
// none), allocatable, images.
func fuzzNode(name string, v byte) *v1.Node {
	b := makeNode(name).Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU:    fmt.Sprint(1 + v>>2&3),
		v1.ResourceMemory: fmt.Sprintf("%dGi", 1+v>>2&3),
		v1.ResourcePods:   "110",
	}).Label(v1.LabelHostname, name)
	if zone := v & 3; zone != 0 {
		b.Region("r1").Zone(string(rune('a' + zone - 1)))
	}
	for i, img := range fuzzImages {
		if v&(0x10<<i) != 0 {
			b.Images(img.size, img.names...)
		}
	}
	return b.Obj()
}

// fuzzPod returns a pod of name slot with uid on node, its spec chosen by
// bits of v: requests, a host port (one per name, so two pods never share
// one), required affinity, required anti-affinity (per node or per zone,
// to one of two groups), preferred anti-affinity.
func fuzzPod(slot int, uid types.UID, node string, v byte) *v1.Pod {
	name := fmt.Sprintf("p%d", slot)
	b := makePod(name).UID(string(uid)).NodeName(node).
		Label("app", []string{"web", "db", "cache"}[slot%3]).
		Req(map[v1.ResourceName]string{
			v1.ResourceCPU:    fmt.Sprintf("%dm", 100*(v&3)),
			v1.ResourceMemory: fmt.Sprintf("%dMi", 64*(v&3)),
		})
	if v&4 != 0 {
		b.HostPort(v1.ProtocolTCP, "", 8000+int32(slot))
	}
	if v&8 != 0 {
		b.PodAffinity(requiredPodAffinity("web"))
	}
	if v&0x10 != 0 {
		term := affinityTerm([]string{"db", "cache"}[v>>6&1])
		if v&0x20 != 0 {
			term.TopologyKey = v1.LabelTopologyZone
		}
		b.PodAntiAffinity(&v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term}})
	}
	if v&0x80 != 0 && v&0x10 == 0 {
		b.PodAntiAffinity(&v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{
			{Weight: 1, PodAffinityTerm: affinityTerm("web")}}})
	}
	return b.Obj()
}

// newIncarnation returns a pod of name slot the cache has never seen.
func (m *cacheModel) newIncarnation(slot int, node string, v byte) *v1.Pod {
	m.incarnations[slot]++
	return fuzzPod(slot, types.UID(fmt.Sprintf("p%d-%d", slot, m.incarnations[slot])), node, v)
}

// expect checks that err is nil exactly when the model says the operation
// is valid.
func (m *cacheModel) expect(err error, valid bool) {
	m.t.Helper()
	switch {
	case valid && err != nil:
		m.fail("the cache refused a valid operation: %v", err)
	case !valid && err == nil:
		m.fail("the cache accepted an invalid operation")
	}
}

// forgetPod drops a pod from the model.
func (m *cacheModel) forgetPod(cp *cachePod) {
	delete(m.pods, cp.pod.UID)
	for i, cur := range m.current {
		if cur == cp {
			m.current[i] = nil
		}
	}
}

// step decodes and runs one operation on the cache and the model.
func (m *cacheModel) step(op byte, r *fuzzinput.Reader) {
	c, logger := m.c, m.logger
	switch op % opCount {
	case opAddNode, opUpdateNode: // node, variant
		name, v := fuzzNodeNames[int(r.Arg())%fuzzNodes], r.Arg()
		node := fuzzNode(name, v)
		m.history = append(m.history, fmt.Sprintf("SetNode(%s, %#x)", name, v))
		if op%opCount == opAddNode {
			c.AddNode(logger, node)
		} else {
			c.UpdateNode(logger, m.nodes[name], node)
		}
		m.nodes[name] = node

	case opRemoveNode: // node
		name := fuzzNodeNames[int(r.Arg())%fuzzNodes]
		m.history = append(m.history, "RemoveNode("+name+")")
		node := m.nodes[name]
		if node == nil {
			node = fuzzNode(name, 0)
		}
		m.expect(c.RemoveNode(logger, node), m.nodes[name] != nil)
		delete(m.nodes, name)

	case opAssumePod: // pod name, node, variant
		slot, node, v := int(r.Arg())%fuzzPodNames, fuzzNodeNames[int(r.Arg())%len(fuzzNodeNames)], r.Arg()
		if cp := m.current[slot]; cp != nil {
			// Assuming a pod the cache has is refused.
			m.history = append(m.history, fmt.Sprintf("AssumePod(%s again)", cp.pod.UID))
			m.expect(c.AssumePod(logger, cp.pod), false)
			return
		}
		pod := m.newIncarnation(slot, node, v)
		m.history = append(m.history, fmt.Sprintf("AssumePod(%s on %q, %#x)", pod.UID, node, v))
		valid := node != ""
		m.expect(c.AssumePod(logger, pod), valid)
		if valid {
			cp := &cachePod{pod: pod, assumed: true}
			m.pods[pod.UID], m.current[slot] = cp, cp
		}

	case opFinishBinding: // pod name
		slot := int(r.Arg()) % fuzzPodNames
		cp := m.current[slot]
		if cp == nil {
			m.history = append(m.history, "FinishBinding(unknown)")
			m.expect(c.FinishBinding(logger, m.newIncarnation(slot, "n0", 0)), true) // does nothing
			return
		}
		m.history = append(m.history, fmt.Sprintf("FinishBinding(%s)", cp.pod.UID))
		m.expect(c.FinishBinding(logger, cp.pod), true)
		if cp.assumed {
			cp.deadline = m.clk.Now().Add(fuzzTTL)
		}

	case opForgetPod: // pod name, bit: claim another node
		slot, b := int(r.Arg())%fuzzPodNames, r.Arg()
		cp := m.current[slot]
		if cp == nil {
			m.history = append(m.history, "ForgetPod(unknown)")
			m.expect(c.ForgetPod(logger, m.newIncarnation(slot, "n0", 0)), false)
			return
		}
		pod := cp.pod
		if b&0x80 != 0 {
			pod = pod.DeepCopy()
			pod.Spec.NodeName = fuzzNodeNames[(slices.Index(fuzzNodeNames, pod.Spec.NodeName)+1)%len(fuzzNodeNames)]
		}
		m.history = append(m.history, fmt.Sprintf("ForgetPod(%s on %s, assumed=%t)", pod.UID, pod.Spec.NodeName, cp.assumed))
		valid := cp.assumed && pod.Spec.NodeName == cp.pod.Spec.NodeName
		m.expect(c.ForgetPod(logger, pod), valid)
		if valid {
			m.forgetPod(cp)
		}

	case opAddPod: // pod name, node, variant
		slot, node, v := int(r.Arg())%fuzzPodNames, fuzzNodeNames[int(r.Arg())%len(fuzzNodeNames)], r.Arg()
		cp := m.current[slot]
		var pod *v1.Pod
		switch {
		case cp == nil: // bound by someone else
			pod = m.newIncarnation(slot, node, v)
		case v&0x80 != 0: // the informer's object, maybe on another node than assumed
			pod = cp.pod.DeepCopy()
			pod.Spec.NodeName = node
		default:
			pod = cp.pod
		}
		m.history = append(m.history, fmt.Sprintf("AddPod(%s on %q, %#x)", pod.UID, pod.Spec.NodeName, v))
		valid := (cp == nil || cp.assumed) && pod.Spec.NodeName != ""
		m.expect(c.AddPod(logger, pod), valid)
		if valid {
			cp = &cachePod{pod: pod}
			m.pods[pod.UID], m.current[slot] = cp, cp
		}

	case opUpdatePod: // pod name, node bit, variant
		slot, b, v := int(r.Arg())%fuzzPodNames, r.Arg(), r.Arg()
		cp := m.current[slot]
		if cp == nil {
			m.history = append(m.history, "UpdatePod(unknown)")
			pod := m.newIncarnation(slot, "n0", v)
			m.expect(c.UpdatePod(logger, pod, pod), false)
			return
		}
		node := cp.pod.Spec.NodeName
		if b&0x80 != 0 {
			// The API never moves a pod; the cache follows the informer.
			node = fuzzNodeNames[int(b)%len(fuzzNodeNames)]
		}
		pod := fuzzPod(slot, cp.pod.UID, node, v)
		m.history = append(m.history, fmt.Sprintf("UpdatePod(%s on %q, %#x, assumed=%t)", pod.UID, node, v, cp.assumed))
		valid := !cp.assumed && node != ""
		m.expect(c.UpdatePod(logger, cp.pod, pod), valid)
		if valid {
			cp.pod = pod
		}

	case opRemovePod: // pod name, bit: a stale object without a node
		slot, b := int(r.Arg())%fuzzPodNames, r.Arg()
		cp := m.current[slot]
		if cp == nil {
			m.history = append(m.history, "RemovePod(unknown)")
			m.expect(c.RemovePod(logger, m.newIncarnation(slot, "n0", 0)), false)
			return
		}
		pod := cp.pod
		if b&1 != 0 {
			pod = pod.DeepCopy()
			pod.Spec.NodeName = ""
		}
		m.history = append(m.history, fmt.Sprintf("RemovePod(%s, assumed=%t)", pod.UID, cp.assumed))
		m.expect(c.RemovePod(logger, pod), true)
		m.forgetPod(cp)

	case opExpire: // clock step
		d := []time.Duration{time.Second, 5 * time.Second, 11 * time.Second}[r.Arg()%3]
		m.clk.Step(d)
		now := m.clk.Now()
		m.history = append(m.history, fmt.Sprintf("Step(%v)+cleanupAssumedPods", d))
		c.cleanupAssumedPods(logger, now)
		for _, uid := range slices.Sorted(maps.Keys(m.pods)) {
			if cp := m.pods[uid]; cp.assumed && !cp.deadline.IsZero() && now.After(cp.deadline) {
				m.forgetPod(cp)
			}
		}

	case opLaggingSnapshot:
		m.history = append(m.history, "UpdateSnapshot(lagging)")
		if err := c.UpdateSnapshot(logger, m.lagging); err != nil {
			m.fail("UpdateSnapshot (lagging): %v", err)
		}
		m.compare("lagging", m.lagging)
	}
}

// compare checks s against a snapshot the cache fills from nothing and one
// built from the model without the cache.
func (m *cacheModel) compare(what string, s *Snapshot) {
	m.t.Helper()
	fresh := NewEmptySnapshot()
	if err := m.c.UpdateSnapshot(m.logger, fresh); err != nil {
		m.fail("UpdateSnapshot into an empty snapshot: %v", err)
	}
	want := summarizeSnapshot(m.t, fresh)
	if diff := diffSnapshots(want, summarizeSnapshot(m.t, s)); diff != "" {
		m.fail("%s snapshot differs from a fresh one (-want +got):\n%s", what, diff)
	}
	// Without the cache: the model's nodes in the cache's order.
	var nodes []*v1.Node
	for _, ni := range fresh.nodeInfoList {
		nodes = append(nodes, m.nodes[ni.Node().Name])
	}
	if len(nodes) != len(m.nodes) {
		m.fail("snapshot has %d nodes, the model %d", len(nodes), len(m.nodes))
	}
	var pods []*v1.Pod
	for _, cp := range m.pods {
		pods = append(pods, cp.pod)
	}
	if diff := diffSnapshots(summarizeSnapshot(m.t, NewSnapshot(pods, nodes)), want); diff != "" {
		m.fail("cache's snapshot differs from one built from scratch (-want +got):\n%s", diff)
	}
	if m.t.Failed() {
		m.fail("%s snapshot is inconsistent (see above)", what)
	}
}

// check refreshes the every-operation snapshot and compares the cache with
// the model.
func (m *cacheModel) check() {
	m.t.Helper()
	if err := m.c.UpdateSnapshot(m.logger, m.every); err != nil {
		m.fail("UpdateSnapshot: %v", err)
	}
	m.compare("incremental", m.every)

	d := m.c.Dump()
	wantAssumed := sets.New[types.UID]()
	nodeNames := sets.KeySet(m.nodes)
	for uid, cp := range m.pods {
		if cp.assumed {
			wantAssumed.Insert(uid)
		}
		nodeNames.Insert(cp.pod.Spec.NodeName)
		got, err := m.c.GetPod(cp.pod)
		if err != nil || got != cp.pod {
			m.fail("GetPod(%s) = %v, %v; want the model's object", uid, got, err)
		}
		if assumed, _ := m.c.IsAssumedPod(cp.pod); assumed != cp.assumed {
			m.fail("IsAssumedPod(%s) = %t, want %t", uid, assumed, cp.assumed)
		}
	}
	if !d.AssumedPods.Equal(wantAssumed) {
		m.fail("assumed pods %v, want %v", sets.List(d.AssumedPods), sets.List(wantAssumed))
	}
	if got, _ := m.c.PodCount(); got != len(m.pods) {
		m.fail("PodCount() = %d, want %d", got, len(m.pods))
	}
	// A NodeInfo exists for each node and each node name a pod points at.
	if got := sets.KeySet(d.Nodes); !got.Equal(nodeNames) {
		m.fail("NodeInfos for %v, want %v", sets.List(got), sets.List(nodeNames))
	}
	for name, ni := range d.Nodes {
		if (ni.Node() != nil) != (m.nodes[name] != nil) {
			m.fail("NodeInfo %s has node %v, the model %v", name, ni.Node() != nil, m.nodes[name] != nil)
		}
	}
}
