// Shared fixtures for VolumeZone's tests: the plugin built inside a real
// framework whose informers hold claims, volumes and classes (so lister
// misses read as the real listers' NotFound errors), listers that fail, and
// builders for the tests' pods and nodes.
package volumezone

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// Label keys, short.
const (
	betaZone   = v1.LabelFailureDomainBetaZone
	betaRegion = v1.LabelFailureDomainBetaRegion
	zone       = v1.LabelTopologyZone
	region     = v1.LabelTopologyRegion
)

// testEnv is the plugin in a framework enabling it at PreFilter and Filter.
type testEnv struct {
	pl             *VolumeZone
	schedFramework *framework.Framework
}

// newTestEnv builds the plugin through a framework whose informers know
// objs (claims, volumes, classes), and waits for the informers to sync.
func newTestEnv(t testing.TB, objs ...runtime.Object) *testEnv {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	factory := informers.NewSharedInformerFactory(fake.NewSimpleClientset(objs...), 0)
	schedFramework, pl, err := plugintesting.NewPluginFramework[*VolumeZone](ctx, Name, New, &configv1.Plugins{
		PreFilter: plugintesting.Enable(Name),
		Filter:    plugintesting.Enable(Name),
	}, nil, framework.WithInformerFactory(factory))
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	// The plugin asked for its listers in New: start their informers.
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	return &testEnv{pl: pl, schedFramework: schedFramework}
}

// objects gathers claims, volumes and classes for newTestEnv.
func objects(pvcs []*v1.PersistentVolumeClaim, pvs []*v1.PersistentVolume,
	classes ...*storagev1.StorageClass) []runtime.Object {
	var objs []runtime.Object
	for _, o := range pvcs {
		objs = append(objs, o)
	}
	for _, o := range pvs {
		objs = append(objs, o)
	}
	for _, o := range classes {
		objs = append(objs, o)
	}
	return objs
}

// podWithClaim is upstream's createPodWithVolume: pod "pod-1" in "default"
// with one volume for claim.
func podWithClaim(claim string) *v1.Pod {
	return st.MakePod().Name("pod-1").UID("pod-1").Namespace(metav1.NamespaceDefault).PVC(claim).Obj()
}

// boundPVC returns a claim in "default" bound to volume pv.
func boundPVC(name, pv string) *v1.PersistentVolumeClaim {
	return st.MakePVC().Name(name).VolumeName(pv).Obj()
}

// labelledPV returns a volume with labels (k, v pairs).
func labelledPV(name string, kv ...string) *v1.PersistentVolume {
	w := st.MakePV().Name(name)
	for i := 0; i+1 < len(kv); i += 2 {
		w.Label(kv[i], kv[i+1])
	}
	return w.Obj()
}

// node returns a node with labels (k, v pairs).
func node(name string, kv ...string) *v1.Node {
	w := st.MakeNode().Name(name)
	for i := 0; i+1 < len(kv); i += 2 {
		w.Label(kv[i], kv[i+1])
	}
	return w.Obj()
}

// classWithoutMode returns a StorageClass with no volumeBindingMode, which
// only a hand-made object has (the apiserver defaults it to Immediate).
func classWithoutMode(name string) *storagev1.StorageClass {
	c := st.MakeStorageClass().Name(name).Obj()
	c.VolumeBindingMode = nil
	return c
}

// errLister is what the failing listers return: not a NotFound.
var errLister = errors.New("lister is unavailable")

// failingPVCLister fails every Get, in every namespace.
type failingPVCLister struct {
	corelisters.PersistentVolumeClaimLister
}

func (failingPVCLister) PersistentVolumeClaims(string) corelisters.PersistentVolumeClaimNamespaceLister {
	return failingPVCNamespaceLister{}
}

type failingPVCNamespaceLister struct {
	corelisters.PersistentVolumeClaimNamespaceLister
}

func (failingPVCNamespaceLister) Get(string) (*v1.PersistentVolumeClaim, error) {
	return nil, errLister
}

// failingPVLister fails every Get.
type failingPVLister struct {
	corelisters.PersistentVolumeLister
}

func (failingPVLister) Get(string) (*v1.PersistentVolume, error) { return nil, errLister }

// failingSCLister fails every Get.
type failingSCLister struct {
	storagelisters.StorageClassLister
}

func (failingSCLister) Get(string) (*storagev1.StorageClass, error) { return nil, errLister }
