// This file builds a Manager over a fixed set of objects instead of the
// cluster's watches: what a reader outside the scheduler (`minisched
// explain`) listed with its own client goes through the same claim tracker
// and ResourceSlice tracker as the scheduler's informers do, so that what
// it asks DynamicResources starts from the scheduler's view of those
// objects (DeviceTaintRules applied, allocated devices gathered).

package dramanager

import (
	"context"
	"fmt"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Objects are the DRA objects a static Manager holds.
type Objects struct {
	Claims     []resourceapi.ResourceClaim
	Slices     []resourceapi.ResourceSlice
	Classes    []resourceapi.DeviceClass
	TaintRules []resourceapi.DeviceTaintRule
}

// staticSyncPoll is how often NewStatic checks whether the trackers have
// taken in the objects: they do so in their own goroutines, within
// milliseconds.
const staticSyncPoll = 5 * time.Millisecond

// NewStatic returns a Manager over objs, with every part synced, and the
// function that stops it. Its informers list objs once and never hear of a
// change; it has no client, so the slice tracker records no events (about
// broken CEL in a DeviceTaintRule) and nothing is written anywhere.
func NewStatic(ctx context.Context, objs Objects) (*Manager, func(), error) {
	factory := informers.NewSharedInformerFactory(nil, 0)
	registerStatic(factory, &resourceapi.ResourceClaim{}, &resourceapi.ResourceClaimList{Items: objs.Claims})
	registerStatic(factory, &resourceapi.ResourceSlice{}, &resourceapi.ResourceSliceList{Items: objs.Slices})
	registerStatic(factory, &resourceapi.DeviceClass{}, &resourceapi.DeviceClassList{Items: objs.Classes})
	registerStatic(factory, &resourceapi.DeviceTaintRule{}, &resourceapi.DeviceTaintRuleList{Items: objs.TaintRules})
	m := New(klog.FromContext(ctx), factory, nil)
	// start, but returning the error: a reader has no scheduler to stop.
	m.once.Do(func() { m.err = m.build() })
	if m.err != nil {
		return nil, nil, m.err
	}
	stopCh := make(chan struct{})
	stop := func() {
		m.Stop()
		close(stopCh)
		factory.Shutdown()
	}
	// The handlers tell when each part has taken the lists in; they go in
	// before the informers start, as the scheduler's do.
	claimsSynced := m.AddClaimEventHandler(toolscache.ResourceEventHandlerFuncs{})
	slicesSynced, err := m.AddSliceEventHandler(toolscache.ResourceEventHandlerFuncs{})
	if err != nil {
		stop()
		return nil, nil, err
	}
	classesSynced := m.AddDeviceClassEventHandler(toolscache.ResourceEventHandlerFuncs{})
	factory.Start(stopCh)
	err = wait.PollUntilContextTimeout(ctx, staticSyncPoll, time.Minute, true, func(context.Context) (bool, error) {
		return claimsSynced() && slicesSynced() && classesSynced(), nil
	})
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("taking in the DRA objects: %w", err)
	}
	return m, stop, nil
}

// registerStatic makes the factory's informer of obj's type one that lists
// list, and whose watch never says anything.
func registerStatic(factory informers.SharedInformerFactory, obj, list runtime.Object) {
	factory.InformerFor(obj, func(kubernetes.Interface, time.Duration) toolscache.SharedIndexInformer {
		lw := &toolscache.ListWatch{
			ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
				return list.DeepCopyObject(), nil
			},
			WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
				return watch.NewFake(), nil
			},
		}
		return toolscache.NewSharedIndexInformer(toolscache.ToListWatcherWithWatchListSemantics(lw, listOnly{}), obj, 0,
			toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	})
}

// listOnly tells the reflector that a static informer cannot stream its
// list as a watch, so that it lists.
type listOnly struct{}

// IsWatchListSemanticsUnSupported reports true.
func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }
