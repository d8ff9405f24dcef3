package scheduler_test

// Pods that ask for what no node can give: each must end Unschedulable with
// a reason that names what is missing, and none may hold up the pods behind
// it. Pods whose volumes are wrong (a claim or class that does not exist, a
// volume's node affinity that cannot be parsed) get kube-scheduler's
// reason, are scheduled once what they lack exists, and leave no binding
// half written. Pods whose claims are wrong (TestBadDRAInput) fare alike.

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/storage/volume"

	"github.com/stretchr/testify/require"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/examples/dradriver"
	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/testenv"
)

func TestAbsurdRequestsAreUnschedulable(t *testing.T) {
	ctx := context.Background()
	h := startHarness(t, "absurd")
	// Other tests' nodes share the apiserver: these pods look only at this
	// test's node, and the others show as not matching their selector.
	const testLabel = "minisched.test/absurd"
	node := scenario.MakeNode("absurd-node").Label(testLabel, "yes").
		Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "4", v1.ResourceMemory: "16Gi"}).Obj()
	require.NoError(t, h.env.CreateNodes(ctx, node))

	tests := []struct {
		name     string
		requests map[v1.ResourceName]string
		want     string
	}{
		{name: "a million cores", requests: map[v1.ResourceName]string{v1.ResourceCPU: "1000000"},
			want: "1 Insufficient cpu"},
		{name: "an exbibyte of memory", requests: map[v1.ResourceName]string{v1.ResourceMemory: "1Ei"},
			want: "1 Insufficient memory"},
		{name: "a resource no node has", requests: map[v1.ResourceName]string{"example.com/unicorn": "1"},
			want: "1 Insufficient example.com/unicorn"},
		{name: "every one of them at once",
			requests: map[v1.ResourceName]string{v1.ResourceCPU: "1000000", v1.ResourceMemory: "1Ei",
				v1.ResourceEphemeralStorage: "1Ei", "example.com/unicorn": "1"},
			want: "1 Insufficient cpu, 1 Insufficient ephemeral-storage, " +
				"1 Insufficient example.com/unicorn, 1 Insufficient memory"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "absurd-" + string(rune('a'+i))
			require.NoError(t, h.env.CreatePods(ctx,
				scenario.MakePod(name).Req(tt.requests).NodeSelector(testLabel, "yes").Obj()))
			msg, err := h.env.WaitForPodUnschedulable(ctx, name, scenario.DefaultWait)
			require.NoError(t, err)
			// "0/N nodes are available: 1 Insufficient cpu, N-1 node(s)
			// didn't match Pod's node affinity/selector. preemption: ..."
			if !strings.HasPrefix(msg, "0/") || !strings.Contains(msg, " nodes are available: "+tt.want) {
				t.Errorf("PodScheduled message = %q, want 0/N nodes are available: %s", msg, tt.want)
			}
		})
	}

	t.Run("a pod that fits is still scheduled behind them", func(t *testing.T) {
		require.NoError(t, h.env.CreatePods(ctx, scenario.MakePod("absurd-sane").
			Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).NodeSelector(testLabel, "yes").Obj()))
		bound, err := h.env.WaitForPodBound(ctx, "absurd-sane", scenario.DefaultWait)
		require.NoError(t, err)
		if bound.Spec.NodeName != node.Name {
			t.Errorf("bound to %s, want %s", bound.Spec.NodeName, node.Name)
		}
	})
}

