// The driver as a whole: its name and options, the node informer and the
// one queue of nodes, a ResourceSlice controller per node, and Run.

package dradriver

import (
	"context"
	"fmt"
	"maps"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
)

// DefaultDriverName is the driver's name unless Options says otherwise:
// the driver of its ResourceSlices and devices, the domain of their
// attributes, and what DeviceClass selects.
const DefaultDriverName = "gpu.example.com"

// workers is how many nodes the driver sets up at once. Setting one up
// takes a second or more whatever the cluster's size: the ResourceSlice
// controller of resourceslice.StartController looks whether its informer
// has synced once a second, and the first look comes too early. One by
// one, a story's ten nodes would wait ten seconds for their devices.
const workers = 10

// Options say which devices each node has (in JSON, as a scenario file's
// draDriver field gives them).
type Options struct {
	// DriverName is the driver's name; "" means DefaultDriverName.
	DriverName string `json:"driverName,omitempty"`
	// Devices are the devices of every node PerNode does not name.
	Devices NodeDevices `json:"devices,omitempty"`
	// PerNode are the devices of the named nodes.
	PerNode map[string]NodeDevices `json:"perNode,omitempty"`
}

// driverName is the driver's name, defaulted.
func (o Options) driverName() string {
	if o.DriverName == "" {
		return DefaultDriverName
	}
	return o.DriverName
}

// devicesOf is what node has.
func (o Options) devicesOf(node string) NodeDevices {
	if nd, ok := o.PerNode[node]; ok {
		return nd
	}
	return o.Devices
}

// Driver publishes the devices of every node as ResourceSlices, as the
// kubelet plugins of a DRA driver would, one per node. Make one with New
// and start it with Run.
type Driver struct {
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	nodes   corelisters.NodeLister
	// queue holds nodes (names) whose publishing may need starting,
	// changing or stopping.
	queue workqueue.TypedRateLimitingInterface[string]

	// mu guards opts (SetNode changes it) and controllers.
	mu   sync.Mutex
	opts Options
	// controllers publishes each node's pool; a queue key is never synced
	// by two workers at once, so each node's entry has one writer at a
	// time.
	controllers map[string]*nodeController
}

// nodeController is the ResourceSlice controller of one node, for the
// node object of uid: a node deleted and made again under the same name
// gets a new one, since the slices are owned by the node object.
type nodeController struct {
	uid        types.UID
	controller *resourceslice.Controller
}

// New makes a driver that uses client. Nothing runs before Run.
func New(client kubernetes.Interface, opts Options) *Driver {
	opts.PerNode = maps.Clone(opts.PerNode)
	factory := informers.NewSharedInformerFactory(client, 0)
	return &Driver{
		client:  client,
		factory: factory,
		nodes:   factory.Core().V1().Nodes().Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "dradriver-nodes"}),
		opts:        opts,
		controllers: map[string]*nodeController{},
	}
}

// Name is the driver's name.
func (d *Driver) Name() string { return d.opts.driverName() }

// SetNode changes the devices of node, as when a device is added, fails
// or is tainted while the driver runs; the node's slices follow.
func (d *Driver) SetNode(node string, devices NodeDevices) {
	d.mu.Lock()
	if d.opts.PerNode == nil {
		d.opts.PerNode = map[string]NodeDevices{}
	}
	d.opts.PerNode[node] = devices
	d.mu.Unlock()
	d.queue.Add(node)
}

