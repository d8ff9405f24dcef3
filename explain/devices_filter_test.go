// This file holds the device section to the scheduler. Clusters of nodes,
// ResourceSlices, DeviceClasses, DeviceTaintRules and ResourceClaims are
// generated from seeds (drawn from a small world so that they meet: counts,
// CEL selectors that match, miss or fail, allocation mode All,
// firstAvailable, taints with and without tolerations, DeviceTaintRules,
// node-local, network-attached, per-device and incomplete pools, shared
// counters, devices other claims hold, allocated claims of the pod's), with
// a pod and a record in which DynamicResources rejected every node. Then,
// per node, the section must say what DynamicResources' Filter says when
// the scheduler runs it: the plugin inside a framework (plugintesting), its
// shared DRA state over informers of the same cluster, PreFilter then
// Filter on each node, as a scheduling cycle does. Its answers per request
// must agree too: a node Filter accepts is one where every request gets
// its devices on its own; for a pod of one request, the converse holds.
// TestDevicesAgreeWithFilter runs the worlds on a fake clientset,
// TestDevicesAgreeWithFilterOnAPIServer on a real apiserver, which
// validates and defaults every object.

package explain

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/dynamicresources"
	"github.com/minisched/minisched/plugins/dynamicresources/dramanager"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/testenv"
)

// Seeds of the worlds: many on the fake clientset, fewer on the apiserver,
// where each world's objects are created and deleted.
const (
	fakeWorlds = 150
	apiWorlds  = 30
)

// TestDevicesAgreeWithFilter checks the section against Filter on worlds
// held by a fake clientset.
func TestDevicesAgreeWithFilter(t *testing.T) {
	var tally coverage
	for seed := range uint64(fakeWorlds) {
		w := generateWorld(seed, "shop")
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			client := fake.NewClientset(w.objects()...)
			tally.add(w, agree(t, client, w))
		})
	}
	tally.check(t)
}

// TestDevicesAgreeWithFilterOnAPIServer checks the section against Filter
// on worlds created in a real apiserver, one after the other.
func TestDevicesAgreeWithFilterOnAPIServer(t *testing.T) {
	env, err := testenv.StartEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	client, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	var tally coverage
	for seed := range uint64(apiWorlds) {
		ns := fmt.Sprintf("world-%d", seed)
		w := generateWorld(seed, ns)
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			createWorld(ctx, t, client, w)
			defer deleteWorld(ctx, t, client, w)
			tally.add(w, agree(t, client, w))
		})
	}
	tally.check(t)
}

// agree runs the device section and Filter on w, held by client, and
// fails the test where they disagree. It returns Filter's verdicts.
func agree(t *testing.T, client kubernetes.Interface, w *world) verdicts {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	want := filterVerdicts(ctx, t, client, w)
	rep := explainDevices(ctx, client, w.pod, w.record())
	if rep == nil || rep.failed != "" {
		t.Fatalf("no device section: %+v", rep)
	}
	if !samePreFilter(rep.now.PreFilter, want.preFilter) {
		t.Errorf("PreFilter: the section says %v, Filter's cycle %v", rep.now.PreFilter, want.preFilter)
	}
	for i, got := range rep.now.Nodes {
		if name := rep.nowNodes[i]; !sameFilter(got, want.nodes[name]) {
			t.Errorf("node %s: the section says DynamicResources answers %v, Filter answers %v", name, got, want.nodes[name])
		}
	}
	checked := checkRequests(t, rep, want, w)
	if t.Failed() {
		var b strings.Builder
		renderDevices(&b, rep)
		t.Logf("world:\n%s\nsection:%s", w.describe(), b.String())
	}
	want.checked = checked
	return want
}

// verdicts are Filter's answers in one scheduling cycle: PreFilter's, and
// per node (none when PreFilter rejected the pod).
type verdicts struct {
	preFilter *framework.Status
	nodes     map[string]*framework.Status
	// alone holds, for each of the pod's unallocated claims with a single
	// request, Filter's verdict per node on the pod with that claim alone
	// (none when PreFilter rejected it).
	alone map[string]map[string]*framework.Status
	// checked counts the section's answers per request checked against
	// them.
	checked int
}

