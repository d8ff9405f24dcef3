package main

// The ceiling: a third engine beside the two schedulers, which makes the
// API writes every scheduler must make for a pod, and nothing else. For
// each pending measured pod it binds the pod (the pods/binding
// subresource, as kube-scheduler's DefaultBinder does) to the node the
// workload names for it (Workload.Place: round robin, or the one node a
// one-pod-per-node workload leaves it), then records the Scheduled event
// through client-go's events library, as kube-scheduler does after a
// binding: events.k8s.io/v1, reason Scheduled, action Binding, note
// "Successfully assigned <ns>/<pod> to <node>", reporting controller
// default-scheduler. A pod with a resource claim first gets its claim
// allocated and reserved as DynamicResources' PreBind writes it: an update
// adding the delete-protection finalizer, then a status update with the
// allocation (the device the ceiling picked on that node) and the pod in
// reservedFor. The throughput of this client on a workload's backlog is
// what the apiserver and etcd allow on this machine for those writes: a
// scheduler, which makes the same writes and decides too, cannot expect
// more, so its throughput over the ceiling's is its share of the ceiling.
//
// It runs as a process of its own (this program, `bench ceiling`), so that
// its CPU and memory are measured like a scheduler's, with the same
// client settings as the schedulers (clientConnection's QPS and burst,
// protobuf) and, like kube-scheduler, a second client for events. Like a
// scheduler, it learns of pods from an informer (its initial list, on a
// backlog, comes before the first binding and so is not timed) and binds
// from a queue, ceilingWorkers at once.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
)

// Ceiling is the null scheduler: the API writes of scheduling, no decision.
const Ceiling Engine = "ceiling"

// ceilingWorkers is how many pods the ceiling binds at once by default:
// minisched's bound on Bind calls in flight (maxConcurrentBinds in
// minisched/backpressure.go). kube-scheduler starts a goroutine per binding,
// without bound. On this machine the ceiling's throughput did not grow
// past 32 (medians of 645, 753, 797, 727 and 827 pods/s at 16, 32, 64,
// 128 and 256 workers on HostPortConflict, within the runs' noise from 32
// up; docs/performance.md). --ceiling-workers changes it.
const ceilingWorkers = 32

// ceilingRetries is how often the ceiling retries a pod whose writes
// failed before it gives up on it (the bench then reports it unbound).
const ceilingRetries = 5

// ceilingFits reports whether the ceiling runs w: on a backlog only (made
// before it starts, as for the schedulers, so that its throughput is not
// how fast pods are created), where the workload names a valid node for
// every pod.
func ceilingFits(w Workload, backlog bool) bool {
	return w.Place != nil && backlog && backlogFits(w) && !w.MixedChurn
}

// ceilingNode is the node the ceiling binds pod to, or "" for a pod it
// does not bind: only measured pods, named by podName.
func ceilingNode(w Workload, pod *v1.Pod) string {
	if w.Place == nil || pod.Labels[roleLabel] != roleMeasured {
		return ""
	}
	i := podIndex(pod.Name)
	if i < 0 || i >= w.Pods {
		return ""
	}
	return w.Place(i)
}

// ceilingDevice is the device the ceiling allocates to measured pod i's
// claim: the pods on one node (round robin, Pods/Nodes of them at most)
// take its devices in turn.
func ceilingDevice(w Workload, i int) string {
	return fmt.Sprintf("basic-device-%d", i/w.Nodes)
}

// ceilingClientConfig is cfg with a scheduler's client settings: the QPS
// and burst both schedulers are given, and kube-scheduler's default
// content types.
func ceilingClientConfig(cfg *rest.Config, agent string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = clientQPS, clientBurst
	c.ContentType = "application/vnd.kubernetes.protobuf"
	c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	c.UserAgent = agent
	return c
}

// ceiling is one run of the null scheduler.
type ceiling struct {
	w        Workload
	client   kubernetes.Interface
	recorder events.EventRecorder
	pods     cache.Indexer
	claims   cache.Indexer
	queue    workqueue.TypedRateLimitingInterface[string]
	logf     func(format string, args ...any)
}

// runCeiling binds w's pending measured pods, and those that come later,
// with workers goroutines, until ctx ends. It returns an error only if it
// could not start.
func runCeiling(ctx context.Context, cfg *rest.Config, w Workload, workers int, logf func(string, ...any)) error {
	if workers < 1 {
		return fmt.Errorf("the ceiling needs at least one worker, not %d", workers)
	}
	client, err := kubernetes.NewForConfig(ceilingClientConfig(cfg, "bench-ceiling"))
	if err != nil {
		return err
	}
	// kube-scheduler writes events through a client of its own (with a
	// rate limiter of its own).
	eventClient, err := kubernetes.NewForConfig(ceilingClientConfig(cfg, "bench-ceiling-events"))
	if err != nil {
		return err
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: eventClient.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return fmt.Errorf("recording events: %w", err)
	}
	defer broadcaster.Shutdown()

	c := &ceiling{
		w:        w,
		client:   client,
		recorder: broadcaster.NewRecorder(scheme.Scheme, "default-scheduler"),
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		logf:     logf,
	}
	defer c.queue.ShutDown()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	podInformer := factory.Core().V1().Pods().Informer()
	c.pods = podInformer.GetIndexer()
	enqueue := func(obj any) {
		if p, ok := obj.(*v1.Pod); ok && p.Spec.NodeName == "" && p.DeletionTimestamp == nil && ceilingNode(w, p) != "" {
			if key, err := cache.MetaNamespaceKeyFunc(p); err == nil {
				c.queue.Add(key)
			}
		}
	}
	if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}
	synced := []cache.InformerSynced{podInformer.HasSynced}
	if w.Devices != nil {
		claimInformer := factory.Resource().V1().ResourceClaims().Informer()
		c.claims = claimInformer.GetIndexer()
		synced = append(synced, claimInformer.HasSynced)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("the ceiling's informers did not sync: %w", context.Cause(ctx))
	}
	logf("ceiling: informers synced, %d pods queued, %d workers", c.queue.Len(), workers)

	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// next handles one pod from the queue; false once the queue is shut down.
