// Chapter 16's stories (docs/16-volumes.md): volumes, with the default
// profile's four storage plugins, kube-controller-manager's PV binder
// (scenario.Storage) and, where volumes are made on demand, the example
// provisioner (Scenario.Provisioner).

package chapters

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/examples/provisioner"
	"github.com/minisched/minisched/minisched"
	"github.com/minisched/minisched/scenario"
)

// The annotations the binding handshake writes on claims and volumes (their
// keys are upstream's, in k8s.io/component-helpers/storage/volume).
const (
	// annSelectedNode: VolumeBinding's PreBind, on a claim to provision.
	annSelectedNode = "volume.kubernetes.io/selected-node"
	// annStorageProvisioner: the PV binder, on a claim it hands to an
	// external provisioner.
	annStorageProvisioner = "volume.kubernetes.io/storage-provisioner"
	// annBindCompleted: the PV binder, on a claim it has bound.
	annBindCompleted = "pv.kubernetes.io/bind-completed"
	// annBoundByController: on a volume, VolumeBinding's PreBind (it chose
	// the volume); on a claim, the PV binder.
	annBoundByController = "pv.kubernetes.io/bound-by-controller"
)

// The classes of chapter 16.
const (
	// staticClass is for volumes an administrator made beforehand, on one
	// node each: no provisioner, and binding waits for the first pod.
	staticClass = "local-static"
	// immediateClass binds a claim as soon as a volume fits, with no pod
	// involved.
	immediateClass = "immediate"
	// localClass is the example provisioner's: volumes made on demand, on
	// the node the scheduler picked.
	localClass = "local"
	// csiDriver is the driver of the volumes whose attachments count.
	csiDriver = "ebs.csi.example.com"
)

// chapter16 is chapter 16's stories.
func chapter16() []scenario.Scenario {
	return []scenario.Scenario{
		{
			Name: "ch16-static-local-pv", Chapter: 16, Parts: scenario.Parts{scenario.Storage}, Run: runStaticLocalPV,
			Description: "WaitForFirstConsumer with volumes made beforehand: the pod goes to the node whose volume " +
				"fits its claim, PreBind writes the volume's claimRef, and the PV binder completes the bind",
		},
		{
			Name: "ch16-assume-volumes", Chapter: 16, Parts: scenario.Parts{scenario.Storage}, Run: runAssumeVolumes,
			Description: "two pods at once, one volume per node: the second cycle sees the volume the first " +
				"reserved (VolumeBinding's assume cache), long before PreBind has finished",
		},
		{
			Name: "ch16-provision-capacity", Chapter: 16, Run: runProvisionCapacity,
			Provisioner: map[string]string{"node0": "2Gi", "node1": "8Gi", "node2": "4Gi"},
			Description: "dynamic provisioning: only node1 has room for 5Gi; the pod is nominated there, PreBind " +
				"selects the node on the claim, the provisioner makes the volume, the PV binder binds it, the pod is bound",
		},
		{
			Name: "ch16-capacity-scoring", Chapter: 16, Run: runCapacityScoring,
			Provisioner: map[string]string{"node0": "10Gi", "node1": "40Gi", "node2": "20Gi"},
			Description: "StorageCapacityScoring: every node has room for 5Gi; VolumeBinding scores 100 − the " +
				"share of free space the claim would take, so the emptiest node wins",
		},
		{
			Name: "ch16-read-write-once-pod", Chapter: 16, Parts: scenario.Parts{scenario.Storage}, Run: runReadWriteOncePod,
			Description: "VolumeRestrictions: a ReadWriteOncePod claim in use keeps a second pod off every node, " +
				"until the first pod goes",
		},
		{
			Name: "ch16-volume-limits", Chapter: 16, Parts: scenario.Parts{scenario.Storage}, Run: runVolumeLimits,
			Description: "NodeVolumeLimits: each node attaches one volume of the driver (CSINode's allocatable " +
				"count); a third pod waits until node0's limit is raised",
		},
		{
			Name: "ch16-volume-zone", Chapter: 16, Parts: scenario.Parts{scenario.Storage}, Run: runVolumeZone,
			Description: "VolumeZone: a pod follows its bound volume's zone; a volume in a zone no node is in " +
				"keeps its pod waiting until such a node joins",
		},
		{
			Name: "ch16-missing-claim", Chapter: 16, Parts: scenario.Parts{scenario.Storage}, Run: runMissingClaim,
			Description: "a pod naming a claim that does not exist: VolumeRestrictions' PreFilter is unresolvable, " +
				"so DynamicResources' PostFilter finds no record, fails with \"not found\", and preemption never runs",
		},
	}
}

