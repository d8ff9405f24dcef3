// Shared fixtures for VolumeRestrictions' tests: the plugin built inside a
// real framework over a snapshot and fake claims, and inline disk volumes.
package volumerestrictions

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// The nodes every test environment has; existing pods run on node1.
const (
	node1 = "node-1"
	node2 = "node-2"
)

// testEnv is the plugin in a framework, with the snapshot it reads.
type testEnv struct {
	pl             *VolumeRestrictions
	schedFramework *framework.Framework
	snapshot       *cache.Snapshot
}

// nodeInfo returns one node's NodeInfo from the snapshot.
func (e *testEnv) nodeInfo(t *testing.T, name string) *framework.NodeInfo {
	t.Helper()
	ni, err := e.snapshot.NodeInfos().Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return ni
}

// newTestEnv builds the plugin through a framework whose snapshot holds
// node1 and node2 with pods on them (by spec.nodeName), and whose informers
// know pvcs.
func newTestEnv(t *testing.T, pods []*v1.Pod, pvcs ...*v1.PersistentVolumeClaim) *testEnv {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	objs := make([]runtime.Object, 0, len(pvcs))
	for _, pvc := range pvcs {
		objs = append(objs, pvc)
	}
	factory := informers.NewSharedInformerFactory(fake.NewSimpleClientset(objs...), 0)
	snapshot := cache.NewSnapshot(pods, []*v1.Node{st.MakeNode().Name(node1).Obj(), st.MakeNode().Name(node2).Obj()})

	schedFramework, pl, err := plugintesting.NewPluginFramework[*VolumeRestrictions](ctx, Name, New, &configv1.Plugins{
		PreFilter: plugintesting.Enable(Name),
		Filter:    plugintesting.Enable(Name),
	}, nil, framework.WithSnapshotSharedLister(snapshot), framework.WithInformerFactory(factory))
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	// The plugin asked for the claim lister in New: start its informer.
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	return &testEnv{pl: pl, schedFramework: schedFramework, snapshot: snapshot}
}

// pod starts a pod in namespace "default" with the given name and UID.
func pod(name string) *st.PodWrapper { return st.MakePod().Name(name).UID(name) }

// rwop returns a ReadWriteOncePod claim in namespace "default".
func rwop(name string) *v1.PersistentVolumeClaim {
	return st.MakePVC().Name(name).AccessModes(v1.ReadWriteOncePod).Obj()
}

// gcePD is an inline GCE persistent disk.
func gcePD(pdName string, readOnly bool) v1.Volume {
	return v1.Volume{Name: "gce", VolumeSource: v1.VolumeSource{
		GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: pdName, ReadOnly: readOnly}}}
}

// awsEBS is an inline AWS EBS volume.
func awsEBS(volumeID string, readOnly bool) v1.Volume {
	return v1.Volume{Name: "ebs", VolumeSource: v1.VolumeSource{
		AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: volumeID, ReadOnly: readOnly}}}
}

// iscsi is an inline iSCSI volume on upstream's test portal.
func iscsi(iqn string, readOnly bool) v1.Volume {
	return v1.Volume{Name: "iscsi", VolumeSource: v1.VolumeSource{ISCSI: &v1.ISCSIVolumeSource{
		TargetPortal: "127.0.0.1:3260", IQN: iqn, FSType: "ext4", ReadOnly: readOnly}}}
}

// rbd is an inline Ceph RBD image.
func rbd(monitors []string, pool, image string, readOnly bool) v1.Volume {
	return v1.Volume{Name: "rbd", VolumeSource: v1.VolumeSource{RBD: &v1.RBDVolumeSource{
		CephMonitors: monitors, RBDPool: pool, RBDImage: image, FSType: "ext4", ReadOnly: readOnly}}}
}