// filterVerdicts runs DynamicResources' PreFilter and Filter as the
// scheduler does: inside a framework, its shared DRA state over informers
// of client.
func filterVerdicts(ctx context.Context, t *testing.T, client kubernetes.Interface, w *world) verdicts {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	factory := informers.NewSharedInformerFactory(client, 0)
	manager := dramanager.New(ktesting.NewLogger(t, ktesting.NewConfig()), factory, client)
	defer manager.Stop()
	fw, _, err := plugintesting.NewPluginFramework[*dynamicresources.DynamicResources](ctx, dynamicresources.Name,
		dynamicresources.New, &configv1.Plugins{PreFilter: plugintesting.Enable(dynamicresources.Name),
			Filter: plugintesting.Enable(dynamicresources.Name)}, nil,
		framework.WithClientSet(client), framework.WithInformerFactory(factory), framework.WithSharedDRAManager(manager))
	if err != nil {
		t.Fatal(err)
	}
	synced := draStateSynced(t, factory, manager)
	factory.Start(ctx.Done())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) { return synced(), nil }); err != nil {
		t.Fatalf("DRA state did not sync: %v", err)
	}
	v := verdicts{alone: map[string]map[string]*framework.Status{}}
	v.preFilter, v.nodes = cycle(ctx, fw, w.pod, w.nodes)
	for i := range w.pod.Spec.ResourceClaims {
		podClaim := &w.pod.Spec.ResourceClaims[i]
		if w.singleRequest(podClaim.Name) {
			_, v.alone[podClaim.Name] = cycle(ctx, fw, onlyClaim(w.pod, podClaim), w.nodes)
		}
	}
	return v
}

// cycle runs fw's PreFilter for pod, then Filter on each node unless
// PreFilter rejected it.
func cycle(ctx context.Context, fw *framework.Framework, pod *v1.Pod,
	nodes []*v1.Node) (*framework.Status, map[string]*framework.Status) {
	state := framework.NewCycleState()
	_, pre, _ := fw.RunPreFilterPlugins(ctx, state, pod, nil)
	if !pre.IsSuccess() {
		return pre, nil
	}
	out := map[string]*framework.Status{}
	for _, node := range nodes {
		out[node.Name] = fw.RunFilterPlugins(ctx, state, pod, plugintesting.MakeNodeInfo(node))
	}
	return pre, out
}

// draStateSynced registers handlers of the shared DRA state's parts, before
// the informers start (as the scheduler does), and returns whether the
// informers have listed and every part has taken its list in.
func draStateSynced(t *testing.T, factory informers.SharedInformerFactory, manager *dramanager.Manager) func() bool {
	t.Helper()
	nop := toolscache.ResourceEventHandlerFuncs{}
	claims := manager.AddClaimEventHandler(nop)
	slices, err := manager.AddSliceEventHandler(nop)
	if err != nil {
		t.Fatal(err)
	}
	classes := manager.AddDeviceClassEventHandler(nop)
	resource := factory.Resource().V1()
	return func() bool {
		return claims() && slices() && classes() && resource.ResourceClaims().Informer().HasSynced() &&
			resource.ResourceSlices().Informer().HasSynced() && resource.DeviceClasses().Informer().HasSynced() &&
			resource.DeviceTaintRules().Informer().HasSynced()
	}
}

// samePreFilter reports whether the section's PreFilter status (from the
// plugin itself: Skip when the pod asks for no devices) is the framework's
// (which turns Skip into nil, and wraps an error with the plugin's name).
func samePreFilter(got, want *framework.Status) bool {
	if got.IsSkip() {
		got = nil
	}
	return got.Code() == want.Code() && strings.HasSuffix(want.Message(), got.Message())
}

// sameFilter reports whether the section's Filter status on a node is the
// framework's (which wraps an error with the plugin's name).
func sameFilter(got, want *framework.Status) bool {
	return got.Code() == want.Code() && strings.TrimPrefix(want.Message(), filterErrorPrefix) == got.Message()
}

// checkRequests checks the section's answers per request against Filter's
// verdicts: on a node Filter accepts, every request (some choice of it)
// gets its devices on its own there; and for a claim of one request, the
// request gets its devices on a node exactly where Filter accepts the pod
// with that claim alone. A request whose selectors fail at run time on a
// device Filter's search never looked at may say so instead. It returns
// how many answers it checked.
func checkRequests(t *testing.T, rep *deviceReport, want verdicts, w *world) (checked int) {
	t.Helper()
	for _, node := range w.nodes {
		for request, rows := range rowsByRequest(rep, node.Name) {
			ok := slices.ContainsFunc(rows, func(r deviceRow) bool { return r.ok })
			if slices.ContainsFunc(rows, func(r deviceRow) bool { return strings.Contains(r.failed, "CEL runtime error") }) {
				continue
			}
			if status, examined := want.nodes[node.Name]; examined && status.IsSuccess() {
				checked++
				if !ok {
					t.Errorf("node %s: Filter accepts the pod, but the section says %s is not satisfied there on its own",
						node.Name, request)
				}
			}
			claim, _, isRequest := strings.Cut(request, "/")
			alone, examined := want.alone[claim][node.Name]
			if !isRequest || !examined || alone.Code() == framework.Error {
				continue
			}
			checked++
			if alone.IsSuccess() != ok {
				t.Errorf("node %s: the section says request %s gets its devices on its own: %v; Filter of its claim alone says %v",
					node.Name, request, ok, alone)
			}
		}
	}
	return checked
}

// rowsByRequest gathers the section's rows on node by claim or request.
func rowsByRequest(rep *deviceReport, node string) map[string][]deviceRow {
	out := map[string][]deviceRow{}
	for _, b := range rep.blocks {
		for _, r := range b.rows {
			if r.node == node {
				out[b.request] = append(out[b.request], r)
			}
		}
	}
	return out
}

// coverage counts what the worlds exercised, so that a generator that
// drifted into worlds that all look alike fails the test.
type coverage struct {
	worlds                              int
	accepted, rejected, errored, preRej int
	// requests counts the answers per request checked.
	requests int
	features map[string]int
}

// add counts world w and Filter's verdicts v.
func (c *coverage) add(w *world, v verdicts) {
	c.worlds++
	c.requests += v.checked
	if c.features == nil {
		c.features = map[string]int{}
	}
	for _, f := range w.features {
		c.features[f]++
	}
	if !v.preFilter.IsSuccess() {
		c.preRej++
	}
	for _, s := range v.nodes {
		switch {
		case s.IsSuccess():
			c.accepted++
		case s.Code() == framework.Error:
			c.errored++
		default:
			c.rejected++
		}
	}
}

// check fails the test unless the worlds had nodes accepted, rejected and
// erring, PreFilter rejections, and every feature the generator knows.
func (c *coverage) check(t *testing.T) {
	t.Helper()
	t.Logf("%d worlds: nodes accepted %d, rejected %d, erring %d; PreFilter rejected %d; answers per request "+
		"checked %d; features %v", c.worlds, c.accepted, c.rejected, c.errored, c.preRej, c.requests, c.features)
	if c.accepted == 0 || c.rejected == 0 || c.errored == 0 || c.preRej == 0 || c.requests == 0 {
		t.Errorf("the worlds do not cover every kind of verdict")
	}
	for _, f := range allFeatures {
		if c.features[f] == 0 {
			t.Errorf("no world has %s", f)
		}
	}
}

// The features a world may have, as generateWorld names them.
var allFeatures = []string{"node-local pool", "allNodes pool", "nodeSelector pool", "per-device node selection",
	"incomplete pool", "shared counters", "second driver", "device taint", "DeviceTaintRule", "held by another claim",
	"allocated claim of the pod's", "firstAvailable", "allocation mode All", "count > 1", "request selector",
	"toleration", "matchAttribute constraint", "missing class", "selector failing at run time"}

// world is one generated cluster: its nodes and DRA objects, and the pod.
type world struct {
	nodes   []*v1.Node
	slices  []*resourceapi.ResourceSlice
	classes []*resourceapi.DeviceClass
	rules   []*resourceapi.DeviceTaintRule
	// claims are the pod's and other pods', with their status.
	claims []*resourceapi.ResourceClaim
	pod    *v1.Pod
	// features names what the world has (allFeatures).
	features []string
}

// The drivers, and the attribute domain of gpuDriver's devices.
const (
	worldGPU = "gpu.example.com"
	worldNIC = "nic.example.com"
)

// generator draws a world.
type generator struct {
	rng *rand.Rand
	ns  string
	w   *world
	// devices are the gpu devices made so far, with the node each is
	// local to ("" for a shared pool).
	devices []heldDevice
}

// heldDevice is a device another claim can be allocated: its result and
// the node its allocation is for.
type heldDevice struct {
	driver, pool, device, node string
}

// generateWorld draws the world of seed, its claims in namespace ns.
func generateWorld(seed uint64, ns string) *world {
	g := &generator{rng: rand.New(rand.NewPCG(seed, 0x5eed)), ns: ns, w: &world{}}
	for i, rack := range []string{"a", "a", "b"} {
		g.w.nodes = append(g.w.nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i+1),
			Labels: map[string]string{"rack": rack}}})
	}
	g.pools()
	g.classesAndRules()
	g.others()
	g.podAndClaims()
	return g.w
}

// chance is true with probability p.
func (g *generator) chance(p float64) bool { return g.rng.Float64() < p }

// feature notes that the world has f.
func (g *generator) feature(f string) {
	if !slices.Contains(g.w.features, f) {
		g.w.features = append(g.w.features, f)
	}
}

// gpu is a device of gpuDriver's: a model, most often a memory size, and
// sometimes a taint.
func (g *generator) gpu(name string) resourceapi.Device {
	d := resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"model": {StringValue: ptr.To([]string{"a100", "h100"}[g.rng.IntN(2)])}}}
	if g.chance(0.85) {
		d.Attributes["memory"] = resourceapi.DeviceAttribute{IntValue: ptr.To([]int64{16, 40, 80}[g.rng.IntN(3)])}
	}
	if g.chance(0.2) {
		g.feature("device taint")
		d.Taints = []resourceapi.DeviceTaint{g.taint()}
	}
	return d
}

// taint is a NoSchedule or NoExecute taint, broken or maintenance.
func (g *generator) taint() resourceapi.DeviceTaint {
	t := resourceapi.DeviceTaint{Key: "example.com/broken", Effect: resourceapi.DeviceTaintEffectNoSchedule}
	if g.chance(0.5) {
		t = resourceapi.DeviceTaint{Key: "example.com/maintenance", Value: "true", Effect: resourceapi.DeviceTaintEffectNoExecute}
	}
	return t
}

// slice adds a slice of driver's pool (of count slices), placed by
// place, with devices, and notes its gpu devices as holdable on node.
func (g *generator) slice(name, driver, pool string, count int64, node string, place func(*resourceapi.ResourceSliceSpec),
	devices ...resourceapi.Device) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceSliceSpec{Driver: driver, Pool: resourceapi.ResourcePool{Name: pool, ResourceSliceCount: count},
			Devices: devices}}
	place(&s.Spec)
	g.w.slices = append(g.w.slices, s)
	if driver == worldGPU && count == 1 {
		for _, d := range devices {
			g.devices = append(g.devices, heldDevice{driver, pool, d.Name, node})
		}
	}
	return s
}

// onNode, allNodes and inRack place a slice.
func onNode(node string) func(*resourceapi.ResourceSliceSpec) {
	return func(s *resourceapi.ResourceSliceSpec) { s.NodeName = ptr.To(node) }
}

func allNodes(s *resourceapi.ResourceSliceSpec) { s.AllNodes = ptr.To(true) }

func inRack(rack string) func(*resourceapi.ResourceSliceSpec) {
	return func(s *resourceapi.ResourceSliceSpec) { s.NodeSelector = rackSelector(rack) }
}

// rackSelector selects the nodes of rack.
func rackSelector(rack string) *v1.NodeSelector {
	return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
		{Key: "rack", Operator: v1.NodeSelectorOpIn, Values: []string{rack}}}}}}
}