func (c *ceiling) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	err := c.handle(ctx, key)
	switch {
	case err == nil:
		c.queue.Forget(key)
	case ctx.Err() != nil:
	case c.queue.NumRequeues(key) < ceilingRetries:
		c.logf("ceiling: %s: %v (will retry)", key, err)
		c.queue.AddRateLimited(key)
	default:
		c.logf("ceiling: %s: %v (giving up)", key, err)
		c.queue.Forget(key)
	}
	return true
}

// handle makes the writes of one pod: its claim's, if any, then its
// binding, then its event.
func (c *ceiling) handle(ctx context.Context, key string) error {
	obj, ok, err := c.pods.GetByKey(key)
	if err != nil || !ok {
		return err
	}
	pod := obj.(*v1.Pod)
	node := ceilingNode(c.w, pod)
	if pod.Spec.NodeName != "" || node == "" {
		return nil
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		if err := c.allocateClaims(ctx, pod, node); err != nil {
			return err
		}
	}
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := c.client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("binding to %s: %w", node, err)
	}
	c.recorder.Eventf(pod, nil, v1.EventTypeNormal, "Scheduled", "Binding", "Successfully assigned %v/%v to %v",
		pod.Namespace, pod.Name, node)
	return nil
}

// allocateClaims writes what DynamicResources' PreBind writes for each of
// the pod's claims (the resourceclaim controller named them in the pod's
// status): the finalizer in an update, then the allocation of one device
// of the node's slice and the pod's reservation in a status update,
// retried on conflict as upstream does.
func (c *ceiling) allocateClaims(ctx context.Context, pod *v1.Pod, node string) error {
	if c.w.Devices == nil || c.claims == nil {
		return errors.New("the pod has resource claims, but the workload has no devices")
	}
	if len(pod.Status.ResourceClaimStatuses) < len(pod.Spec.ResourceClaims) {
		return fmt.Errorf("%d of its %d claims not made yet", len(pod.Status.ResourceClaimStatuses), len(pod.Spec.ResourceClaims))
	}
	device := ceilingDevice(c.w, podIndex(pod.Name))
	for _, st := range pod.Status.ResourceClaimStatuses {
		if st.ResourceClaimName == nil {
			return fmt.Errorf("claim %s not made yet", st.Name)
		}
		obj, ok, err := c.claims.GetByKey(pod.Namespace + "/" + *st.ResourceClaimName)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("claim %s not seen yet", *st.ResourceClaimName)
		}
		claim := obj.(*resourceapi.ResourceClaim).DeepCopy()
		refresh := false
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if refresh {
				if claim, err = c.client.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, claim.Name, metav1.GetOptions{}); err != nil {
					return err
				}
			}
			refresh = true
			if claim.Status.Allocation != nil {
				return fmt.Errorf("claim %s is allocated already", claim.Name)
			}
			if !slices.Contains(claim.Finalizers, resourceapi.Finalizer) {
				claim.Finalizers = append(claim.Finalizers, resourceapi.Finalizer)
				if claim, err = c.client.ResourceV1().ResourceClaims(pod.Namespace).Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
					return err
				}
			}
			claim.Status.Allocation = deviceAllocation(claim, node, device)
			claim.Status.ReservedFor = append(claim.Status.ReservedFor,
				resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: pod.Name, UID: pod.UID})
			_, err = c.client.ResourceV1().ResourceClaims(pod.Namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("allocating claim %s: %w", *st.ResourceClaimName, err)
		}
	}
	return nil
}

// deviceAllocation is the allocation kube-scheduler's allocator makes for
// a claim of one request satisfied by device of node's slice (createSlice):
// the device by driver, pool and name, and a selector on the node's name.
func deviceAllocation(claim *resourceapi.ResourceClaim, node, device string) *resourceapi.AllocationResult {
	a := &resourceapi.AllocationResult{
		NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}
	for _, r := range claim.Spec.Devices.Requests {
		a.Devices.Results = append(a.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: r.Name, Driver: deviceDriver, Pool: "resourceslice-" + node, Device: device,
		})
	}
	return a
}

// ceilingMain is `bench ceiling`: the ceiling as a process, started by
// startScheduler and stopped by SIGINT like the schedulers.
func ceilingMain(args []string) error {
	fs := flag.NewFlagSet("ceiling", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the apiserver")
	name := fs.String("workload", "", "the workload whose measured pods to bind")
	smoke := fs.Bool("smoke", false, "the workload at its smoke size")
	workers := fs.Int("workers", ceilingWorkers, "pods bound at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var w *Workload
	for _, x := range workloads(*smoke) {
		if x.Name == *name {
			w = &x
		}
	}
	if w == nil {
		return fmt.Errorf("unknown workload %q", *name)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	start := time.Now()
	logf := func(f string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s "+f+"\n", append([]any{time.Since(start).Round(time.Millisecond)}, args...)...)
	}
	return runCeiling(ctx, cfg, *w, *workers, logf)
}
