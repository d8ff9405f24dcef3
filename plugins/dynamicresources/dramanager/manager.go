// Package dramanager is the state of dynamic resource allocation that one
// scheduler shares among its profiles: the ResourceClaims as the scheduler
// believes them (an assume cache over the informer, plus the allocations
// in flight between Reserve and PreBind), the ResourceSlices with
// DeviceTaintRules applied (the staging tracker), the DeviceClasses, and the
// extended-resource-to-class map. It is kube-scheduler's DefaultDRAManager
// and util/assumecache.
//
// A Manager starts nothing until a plugin asks for it: the first call of
// any of its framework.SharedDRAManager methods requests the
// resource.k8s.io informers from the factory and starts the slice tracker,
// so a scheduler whose profiles do not use DRA watches none of it. Plugins
// must therefore ask in their factory function, before the informer
// factory is started, as they do for listers.
package dramanager

import (
	"context"
	"fmt"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache"
	"k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// Manager implements framework.SharedDRAManager. Build it with New, hand it
// to every profile (framework.WithSharedDRAManager) and to the scheduler,
// which registers its event handlers when InUse and calls Stop when it
// stops.
type Manager struct {
	// logger is the scheduler's, for the informers' and the tracker's
	// events.
	logger  klog.Logger
	factory informers.SharedInformerFactory
	// client lets the tracker record events about broken CEL in
	// DeviceTaintRules.
	client kubernetes.Interface

	// once builds the parts below on first use; err is its failure,
	// which every later use panics with (see start).
	once sync.Once
	err  error
	// inUse is set by start (under once, read after it).
	inUse bool

	claims *claimTracker
	// slices applies DeviceTaintRules to ResourceSlices and emits slice
	// events for both; stopTracker ends its goroutines.
	slices      *tracker.Tracker
	stopTracker context.CancelFunc
	stopOnce    sync.Once
	// classes reads the DeviceClass informer; classInformer is that
	// informer, whose events also feed extendedResources first.
	classes           resourcelisters.DeviceClassLister
	classInformer     toolscache.SharedIndexInformer
	classRegistration toolscache.ResourceEventHandlerRegistration
	extendedResources *extendedresourcecache.ExtendedResourceCache
}

var _ framework.SharedDRAManager = &Manager{}

// New returns a Manager over the factory's informers. It requests none of
// them yet.
func New(logger klog.Logger, factory informers.SharedInformerFactory, client kubernetes.Interface) *Manager {
	return &Manager{logger: logger, factory: factory, client: client}
}

// start builds everything once. An error here (an informer refusing a
// handler after it was stopped) is a broken invariant of how the scheduler
// is assembled, so the getters panic with it rather than hand plugins nil
// listers.
func (m *Manager) start() {
	m.once.Do(func() { m.err = m.build() })
	if m.err != nil {
		panic(fmt.Sprintf("building the shared DRA state: %v", m.err))
	}
}

func (m *Manager) build() error {
	m.inUse = true
	cache, err := NewAssumeCache(m.logger, m.factory.Resource().V1().ResourceClaims().Informer())
	if err != nil {
		return err
	}
	m.claims = newClaimTracker(m.logger, cache)

	// DeviceTaintRules (GA, on) are applied to slices; consumable capacity
	// (beta, on) is compiled into the tracker's CEL. The tracker's
	// goroutines live until Stop.
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), m.logger))
	m.stopTracker = cancel
	m.slices, err = tracker.StartTracker(ctx, tracker.Options{
		EnableDeviceTaintRules:   true,
		EnableConsumableCapacity: true,
		SliceInformer:            m.factory.Resource().V1().ResourceSlices(),
		TaintInformer:            m.factory.Resource().V1().DeviceTaintRules(),
		KubeClient:               m.client,
	})
	if err != nil {
		cancel()
		return fmt.Errorf("starting the ResourceSlice tracker: %w", err)
	}

	classes := m.factory.Resource().V1().DeviceClasses()
	m.classes = classes.Lister()
	m.classInformer = classes.Informer()
	// The extended-resource map is fed first and forwards each event to
	// the handlers added through AddDeviceClassEventHandler, so that a
	// hint reading the map sees the class that caused the event.
	m.extendedResources = extendedresourcecache.NewExtendedResourceCache(m.logger)
	m.classRegistration, err = m.classInformer.AddEventHandler(m.extendedResources)
	if err != nil {
		return fmt.Errorf("adding the extended resource cache's DeviceClass handler: %w", err)
	}
	return nil
}

// InUse reports whether some plugin asked for the DRA state: only then do
// its informers run and need event handlers.
func (m *Manager) InUse() bool {
	if m == nil {
		return false
	}
	// once.Do with a no-op waits for a start in progress and never builds.
	m.once.Do(func() {})
	return m.inUse
}

// ResourceClaims implements framework.SharedDRAManager.
func (m *Manager) ResourceClaims() framework.ResourceClaimTracker {
	m.start()
	return m.claims
}

// ResourceSlices implements framework.SharedDRAManager.
func (m *Manager) ResourceSlices() framework.ResourceSliceLister {
	m.start()
	return sliceLister{m.slices}
}

// DeviceClasses implements framework.SharedDRAManager.
func (m *Manager) DeviceClasses() framework.DeviceClassLister {
	m.start()
	return classLister{m.classes}
}

// DeviceClassResolver implements framework.SharedDRAManager.
func (m *Manager) DeviceClassResolver() framework.DeviceClassResolver {
	m.start()
	return m.extendedResources
}

// AddClaimEventHandler registers a handler of the assume cache's claim
// events: the informer's and the scheduler's own writes. It returns
// whether the informer has synced. Call it only when InUse.
func (m *Manager) AddClaimEventHandler(h toolscache.ResourceEventHandler) toolscache.InformerSynced {
	return m.claims.cache.AddEventHandler(h)
}

// AddSliceEventHandler registers a handler of the tracker's ResourceSlice
// events, which include slices changed by a DeviceTaintRule. Call it only
// when InUse.
func (m *Manager) AddSliceEventHandler(h toolscache.ResourceEventHandler) (toolscache.InformerSynced, error) {
	reg, err := m.slices.AddEventHandler(h)
	if err != nil {
		return nil, err
	}
	return reg.HasSynced, nil
}

// AddDeviceClassEventHandler registers a handler of DeviceClass events,
// delivered after the extended-resource map took them in. Call it only
// when InUse.
func (m *Manager) AddDeviceClassEventHandler(h toolscache.ResourceEventHandler) toolscache.InformerSynced {
	m.extendedResources.AddEventHandler(h)
	return m.classRegistration.HasSynced
}

// Stop ends the tracker's goroutines and waits for them. It does nothing
// when the Manager is nil or was never used, and may be called more than
// once.
func (m *Manager) Stop() {
	if !m.InUse() || m.slices == nil {
		return
	}
	m.stopOnce.Do(func() {
		m.stopTracker()
		m.slices.Stop()
	})
}

// sliceLister implements framework.ResourceSliceLister over the tracker.
type sliceLister struct{ t *tracker.Tracker }

// ListWithDeviceTaintRules returns the slices with taint rules applied.
func (l sliceLister) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) {
	return l.t.ListPatchedResourceSlices()
}

// classLister implements framework.DeviceClassLister (and the allocator's
// class lister) over the informer's lister.
type classLister struct {
	l resourcelisters.DeviceClassLister
}

// List returns every DeviceClass.
func (l classLister) List() ([]*resourceapi.DeviceClass, error) { return l.l.List(labels.Everything()) }

// Get returns one DeviceClass, or the lister's NotFound error.
func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) { return l.l.Get(name) }