// pools draws the slices: node-local GPUs, a network-attached pool, an
// incomplete one, one with per-device node selection, partitions sharing
// counters, NICs.
func (g *generator) pools() {
	for _, node := range g.w.nodes {
		if g.chance(0.75) {
			g.feature("node-local pool")
			var devices []resourceapi.Device
			for i := range 1 + g.rng.IntN(3) {
				devices = append(devices, g.gpu(fmt.Sprintf("gpu-%d", i)))
			}
			g.slice(node.Name+"-gpus", worldGPU, node.Name, 1, node.Name, onNode(node.Name), devices...)
		}
	}
	if g.chance(0.4) {
		place, feature := allNodes, "allNodes pool"
		if g.chance(0.5) {
			place, feature = inRack("a"), "nodeSelector pool"
		}
		g.feature(feature)
		g.slice("fabric", worldGPU, "fabric", 1, "", place, g.gpu("fab-0"), g.gpu("fab-1"))
	}
	if g.chance(0.2) {
		g.feature("incomplete pool")
		g.slice("spare-1", worldGPU, "spare", 2, "", allNodes, g.gpu("spare-0"))
	}
	if g.chance(0.25) {
		g.feature("per-device node selection")
		g.perDevice()
	}
	if g.chance(0.2) {
		g.feature("shared counters")
		g.partitions(g.w.nodes[g.rng.IntN(len(g.w.nodes))].Name)
	}
	if g.chance(0.3) {
		g.feature("second driver")
		node := g.w.nodes[g.rng.IntN(len(g.w.nodes))].Name
		g.slice(node+"-nics", worldNIC, node, 1, node, onNode(node), resourceapi.Device{Name: "nic-0"})
	}
}

// perDevice adds a slice whose devices say which nodes reach them.
func (g *generator) perDevice() {
	a, b, c := g.gpu("pd-0"), g.gpu("pd-1"), g.gpu("pd-2")
	a.NodeName, b.AllNodes, c.NodeSelector = ptr.To("n1"), ptr.To(true), rackSelector("b")
	g.slice("per-device", worldGPU, "per-device", 1, "", func(s *resourceapi.ResourceSliceSpec) {
		s.PerDeviceNodeSelection = ptr.To(true)
	}, a, b, c)
	g.devices = slices.DeleteFunc(g.devices, func(d heldDevice) bool { return d.pool == "per-device" })
}

// partitions adds node's GPU of 40 GiB cut into two partitions of 30 GiB:
// each fits, not both.
func (g *generator) partitions(node string) {
	gib := func(n int64) map[string]resourceapi.Counter {
		return map[string]resourceapi.Counter{"memory": {Value: *resource.NewQuantity(n<<30, resource.BinarySI)}}
	}
	pool := node + "-partitions"
	g.slice(node+"-counters", worldGPU, pool, 2, node, func(s *resourceapi.ResourceSliceSpec) {
		s.NodeName = ptr.To(node)
		s.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-0", Counters: gib(40)}}
	})
	var parts []resourceapi.Device
	for _, name := range []string{"part-a", "part-b"} {
		d := g.gpu(name)
		d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: gib(30)}}
		parts = append(parts, d)
	}
	g.slice(node+"-partitions", worldGPU, pool, 2, node, onNode(node), parts...)
}

// classesAndRules draws the classes (gpu, big: 40 GiB or more, nic) and
// DeviceTaintRules over the pools.
func (g *generator) classesAndRules() {
	memory := `device.attributes["gpu.example.com"].memory >= 40`
	if g.chance(0.75) {
		memory = `has(device.attributes["gpu.example.com"].memory) && ` + memory
	} else {
		g.feature("selector failing at run time")
	}
	for name, exprs := range map[string][]string{
		"gpu": {`device.driver == "gpu.example.com"`},
		"big": {`device.driver == "gpu.example.com"`, memory},
		"nic": {`device.driver == "nic.example.com"`},
	} {
		g.w.classes = append(g.w.classes, &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourceapi.DeviceClassSpec{Selectors: selectors(exprs)}})
	}
	for i := range g.rng.IntN(3) {
		if len(g.devices) == 0 {
			break
		}
		g.feature("DeviceTaintRule")
		d := g.devices[g.rng.IntN(len(g.devices))]
		sel := &resourceapi.DeviceTaintSelector{Driver: ptr.To(d.driver), Pool: ptr.To(d.pool)}
		if g.chance(0.6) {
			sel.Device = ptr.To(d.device)
		}
		g.w.rules = append(g.w.rules, &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rule-%d", i)},
			Spec: resourceapi.DeviceTaintRuleSpec{DeviceSelector: sel, Taint: g.taint()}})
	}
}

