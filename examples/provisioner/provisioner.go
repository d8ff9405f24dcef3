// The provisioner as a whole: its name and options, the informers it reads,
// the three work queues its workers drain, and Run.

package provisioner

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	storageinformers "k8s.io/client-go/informers/storage/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// Name is the provisioner's name: what a StorageClass's provisioner field
// names to be served by it, the PV binder's storage-provisioner annotation
// on its claims, its CSIDriver's name, and the driver of its volumes.
const Name = "local.minisched.example.com"

// NodeAnnotation, on a PV this provisioner made and on a CSIStorageCapacity
// it published, names the node whose disk it is about: the PV's node
// affinity has the node's hostname label, which need not be its name, and
// space is counted by node.
const NodeAnnotation = Name + "/node"

// The annotations of the provisioning handshake (their keys are upstream's,
// in k8s.io/kubernetes, which minisched does not import).
const (
	// annSelectedNode is set on a claim by the scheduler's PreBind: the
	// node its pod is going to. A provisioner removes it to ask for
	// another.
	annSelectedNode = "volume.kubernetes.io/selected-node"
	// annStorageProvisioner is set on a claim by the PV binder once the
	// claim is to be provisioned: which provisioner should.
	annStorageProvisioner = "volume.kubernetes.io/storage-provisioner"
	// annProvisionedBy is set on a PV by its provisioner.
	annProvisionedBy = "pv.kubernetes.io/provisioned-by"
)

// Options say how big each node's disk is and where capacity is published.
// Disk sizes are options rather than node labels so that a test or a
// scenario states them beside the nodes it creates, and so that a node's
// labels stay what the scheduler's other plugins see.
type Options struct {
	// Capacity is the size of each named node's disk.
	Capacity map[string]resource.Quantity
	// DefaultCapacity is the size of the disk of a node Capacity does not
	// name; zero means such nodes have no room for any volume.
	DefaultCapacity resource.Quantity
	// Namespace holds the CSIStorageCapacity objects; "" means "default".
	Namespace string
}

// Provisioner provisions node-local volumes, deletes released ones, and
// publishes each node's free space. Make one with New and start it with
// Run.
type Provisioner struct {
	client kubernetes.Interface
	opts   Options

	// factory makes and starts the cluster-wide informers below.
	factory informers.SharedInformerFactory
	claims  corelisters.PersistentVolumeClaimLister
	// volumes is indexed by node (byNode): what is on each node's disk.
	volumes cache.SharedIndexInformer
	classes storagelisters.StorageClassLister
	nodes   cache.SharedIndexInformer
	// capacities is the CSIStorageCapacity objects this provisioner
	// published, in opts.Namespace, indexed by node (byNode). It is not
	// the factory's: it watches one namespace and one label.
	capacities cache.SharedIndexInformer

	// claimQueue holds claims (namespace/name) that may need a volume.
	claimQueue workqueue.TypedRateLimitingInterface[string]
	// volumeQueue holds PVs (names) that may need deleting.
	volumeQueue workqueue.TypedRateLimitingInterface[string]
	// capacityQueue holds nodes (names) whose CSIStorageCapacity objects
	// may be out of date.
	capacityQueue workqueue.TypedRateLimitingInterface[string]

	// mu guards reserved.
	mu sync.Mutex
	// reserved is the space granted to volumes whose PV the volumes
	// informer does not show yet, by PV name. Without it, the claim
	// provisioned right after another on the same node would be measured
	// against a cache that lacks the first one's PV.
	reserved map[string]reservation
}

// reservation is space granted on a node's disk to a volume.
type reservation struct {
	node string
	size resource.Quantity
}

// byNode is the name of the informer index of PVs and of CSIStorageCapacity
// objects by the node of their NodeAnnotation.
const byNode = "byNode"

// New makes a provisioner that uses client. Nothing runs before Run.
func New(client kubernetes.Interface, opts Options) *Provisioner {
	if opts.Namespace == "" {
		opts.Namespace = metav1.NamespaceDefault
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	indexers := cache.Indexers{byNode: nodeOfObject}
	newQueue := func(name string) workqueue.TypedRateLimitingInterface[string] {
		return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
	}
	return &Provisioner{
		client:  client,
		opts:    opts,
		factory: factory,
		claims:  factory.Core().V1().PersistentVolumeClaims().Lister(),
		volumes: factory.InformerFor(&v1.PersistentVolume{},
			func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
				return coreinformers.NewPersistentVolumeInformer(c, resync, indexers)
			}),
		classes: factory.Storage().V1().StorageClasses().Lister(),
		nodes:   factory.Core().V1().Nodes().Informer(),
		// Only the objects labelled as this driver's: the namespace may
		// hold other drivers' capacity.
		capacities: storageinformers.NewFilteredCSIStorageCapacityInformer(client, opts.Namespace, 0, indexers,
			func(o *metav1.ListOptions) { o.LabelSelector = driverLabel + "=" + Name }),
		claimQueue:    newQueue("claims"),
		volumeQueue:   newQueue("volumes"),
		capacityQueue: newQueue("capacity"),
		reserved:      map[string]reservation{},
	}
}

