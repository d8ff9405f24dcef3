// Integration tests of PreBind against a real apiserver (envtest): the PUTs
// of PVs and claims, the wait on the informers for the binding to complete,
// and every way that wait ends. The apiserver is started once, by the first
// test that needs it, with kube-controller-manager's PV controller beside it:
// it makes new PVs Available, names a claim's provisioner, and completes the
// binds PreBind waits for. The external provisioner's part (create a PV for
// a claim given a node, or give up) is the test's own.
package volumebinding

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/testenv"
)

// The apiserver the integration tests share, started on first use (unit
// tests do not wait for it).
var (
	apiOnce sync.Once
	apiEnv  *testenv.Environment
	kcm     *testenv.ControllerManager
	apiErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if kcm != nil {
		if err := kcm.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping kube-controller-manager:", err)
		}
	}
	if apiEnv != nil {
		if err := apiEnv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
	}
	os.Exit(code)
}

// fakeCSIDriver is the provisioner (and CSI driver) of the tests' dynamic
// volumes; no CSIDriver object exists for it, so capacity is not tracked.
const fakeCSIDriver = "fake.csi.example.com"

// waitTimeout bounds every wait on the apiserver or the informers.
const waitTimeout = 30 * time.Second

// apiserverEnv is the plugin in a framework whose informers and client talk
// to the shared apiserver, in a namespace of its own, with a node.
type apiserverEnv struct {
	client kubernetes.Interface
	fw     *framework.Framework
	pl     *VolumeBinding
	// ns is the test's namespace; cluster-scoped objects are named after it.
	ns   string
	node *v1.Node
}