// allocatedTo is claim allocated d (for request), reachable from d's node
// (any node for a shared pool).
func allocatedTo(claim *resourceapi.ResourceClaim, request string, d heldDevice) *resourceapi.ResourceClaim {
	claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{{Request: request, Driver: d.driver, Pool: d.pool, Device: d.device}}}}
	if d.node != "" {
		claim.Status.Allocation.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{d.node}}}}}}
	}
	return claim
}

// others draws other pods' claims, each holding one device.
func (g *generator) others() {
	for i := range g.rng.IntN(4) {
		if len(g.devices) == 0 {
			return
		}
		g.feature("held by another claim")
		d := g.devices[g.rng.IntN(len(g.devices))]
		claim := g.claim(fmt.Sprintf("other-%d", i), oneGPU())
		g.w.claims = append(g.w.claims, allocatedTo(claim, "gpu", d))
	}
}

// oneGPU is the request "gpu" for one device of the class gpu.
func oneGPU() resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu",
		AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}
}

// claim is a claim in the world's namespace.
func (g *generator) claim(name string, requests ...resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: g.ns},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: requests}}}
}

// podAndClaims draws the pod's claims, one or two, and the pod.
func (g *generator) podAndClaims() {
	g.w.pod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: g.ns, UID: "web-uid"}}
	for i := range 1 + g.rng.IntN(2) {
		name := fmt.Sprintf("c%d", i)
		g.w.pod.Spec.ResourceClaims = append(g.w.pod.Spec.ResourceClaims, v1.PodResourceClaim{Name: name, ResourceClaimName: ptr.To(name)})
		if len(g.devices) > 0 && g.chance(0.15) {
			g.feature("allocated claim of the pod's")
			claim := g.claim(name, oneGPU())
			g.w.claims = append(g.w.claims, allocatedTo(claim, "gpu", g.devices[g.rng.IntN(len(g.devices))]))
			continue
		}
		claim := g.claim(name, g.request("r0"))
		if g.chance(0.4) {
			claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, g.request("r1"))
			if g.chance(0.3) {
				g.feature("matchAttribute constraint")
				claim.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{
					MatchAttribute: ptr.To(resourceapi.FullyQualifiedName("gpu.example.com/model"))}}
			}
		}
		g.w.claims = append(g.w.claims, claim)
	}
}

// request draws a request: exact or firstAvailable, of some class, count
// or All, with or without selectors and tolerations.
func (g *generator) request(name string) resourceapi.DeviceRequest {
	if g.chance(0.2) {
		g.feature("firstAvailable")
		return resourceapi.DeviceRequest{Name: name, FirstAvailable: []resourceapi.DeviceSubRequest{
			g.exact("big", "big").subrequest(), g.exact("any", "gpu").subrequest()}}
	}
	classes := []string{"gpu", "gpu", "gpu", "big", "nic", "tpu"}
	class := classes[g.rng.IntN(len(classes))]
	if class == "tpu" {
		g.feature("missing class")
	}
	x := g.exact(name, class)
	return resourceapi.DeviceRequest{Name: name, Exactly: &x.ExactDeviceRequest}
}

// exactRequest is an exact request and its name, to be a request or a
// subrequest.
type exactRequest struct {
	name string
	resourceapi.ExactDeviceRequest
}

// subrequest is r as a firstAvailable choice.
func (r exactRequest) subrequest() resourceapi.DeviceSubRequest {
	return resourceapi.DeviceSubRequest{Name: r.name, DeviceClassName: r.DeviceClassName, Selectors: r.Selectors,
		AllocationMode: r.AllocationMode, Count: r.Count, Tolerations: r.Tolerations}
}

