// The nodeTopology selectors of CSIStorageCapacity objects, converted once
// per object version: Filter checks a storage class's capacities on every
// node (until one selects it), and converting a LabelSelector into a
// labels.Selector costs far more than matching one.

package volumebinding

import (
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/minisched/minisched/internal/cowmap"
)

// topologySelectors caches each CSIStorageCapacity's nodeTopology as a
// selector, by UID, with the resourceVersion it was made from (a newer
// version is converted again), in a copy-on-write map, which Filter's
// goroutines read without a lock. The zero value is ready to use.
type topologySelectors struct {
	all cowmap.Map[types.UID, topologySelector]
}

// topologySelector is one capacity version's converted nodeTopology.
type topologySelector struct {
	resourceVersion string
	selector        labels.Selector
	err             error
}

// get returns capacity's nodeTopology (which must be set) as a selector, or
// the conversion's error. Without a cache (a nil t: a binder built without
// informers), or for an object without UID or resourceVersion (one that
// never came from the apiserver), it converts every time.
func (t *topologySelectors) get(capacity *storagev1.CSIStorageCapacity) (labels.Selector, error) {
	uid, version := capacity.UID, capacity.ResourceVersion
	if t == nil || uid == "" || version == "" {
		return metav1.LabelSelectorAsSelector(capacity.NodeTopology)
	}
	if s, ok := t.all.Load(uid); ok && s.resourceVersion == version {
		return s.selector, s.err
	}
	s := topologySelector{resourceVersion: version}
	s.selector, s.err = metav1.LabelSelectorAsSelector(capacity.NodeTopology)
	t.all.Store(uid, s)
	return s.selector, s.err
}

// forgetDeleted is the CSIStorageCapacity informer's delete handler.
func (t *topologySelectors) forgetDeleted(obj any) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if capacity, ok := obj.(*storagev1.CSIStorageCapacity); ok {
		t.all.Delete(capacity.UID)
	}
}