func runStaticLocalPV(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, scenario.Nodes("node0", "node1", "node2")...); err != nil {
		return err
	}
	if err := env.CreateObjects(ctx, builders.MakeStorageClass().Name(staticClass).WaitForFirstConsumer().Obj(),
		localPV("pv-small", "1Gi", "node0").Obj(), localPV("pv-big", "10Gi", "node1").Obj(),
		claim("data", staticClass, "5Gi").Obj()); err != nil {
		return err
	}
	env.Logf("volumes: pv-small (1Gi, on node0), pv-big (10Gi, on node1); claim data asks for 5Gi of %s",
		staticClass)
	notes, err := env.WaitForEvent(ctx, "data", "WaitForFirstConsumer", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("the PV binder leaves data Pending: %s", notes[0])
	if err := env.PlaceAndCheck(ctx, map[string]string{"db": "node1"},
		scenario.MakePod("db").PVC("data").Obj()); err != nil {
		return err
	}
	return expectClaimBound(ctx, env, "data", "pv-big")
}

func runAssumeVolumes(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, scenario.Nodes("node0", "node1")...); err != nil {
		return err
	}
	if err := env.CreateObjects(ctx, builders.MakeStorageClass().Name(staticClass).WaitForFirstConsumer().Obj(),
		localPV("pv-a", "1Gi", "node0").Obj(), localPV("pv-b", "1Gi", "node1").Obj(),
		claim("one", staticClass, "1Gi").Obj(), claim("two", staticClass, "1Gi").Obj()); err != nil {
		return err
	}
	env.Logf("volumes pv-a (on node0) and pv-b (on node1) each fit either claim, one and two")
	if err := env.CreatePods(ctx, scenario.MakePod("p1").PVC("one").Obj(),
		scenario.MakePod("p2").PVC("two").Obj()); err != nil {
		return err
	}
	nodes, err := env.WaitForPodsBound(ctx, []string{"p1", "p2"})
	if err != nil {
		return err
	}
	if nodes[0] == nodes[1] {
		return fmt.Errorf("p1 and p2 both went to %s, which has one volume", nodes[0])
	}
	// The pod scheduled second found the other's node refused by
	// VolumeBinding: its cycle ran while the first pod's PreBind waited for
	// the PV binder, and the volume there was taken in the assume cache only.
	var second string
	for i, pod := range []string{"p1", "p2"} {
		a, err := env.WaitForScheduledAttempt(ctx, pod, scenario.DefaultWait)
		if err != nil {
			return err
		}
		if refusedBy(a, nodes[1-i]) == "VolumeBinding" {
			second = pod
		}
	}
	if second == "" {
		return fmt.Errorf("neither pod's attempt shows the other's node refused by VolumeBinding")
	}
	env.ShowAttempt(second)
	for i, pvc := range []string{"one", "two"} {
		if err := expectClaimBound(ctx, env, pvc, map[string]string{"node0": "pv-a", "node1": "pv-b"}[nodes[i]]); err != nil {
			return err
		}
	}
	return nil
}

// refusedBy is the plugin that refused node in the attempt, if any.
func refusedBy(a minisched.Attempt, node string) string {
	for _, n := range a.Nodes {
		if n.Name == node {
			return n.RejectedBy
		}
	}
	return ""
}

func runProvisionCapacity(ctx context.Context, env *scenario.Env) error {
	nodes := []string{"node0", "node1", "node2"}
	if err := env.CreateNodes(ctx, scenario.Nodes(nodes...)...); err != nil {
		return err
	}
	if err := env.CreateObjects(ctx, provisioner.StorageClass(localClass)); err != nil {
		return err
	}
	capacity, err := env.WaitForStorageCapacity(ctx, localClass, nodes...)
	if err != nil {
		return err
	}
	env.Logf("the provisioner publishes each node's free space (CSIStorageCapacity): %s", capacity)
	flow, err := watchFlow(ctx, env, "web", "data")
	if err != nil {
		return err
	}
	defer flow.stop()
	if err := env.CreateObjects(ctx, claim("data", localClass, "5Gi").Obj()); err != nil {
		return err
	}
	if err := env.PlaceAndCheck(ctx, map[string]string{"web": "node1"},
		scenario.MakePod("web").PVC("data").Obj()); err != nil {
		return err
	}
	steps, err := flow.until(ctx, "bound")
	if err != nil {
		return err
	}
	env.Logf("the flow, in the order the apiserver wrote it:")
	for _, s := range steps {
		env.Logf("  %s", s.text)
	}
	want := []string{"nominated", "selected-node", "storage-provisioner", "volume", "claim-bound", "bound"}
	var got []string
	for _, s := range steps {
		got = append(got, s.kind)
		if s.node != "node1" {
			return fmt.Errorf("%s names node %s, want node1", s.kind, s.node)
		}
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("the flow went %v, want %v", got, want)
	}
	return nil
}

func runCapacityScoring(ctx context.Context, env *scenario.Env) error {
	nodes := []string{"node0", "node1", "node2"}
	if err := env.CreateNodes(ctx, scenario.Nodes(nodes...)...); err != nil {
		return err
	}
	if err := env.CreateObjects(ctx, provisioner.StorageClass(localClass)); err != nil {
		return err
	}
	capacity, err := env.WaitForStorageCapacity(ctx, localClass, nodes...)
	if err != nil {
		return err
	}
	env.Logf("free space: %s; claim data asks for 5Gi", capacity)
	if err := env.CreateObjects(ctx, claim("data", localClass, "5Gi").Obj()); err != nil {
		return err
	}
	if err := env.PlaceAndCheck(ctx, map[string]string{"web": "node1"},
		scenario.MakePod("web").PVC("data").Obj()); err != nil {
		return err
	}
	// 5Gi of 10, 40 and 20Gi is 50%, 12% (rounded down) and 25%: the
	// default shape scores 100 − that.
	last, err := env.WaitForScheduledAttempt(ctx, "web", scenario.DefaultWait)
	if err != nil {
		return err
	}
	want := map[string]int64{"node0": 50, "node1": 88, "node2": 75}
	for _, n := range last.TopScores(len(nodes)) {
		if got := scenario.Weighted(last, n, "VolumeBinding"); got != want[n.Name] {
			return fmt.Errorf("VolumeBinding scored %s %d, want %d", n.Name, got, want[n.Name])
		}
	}
	return nil
}