func newAPIServerEnv(t *testing.T, args string) *apiserverEnv {
	t.Helper()
	apiOnce.Do(func() {
		if apiEnv, apiErr = testenv.StartEnvironment(); apiErr == nil {
			kcm, apiErr = apiEnv.StartControllerManager(testenv.StorageControllers...)
		}
	})
	if apiErr != nil {
		t.Fatalf("starting envtest: %v", apiErr)
	}
	client, err := kubernetes.NewForConfig(apiEnv.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns, err := client.CoreV1().Namespaces().Create(ctx,
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "vb-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := client.CoreV1().Nodes().Create(ctx, node(ns.Name+"-node", nodeLabelKey, ns.Name+"-node"),
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var raw *runtime.RawExtension
	if args != "" {
		raw = rawArgs(args)
	}
	fw, pl, err := buildFramework(t, client, informers.NewSharedInformerFactory(client, 0), raw)
	if err != nil {
		t.Fatal(err)
	}
	return &apiserverEnv{client: client, fw: fw, pl: pl, ns: ns.Name, node: n}
}

// name is a cluster-wide unique name for the test's object.
func (e *apiserverEnv) name(s string) string { return e.ns + "-" + s }

// create creates objs (classes, volumes, claims, pods) and waits until the
// plugin's informers have them.
func (e *apiserverEnv) create(t *testing.T, objs ...runtime.Object) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *v1.Pod:
			o.Namespace = e.ns
			_, err = e.client.CoreV1().Pods(e.ns).Create(ctx, o, metav1.CreateOptions{})
		case *v1.PersistentVolumeClaim:
			o.Namespace, o.ResourceVersion = e.ns, ""
			_, err = e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(ctx, o, metav1.CreateOptions{})
		case *v1.PersistentVolume:
			o.ResourceVersion = ""
			_, err = e.client.CoreV1().PersistentVolumes().Create(ctx, o, metav1.CreateOptions{})
		case *storagev1.StorageClass:
			_, err = e.client.StorageV1().StorageClasses().Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("create: unexpected %T", obj)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	e.waitFor(t, "the informers to see the test's objects", func() bool {
		for _, obj := range objs {
			if !e.informerHas(obj) {
				return false
			}
		}
		_, err := e.pl.binder.nodeLister.Get(e.node.Name)
		return err == nil
	})
}

// informerHas reports whether the plugin's informers hold obj.
func (e *apiserverEnv) informerHas(obj runtime.Object) bool {
	var err error
	switch o := obj.(type) {
	case *v1.Pod:
		_, err = e.pl.binder.podLister.Pods(e.ns).Get(o.Name)
	case *v1.PersistentVolumeClaim:
		_, err = e.pl.binder.pvcCache.GetAPIObj(e.ns + "/" + o.Name)
	case *v1.PersistentVolume:
		var pv *v1.PersistentVolume
		pv, err = e.pl.binder.pvCache.GetAPIObj(o.Name)
		return err == nil && pv.Status.Phase == v1.VolumeAvailable
	case *storagev1.StorageClass:
		_, err = e.pl.binder.classLister.Get(o.Name)
	}
	return err == nil
}

// waitFor polls cond until it holds, or fails the test naming what.
func (e *apiserverEnv) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, waitTimeout, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// reserve runs the scheduling cycle's PreFilter, Filter (on the env's node,
// which must fit) and Reserve for pod, and returns the state and the pod as
// assumed on the node.
func (e *apiserverEnv) reserve(ctx context.Context, t *testing.T, pod *v1.Pod) (*framework.CycleState, *v1.Pod) {
	t.Helper()
	state := framework.NewCycleState()
	if _, s := e.pl.PreFilter(ctx, state, pod, nil); !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	if s := e.pl.Filter(ctx, state, pod, plugintesting.MakeNodeInfo(e.node)); !s.IsSuccess() {
		t.Fatalf("Filter: %v", s)
	}
	if s := e.pl.Reserve(ctx, state, pod, e.node.Name); !s.IsSuccess() {
		t.Fatalf("Reserve: %v", s)
	}
	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = e.node.Name
	return state, assumed
}

// preBind runs the binding cycle's PreBindPreFlight (which must say there is
// work) and PreBind in the background, as the scheduler does; the status
// arrives on the channel.
func (e *apiserverEnv) preBind(ctx context.Context, t *testing.T, state *framework.CycleState,
	pod *v1.Pod) <-chan *framework.Status {
	t.Helper()
	if s := e.fw.RunPreBindPreFlights(ctx, state, pod, e.node.Name); !s.IsSuccess() {
		t.Fatalf("PreBindPreFlight: %v, want Success", s)
	}
	done := make(chan *framework.Status, 1)
	go func() { done <- e.fw.RunPreBindPlugins(ctx, state, pod, e.node.Name) }()
	return done
}

// result waits for PreBind's status.
func result(t *testing.T, done <-chan *framework.Status) *framework.Status {
	t.Helper()
	select {
	case s := <-done:
		return s
	case <-time.After(waitTimeout):
		t.Fatal("PreBind did not return")
		return nil
	}
}

// pvc and pv read the apiserver's objects.
func (e *apiserverEnv) pvc(t *testing.T, name string) *v1.PersistentVolumeClaim {
	t.Helper()
	pvc, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pvc
}

func (e *apiserverEnv) pv(t *testing.T, name string) *v1.PersistentVolume {
	t.Helper()
	pv, err := e.client.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pv
}

// waitSelected waits until the claim carries a selected node, and returns it.
func waitSelected(t *testing.T, e *apiserverEnv, claim string) *v1.PersistentVolumeClaim {
	t.Helper()
	var pvc *v1.PersistentVolumeClaim
	e.waitFor(t, "the claim's selected-node annotation", func() bool {
		pvc = e.pvc(t, claim)
		return pvc.Annotations[volume.AnnSelectedNode] != ""
	})
	return pvc
}

// provision is the external provisioner: once the claim names a node, a PV
// for it on that node, pre-bound to the claim.
func provision(t *testing.T, e *apiserverEnv, claim, class, pvName string) {
	t.Helper()
	pvc := waitSelected(t, e, claim)
	pv := st.MakePV().Name(pvName).Class(class).Capacity("1Gi").CSI(fakeCSIDriver, pvName).
		NodeAffinityIn(nodeLabelKey, pvc.Annotations[volume.AnnSelectedNode]).Obj()
	pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: e.ns,
		Name: claim, UID: pvc.UID}
	if _, err := e.client.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
		t.Error(err)
	}
}

// giveUp is the external provisioner failing: it removes selected-node so
// that the scheduler picks a node again.
func giveUp(t *testing.T, e *apiserverEnv, claim, provisioner string) {
	t.Helper()
	var pvc *v1.PersistentVolumeClaim
	e.waitFor(t, "the PV controller to name the provisioner", func() bool {
		pvc = e.pvc(t, claim)
		return pvc.Annotations[volume.AnnStorageProvisioner] == provisioner
	})
	delete(pvc.Annotations, volume.AnnSelectedNode)
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Update(context.Background(), pvc,
		metav1.UpdateOptions{}); err != nil {
		t.Error(err)
	}
}

