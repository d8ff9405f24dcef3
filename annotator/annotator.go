// Package annotator is the controller behind `minisched annotate`: it copies
// node load from Prometheus onto node annotations, and counts recent
// bindings into node_hot_value, for the Dynamic plugin to read. It does what
// crane-scheduler's controller (crane-scheduler-controller) does, so either
// can feed either scheduler.
//
//	every syncPolicy period, per metric ─▶ queue (node, metric) for every node
//	worker: Prometheus <metric>{instance=<node>} / 100
//	        ─▶ patch "<metric>": "<value>,<timestamp>" and "node_hot_value": "<n>,<timestamp>"
//	Scheduled events ─▶ BindingRecords ─▶ HotValue
//
// A failed query is retried with backoff (10 s doubling to 6 min); the
// next period queues the node again anyway.
package annotator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minisched/minisched/plugins/dynamic"
)

// Defaults, as crane-scheduler-controller has them.
const (
	// DefaultBindingHeapSize is how many recent bindings are remembered.
	DefaultBindingHeapSize = 1024
	// DefaultWorkers is how many nodes are synced at once.
	DefaultWorkers = 1
	// retryBase and retryMax bound the backoff of a failed sync.
	retryBase = 10 * time.Second
	retryMax  = 360 * time.Second
	// gcInterval is how often bindings older than every time range go.
	gcInterval = time.Minute
)

// Options tunes a Controller; zero values mean the defaults.
type Options struct {
	// BindingHeapSize caps the bindings remembered for hot values.
	BindingHeapSize int
	// Workers is the number of goroutines syncing nodes.
	Workers int
	// Clock tells the time of timestamps and hot values; nil is the real one.
	Clock clock.WithTicker
}

// syncKey is one unit of work: refresh one metric on one node.
type syncKey struct {
	node, metric string
}

// Controller keeps the nodes' load annotations up to date.
type Controller struct {
	// client patches nodes.
	client kubernetes.Interface
	// factory holds the node and event informers; Run starts it.
	factory informers.SharedInformerFactory
	// nodes lists the nodes to annotate (from the informer's cache).
	nodes corelisters.NodeLister
	// synced reports whether the node and event caches are filled.
	synced []cache.InformerSynced
	// metrics answers "what is this node's value of this metric".
	metrics MetricSource
	// policy names the metrics, their periods and the hot-value rules.
	policy *dynamic.DynamicSchedulerPolicy
	// bindings holds recent Scheduled events, for hot values.
	bindings *BindingRecords
	// queue holds (node, metric) pairs to sync, with per-item backoff.
	queue workqueue.TypedRateLimitingInterface[syncKey]
	// workers is how many goroutines drain the queue.
	workers int
	// clock is the time source.
	clock clock.WithTicker
	// location is the zone timestamps are written in (crane's).
	location *time.Location
}