// exact draws an exact request of class.
func (g *generator) exact(name, class string) exactRequest {
	r := exactRequest{name: name, ExactDeviceRequest: resourceapi.ExactDeviceRequest{DeviceClassName: class,
		AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}
	switch n := g.rng.IntN(10); {
	case n < 2:
		g.feature("allocation mode All")
		r.AllocationMode, r.Count = resourceapi.DeviceAllocationModeAll, 0
	case n < 5:
		g.feature("count > 1")
		r.Count = int64(2 + g.rng.IntN(2))
	}
	if class != "nic" && g.chance(0.3) {
		g.feature("request selector")
		r.Selectors = selectors([]string{[]string{`device.attributes["gpu.example.com"].model == "h100"`,
			`has(device.attributes["gpu.example.com"].memory) && device.attributes["gpu.example.com"].memory >= 80`}[g.rng.IntN(2)]})
	}
	if g.chance(0.3) {
		g.feature("toleration")
		r.Tolerations = []resourceapi.DeviceToleration{{Key: "example.com/maintenance", Operator: resourceapi.DeviceTolerationOpExists}}
		if g.chance(0.5) {
			r.Tolerations = []resourceapi.DeviceToleration{{Key: "example.com/broken", Operator: resourceapi.DeviceTolerationOpExists,
				Effect: resourceapi.DeviceTaintEffectNoSchedule}}
		}
	}
	return r
}

// objects are the world's objects, for a fake clientset.
func (w *world) objects() []runtime.Object {
	out := appendObjects(nil, w.nodes)
	out = appendObjects(out, w.slices)
	out = appendObjects(out, w.classes)
	out = appendObjects(out, w.rules)
	return appendObjects(out, w.claims)
}

// appendObjects appends objs to out.
func appendObjects[T runtime.Object](out []runtime.Object, objs []T) []runtime.Object {
	for _, o := range objs {
		out = append(out, o)
	}
	return out
}

// record is an attempt record in which DynamicResources rejected every
// node of w.
func (w *world) record() *attempt.Record {
	var names []string
	for _, n := range w.nodes {
		names = append(names, n.Name)
	}
	return rejectedByDRA("cannot allocate all claims", names...)
}

// singleRequest reports whether the pod's claim of that name exists,
// unallocated, with one request: the claim's verdict is that request's.
func (w *world) singleRequest(name string) bool {
	for _, c := range w.claims {
		if c.Name == name {
			return c.Status.Allocation == nil && len(c.Spec.Devices.Requests) == 1
		}
	}
	return false
}

// describe writes the world's objects, for a failure's log.
func (w *world) describe() string {
	var b strings.Builder
	for _, o := range w.objects() {
		fmt.Fprintf(&b, "%T %+v\n", o, o)
	}
	return b.String()
}

// createWorld creates w's objects in the apiserver, claims' status
// included.
func createWorld(ctx context.Context, t *testing.T, client kubernetes.Interface, w *world) {
	t.Helper()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.pod.Namespace}},
		metav1.CreateOptions{}))
	for _, n := range w.nodes {
		must(client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}))
	}
	rs := client.ResourceV1()
	for _, s := range w.slices {
		must(rs.ResourceSlices().Create(ctx, s, metav1.CreateOptions{}))
	}
	for _, c := range w.classes {
		must(rs.DeviceClasses().Create(ctx, c, metav1.CreateOptions{}))
	}
	for _, r := range w.rules {
		must(rs.DeviceTaintRules().Create(ctx, r, metav1.CreateOptions{}))
	}
	for _, c := range w.claims {
		created, err := rs.ResourceClaims(c.Namespace).Create(ctx, c, metav1.CreateOptions{})
		must(created, err)
		if c.Status.Allocation != nil {
			created.Status = c.Status
			must(rs.ResourceClaims(c.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}))
		}
	}
}

// deleteWorld deletes w's cluster-wide objects and claims, so that the
// next world starts from none.
func deleteWorld(ctx context.Context, t *testing.T, client kubernetes.Interface, w *world) {
	t.Helper()
	all, rs := metav1.ListOptions{}, client.ResourceV1()
	for what, err := range map[string]error{
		"nodes":            client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		"slices":           rs.ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		"classes":          rs.DeviceClasses().DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		"DeviceTaintRules": rs.DeviceTaintRules().DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		"claims":           rs.ResourceClaims(w.pod.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, all),
	} {
		if err != nil {
			t.Errorf("deleting the %s: %v", what, err)
		}
	}
}