// StorageClass is a class of this provisioner's volumes: bound only once a
// pod using the claim is scheduled (WaitForFirstConsumer), because a
// node-local volume can only be made once its node is known; deleted with
// their claim.
func StorageClass(name string) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       Name,
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		ReclaimPolicy:     ptr.To(v1.PersistentVolumeReclaimDelete),
	}
}

// Run creates the CSIDriver if absent, starts the informers and one worker
// per queue, and blocks until ctx is done. Call it once: its queues shut
// down when it returns.
func (p *Provisioner) Run(ctx context.Context) error {
	logger := klog.LoggerWithName(klog.FromContext(ctx), "provisioner")
	ctx = klog.NewContext(ctx, logger)
	// On return, in this order (defers run last first): the queues shut
	// down, so the workers return; the factory's informers stop (ctx is
	// done by then, or they never started); then the rest.
	var wg sync.WaitGroup
	defer wg.Wait()
	defer p.factory.Shutdown()
	defer func() {
		for _, q := range []workqueue.TypedRateLimitingInterface[string]{p.claimQueue, p.volumeQueue, p.capacityQueue} {
			q.ShutDown()
		}
	}()
	if err := p.ensureCSIDriver(ctx); err != nil {
		return err
	}
	if err := p.addEventHandlers(); err != nil {
		return err
	}
	p.factory.Start(ctx.Done())
	wg.Go(func() { p.capacities.Run(ctx.Done()) })
	for typ, synced := range p.factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("provisioner %s: the %v cache did not sync: %w", Name, typ, ctx.Err())
		}
	}
	if !cache.WaitForNamedCacheSyncWithContext(ctx, p.capacities.HasSynced) {
		return fmt.Errorf("provisioner %s: the CSIStorageCapacity cache did not sync: %w", Name, ctx.Err())
	}

	wg.Go(func() { runWorker(ctx, "claim", p.claimQueue, p.syncClaim) })
	wg.Go(func() { runWorker(ctx, "volume", p.volumeQueue, p.syncVolume) })
	wg.Go(func() { runWorker(ctx, "capacity", p.capacityQueue, p.syncCapacity) })
	logger.Info("Started", "provisioner", Name, "capacityNamespace", p.opts.Namespace)
	<-ctx.Done()
	return nil
}

// runWorker calls sync with each key of queue until the queue shuts down.
// A key whose sync failed comes back later, rate limited: typically a
// conflict with an object an informer had not yet seen change. kind names
// the keys in the log.
func runWorker(ctx context.Context, kind string, queue workqueue.TypedRateLimitingInterface[string],
	sync func(context.Context, string) error) {
	for {
		key, quit := queue.Get()
		if quit {
			return
		}
		if err := sync(ctx, key); err != nil {
			klog.FromContext(ctx).Error(err, "Syncing failed, will retry", kind, key)
			queue.AddRateLimited(key)
		} else {
			queue.Forget(key)
		}
		queue.Done(key)
	}
}

// ensureCSIDriver creates the CSIDriver object of Name if there is none.
// The scheduler checks CSIStorageCapacity only for drivers that declare
// storageCapacity; attachRequired is false because nothing is attached (and
// no attach-detach controller runs).
func (p *Provisioner) ensureCSIDriver(ctx context.Context) error {
	driver := &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: Name},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired:       ptr.To(false),
			StorageCapacity:      ptr.To(true),
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
		},
	}
	_, err := p.client.StorageV1().CSIDrivers().Create(ctx, driver, metav1.CreateOptions{})
	switch {
	case err == nil:
		klog.FromContext(ctx).V(2).Info("Created CSIDriver", "csiDriver", klog.KObj(driver))
		return nil
	case apierrors.IsAlreadyExists(err):
		return nil
	default:
		return fmt.Errorf("creating CSIDriver %s: %w", Name, err)
	}
}
