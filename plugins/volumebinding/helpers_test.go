// Shared fixtures for VolumeBinding's tests: the plugin built inside a real
// framework over fake-clientset informers (pluginEnv), the binder alone over
// informer stores the test fills by hand (binderEnv), and the storage
// objects of kube-scheduler's own tests (classes, claims, volumes, nodes).
package volumebinding

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"
	testingclock "k8s.io/utils/clock/testing"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// nodeLabelKey is the node label the binder tests' PVs and classes select.
const nodeLabelKey = "nodeKey"

// The storage classes of kube-scheduler's plugin tests ...
var (
	immediateSC = st.MakeStorageClass().Name("immediate-sc").Obj()
	waitSC      = st.MakeStorageClass().Name("wait-sc").WaitForFirstConsumer().Obj()
	waitHDDSC   = st.MakeStorageClass().Name("wait-hdd-sc").WaitForFirstConsumer().Obj()
	// waitSCWithStorageCapacity provisions through a CSI driver that tracks
	// capacity (driverWithStorageCapacity).
	waitSCWithStorageCapacity = st.MakeStorageClass().Name("wait-sc-with-storage-capacity").
					Provisioner("driver-with-storage-capacity").WaitForFirstConsumer().Obj()
	driverWithStorageCapacity = st.MakeCSIDriver("driver-with-storage-capacity", true, nil)
)

// ... and of its binder tests.
const provisioner = "test-provisioner"

var (
	waitClass      = st.MakeStorageClass().Name("waitClass").WaitForFirstConsumer().Obj()
	immediateClass = st.MakeStorageClass().Name("immediateClass").Obj()
	// waitClassWithProvisioner provisions on nodes labelled nodeKey=node1.
	waitClassWithProvisioner = st.MakeStorageClass().Name("waitClassWithProvisioner").Provisioner(provisioner).
					WaitForFirstConsumer().AllowedTopologyIn(nodeLabelKey, "node1", "reference-value").Obj()
	// topoMismatchClass provisions on no node of the tests.
	topoMismatchClass = st.MakeStorageClass().Name("topoMismatchClass").Provisioner(provisioner).
				WaitForFirstConsumer().AllowedTopologyIn(nodeLabelKey, "reference-value").Obj()
)

// allClasses are created in every environment.
func allClasses() []*storagev1.StorageClass {
	return []*storagev1.StorageClass{immediateSC, waitSC, waitHDDSC, waitSCWithStorageCapacity,
		waitClass, immediateClass, waitClassWithProvisioner, topoMismatchClass}
}

// makePVC returns a claim in namespace default of class requesting size
// ("" for no request), with UID "pvc-uid" and resourceVersion "1".
func makePVC(name, size, class string) *v1.PersistentVolumeClaim {
	w := st.MakePVC().Name(name).UID("pvc-uid").Class(class)
	if size != "" {
		w.Req(size)
	}
	pvc := w.Obj()
	pvc.ResourceVersion = "1"
	return pvc
}

// boundTo is pvc fully bound to pv, as the PV controller leaves it.
func boundTo(pvc *v1.PersistentVolumeClaim, pv string) *v1.PersistentVolumeClaim {
	pvc = preboundTo(pvc, pv)
	metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, volume.AnnBindCompleted, "yes")
	return pvc
}

// preboundTo is pvc naming pv (spec.volumeName) with the binding not
// completed.
func preboundTo(pvc *v1.PersistentVolumeClaim, pv string) *v1.PersistentVolumeClaim {
	pvc = pvc.DeepCopy()
	pvc.Spec.VolumeName = pv
	return pvc
}

// withSelectedNode is pvc given to node by the scheduler.
func withSelectedNode(pvc *v1.PersistentVolumeClaim, node string) *v1.PersistentVolumeClaim {
	pvc = pvc.DeepCopy()
	metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, volume.AnnSelectedNode, node)
	return pvc
}

// withRV is pvc at resourceVersion rv.
func withRV(pvc *v1.PersistentVolumeClaim, rv string) *v1.PersistentVolumeClaim {
	pvc = pvc.DeepCopy()
	pvc.ResourceVersion = rv
	return pvc
}