// TestBadStorageInput: pods whose volumes cannot be had as they stand. Each
// stays pending with the message kube-scheduler v1.37.1 gives (the
// conformance cases storage-missing-claim, storage-missing-class,
// storage-pv-affinity-malformed and storage-bound-pv-affinity-malformed
// compare it with kube-scheduler's own). A pod that lacks something is
// tried again when it appears, and bound; a volume that no node can match
// is never written to.
func TestBadStorageInput(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an apiserver and kube-controller-manager of its own")
	}
	ctx := context.Background()
	c := startStorageCluster(t, "bad-storage")
	c.startControllerManager(t)
	env, _ := c.startScheduler(t, "")
	const node = "storage-node"
	require.NoError(t, env.CreateNodes(ctx, scenario.MakeNode(node).Obj()))
	// static volumes wait for their first pod; immediate ones are bound by
	// the PV controller as soon as they match a claim.
	require.NoError(t, env.CreateObjects(ctx, builders.MakeStorageClass().Name("static").WaitForFirstConsumer().Obj(),
		builders.MakeStorageClass().Name("immediate").Obj()))
	localPV := func(name, class string) *v1.PersistentVolume {
		return builders.MakePV().Name(name).Class(class).Capacity("1Gi").NodeAffinityIn(v1.LabelHostname, node).Obj()
	}
	// malformedPV's node affinity is "hostname Gt storage-node": the
	// apiserver checks only that Gt has one value; every node selector
	// fails to parse it (Gt wants an integer).
	malformedPV := func(name, class string) *v1.PersistentVolume {
		return builders.MakePV().Name(name).Class(class).Capacity("1Gi").
			NodeAffinity(v1.LabelHostname, v1.NodeSelectorOpGt, node).Obj()
	}
	claim := func(name, class string) *v1.PersistentVolumeClaim {
		return builders.MakePVC().Namespace(env.Namespace).Name(name).Class(class).Req("1Gi").Obj()
	}
	expectUnschedulable := func(t *testing.T, pod, want string) {
		t.Helper()
		msg, err := env.WaitForPodUnschedulable(ctx, pod, scenario.DefaultWait)
		require.NoError(t, err)
		require.Equal(t, want, msg)
	}
	// expectBoundWith checks that the pod, first found unschedulable, was
	// tried again and bound to the node, with its claim bound to pv.
	expectBoundWith := func(t *testing.T, pod, claimName, pv string) {
		t.Helper()
		bound, err := env.WaitForPodBound(ctx, pod, scenario.DefaultWait)
		require.NoError(t, err)
		require.Equal(t, node, bound.Spec.NodeName)
		_, err = env.WaitForScheduledAttempt(ctx, pod, scenario.DefaultWait)
		require.NoError(t, err)
		if got := results(env.PodAttempts(pod)); got[0] != string(attempt.Unschedulable) {
			t.Errorf("attempts %v, want Unschedulable first", got)
		}
		if got := waitForClaimBound(ctx, t, env, claimName).Spec.VolumeName; got != pv {
			t.Errorf("claim %s bound to %q, want %q", claimName, got, pv)
		}
	}

	t.Run("a claim that does not exist", func(t *testing.T) {
		require.NoError(t, env.CreatePods(ctx, scenario.MakePod("no-claim").PVC("later").Obj()))
		// VolumeRestrictions' PreFilter finds it missing, unresolvable;
		// DynamicResources' PostFilter then adds its ". not found" (see
		// plugins/dynamicresources).
		expectUnschedulable(t, "no-claim", `0/1 nodes are available: persistentvolumeclaim "later" not found. not found`)
		require.NoError(t, env.CreateObjects(ctx, localPV("later-pv", "static"), claim("later", "static")))
		expectBoundWith(t, "no-claim", "later", "later-pv")
	})

	t.Run("a claim of a class that does not exist", func(t *testing.T) {
		require.NoError(t, env.CreateObjects(ctx, claim("orphan", "later-class")))
		require.NoError(t, env.CreatePods(ctx, scenario.MakePod("no-class").PVC("orphan").Obj()))
		// Only a class can say WaitForFirstConsumer: without one the claim
		// is to be bound at once, by the PV controller, which has no volume
		// for it either.
		expectUnschedulable(t, "no-class", "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found")
		require.NoError(t, env.CreateObjects(ctx, builders.MakeStorageClass().Name("later-class").WaitForFirstConsumer().Obj(),
			localPV("orphan-pv", "later-class")))
		expectBoundWith(t, "no-class", "orphan", "orphan-pv")
	})

	// Matching the malformed affinity fails with an error, which
	// kube-scheduler takes as "does not match" (and logs at -v=5 only, for
	// a bound volume): the message does not name the volume.
	t.Run("a volume to bind whose node affinity cannot be parsed", func(t *testing.T) {
		require.NoError(t, env.CreateObjects(ctx, malformedPV("malformed-pv", "static"), claim("malformed-data", "static")))
		require.NoError(t, env.CreatePods(ctx, scenario.MakePod("malformed").PVC("malformed-data").Obj()))
		const want = "0/1 nodes are available: 1 node(s) didn't find available persistent volumes to bind. " +
			"preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
		expectUnschedulable(t, "malformed", want)
		// A change to the volume sends the pod back to be tried: the
		// scheduler has seen the volume, and still finds it matches no node.
		attempts, err := env.WaitForAttempts(ctx, "malformed", 1, scenario.DefaultWait)
		require.NoError(t, err)
		_, err = c.client.CoreV1().PersistentVolumes().Patch(ctx, "malformed-pv", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		attempts, err = env.WaitForAttempts(ctx, "malformed", len(attempts)+1, scenario.DefaultWait)
		require.NoError(t, err)
		if a := attempts[len(attempts)-1]; a.Result != attempt.Unschedulable || a.Message != want {
			t.Errorf("attempt after the change: %s (%s), want Unschedulable (%s)", a.Result, a.Message, want)
		}
		pv, err := c.client.CoreV1().PersistentVolumes().Get(ctx, "malformed-pv", metav1.GetOptions{})
		require.NoError(t, err)
		pvc, err := c.client.CoreV1().PersistentVolumeClaims(env.Namespace).Get(ctx, "malformed-data", metav1.GetOptions{})
		require.NoError(t, err)
		if pv.Spec.ClaimRef != nil {
			t.Errorf("the volume was given to claim %s", pv.Spec.ClaimRef.Name)
		}
		if node, ok := pvc.Annotations[volume.AnnSelectedNode]; ok || pvc.Spec.VolumeName != "" {
			t.Errorf("the claim has selected node %q, volume %q; want neither", node, pvc.Spec.VolumeName)
		}
	})

	t.Run("a bound volume whose node affinity cannot be parsed", func(t *testing.T) {
		// The PV controller binds an immediate claim without a node, so
		// without looking at node affinity.
		require.NoError(t, env.CreateObjects(ctx, malformedPV("bound-malformed-pv", "immediate"),
			claim("bound-malformed-data", "immediate")))
		pvc := waitForClaimBound(ctx, t, env, "bound-malformed-data")
		require.Equal(t, "bound-malformed-pv", pvc.Spec.VolumeName)
		require.NoError(t, env.CreatePods(ctx, scenario.MakePod("bound-malformed").PVC("bound-malformed-data").Obj()))
		expectUnschedulable(t, "bound-malformed", "0/1 nodes are available: 1 node(s) didn't match PersistentVolume's "+
			"node affinity. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
	})
}

// TestBadDRAInput: pods whose claims cannot be allocated as they stand, on
// an apiserver of their own with the DRA controllers. A class that does
// not exist is named in kube-scheduler's reason and the pod is scheduled
// once it is created; a CEL selector that does not compile never reaches
// the scheduler (the apiserver refuses it, naming the field); one that
// fails on a device is an error naming claim, selector and device, and the
// pod is tried again until the device has what the selector reads; a slice
// whose node is gone gives no device, and a claim allocated there is not
// usable elsewhere until its pod is gone and the resourceclaim controller
// frees it. In each case every claim ends allocated and reserved for the
// pod that was bound.
func TestBadDRAInput(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an apiserver and kube-controller-manager of its own")
	}
	ctx := context.Background()
	c := startStorageCluster(t, "bad-dra")
	c.startControllers(t, testenv.DRAControllers...)
	env, _ := c.startScheduler(t, "")
	const (
		node   = "n1"
		driver = "gpu.example.com"
		class  = "gpu"
	)
	require.NoError(t, env.CreateNodes(ctx, scenario.MakeNode(node).Obj()))
	// gpus are the devices of driver on n1, each with the attributes
	// attrs.
	gpus := func(attrs func(*builders.DeviceWrapper) *builders.DeviceWrapper) *resourceapi.ResourceSlice {
		s := builders.MakeResourceSlice().Name(node + "-gpus").Driver(driver).Node(node)
		for _, name := range []string{"gpu-0", "gpu-1", "gpu-2"} {
			s.Device(attrs(builders.MakeDevice(name)))
		}
		return s.Obj()
	}
	plain := func(d *builders.DeviceWrapper) *builders.DeviceWrapper { return d }
	require.NoError(t, env.CreateObjects(ctx, dradriver.DeviceClass(class, driver), gpus(plain)))
	claims := c.client.ResourceV1().ResourceClaims(c.name)
	claimOf := func(name string, request *builders.DeviceRequestWrapper) *resourceapi.ResourceClaim {
		return builders.MakeResourceClaim().Namespace(c.name).Name(name).Request(request).Obj()
	}
	podWith := func(name, claim string) *v1.Pod {
		return scenario.MakePod(name).ResourceClaim("gpu", claim).Obj()
	}
	expectUnschedulable := func(t *testing.T, pod, want string) {
		t.Helper()
		msg, err := env.WaitForPodUnschedulable(ctx, pod, scenario.DefaultWait)
		require.NoError(t, err)
		require.Equal(t, want, msg)
	}
	// expectClaim checks the claim's devices, node and pods
	// (scenario.DescribeClaim) end with want.
	expectClaim := func(t *testing.T, claim, want string) {
		t.Helper()
		got, err := claims.Get(ctx, claim, metav1.GetOptions{})
		require.NoError(t, err)
		if d := scenario.DescribeClaim(got); !strings.HasSuffix(d, want) {
			t.Errorf("%s, want it to end %q", d, want)
		}
	}
	// expectBound checks that the pod was bound to onNode, by an attempt
	// after failed ones, with claim allocated there and reserved for it.
	expectBound := func(t *testing.T, pod, claim, onNode string) {
		t.Helper()
		bound, err := env.WaitForPodBound(ctx, pod, scenario.DefaultWait)
		require.NoError(t, err)
		require.Equal(t, onNode, bound.Spec.NodeName)
		_, err = env.WaitForScheduledAttempt(ctx, pod, scenario.DefaultWait)
		require.NoError(t, err)
		if got := results(env.PodAttempts(pod)); got[0] == string(attempt.Scheduled) {
			t.Errorf("attempts %v, want a failure first", got)
		}
		expectClaim(t, claim, " on "+onNode+", reserved for "+pod)
	}

	t.Run("a claim of a class that does not exist", func(t *testing.T) {
		require.NoError(t, env.CreateObjects(ctx, claimOf("orphan", builders.MakeDeviceRequest("gpu", "later"))))
		require.NoError(t, env.CreatePods(ctx, podWith("no-class", "orphan")))
		// PreFilter's verdict, unresolvable: preemption cannot help.
		expectUnschedulable(t, "no-class", "0/1 nodes are available: request gpu: device class later does not exist. "+
			"preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
		require.NoError(t, env.CreateObjects(ctx, dradriver.DeviceClass("later", driver)))
		expectBound(t, "no-class", "orphan", node)
	})

	// The apiserver compiles every CEL selector of a new claim or class
	// (with kube-apiserver's default gates, which the scheduler's match),
	// so the allocator's "CEL compile error" is not reachable from here.
	t.Run("a CEL selector that does not compile is refused by the apiserver", func(t *testing.T) {
		const broken = `device.attributes["gpu.example.com"].model ==`
		tests := []struct {
			name   string
			create func() error
			field  string
		}{
			{name: "in a claim", field: "spec.devices.requests[0].exactly.selectors[0].cel.expression",
				create: func() error {
					_, err := claims.Create(ctx, claimOf("broken", builders.MakeDeviceRequest("gpu", class).Selector(broken)),
						metav1.CreateOptions{})
					return err
				}},
			{name: "in a class", field: "spec.selectors[1].cel.expression",
				create: func() error {
					_, err := c.client.ResourceV1().DeviceClasses().Create(ctx, dradriver.DeviceClass("broken", driver, broken),
						metav1.CreateOptions{})
					return err
				}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := tt.create()
				if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.field+": Invalid value") ||
					!strings.Contains(err.Error(), "compilation failed") {
					t.Errorf("err = %v, want Invalid naming %s: compilation failed", err, tt.field)
				}
			})
		}
	})

	t.Run("a CEL selector that fails on a device", func(t *testing.T) {
		// The devices have no attribute "model": reading it is an error
		// (a selector that means "if it has one" says `"model" in ...`).
		require.NoError(t, env.CreateObjects(ctx, claimOf("by-model", builders.MakeDeviceRequest("gpu", class).
			Selector(`device.attributes["gpu.example.com"].model == "a100"`))))
		require.NoError(t, env.CreatePods(ctx, podWith("by-model", "by-model")))
		// gpu-0 is the claim orphan's: the first device tried is gpu-1.
		const want = `running "DynamicResources" filter plugin: claim bad-dra/by-model: selector #0 ` +
			`on device gpu.example.com/n1/gpu-1: CEL runtime error: no such key: model. consider using CEL ` +
			`optional chaining (.? followed by orValue()) or guarding the check with has() for optional fields`
		// Tried again after its backoff, with the same error each time.
		attempts, err := env.WaitForAttempts(ctx, "by-model", 2, scenario.DefaultWait)
		require.NoError(t, err)
		for i, a := range attempts[:2] {
			if a.Result != attempt.SchedulerError || a.Message != want {
				t.Errorf("attempt %d: %s (%s), want SchedulerError (%s)", i+1, a.Result, a.Message, want)
			}
		}
		// The driver tells the model: the selector now holds on gpu-1.
		slice := gpus(func(d *builders.DeviceWrapper) *builders.DeviceWrapper {
			model := "t4"
			if d.Name == "gpu-1" {
				model = "a100"
			}
			return d.StringAttr(driver+"/model", model)
		})
		current, err := c.client.ResourceV1().ResourceSlices().Get(ctx, slice.Name, metav1.GetOptions{})
		require.NoError(t, err)
		slice.ResourceVersion = current.ResourceVersion
		_, err = c.client.ResourceV1().ResourceSlices().Update(ctx, slice, metav1.UpdateOptions{})
		require.NoError(t, err)
		expectBound(t, "by-model", "by-model", node)
		got, err := claims.Get(ctx, "by-model", metav1.GetOptions{})
		require.NoError(t, err)
		if d := got.Status.Allocation.Devices.Results[0].Device; d != "gpu-1" {
			t.Errorf("allocated %s, want gpu-1, the a100", d)
		}
	})
	// No driver runs on a node that is gone, and no node controller is
	// here to delete its slices: they stay, with their devices.
	t.Run("a slice whose node is gone", func(t *testing.T) {
		const (
			doomed      = "doomed"
			doomedClass = "doomed-gpu"
			doomedGPUs  = "doomed.example.com"
		)
		require.NoError(t, env.CreateNodes(ctx, scenario.MakeNode(doomed).Obj()))
		require.NoError(t, env.CreateObjects(ctx, dradriver.DeviceClass(doomedClass, doomedGPUs),
			builders.MakeResourceSlice().Name(doomed).Driver(doomedGPUs).Node(doomed).
				Device(builders.MakeDevice("gpu-0")).Device(builders.MakeDevice("gpu-1")).Obj(),
			claimOf("first", builders.MakeDeviceRequest("gpu", doomedClass))))
		require.NoError(t, env.CreatePods(ctx, podWith("first", "first")))
		_, err := env.WaitForPodBound(ctx, "first", scenario.DefaultWait)
		require.NoError(t, err)
		require.NoError(t, c.client.CoreV1().Nodes().Delete(ctx, doomed, metav1.DeleteOptions{}))
		expectClaim(t, "first", "doomed.example.com/doomed/gpu-0 on doomed, reserved for first")

		// gpu-1 is free, but on no node there is.
		require.NoError(t, env.CreateObjects(ctx, claimOf("fresh", builders.MakeDeviceRequest("gpu", doomedClass))))
		require.NoError(t, env.CreatePods(ctx, podWith("fresh", "fresh")))
		expectUnschedulable(t, "fresh", "0/1 nodes are available: 1 cannot allocate all claims. "+
			"preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
		// first's claim, shared, is usable only where its devices are;
		// PostFilter leaves it to first, which holds it.
		require.NoError(t, env.CreatePods(ctx, podWith("second", "first")))
		expectUnschedulable(t, "second", "0/1 nodes are available: 1 resourceclaim not available on the node. "+
			"preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
		expectClaim(t, "first", "doomed.example.com/doomed/gpu-0 on doomed, reserved for first")

		// The driver comes to n1, and first goes: the resourceclaim
		// controller frees its claim, which second then gets on n1.
		require.NoError(t, env.CreateObjects(ctx, builders.MakeResourceSlice().Name(node+"-doomed").Driver(doomedGPUs).
			Node(node).Device(builders.MakeDevice("gpu-0")).Device(builders.MakeDevice("gpu-1")).Obj()))
		expectBound(t, "fresh", "fresh", node)
		require.NoError(t, env.DeletePod(ctx, "first"))
		expectBound(t, "second", "first", node)
	})
}
