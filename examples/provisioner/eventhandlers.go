// Which informer events put what in which queue:
//
//	claim added or updated        claimQueue   (it may now carry both annotations)
//	PV added                      capacityQueue its node (it now counts; its
//	                                           reservation is dropped)
//	PV added or updated           volumeQueue  (it may have been released)
//	PV deleted                    capacityQueue its node (its space is free)
//	space reserved or released    capacityQueue the node (volume.go)
//	node added or deleted         capacityQueue (its objects appear or go)
//	node's hostname label changed capacityQueue (its objects' topology)
//	class of ours added, deleted  capacityQueue every node (each gets or loses one)
//	our CSIStorageCapacity added, capacityQueue its node (put back as it should
//	  changed or deleted                       be; an add also ends a create that
//	                                           met the informer's stale copy)
//
// A deleted claim needs nothing: the PV binder releases its PV, which is
// the PV update above.

package provisioner

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// addEventHandlers routes the events of the table above to the queues.
func (p *Provisioner) addEventHandlers() error {
	handlers := []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{p.factory.Core().V1().PersistentVolumeClaims().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    p.enqueueClaim,
			UpdateFunc: func(_, newObj any) { p.enqueueClaim(newObj) },
		}},
		{p.volumes, cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				p.release(obj.(*v1.PersistentVolume).Name)
				p.enqueueNodeOf(obj)
				p.volumeQueue.Add(obj.(*v1.PersistentVolume).Name)
			},
			UpdateFunc: func(_, newObj any) { p.volumeQueue.Add(newObj.(*v1.PersistentVolume).Name) },
			DeleteFunc: p.enqueueNodeOf,
		}},
		{p.nodes, cache.ResourceEventHandlerFuncs{
			AddFunc: p.enqueueNode,
			UpdateFunc: func(oldObj, newObj any) {
				if hostname(oldObj.(*v1.Node)) != hostname(newObj.(*v1.Node)) {
					p.enqueueNode(newObj)
				}
			},
			DeleteFunc: p.enqueueNode,
		}},
		{p.factory.Storage().V1().StorageClasses().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    p.enqueueAllNodesFor,
			DeleteFunc: p.enqueueAllNodesFor,
		}},
		{p.capacities, cache.ResourceEventHandlerFuncs{
			AddFunc:    p.enqueueNodeOf,
			UpdateFunc: func(_, newObj any) { p.enqueueNodeOf(newObj) },
			DeleteFunc: p.enqueueNodeOf,
		}},
	}
	for _, h := range handlers {
		if _, err := h.informer.AddEventHandler(h.handler); err != nil {
			return fmt.Errorf("provisioner %s: %w", Name, err)
		}
	}
	return nil
}

// enqueueClaim queues a claim that names this provisioner. The PV binder
// names it once the claim is to be provisioned; other claims are none of
// its business.
func (p *Provisioner) enqueueClaim(obj any) {
	claim := obj.(*v1.PersistentVolumeClaim)
	if claim.Annotations[annStorageProvisioner] != Name {
		return
	}
	if key, err := cache.MetaNamespaceKeyFunc(claim); err == nil {
		p.claimQueue.Add(key)
	}
}

// metaOf is an informer event's object, unwrapping a deletion's tombstone
// (the object as last seen, when the watch missed the deletion).
func metaOf(obj any) (metav1.Object, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	return apimeta.Accessor(obj)
}

// nodeOfObject indexes an object by its NodeAnnotation, if it has one.
func nodeOfObject(obj any) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	if node, ok := m.GetAnnotations()[NodeAnnotation]; ok {
		return []string{node}, nil
	}
	return nil, nil
}

// enqueueNode queues a node (or its tombstone) by name.
func (p *Provisioner) enqueueNode(obj any) {
	if m, err := metaOf(obj); err == nil {
		p.capacityQueue.Add(m.GetName())
	}
}

// enqueueNodeOf queues the node an object's NodeAnnotation names, if any.
func (p *Provisioner) enqueueNodeOf(obj any) {
	nodes, _ := nodeOfObject(obj)
	for _, n := range nodes {
		p.capacityQueue.Add(n)
	}
}

// enqueueAllNodesFor queues, when a class of ours comes or goes, every node
// and every node that still has an object of ours (a node deleted since).
func (p *Provisioner) enqueueAllNodesFor(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if class, ok := obj.(*storagev1.StorageClass); !ok || class.Provisioner != Name {
		return
	}
	for _, name := range p.nodes.GetStore().ListKeys() {
		p.capacityQueue.Add(name)
	}
	for _, name := range p.capacities.GetIndexer().ListIndexFuncValues(byNode) {
		p.capacityQueue.Add(name)
	}
}