func runReadWriteOncePod(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, scenario.Nodes("node0", "node1")...); err != nil {
		return err
	}
	if err := env.CreateObjects(ctx, builders.MakeStorageClass().Name(immediateClass).Obj(),
		builders.MakePV().Name("pv").Class(immediateClass).Capacity("1Gi").AccessModes(v1.ReadWriteOncePod).Obj(),
		claim("solo", immediateClass, "1Gi").AccessModes(v1.ReadWriteOncePod).Obj()); err != nil {
		return err
	}
	if _, err := env.WaitForClaimBound(ctx, "solo", scenario.DefaultWait); err != nil {
		return err
	}
	env.Logf("claim solo (ReadWriteOncePod, class %s) is bound to pv at once, with no pod", immediateClass)
	if err := env.CreatePods(ctx, scenario.MakePod("first").PVC("solo").Obj()); err != nil {
		return err
	}
	first, err := env.WaitForPodBound(ctx, "first", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("first uses solo, on %s", first.Spec.NodeName)
	if err := env.CreatePods(ctx, scenario.MakePod("second").PVC("solo").Obj()); err != nil {
		return err
	}
	if err := expectMessage(ctx, env, "second", "0/2 nodes are available: 2 node(s) unavailable due to "+
		"PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod. preemption: "+
		"0/2 nodes are available: 2 No preemption victims found for incoming pod."); err != nil {
		return err
	}
	env.ShowAttempt("second")
	env.Logf("deleting first: its deletion is an event VolumeRestrictions' hint accepts for second")
	if err := env.DeletePod(ctx, "first"); err != nil {
		return err
	}
	_, err = env.WaitForPodBound(ctx, "second", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("second is bound")
	return nil
}

func runVolumeLimits(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, scenario.Nodes("node0", "node1")...); err != nil {
		return err
	}
	objs := []runtime.Object{builders.MakeStorageClass().Name(immediateClass).Obj(),
		builders.MakeCSINode("node0", map[string]int32{csiDriver: 1}),
		builders.MakeCSINode("node1", map[string]int32{csiDriver: 1})}
	for i, size := range []string{"1Gi", "2Gi", "3Gi"} {
		n := strconv.Itoa(i + 1)
		objs = append(objs,
			builders.MakePV().Name("v"+n).Class(immediateClass).Capacity(size).CSI(csiDriver, "handle-"+n).Obj(),
			claim("c"+n, immediateClass, size).Obj())
	}
	if err := env.CreateObjects(ctx, objs...); err != nil {
		return err
	}
	for _, c := range []string{"c1", "c2", "c3"} {
		if _, err := env.WaitForClaimBound(ctx, c, scenario.DefaultWait); err != nil {
			return err
		}
	}
	env.Logf("CSINodes: node0 and node1 each attach at most 1 volume of %s; claims c1-c3 are bound to its "+
		"volumes v1-v3", csiDriver)
	if err := env.PlaceAndCheck(ctx, map[string]string{"p1": "node0", "p2": "node1"},
		scenario.MakePod("p1").PVC("c1").NodeSelector(v1.LabelHostname, "node0").Obj(),
		scenario.MakePod("p2").PVC("c2").Obj()); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, scenario.MakePod("p3").PVC("c3").Obj()); err != nil {
		return err
	}
	if err := expectMessage(ctx, env, "p3", "0/2 nodes are available: 2 node(s) exceed max volume count. "+
		"preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."); err != nil {
		return err
	}
	env.Logf("raising node0's limit to 2: a CSINode update that raises a count is an event NodeVolumeLimits' " +
		"hint accepts")
	csiNode, err := env.Client.StorageV1().CSINodes().Get(ctx, "node0", metav1.GetOptions{})
	if err != nil {
		return err
	}
	*csiNode.Spec.Drivers[0].Allocatable.Count = 2
	if _, err := env.Client.StorageV1().CSINodes().Update(ctx, csiNode, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return env.ExpectBound(ctx, map[string]string{"p3": "node0"}, "p3")
}