func TestPreBindAgainstAPIServer(t *testing.T) {
	t.Run("static PV: the PV gets the claimRef; PreBind returns once the PV controller binds the claim", func(t *testing.T) {
		e := newAPIServerEnv(t, `{"bindTimeoutSeconds": 30}`)
		_, ctx := ktesting.NewTestContext(t)
		class := st.MakeStorageClass().Name(e.name("local")).WaitForFirstConsumer().Obj()
		pv := makePV(e.name("pv"), e.node.Name, "1Gi", class.Name)
		pod := st.MakePod().Name("p").Image("registry.k8s.io/pause:3.10").PVC("data").Obj()
		e.create(t, class, pv, makePVC("data", "1Gi", class.Name), pod)

		state, assumed := e.reserve(ctx, t, pod)
		done := e.preBind(ctx, t, state, assumed)
		if s := result(t, done); !s.IsSuccess() {
			t.Fatalf("PreBind: %v", s)
		}
		written := e.pv(t, pv.Name)
		claim := e.pvc(t, "data")
		if ref := written.Spec.ClaimRef; ref == nil || ref.Name != "data" || ref.Namespace != e.ns || ref.UID != claim.UID {
			t.Errorf("PV's claimRef = %+v, want the claim with its UID", ref)
		}
		if written.Annotations[volume.AnnBoundByController] != "yes" {
			t.Errorf("PV's annotations = %v, want %s: yes", written.Annotations, volume.AnnBoundByController)
		}
	})

	t.Run("dynamic provisioning: the claim gets selected-node; PreBind returns once its PV is provisioned and bound", func(t *testing.T) {
		e := newAPIServerEnv(t, `{"bindTimeoutSeconds": 30}`)
		_, ctx := ktesting.NewTestContext(t)
		class := st.MakeStorageClass().Name(e.name("csi")).Provisioner(fakeCSIDriver).WaitForFirstConsumer().Obj()
		pod := st.MakePod().Name("p").Image("registry.k8s.io/pause:3.10").PVC("data").Obj()
		e.create(t, class, makePVC("data", "1Gi", class.Name), pod)

		state, assumed := e.reserve(ctx, t, pod)
		done := e.preBind(ctx, t, state, assumed)
		provision(t, e, "data", class.Name, e.name("pv"))
		if s := result(t, done); !s.IsSuccess() {
			t.Fatalf("PreBind: %v", s)
		}
		if got := e.pvc(t, "data").Annotations[volume.AnnSelectedNode]; got != e.node.Name {
			t.Errorf("claim's selected node = %q, want %q", got, e.node.Name)
		}
	})

	t.Run("bindTimeoutSeconds 0: the PV is written, then PreBind fails at once", func(t *testing.T) {
		e := newAPIServerEnv(t, `{"bindTimeoutSeconds": 0}`)
		_, ctx := ktesting.NewTestContext(t)
		class := st.MakeStorageClass().Name(e.name("local")).WaitForFirstConsumer().Obj()
		pv := makePV(e.name("pv"), e.node.Name, "1Gi", class.Name)
		pod := st.MakePod().Name("p").Image("registry.k8s.io/pause:3.10").PVC("data").Obj()
		e.create(t, class, pv, makePVC("data", "1Gi", class.Name), pod)

		state, assumed := e.reserve(ctx, t, pod)
		s := result(t, e.preBind(ctx, t, state, assumed))
		want := `running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded`
		if s.Code() != framework.Error || s.Message() != want {
			t.Errorf("PreBind = %v, want Error %q", s, want)
		}
		if ref := e.pv(t, pv.Name).Spec.ClaimRef; ref == nil || ref.Name != "data" {
			t.Errorf("PV's claimRef = %+v, want it written before the wait", ref)
		}
	})

	t.Run("no provisioner answers: PreBind fails after bindTimeoutSeconds", func(t *testing.T) {
		e := newAPIServerEnv(t, `{"bindTimeoutSeconds": 2}`)
		_, ctx := ktesting.NewTestContext(t)
		class := st.MakeStorageClass().Name(e.name("csi")).Provisioner(fakeCSIDriver).WaitForFirstConsumer().Obj()
		pod := st.MakePod().Name("p").Image("registry.k8s.io/pause:3.10").PVC("data").Obj()
		e.create(t, class, makePVC("data", "1Gi", class.Name), pod)

		state, assumed := e.reserve(ctx, t, pod)
		start := time.Now()
		s := result(t, e.preBind(ctx, t, state, assumed))
		if want := "binding volumes: context deadline exceeded"; !strings.HasSuffix(s.Message(), want) {
			t.Errorf("PreBind = %v, want %q", s, want)
		}
		if waited := time.Since(start); waited < 2*time.Second {
			t.Errorf("PreBind failed after %v, want at least bindTimeoutSeconds (2s)", waited)
		}
	})

	t.Run("the PV changed after Reserve: the write fails with a Conflict, and Unreserve frees the PV", func(t *testing.T) {
		e := newAPIServerEnv(t, `{"bindTimeoutSeconds": 30}`)
		_, ctx := ktesting.NewTestContext(t)
		class := st.MakeStorageClass().Name(e.name("local")).WaitForFirstConsumer().Obj()
		pv := makePV(e.name("pv"), e.node.Name, "1Gi", class.Name)
		pod := st.MakePod().Name("p").Image("registry.k8s.io/pause:3.10").PVC("data").Obj()
		e.create(t, class, pv, makePVC("data", "1Gi", class.Name), pod)

		state, assumed := e.reserve(ctx, t, pod)
		changed := e.pv(t, pv.Name)
		changed.Labels = map[string]string{"changed": "yes"}
		if _, err := e.client.CoreV1().PersistentVolumes().Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		s := result(t, e.preBind(ctx, t, state, assumed))
		want := fmt.Sprintf(`running PreBind plugin "VolumeBinding": Operation cannot be fulfilled on persistentvolumes %q: `+
			"the object has been modified; please apply your changes to the latest version and try again", pv.Name)
		if s.Code() != framework.Error || s.Message() != want {
			t.Errorf("PreBind = %v, want Error %q", s, want)
		}
		e.fw.RunReservePluginsUnreserve(ctx, state, assumed, e.node.Name)
		e.waitFor(t, "the PV to be free for the next cycle", func() bool {
			pv, err := e.pl.binder.pvCache.Get(pv.Name)
			return err == nil && pv.Spec.ClaimRef == nil && pv.Labels["changed"] == "yes"
		})
		_, again := e.reserve(ctx, t, pod)
		if again.Spec.NodeName != e.node.Name {
			t.Errorf("the next cycle could not reserve the PV")
		}
	})

	t.Run("the provisioner gives up: PreBind fails with provisioning failed", func(t *testing.T) {
		e := newAPIServerEnv(t, `{"bindTimeoutSeconds": 30}`)
		_, ctx := ktesting.NewTestContext(t)
		class := st.MakeStorageClass().Name(e.name("csi")).Provisioner(fakeCSIDriver).WaitForFirstConsumer().Obj()
		pod := st.MakePod().Name("p").Image("registry.k8s.io/pause:3.10").PVC("data").Obj()
		e.create(t, class, makePVC("data", "1Gi", class.Name), pod)

		state, assumed := e.reserve(ctx, t, pod)
		done := e.preBind(ctx, t, state, assumed)
		giveUp(t, e, "data", fakeCSIDriver)
		s := result(t, done)
		if want := `binding volumes: provisioning failed for PVC "data"`; !strings.HasSuffix(s.Message(), want) {
			t.Errorf("PreBind = %v, want %q", s, want)
		}
	})

	t.Run("the pod is deleted while PreBind waits: PreBind fails", func(t *testing.T) {
		e := newAPIServerEnv(t, `{"bindTimeoutSeconds": 30}`)
		_, ctx := ktesting.NewTestContext(t)
		class := st.MakeStorageClass().Name(e.name("local")).WaitForFirstConsumer().Obj()
		pod := st.MakePod().Name("p").Image("registry.k8s.io/pause:3.10").PVC("data").Obj()
		e.create(t, class, makePV(e.name("pv"), e.node.Name, "1Gi", class.Name), makePVC("data", "1Gi", class.Name), pod)

		state, assumed := e.reserve(ctx, t, pod)
		done := e.preBind(ctx, t, state, assumed)
		if err := e.client.CoreV1().Pods(e.ns).Delete(ctx, "p", metav1.DeleteOptions{
			GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
		s := result(t, done)
		if want := `binding volumes: pod does not exist any more: pod "p" not found`; !strings.HasSuffix(s.Message(), want) {
			t.Errorf("PreBind = %v, want %q", s, want)
		}
	})
}