// NewController wires a controller: node and event informers from factory
// (Run starts them), Scheduled events recorded as bindings.
func NewController(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory,
	metrics MetricSource, policy *dynamic.DynamicSchedulerPolicy, opts Options) (*Controller, error) {
	if opts.BindingHeapSize <= 0 {
		opts.BindingHeapSize = DefaultBindingHeapSize
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	nodeInformer := factory.Core().V1().Nodes()
	eventInformer := factory.Core().V1().Events().Informer()
	c := &Controller{
		client:   client,
		factory:  factory,
		nodes:    nodeInformer.Lister(),
		synced:   []cache.InformerSynced{nodeInformer.Informer().HasSynced, eventInformer.HasSynced},
		metrics:  metrics,
		policy:   policy,
		bindings: NewBindingRecords(opts.BindingHeapSize),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[syncKey](retryBase, retryMax),
			workqueue.TypedRateLimitingQueueConfig[syncKey]{Name: "annotator"}),
		workers:  opts.Workers,
		clock:    opts.Clock,
		location: dynamic.TimestampLocation(),
	}
	logger := klog.FromContext(ctx)
	_, err := eventInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { c.recordBinding(logger, obj) },
		UpdateFunc: func(oldObj, newObj interface{}) {
			oldEv, okOld := oldObj.(*v1.Event)
			newEv, okNew := newObj.(*v1.Event)
			if okOld && okNew && oldEv.ResourceVersion != newEv.ResourceVersion {
				c.recordBinding(logger, newEv)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watching events: %w", err)
	}
	return c, nil
}

// recordBinding adds the binding a Scheduled event reports.
func (c *Controller) recordBinding(logger klog.Logger, obj interface{}) {
	ev, ok := obj.(*v1.Event)
	if !ok {
		return
	}
	b, ok, err := BindingFromEvent(ev)
	if err != nil {
		logger.V(2).Info("Ignoring a Scheduled event", "err", err)
	}
	if !ok {
		return
	}
	logger.V(5).Info("Binding recorded", "pod", klog.KRef(b.Namespace, b.Pod), "node", b.Node, "time", b.Time)
	c.bindings.Add(b)
}

// Run starts the informers, waits for their caches, and syncs until ctx
// ends: a ticker per syncPolicy entry queues every node for that metric,
// workers drain the queue, and old bindings are dropped once a minute.
func (c *Controller) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	c.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return errors.New("the node and event caches did not sync")
	}
	logger.Info("Annotator started", "metrics", len(c.policy.Spec.SyncPeriod), "workers", c.workers)
	for range c.workers {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	for _, p := range c.policy.Spec.SyncPeriod {
		go c.tick(ctx, p)
	}
	if longest := maxTimeRange(c.policy.Spec.HotValue); longest > 0 {
		go wait.UntilWithContext(ctx, func(context.Context) {
			c.bindings.ForgetBefore(c.clock.Now().Add(-longest))
		}, gcInterval)
	}
	<-ctx.Done()
	return nil
}

// tick queues every node for metric p.Name now and then every p.Period.
func (c *Controller) tick(ctx context.Context, p dynamic.SyncPolicy) {
	ticker := c.clock.NewTicker(p.Period.Duration)
	defer ticker.Stop()
	for {
		c.enqueueAll(ctx, p.Name)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// enqueueAll queues (node, metric) for every node.
func (c *Controller) enqueueAll(ctx context.Context, metric string) {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing nodes")
		return
	}
	for _, n := range nodes {
		c.queue.Add(syncKey{node: n.Name, metric: metric})
	}
}

// worker syncs queued items until the queue shuts down.
func (c *Controller) worker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

// processNext syncs one item: forgotten on success or when its node is
// gone, retried with backoff on failure.
func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	err := c.sync(ctx, key)
	switch {
	case err == nil:
		c.queue.Forget(key)
	default:
		klog.FromContext(ctx).V(2).Info("Sync failed; retrying with backoff", "node", key.node,
			"metric", key.metric, "err", err)
		c.queue.AddRateLimited(key)
	}
	return true
}

// sync writes the node's current value of the metric and its hot value in
// one patch. The hot value needs no Prometheus, so it is written even when
// the query fails (the error still causes a retry).
func (c *Controller) sync(ctx context.Context, key syncKey) error {
	logger := klog.FromContext(ctx)
	node, err := c.nodes.Get(key.node)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	value, queryErr := c.metrics.NodeMetric(ctx, key.metric, node)
	now := c.clock.Now()
	hot := HotValue(c.policy.Spec.HotValue, c.bindings, node.Name, now)
	annotations := map[string]string{dynamic.HotValueKey: dynamic.FormatAnnotation(strconv.Itoa(hot), now, c.location)}
	if queryErr == nil {
		annotations[key.metric] = dynamic.FormatAnnotation(value, now, c.location)
	}
	if err := c.patch(ctx, node.Name, annotations); err != nil {
		return err
	}
	logger.V(3).Info("Node annotated", "node", klog.KObj(node), "metric", key.metric, "value", value,
		"hotValue", hot, "queryErr", queryErr)
	return queryErr
}

// patch merges annotations into the node's: a merge patch touches only the
// keys it names, and needs no escaping of keys, unlike a JSON patch path.
func (c *Controller) patch(ctx context.Context, node string, annotations map[string]string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patching the annotations of node %s: %w", node, err)
	}
	return nil
}