func runVolumeZone(ctx context.Context, env *scenario.Env) error {
	zoned := func(name, zone string) *v1.Node {
		return scenario.MakeNode(name).Label(v1.LabelTopologyZone, zone).Obj()
	}
	if err := env.CreateNodes(ctx, zoned("a1", "zone-a"), zoned("b1", "zone-b")); err != nil {
		return err
	}
	if err := env.CreateObjects(ctx, builders.MakeStorageClass().Name(immediateClass).Obj(),
		builders.MakePV().Name("pv-b").Class(immediateClass).Capacity("1Gi").Label(v1.LabelTopologyZone, "zone-b").Obj(),
		builders.MakePV().Name("pv-c").Class(immediateClass).Capacity("2Gi").Label(v1.LabelTopologyZone, "zone-c").Obj(),
		claim("data", immediateClass, "1Gi").Obj(), claim("far", immediateClass, "2Gi").Obj()); err != nil {
		return err
	}
	for _, bound := range [][2]string{{"data", "pv-b"}, {"far", "pv-c"}} {
		if err := expectClaimBound(ctx, env, bound[0], bound[1]); err != nil {
			return err
		}
	}
	if err := env.PlaceAndCheck(ctx, map[string]string{"p": "b1"}, scenario.MakePod("p").PVC("data").Obj()); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, scenario.MakePod("q").PVC("far").Obj()); err != nil {
		return err
	}
	if err := expectMessage(ctx, env, "q", "0/2 nodes are available: 2 node(s) had no available volume zone. "+
		"preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."); err != nil {
		return err
	}
	env.Logf("node c1 joins, in zone-c")
	if err := env.CreateNodes(ctx, zoned("c1", "zone-c")); err != nil {
		return err
	}
	return env.ExpectBound(ctx, map[string]string{"q": "c1"}, "q")
}

func runMissingClaim(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, scenario.Nodes("node0", "node1")...); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, scenario.MakePod("p").PVC("nope").Obj()); err != nil {
		return err
	}
	if err := expectMessage(ctx, env, "p",
		`0/2 nodes are available: persistentvolumeclaim "nope" not found. not found`); err != nil {
		return err
	}
	attempts, err := env.WaitForAttempts(ctx, "p", 1, scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.ShowAttempt("p")
	a := attempts[len(attempts)-1]
	if a.PreFilter == nil || a.PreFilter.Plugin != "VolumeRestrictions" || a.NominatedNode != "" {
		return fmt.Errorf("p's attempt: PreFilter verdict %+v, nominated %q; want VolumeRestrictions', no "+
			"nomination", a.PreFilter, a.NominatedNode)
	}
	env.Logf("creating claim nope, with a volume on node1: a new claim the pod names is an event " +
		"VolumeRestrictions' hint accepts")
	if err := env.CreateObjects(ctx, builders.MakeStorageClass().Name(staticClass).WaitForFirstConsumer().Obj(),
		localPV("pv", "1Gi", "node1").Obj(), claim("nope", staticClass, "1Gi").Obj()); err != nil {
		return err
	}
	return env.ExpectBound(ctx, map[string]string{"p": "node1"}, "p")
}

// localPV is a volume of staticClass on one node.
func localPV(name, size, node string) *builders.PVWrapper {
	return builders.MakePV().Name(name).Class(staticClass).Capacity(size).NodeAffinityIn(v1.LabelHostname, node)
}

// claim is a claim of class, in the scenario's namespace.
func claim(name, class, size string) *builders.PVCWrapper {
	return scenario.MakePVC(name).Class(class).Req(size)
}

