// The assume cache: the informer's ResourceClaims, with the versions the
// scheduler wrote itself laid over them until the informer catches up.

package dramanager

import (
	"fmt"
	"strconv"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// description names the cached objects in errors and logs, as
// kube-scheduler's cache does.
const description = "ResourceClaim"

// NotFoundError is what Get returns for a key the cache does not hold. Its
// text is kube-scheduler's (`could not find ResourceClaim "ns/name"`),
// which DynamicResources' PreEnqueue and PreFilter report as the reason.
type NotFoundError struct {
	// Key is "namespace/name".
	Key string
}

// Error implements error.
func (e *NotFoundError) Error() string {
	return fmt.Sprintf("could not find %v %q", description, e.Key)
}

// AssumeCache holds the ResourceClaims as the scheduler believes them.
// kube-scheduler calls this util/assumecache; it differs from VolumeBinding's
// passive cache in two ways: an assumed object may be newer than the
// informer's (PreBind stores the claim the apiserver answered with), and
// the cache emits events of its own, so the queue hears of a claim the
// scheduler allocated before the informer does.
//
// The rules, by resourceVersion (an integer, as the apiserver writes it):
//
//   - Assume(obj) is accepted only if obj is at least as new as the
//     stored object; it replaces the latest object, not the informer's.
//   - An informer add or update replaces both when it is strictly newer
//     than the latest object, and is ignored otherwise (an older watch
//     event must not undo what the scheduler wrote).
//   - Restore(key) reverts the latest object to the informer's.
//   - An informer delete removes the key whatever was assumed.
//
// Every change that a reader can see is an event to the handlers: Add for a
// new key, Update from the old latest object to the new one, Delete with
// the last latest object. Handlers are called in order, never under the
// cache's lock, so a handler may read the cache.
type AssumeCache struct {
	// logger is for informer events, which have no context of their own.
	logger klog.Logger

	// mu guards every field below.
	mu sync.Mutex
	// objects holds latest and informer objects by "namespace/name".
	objects map[string]*objInfo
	// handlers receive the events; pending holds the deliveries not made
	// yet, in order.
	handlers []toolscache.ResourceEventHandler
	pending  []func()
	// emitting is true while some goroutine delivers pending; others
	// wait on emitted, so that events are delivered one at a time and in
	// order.
	emitting bool
	emitted  *sync.Cond
	// registration is the informer handler's, to report HasSynced.
	registration toolscache.ResourceEventHandlerRegistration
}

// objInfo is one key's objects.
type objInfo struct {
	// latest is what readers get: the informer's, or an assumed newer one.
	latest *resourceapi.ResourceClaim
	// api is the informer's, which Restore goes back to.
	api *resourceapi.ResourceClaim
}

// informer is the part of a SharedIndexInformer the cache needs.
type informer interface {
	AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
}

// NewAssumeCache returns a cache fed by inf (nil: a cache filled by the
// caller, for tests).
func NewAssumeCache(logger klog.Logger, inf informer) (*AssumeCache, error) {
	c := &AssumeCache{logger: logger, objects: map[string]*objInfo{}}
	c.emitted = sync.NewCond(&c.mu)
	if inf == nil {
		return c, nil
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.add,
		UpdateFunc: func(_, obj any) { c.add(obj) },
		DeleteFunc: c.delete,
	})
	if err != nil {
		return nil, fmt.Errorf("adding the %s assume cache's event handler: %w", description, err)
	}
	c.registration = reg
	return c, nil
}

// HasSynced reports whether the informer delivered its initial list.
func (c *AssumeCache) HasSynced() bool {
	return c.registration == nil || c.registration.HasSynced()
}

// add stores an informer object if it is newer than the latest one.
func (c *AssumeCache) add(obj any) {
	claim, ok := c.claim(obj)
	if !ok {
		return
	}
	key := key(claim.Namespace, claim.Name)
	defer c.emitEvents()
	c.mu.Lock()
	defer c.mu.Unlock()
	var old *resourceapi.ResourceClaim
	if info, found := c.objects[key]; found {
		newVersion, storedVersion, err := versions(claim, info.latest)
		if err != nil {
			c.logger.Error(err, "Ignoring an informer object", "description", description, "key", key)
			return
		}
		if newVersion <= storedVersion {
			c.logger.V(10).Info("Informer object not newer than the stored one", "description", description,
				"key", key, "newVersion", newVersion, "storedVersion", storedVersion)
			return
		}
		old = info.latest
	}
	c.objects[key] = &objInfo{latest: claim, api: claim}
	c.pushEvent(old, claim)
}

// delete removes a key, unwrapping the tombstone of a missed delete.
func (c *AssumeCache) delete(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	claim, ok := c.claim(obj)
	if !ok {
		return
	}
	key := key(claim.Namespace, claim.Name)
	defer c.emitEvents()
	c.mu.Lock()
	defer c.mu.Unlock()
	info, found := c.objects[key]
	if !found {
		return
	}
	delete(c.objects, key)
	c.pushEvent(info.latest, nil)
}

// Get returns the latest object under "namespace/name", or a
// *NotFoundError.
func (c *AssumeCache) Get(namespace, name string) (*resourceapi.ResourceClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	info, found := c.objects[key(namespace, name)]
	if !found {
		return nil, &NotFoundError{Key: key(namespace, name)}
	}
	return info.latest, nil
}