// makePV returns an Available volume of class and capacity (none for ""),
// resourceVersion "1", whose node affinity requires nodeKey=node (none for
// "").
func makePV(name, node, capacity, class string) *v1.PersistentVolume {
	w := st.MakePV().Name(name).Class(class).Phase(v1.VolumeAvailable)
	if capacity != "" {
		w.Capacity(capacity)
	}
	if node != "" {
		w.NodeAffinityIn(nodeLabelKey, node)
	}
	pv := w.Obj()
	pv.ResourceVersion = "1"
	return pv
}

// pvAffinity is pv whose node affinity requires every label of terms (one
// In requirement per key).
func pvAffinity(pv *v1.PersistentVolume, terms map[string][]string) *v1.PersistentVolume {
	pv = pv.DeepCopy()
	term := v1.NodeSelectorTerm{}
	for _, k := range []string{v1.LabelHostname, v1.LabelTopologyRegion, v1.LabelTopologyZone, "foo"} {
		if values, ok := terms[k]; ok {
			term.MatchExpressions = append(term.MatchExpressions,
				v1.NodeSelectorRequirement{Key: k, Operator: v1.NodeSelectorOpIn, Values: values})
		}
	}
	pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{term}}}
	return pv
}

// claimedBy is pv bound to pvc (a full claimRef and the bound-by-controller
// annotation), as AssumePodVolumes makes it.
func claimedBy(pv *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim) *v1.PersistentVolume {
	pv = pv.DeepCopy()
	pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
		Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID, ResourceVersion: pvc.ResourceVersion}
	metav1.SetMetaDataAnnotation(&pv.ObjectMeta, volume.AnnBoundByController, "yes")
	return pv
}

// node returns a node labelled with its hostname and kv (key, value pairs).
func node(name string, kv ...string) *v1.Node {
	w := st.MakeNode().Name(name).Label(v1.LabelHostname, name)
	for i := 0; i+1 < len(kv); i += 2 {
		w.Label(kv[i], kv[i+1])
	}
	return w.Obj()
}

// makeCapacity returns a CSIStorageCapacity of class reachable from nodes
// labelled nodeKey=node (from every node for ""; from none for "-") with
// capacity and maximumVolumeSize ("" for unset).
func makeCapacity(name, class, node, capacity, maxSize string) *storagev1.CSIStorageCapacity {
	c := &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		StorageClassName: class, NodeTopology: &metav1.LabelSelector{}}
	switch node {
	case "":
	case "-":
		c.NodeTopology = nil
	default:
		c.NodeTopology.MatchLabels = map[string]string{nodeLabelKey: node}
	}
	if capacity != "" {
		c.Capacity = ptrQuantity(capacity)
	}
	if maxSize != "" {
		c.MaximumVolumeSize = ptrQuantity(maxSize)
	}
	return c
}

func ptrQuantity(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

// podWithClaims returns pod "test-pod" in namespace default, on node1, using
// each claim.
func podWithClaims(claims ...*v1.PersistentVolumeClaim) *v1.Pod {
	w := st.MakePod().Name("test-pod").UID("test-pod").NodeName("node1")
	for _, c := range claims {
		w.PVC(c.Name)
	}
	return w.Obj()
}

// ephemeralVolume is a generic ephemeral volume named name (its claim is
// <pod>-<name>).
func ephemeralVolume(name string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}}
}

// ownedBy is pvc controlled by pod, as the ephemeral volume controller
// makes it.
func ownedBy(pvc *v1.PersistentVolumeClaim, pod *v1.Pod) *v1.PersistentVolumeClaim {
	pvc = pvc.DeepCopy()
	controller := true
	pvc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
		Controller: &controller}}
	return pvc
}