// expectMessage waits for the pod to be unschedulable and checks its whole
// message.
func expectMessage(ctx context.Context, env *scenario.Env, pod, want string) error {
	msg, err := env.WaitForPodUnschedulable(ctx, pod, scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("%s pending: %s", pod, msg)
	if msg != want {
		return fmt.Errorf("%s: message %q, want %q", pod, msg, want)
	}
	return nil
}

// expectClaimBound waits for the PV binder to bind the claim, says how the
// claim and its volume look, and checks that the volume is pv and that
// both carry the handshake's marks.
func expectClaimBound(ctx context.Context, env *scenario.Env, claim, pv string) error {
	pvc, err := env.WaitForClaimBound(ctx, claim, scenario.DefaultWait)
	if err != nil {
		return err
	}
	vol, err := env.Client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	env.Logf("claim %s: %s to %s (bind-completed=%s); volume %s: %s, claimRef %s", claim, pvc.Status.Phase,
		pvc.Spec.VolumeName, pvc.Annotations[annBindCompleted], vol.Name, vol.Status.Phase, claimRef(vol))
	switch {
	case pvc.Spec.VolumeName != pv:
		return fmt.Errorf("claim %s is bound to %s, want %s", claim, pvc.Spec.VolumeName, pv)
	case pvc.Annotations[annBindCompleted] != "yes":
		return fmt.Errorf("claim %s has no %s annotation", claim, annBindCompleted)
	case vol.Spec.ClaimRef == nil || vol.Spec.ClaimRef.Name != claim || vol.Spec.ClaimRef.UID != pvc.UID:
		return fmt.Errorf("volume %s has claimRef %s, want %s (uid %s)", pv, claimRef(vol), claim, pvc.UID)
	}
	return nil
}

// claimRef says which claim a volume is bound to, and whether a component
// (VolumeBinding's PreBind, or the PV binder) chose the pair rather than an
// administrator.
func claimRef(pv *v1.PersistentVolume) string {
	if pv.Spec.ClaimRef == nil {
		return "none"
	}
	if v := pv.Annotations[annBoundByController]; v != "" {
		return fmt.Sprintf("%s (%s=%s)", pv.Spec.ClaimRef.Name, annBoundByController, v)
	}
	return pv.Spec.ClaimRef.Name
}

// flowStep is one write of the provisioning flow, as a watch saw it.
type flowStep struct {
	// rv is the write's resourceVersion. The embedded kube-apiserver's
	// resourceVersions are etcd's revisions, one counter for every object,
	// so they order writes to different objects; the story uses them to
	// tell the flow in the order it happened, not the order the watches
	// happened to deliver it. (A client of an arbitrary apiserver must not
	// compare them.)
	rv int64
	// kind names the step (nominated, selected-node, ...); node is the node
	// it names.
	kind, node string
	// text tells the step, naming who wrote it.
	text string
}

// flow records the steps of provisioning one claim for one pod from three
// watches: the pod, the claim and the volumes.
type flow struct {
	// stop ends the watches and waits for their readers.
	stop func()
	// mu guards steps, appended to by the readers: each kind once, when
	// first seen.
	mu    sync.Mutex
	steps []flowStep
}

// watchFlow starts watching the pod, the claim and the volumes (none of
// which exist yet) for the steps of the provisioning flow.
func watchFlow(ctx context.Context, env *scenario.Env, pod, claim string) (*flow, error) {
	f := &flow{}
	one := func(name string) metav1.ListOptions {
		return metav1.ListOptions{FieldSelector: "metadata.name=" + name}
	}
	pods, err := env.Client.CoreV1().Pods(env.Namespace).Watch(ctx, one(pod))
	if err != nil {
		return nil, err
	}
	claims, err := env.Client.CoreV1().PersistentVolumeClaims(env.Namespace).Watch(ctx, one(claim))
	if err != nil {
		pods.Stop()
		return nil, err
	}
	volumes, err := env.Client.CoreV1().PersistentVolumes().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		pods.Stop()
		claims.Stop()
		return nil, err
	}
	var wg sync.WaitGroup
	for _, w := range []watch.Interface{pods, claims, volumes} {
		wg.Go(func() { f.read(w) })
	}
	f.stop = func() {
		pods.Stop()
		claims.Stop()
		volumes.Stop()
		wg.Wait()
	}
	return f, nil
}

// read turns each change a watch reports into the flow's steps, until the
// watch stops.
func (f *flow) read(w watch.Interface) {
	seen := map[string]bool{}
	for ev := range w.ResultChan() {
		var steps []flowStep
		switch o := ev.Object.(type) {
		case *v1.Pod:
			steps = podSteps(o)
		case *v1.PersistentVolumeClaim:
			steps = claimSteps(o)
		case *v1.PersistentVolume:
			steps = volumeSteps(o)
		}
		f.mu.Lock()
		for _, s := range steps {
			if !seen[s.kind] {
				seen[s.kind] = true
				f.steps = append(f.steps, s)
			}
		}
		f.mu.Unlock()
	}
}