// GetAPIObj returns the informer's object under "namespace/name", or a
// *NotFoundError.
func (c *AssumeCache) GetAPIObj(namespace, name string) (*resourceapi.ResourceClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	info, found := c.objects[key(namespace, name)]
	if !found {
		return nil, &NotFoundError{Key: key(namespace, name)}
	}
	return info.api, nil
}

// List returns every latest object, in no order.
func (c *AssumeCache) List() []*resourceapi.ResourceClaim {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*resourceapi.ResourceClaim, 0, len(c.objects))
	for _, info := range c.objects {
		out = append(out, info.latest)
	}
	return out
}

// Assume makes obj the latest object of its key, which must exist, if obj
// is at least as new as the stored latest object.
func (c *AssumeCache) Assume(claim *resourceapi.ResourceClaim) error {
	key := key(claim.Namespace, claim.Name)
	defer c.emitEvents()
	c.mu.Lock()
	defer c.mu.Unlock()
	info, found := c.objects[key]
	if !found {
		return &NotFoundError{Key: key}
	}
	newVersion, storedVersion, err := versions(claim, info.latest)
	if err != nil {
		return err
	}
	if newVersion < storedVersion {
		return fmt.Errorf("%v %q is out of sync (stored: %d, assume: %d)", description, key, storedVersion, newVersion)
	}
	c.pushEvent(info.latest, claim)
	info.latest = claim
	c.logger.V(5).Info("Assumed object", "description", description, "key", key, "version", newVersion)
	return nil
}

// Restore reverts the key's latest object to the informer's. A missing key
// is logged and ignored: the object was deleted meanwhile.
func (c *AssumeCache) Restore(namespace, name string) {
	key := key(namespace, name)
	defer c.emitEvents()
	c.mu.Lock()
	defer c.mu.Unlock()
	info, found := c.objects[key]
	if !found {
		c.logger.V(5).Info("Nothing to restore", "description", description, "key", key)
		return
	}
	if info.latest != info.api {
		c.pushEvent(info.latest, info.api)
		info.latest = info.api
	}
	c.logger.V(5).Info("Restored object", "description", description, "key", key)
}

// AddEventHandler registers handler and delivers an Add for every object
// held now, before it returns. It returns whether the informer has synced,
// for the scheduler's wait before its first cycle.
func (c *AssumeCache) AddEventHandler(handler toolscache.ResourceEventHandler) toolscache.InformerSynced {
	defer c.emitEvents()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handlers = append(c.handlers, handler)
	for _, info := range c.objects {
		obj := info.latest
		c.pending = append(c.pending, func() { handler.OnAdd(obj, true) })
	}
	return c.HasSynced
}

// pushEvent queues the event from old to new (nil old: Add; nil new:
// Delete) for every handler. The caller holds mu and calls emitEvents
// after releasing it.
func (c *AssumeCache) pushEvent(old, new *resourceapi.ResourceClaim) {
	for _, h := range c.handlers {
		switch {
		case old == nil:
			c.pending = append(c.pending, func() { h.OnAdd(new, false) })
		case new == nil:
			c.pending = append(c.pending, func() { h.OnDelete(old) })
		default:
			c.pending = append(c.pending, func() { h.OnUpdate(old, new) })
		}
	}
}

// emitEvents delivers the pending events, one goroutine at a time so that
// every handler sees them in the order they happened.
func (c *AssumeCache) emitEvents() {
	c.mu.Lock()
	for c.emitting {
		c.emitted.Wait()
	}
	c.emitting = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.emitting = false
		c.emitted.Signal()
		c.mu.Unlock()
	}()
	for {
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.mu.Unlock()
			return
		}
		deliver := c.pending[0]
		c.pending = c.pending[1:]
		c.mu.Unlock()
		deliver()
	}
}

// claim returns obj, an informer's object, as a claim; anything else is
// logged and refused.
func (c *AssumeCache) claim(obj any) (*resourceapi.ResourceClaim, bool) {
	claim, ok := obj.(*resourceapi.ResourceClaim)
	if !ok {
		c.logger.Error(nil, "Unexpected object in the assume cache", "description", description, "type", fmt.Sprintf("%T", obj))
	}
	return claim, ok
}

// key is the cache key of a namespaced object.
func key(namespace, name string) string { return namespace + "/" + name }

// version parses a claim's resourceVersion, an integer as the apiserver
// writes it.
func version(claim *resourceapi.ResourceClaim) (int64, error) {
	v, err := strconv.ParseInt(claim.ResourceVersion, 10, 64)
	if err != nil {
		return -1, fmt.Errorf("error parsing ResourceVersion %q for %v %q: %w",
			claim.ResourceVersion, description, key(claim.Namespace, claim.Name), err)
	}
	return v, nil
}

// versions parses the resourceVersions of a new claim and of the stored
// one, to tell which is newer.
func versions(newClaim, stored *resourceapi.ResourceClaim) (newVersion, storedVersion int64, err error) {
	if newVersion, err = version(newClaim); err != nil {
		return -1, -1, err
	}
	if storedVersion, err = version(stored); err != nil {
		return -1, -1, err
	}
	return newVersion, storedVersion, nil
}
