// Shared fixtures for NodeVolumeLimits' tests: the plugin built inside a
// real framework whose listers a fake clientset feeds, and the cluster
// upstream's csi_test.go sets up: per driver, claims bound to volumes of
// that driver; a claim not bound yet, one without a class, one whose volume
// is missing; a class; VolumeAttachments.
package nodevolumelimits

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	csilibplugins "k8s.io/csi-translation-lib/plugins"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// The drivers and in-tree plugins of the tests.
const (
	ebsDriver = csilibplugins.AWSEBSDriverName       // ebs.csi.aws.com
	gceDriver = csilibplugins.GCEPDDriverName        // pd.csi.storage.gke.io
	ebsInTree = csilibplugins.AWSEBSInTreePluginName // kubernetes.io/aws-ebs, migrated to ebsDriver
	hostPath  = "kubernetes.io/hostpath"             // in-tree, never migrated
)

const (
	// nodeName is the node Filter is asked about.
	nodeName = "node-1"
	// className is the class of the claims that are not bound; its
	// provisioner is the first driver given to volumeObjects.
	className = "csi-sc"
	// The claims volumeObjects always makes (upstream's csi-4, -5, -6).
	unboundClaim   = "unbound"    // class className, no volume yet
	noClassClaim   = "no-class"   // no class, no volume
	missingPVClaim = "missing-pv" // class className, bound to a PV that does not exist
)

// claimPrefix names the claims and volumes of each driver: <prefix>-0 to
// <prefix>-3.
var claimPrefix = map[string]string{ebsDriver: "ebs", gceDriver: "gce", ebsInTree: "aws", hostPath: "hostpath"}

// volumeName is the name of claim, PV and volume handle j of driver.
func volumeName(driver string, j int) string { return fmt.Sprintf("%s-%d", claimPrefix[driver], j) }

// volumeObjects returns, for each driver, four claims bound to PVs of the
// same name and handle (a CSI source for a CSI driver, awsElasticBlockStore
// for the in-tree EBS plugin, hostPath for hostpath); the three claims
// unboundClaim, noClassClaim and missingPVClaim; and the class className,
// provisioned by drivers[0].
func volumeObjects(drivers ...string) []runtime.Object {
	var objs []runtime.Object
	for _, driver := range drivers {
		for j := range 4 {
			name := volumeName(driver, j)
			pv := st.MakePV().Name(name)
			switch driver {
			case ebsInTree:
				pv.Source(v1.PersistentVolumeSource{
					AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: name}})
			case hostPath:
				// MakePV's source is a hostPath.
			default:
				pv.CSI(driver, name)
			}
			objs = append(objs, pv.Obj(), st.MakePVC().Name(name).VolumeName(name).Obj())
		}
	}
	return append(objs,
		st.MakePVC().Name(unboundClaim).Class(className).Obj(),
		st.MakePVC().Name(noClassClaim).Obj(),
		st.MakePVC().Name(missingPVClaim).Class(className).VolumeName("missing-in-action").Obj(),
		st.MakeStorageClass().Name(className).Provisioner(drivers[0]).WaitForFirstConsumer().Obj())
}

// limits returns the CSINode of nodeName listing drivers, each with limit
// (0: none set).
func limits(limit int32, drivers ...string) *storagev1.CSINode {
	m := map[string]int32{}
	for _, d := range drivers {
		m[d] = limit
	}
	return st.MakeCSINode(nodeName, m)
}

// volumeAttachment attaches the PV pv to node by attacher.
func volumeAttachment(name, node, attacher, pv string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{
			NodeName: node,
			Attacher: attacher,
			Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv},
		},
	}
}

// attachments returns n VolumeAttachments per driver, attaching that
// driver's volumes 0 to n-1 to nodeName.
func attachments(n int, drivers ...string) []runtime.Object {
	var objs []runtime.Object
	for _, driver := range drivers {
		for j := range n {
			objs = append(objs, volumeAttachment("va-"+volumeName(driver, j), nodeName, driver, volumeName(driver, j)))
		}
	}
	return objs
}

// csiDriver returns the CSIDriver of name, with preventPodSchedulingIfMissing
// set as given (nil: unset).
func csiDriver(name string, preventPodSchedulingIfMissing *bool) *storagev1.CSIDriver {
	return st.MakeCSIDriver(name, false, preventPodSchedulingIfMissing)
}

// ptrTo returns a pointer to v.
func ptrTo[T any](v T) *T { return &v }

// pod starts a pod in namespace "default" with the given name and UID.
func pod(name string) *st.PodWrapper { return st.MakePod().Name(name).UID(name) }

// ephemeralPod returns a pod with generic ephemeral volumes, whose claims are
// <name>-<volume>.
func ephemeralPod(name string, volumes ...string) *v1.Pod {
	p := pod(name)
	for _, v := range volumes {
		p.EphemeralVolume(v, className, "1Gi")
	}
	return p.Obj()
}

// ephemeralClaim returns the claim of owner's ephemeral volume, controlled
// by owner as the ephemeral-volume controller makes it (nil: by nobody).
func ephemeralClaim(podName, volume string, owner *v1.Pod) *v1.PersistentVolumeClaim {
	pvc := st.MakePVC().Name(podName + "-" + volume).Class(className).Obj()
	if owner != nil {
		pvc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: owner.Name,
			UID: owner.UID, Controller: ptrTo(true)}}
	}
	return pvc
}

// testEnv is the plugin in a framework.
type testEnv struct {
	pl             *CSILimits
	schedFramework *framework.Framework
}

// newTestEnv builds the plugin through a framework whose informers know
// objs, and waits until they have synced.
func newTestEnv(t *testing.T, objs ...runtime.Object) *testEnv {
	t.Helper()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(objs...), 0)
	schedFramework, pl := newFramework(t, factory)
	// The plugin asked for its listers in New: start their informers.
	factory.Start(t.Context().Done())
	for typ, ok := range factory.WaitForCacheSync(t.Context().Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	return &testEnv{pl: pl, schedFramework: schedFramework}
}

// newFramework builds a profile with the plugin, whose listers come from
// factory, and returns it with the plugin.
func newFramework(t *testing.T, factory informers.SharedInformerFactory) (*framework.Framework, *CSILimits) {
	t.Helper()
	schedFramework, pl, err := plugintesting.NewPluginFramework[*CSILimits](t.Context(), Name, New, &configv1.Plugins{
		MultiPoint: plugintesting.Enable(Name),
	}, nil, framework.WithInformerFactory(factory))
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	return schedFramework, pl
}

// objects joins lists of objects.
func objects(lists ...[]runtime.Object) []runtime.Object {
	var out []runtime.Object
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
