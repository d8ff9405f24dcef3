// This file is the passive assume cache: the informer's PersistentVolumes
// and PersistentVolumeClaims, overlaid with the versions Reserve assumed (a
// PV pre-bound to a claim, a claim with a selected node) until the informer
// brings the apiserver's next version. It is how each scheduling cycle sees
// the reservations of the cycles before it, before PreBind has written them.

package volumebinding

import (
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"
)

// informer is the part of a SharedIndexInformer the cache needs.
type informer interface {
	AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
	GetIndexer() cache.Indexer
}

// passiveAssumeCache reads objects of type T from an informer's store, with
// some replaced by assumed versions that exist only in memory.
//
// "Passive" because it sends no events and never holds an object newer than
// the informer's:
//
//   - Assume accepts only an object of the stored resourceVersion: a change
//     not yet written to the apiserver.
//   - An assumed object is returned only while the informer still holds that
//     resourceVersion; any informer add, update or delete with another
//     version drops the assumption, whatever the apiserver's answer was (the
//     PV controller's binding, a provisioner's failure, someone else's edit).
//   - Restore drops an assumption of the given version, so undoing twice is
//     harmless.
type passiveAssumeCache[T metav1.Object] struct {
	// logger is the logger chosen when the cache was built, for informer
	// events, which have no context of their own.
	logger klog.Logger
	// gr names the resource in NotFound errors.
	gr schema.GroupResource

	// mu guards assumed, and is held while comparing an assumed object with
	// the store's so that the two are read together.
	mu sync.RWMutex
	// store is the informer's indexer (it has its own lock).
	store cache.Indexer
	// assumed holds the assumed objects by key ("ns/name", or "name").
	assumed map[string]T
}

// newAssumeCache builds a cache over inf and registers the handler that
// drops assumptions on informer events.
func newAssumeCache[T metav1.Object](logger klog.Logger, inf informer, gr schema.GroupResource) (*passiveAssumeCache[T], error) {
	c := &passiveAssumeCache[T]{logger: logger, gr: gr, store: inf.GetIndexer(), assumed: map[string]T{}}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onEvent,
		UpdateFunc: func(_, obj any) { c.onEvent(obj) },
		DeleteFunc: c.onEvent,
	})
	return c, err
}

// onEvent handles every informer event alike: the object under its key may
// have changed.
func (c *passiveAssumeCache[T]) onEvent(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		c.logger.Error(err, "Cannot get the key of an informer object")
		return
	}
	c.mayExpire(key)
}

// mayExpire drops the assumption under key unless the store still holds the
// assumed resourceVersion: the event was a resync, or an older event
// delivered late, and the assumption still stands.
func (c *passiveAssumeCache[T]) mayExpire(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	assumed, ok := c.assumed[key]
	if !ok {
		return
	}
	obj, exists, err := c.store.GetByKey(key)
	if err != nil {
		c.logger.Error(err, "Cannot read the informer's object", "key", key)
		return
	}
	if exists {
		stored, err := meta.Accessor(obj)
		if err != nil {
			c.logger.Error(err, "Informer object without metadata", "key", key)
			return
		}
		if stored.GetResourceVersion() == assumed.GetResourceVersion() {
			c.logger.V(10).Info("Ignoring resync of assumed object", "key", key, "version", assumed.GetResourceVersion())
			return
		}
		c.logger.V(4).Info("Assumed object expired", "key", key, "version", assumed.GetResourceVersion(),
			"newVersion", stored.GetResourceVersion())
	} else {
		c.logger.V(4).Info("Assumed object expired", "key", key, "version", assumed.GetResourceVersion())
	}
	delete(c.assumed, key)
}

// Get returns the object under key: the assumed one while it is current,
// else the informer's. A missing object is a NotFound error.
func (c *passiveAssumeCache[T]) Get(key string) (T, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	obj, err := c.GetAPIObj(key)
	if err != nil {
		return obj, err
	}
	if assumed, ok := c.assumed[key]; ok && assumed.GetResourceVersion() == obj.GetResourceVersion() {
		return assumed, nil
	}
	return obj, nil
}

// GetAPIObj returns the informer's object under key, ignoring assumptions:
// what the apiserver last said. A missing object is a NotFound error.
func (c *passiveAssumeCache[T]) GetAPIObj(key string) (T, error) {
	var zero T
	obj, ok, err := c.store.GetByKey(key)
	if err != nil {
		return zero, err
	}
	if !ok {
		return zero, apierrors.NewNotFound(c.gr, key)
	}
	v, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("object is not of type %T", zero)
	}
	return v, nil
}