// Run starts the node informer and the workers, and blocks until ctx is
// done; then it stops publishing. The slices stay, as they do when a real
// driver restarts: the next driver takes them over; those of a node
// deleted meanwhile are deleted by the driver, or by the garbage collector
// (they are owned by their node). Call it once: its queue shuts down when
// it returns.
func (d *Driver) Run(ctx context.Context) error {
	logger := klog.LoggerWithName(klog.FromContext(ctx), "dradriver")
	ctx = klog.NewContext(ctx, logger)
	// On return, in this order: the queue shuts down and the workers
	// return, the informers stop, then every node's controller.
	var wg sync.WaitGroup
	defer d.stopAll()
	defer d.factory.Shutdown()
	defer wg.Wait()
	defer d.queue.ShutDown()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			d.queue.Add(key)
		}
	}
	_, err := d.factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		// A node made again under the same name may come as an update.
		UpdateFunc: func(oldObj, newObj any) {
			if oldObj.(*v1.Node).UID != newObj.(*v1.Node).UID {
				enqueue(newObj)
			}
		},
		DeleteFunc: enqueue,
	})
	if err != nil {
		return fmt.Errorf("driver %s: %w", d.Name(), err)
	}
	d.factory.Start(ctx.Done())
	for typ, synced := range d.factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("driver %s: the %v cache did not sync: %w", d.Name(), typ, ctx.Err())
		}
	}
	for range workers {
		wg.Go(func() { d.runWorker(ctx) })
	}
	logger.Info("Started", "driver", d.Name())
	<-ctx.Done()
	return nil
}

// runWorker syncs nodes until the queue shuts down. A node whose sync
// failed comes back later, rate limited.
func (d *Driver) runWorker(ctx context.Context) {
	for {
		node, quit := d.queue.Get()
		if quit {
			return
		}
		if err := d.syncNode(ctx, node); err != nil {
			klog.FromContext(ctx).Error(err, "Syncing failed, will retry", "node", node)
			d.queue.AddRateLimited(node)
		} else {
			d.queue.Forget(node)
		}
		d.queue.Done(node)
	}
}

// syncNode makes the node's published pool what the options say: it
// starts a controller for a new node, updates the pool of a known one,
// and for a node that is gone stops its controller and deletes its slices.
func (d *Driver) syncNode(ctx context.Context, name string) error {
	logger := klog.FromContext(ctx)
	node, err := d.nodes.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	d.mu.Lock()
	nc := d.controllers[name]
	pool := d.opts.Pool(name)
	d.mu.Unlock()
	resources := &resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{name: pool}}
	switch {
	case node != nil && nc != nil && nc.uid == node.UID:
		nc.controller.Update(resources)
		logger.V(4).Info("Updated the node's devices", "node", klog.KObj(node))
		return nil
	case nc != nil:
		// Gone, or made again: the old node's slices go (the garbage
		// collector would delete them too, if it runs).
		nc.controller.Stop()
		d.mu.Lock()
		delete(d.controllers, name)
		d.mu.Unlock()
		if err := d.deleteSlices(ctx, name); err != nil {
			return err
		}
		logger.V(2).Info("Stopped publishing for a deleted node", "node", name)
	}
	if node == nil {
		return nil
	}
	controller, err := resourceslice.StartController(ctx, resourceslice.Options{
		DriverName: d.Name(),
		KubeClient: d.client,
		Owner:      &resourceslice.Owner{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID},
		Resources:  resources,
	})
	if err != nil {
		return fmt.Errorf("publishing the devices of node %s: %w", name, err)
	}
	d.mu.Lock()
	d.controllers[name] = &nodeController{uid: node.UID, controller: controller}
	d.mu.Unlock()
	logger.V(2).Info("Publishing the node's devices", "node", klog.KObj(node), "slices", len(pool.Slices))
	return nil
}

// deleteSlices deletes the driver's slices of node.
func (d *Driver) deleteSlices(ctx context.Context, node string) error {
	selector := fields.Set{
		resourceapi.ResourceSliceSelectorDriver:   d.Name(),
		resourceapi.ResourceSliceSelectorNodeName: node,
	}.String()
	err := d.client.ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return fmt.Errorf("deleting the slices of node %s: %w", node, err)
	}
	return nil
}

// stopAll stops every node's controller.
func (d *Driver) stopAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, nc := range d.controllers {
		nc.controller.Stop()
		delete(d.controllers, name)
	}
}