// rawArgs wraps JSON args.
func rawArgs(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

// pluginEnv is the plugin inside a framework whose informers (started and
// synced) list what the fake clientset was created with.
type pluginEnv struct {
	pl      *VolumeBinding
	client  *fake.Clientset
	factory informers.SharedInformerFactory
}

// newPluginEnv builds the plugin with args over objs (and allClasses and
// driverWithStorageCapacity), or fails the test.
func newPluginEnv(t *testing.T, args *runtime.RawExtension, objs ...runtime.Object) *pluginEnv {
	t.Helper()
	env, err := buildPluginEnv(t, args, objs...)
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	return env
}

// buildPluginEnv is newPluginEnv returning the framework's error.
func buildPluginEnv(t *testing.T, args *runtime.RawExtension, objs ...runtime.Object) (*pluginEnv, error) {
	t.Helper()
	for _, sc := range allClasses() {
		objs = append(objs, sc)
	}
	objs = append(objs, driverWithStorageCapacity)
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	_, pl, err := buildFramework(t, client, factory, args)
	if err != nil {
		return nil, err
	}
	return &pluginEnv{pl: pl, client: client, factory: factory}, nil
}

// buildFramework builds a framework with VolumeBinding at every point it
// implements, over client and factory, and starts the informers the plugin
// asked for (they are stopped when the test ends).
func buildFramework(t *testing.T, client kubernetes.Interface, factory informers.SharedInformerFactory,
	args *runtime.RawExtension) (*framework.Framework, *VolumeBinding, error) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	fw, pl, err := plugintesting.NewPluginFramework[*VolumeBinding](ctx, Name, New, &configv1.Plugins{
		PreFilter: plugintesting.Enable(Name),
		Filter:    plugintesting.Enable(Name),
		PreScore:  plugintesting.Enable(Name),
		Score:     plugintesting.Enable(Name),
		Reserve:   plugintesting.Enable(Name),
		PreBind:   plugintesting.Enable(Name),
	}, args, framework.WithClientSet(client), framework.WithInformerFactory(factory))
	if err != nil {
		return nil, nil, err
	}
	// The plugin asked for its informers in New: start them.
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	return fw, pl, nil
}

// binderEnv is the binder over informers that are never started: the test
// writes their stores directly (what the informers would hold) and, for
// objects PreBind updates, the fake clientset too.
type binderEnv struct {
	binder  *volumeBinder
	client  *fake.Clientset
	factory informers.SharedInformerFactory
	clock   *testingclock.FakeClock
}

// newBinderEnv builds a binder with a 10s bind timeout on a fake clock, and
// allClasses in its class store.
func newBinderEnv(t *testing.T) *binderEnv {
	t.Helper()
	logger, _ := ktesting.NewTestContext(t)
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	b, err := newVolumeBinder(logger, client, factory, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b.clock = testingclock.NewFakeClock(time.Now())
	env := &binderEnv{binder: b, client: client, factory: factory, clock: b.clock.(*testingclock.FakeClock)}
	for _, sc := range allClasses() {
		env.store(t, factory.Storage().V1().StorageClasses().Informer().GetIndexer(), sc)
	}
	return env
}

// store adds or replaces obj in an informer's store.
func (e *binderEnv) store(t *testing.T, indexer interface{ Update(any) error }, obj any) {
	t.Helper()
	if err := indexer.Update(obj); err != nil {
		t.Fatal(err)
	}
}

// addPVs puts pvs in the PV store and, unless cacheOnly, the apiserver.
func (e *binderEnv) addPVs(t *testing.T, cacheOnly bool, pvs ...*v1.PersistentVolume) {
	t.Helper()
	for _, pv := range pvs {
		e.store(t, e.binder.pvCache.store, pv)
		if !cacheOnly {
			if _, err := e.client.CoreV1().PersistentVolumes().Create(context.Background(), pv,
				metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// addPVCs puts pvcs in the PVC store and, unless cacheOnly, the apiserver.
func (e *binderEnv) addPVCs(t *testing.T, cacheOnly bool, pvcs ...*v1.PersistentVolumeClaim) {
	t.Helper()
	for _, pvc := range pvcs {
		e.store(t, e.binder.pvcCache.store, pvc)
		if !cacheOnly {
			if _, err := e.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Create(context.Background(), pvc,
				metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// addObjects puts nodes, CSINodes, CSIDrivers, capacities and pods in their
// stores.
func (e *binderEnv) addObjects(t *testing.T, objs ...runtime.Object) {
	t.Helper()
	for _, obj := range objs {
		switch o := obj.(type) {
		case *v1.Node:
			e.store(t, e.factory.Core().V1().Nodes().Informer().GetIndexer(), o)
		case *v1.Pod:
			e.store(t, e.factory.Core().V1().Pods().Informer().GetIndexer(), o)
		case *storagev1.CSINode:
			e.store(t, e.factory.Storage().V1().CSINodes().Informer().GetIndexer(), o)
		case *storagev1.CSIDriver:
			e.store(t, e.factory.Storage().V1().CSIDrivers().Informer().GetIndexer(), o)
		case *storagev1.CSIStorageCapacity:
			e.store(t, e.factory.Storage().V1().CSIStorageCapacities().Informer().GetIndexer(), o)
		default:
			t.Fatalf("addObjects: unexpected %T", obj)
		}
	}
}