// ByIndex returns the objects the informer's index lists under
// indexedValue, each replaced by its assumed version while that is current.
// The index is the informer's: an assumption never moves an object to
// another index value.
func (c *passiveAssumeCache[T]) ByIndex(indexName, indexedValue string) ([]T, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	objs, err := c.store.ByIndex(indexName, indexedValue)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, obj := range objs {
		v, ok := obj.(T)
		if !ok {
			c.logger.Error(nil, "Listed object has the wrong type", "type", fmt.Sprintf("%T", obj))
			continue
		}
		if assumed, ok := c.assumed[keyOf(v)]; ok && assumed.GetResourceVersion() == v.GetResourceVersion() {
			v = assumed
		}
		out = append(out, v)
	}
	return out, nil
}

// Assume makes obj what Get returns under its key. obj must carry the
// resourceVersion the informer holds: it is a change not yet sent to the
// apiserver, never the apiserver's answer.
func (c *passiveAssumeCache[T]) Assume(obj T) error {
	key := keyOf(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	stored, err := c.GetAPIObj(key)
	if err != nil {
		return err
	}
	if stored.GetResourceVersion() != obj.GetResourceVersion() {
		return fmt.Errorf("%q is out of sync (stored: %s, assume: %s)", key, stored.GetResourceVersion(),
			obj.GetResourceVersion())
	}
	c.assumed[key] = obj
	c.logger.V(4).Info("Assumed object", "key", key, "version", obj.GetResourceVersion())
	return nil
}

// Restore drops the assumption under obj's key if it is of obj's
// resourceVersion; otherwise (nothing assumed, or assumed since in another
// version) it does nothing.
func (c *passiveAssumeCache[T]) Restore(obj T) {
	key := keyOf(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	if assumed, ok := c.assumed[key]; ok && assumed.GetResourceVersion() == obj.GetResourceVersion() {
		delete(c.assumed, key)
		c.logger.V(4).Info("Restored object", "key", key, "version", obj.GetResourceVersion())
	}
}

// keyOf is obj's key in the informer's store.
func keyOf[T metav1.Object](obj T) string {
	return cache.MetaObjectToName(obj).String()
}

// storageClassIndex indexes PersistentVolumes by storage class, so that
// static matching reads only the PVs of a claim's class.
const storageClassIndex = "storageclass"

// pvStorageClassIndexFunc is storageClassIndex's function: the PV's class,
// from the beta annotation or spec.storageClassName ("" for none).
func pvStorageClassIndexFunc(obj any) ([]string, error) {
	pv, ok := obj.(*v1.PersistentVolume)
	if !ok {
		return nil, fmt.Errorf("object is not a v1.PersistentVolume: %T", obj)
	}
	return []string{storagehelpers.GetPersistentVolumeClass(pv)}, nil
}

// pvAssumeCache is the assume cache of PersistentVolumes, keyed by name.
type pvAssumeCache struct {
	*passiveAssumeCache[*v1.PersistentVolume]
}

// newPVAssumeCache adds storageClassIndex to the PV informer (it must not
// have started) and builds the cache. The index may already be there: two
// profiles share one informer.
func newPVAssumeCache(logger klog.Logger, inf informer) (pvAssumeCache, error) {
	err := inf.GetIndexer().AddIndexers(cache.Indexers{storageClassIndex: pvStorageClassIndexFunc})
	if err != nil && inf.GetIndexer().GetIndexers()[storageClassIndex] == nil {
		return pvAssumeCache{}, err
	}
	c, err := newAssumeCache[*v1.PersistentVolume](klog.LoggerWithName(logger, "pv-cache"), inf,
		schema.GroupResource{Resource: "persistentvolumes"})
	return pvAssumeCache{c}, err
}

// ListPVs returns the PVs of a storage class, with their assumed versions:
// a PV Reserve pre-bound for one pod is seen as taken by the next.
func (c pvAssumeCache) ListPVs(storageClassName string) ([]*v1.PersistentVolume, error) {
	return c.ByIndex(storageClassIndex, storageClassName)
}

// pvcAssumeCache is the assume cache of PersistentVolumeClaims, keyed by
// "namespace/name".
type pvcAssumeCache struct {
	*passiveAssumeCache[*v1.PersistentVolumeClaim]
}

// newPVCAssumeCache builds the cache over the PVC informer.
func newPVCAssumeCache(logger klog.Logger, inf informer) (pvcAssumeCache, error) {
	c, err := newAssumeCache[*v1.PersistentVolumeClaim](klog.LoggerWithName(logger, "pvc-cache"), inf,
		schema.GroupResource{Resource: "persistentvolumeclaims"})
	return pvcAssumeCache{c}, err
}