// until waits for the step of kind last, then stops the watches and
// returns the steps in the order they were written.
func (f *flow) until(ctx context.Context, last string) ([]flowStep, error) {
	err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, scenario.DefaultWait, true,
		func(context.Context) (bool, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return slices.ContainsFunc(f.steps, func(s flowStep) bool { return s.kind == last }), nil
		})
	f.stop()
	if err != nil {
		return nil, fmt.Errorf("the watches saw no %s step: %w", last, err)
	}
	sort.Slice(f.steps, func(i, j int) bool { return f.steps[i].rv < f.steps[j].rv })
	return f.steps, nil
}

// podSteps are the flow's steps a version of the pod shows: nominated to
// a node while unbound (the binding cycle's patch before PreBind), bound.
func podSteps(p *v1.Pod) []flowStep {
	rv := resourceVersion(p)
	switch {
	case p.Spec.NodeName != "":
		return []flowStep{{rv: rv, kind: "bound", node: p.Spec.NodeName,
			text: fmt.Sprintf("scheduler: pod %s bound to %s", p.Name, p.Spec.NodeName)}}
	case p.Status.NominatedNodeName != "":
		return []flowStep{{rv: rv, kind: "nominated", node: p.Status.NominatedNodeName,
			text: fmt.Sprintf("scheduler: pod %s status.nominatedNodeName=%s (binding cycle, before PreBind)", p.Name,
				p.Status.NominatedNodeName)}}
	}
	return nil
}

// claimSteps are the flow's steps a version of the claim shows: the node
// selected, the provisioner named, the claim bound. The node of the last
// two is the selected one.
func claimSteps(c *v1.PersistentVolumeClaim) []flowStep {
	rv, node := resourceVersion(c), c.Annotations[annSelectedNode]
	var out []flowStep
	if node != "" {
		out = append(out, flowStep{rv: rv, kind: "selected-node", node: node,
			text: fmt.Sprintf("VolumeBinding's PreBind: claim %s %s=%s", c.Name, annSelectedNode, node)})
	}
	if p := c.Annotations[annStorageProvisioner]; p != "" {
		out = append(out, flowStep{rv: rv, kind: "storage-provisioner", node: node,
			text: fmt.Sprintf("PV binder: claim %s %s=%s", c.Name, annStorageProvisioner, p)})
	}
	if c.Spec.VolumeName != "" && c.Annotations[annBindCompleted] == "yes" {
		out = append(out, flowStep{rv: rv, kind: "claim-bound", node: node,
			text: fmt.Sprintf("PV binder: claim %s bound to its volume (%s=yes)", c.Name, annBindCompleted)})
	}
	return out
}

// volumeSteps is the volume's creation, on the node its affinity names.
func volumeSteps(pv *v1.PersistentVolume) []flowStep {
	var node string
	if a := pv.Spec.NodeAffinity; a != nil && a.Required != nil {
		for _, t := range a.Required.NodeSelectorTerms {
			for _, e := range t.MatchExpressions {
				if e.Key == v1.LabelHostname && len(e.Values) == 1 {
					node = e.Values[0]
				}
			}
		}
	}
	size := pv.Spec.Capacity[v1.ResourceStorage]
	return []flowStep{{rv: resourceVersion(pv), kind: "volume", node: node,
		text: fmt.Sprintf("provisioner: volume pvc-… (%s) pre-bound to claim %s, node affinity %s=%s",
			size.String(), claimRef(pv), v1.LabelHostname, node)}}
}

// resourceVersion is the object's resourceVersion as a number (see
// flowStep.rv).
func resourceVersion(o metav1.Object) int64 {
	rv, _ := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
	return rv
}
