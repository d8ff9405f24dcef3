// Each node's free space, and the CSIStorageCapacity objects that tell the
// scheduler about it: one per node and class of ours, with capacity = the
// node's disk − the volumes on it and the space reserved. capacityQueue
// (fed as eventhandlers.go says) keeps them current.

package provisioner

import (
	"context"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
)

// driverLabel marks the CSIStorageCapacity objects of a driver, as the CSI
// external-provisioner marks its own.
const driverLabel = "csi.storage.k8s.io/drivername"

// syncCapacity makes the node's CSIStorageCapacity objects what they should
// be: one per class of ours while the node exists, none after.
func (p *Provisioner) syncCapacity(ctx context.Context, nodeName string) error {
	want := map[string]*storagev1.CSIStorageCapacity{}
	obj, exists, err := p.nodes.GetStore().GetByKey(nodeName)
	if err != nil {
		return err
	}
	if exists {
		node := obj.(*v1.Node)
		free := p.free(nodeName)
		classes, err := p.classes.List(labels.Everything())
		if err != nil {
			return err
		}
		for _, class := range classes {
			if class.Provisioner == Name {
				c := p.capacityObject(class.Name, node, free)
				want[c.Name] = c
			}
		}
	}
	have, err := p.capacities.GetIndexer().ByIndex(byNode, nodeName)
	if err != nil {
		return err
	}
	capacities := p.client.StorageV1().CSIStorageCapacities(p.opts.Namespace)
	logger := klog.FromContext(ctx)
	for _, o := range have {
		old := o.(*storagev1.CSIStorageCapacity)
		c, ok := want[old.Name]
		switch {
		case !ok:
			if err := capacities.Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			logger.V(2).Info("Deleted storage capacity", "csiStorageCapacity", klog.KObj(old))
		case !apiequality.Semantic.DeepEqual(old.Capacity, c.Capacity) ||
			!apiequality.Semantic.DeepEqual(old.NodeTopology, c.NodeTopology):
			updated := old.DeepCopy() // never modify the informer's object
			updated.Capacity, updated.NodeTopology = c.Capacity, c.NodeTopology
			if _, err := capacities.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
				return ignoreStale(err)
			}
			logger.V(2).Info("Updated storage capacity", "csiStorageCapacity", klog.KObj(c), "capacity", c.Capacity)
		}
		delete(want, old.Name)
	}
	for _, c := range want { // the ones not published yet
		if _, err := capacities.Create(ctx, c, metav1.CreateOptions{}); err != nil {
			return ignoreStale(err)
		}
		logger.V(2).Info("Published storage capacity", "csiStorageCapacity", klog.KObj(c), "capacity", c.Capacity)
	}
	return nil
}

// ignoreStale is err, or nil if err only says that the informer's copy was
// stale (a conflict on update, or the object created already): the
// informer's event for the newer object queues the node again.
func ignoreStale(err error) error {
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// capacityObject is the CSIStorageCapacity of class on node: named after
// both, so that a second create for the same pair fails rather than
// duplicates, and found again by its node through NodeAnnotation.
func (p *Provisioner) capacityObject(class string, node *v1.Node, free resource.Quantity) *storagev1.CSIStorageCapacity {
	return &storagev1.CSIStorageCapacity{
		ObjectMeta: metav1.ObjectMeta{
			Name:        class + "-" + node.Name,
			Namespace:   p.opts.Namespace,
			Labels:      map[string]string{driverLabel: Name},
			Annotations: map[string]string{NodeAnnotation: node.Name},
		},
		StorageClassName: class,
		NodeTopology:     &metav1.LabelSelector{MatchLabels: map[string]string{v1.LabelHostname: hostname(node)}},
		Capacity:         &free,
	}
}

// free is the node's disk less the volumes on it and the space reserved.
func (p *Provisioner) free(node string) resource.Quantity {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.freeLocked(node)
}

// freeLocked is free; p.mu must be held. A PV counts from the moment the
// informer shows it until it is gone (a PV being deleted still holds its
// data); a reservation counts until then. It is never below zero, even if
// the disk was configured smaller than what is on it.
func (p *Provisioner) freeLocked(node string) resource.Quantity {
	free, ok := p.opts.Capacity[node]
	if !ok {
		free = p.opts.DefaultCapacity
	}
	free = free.DeepCopy()
	pvs, _ := p.volumes.GetIndexer().ByIndex(byNode, node)
	for _, o := range pvs {
		pv := o.(*v1.PersistentVolume)
		free.Sub(pv.Spec.Capacity[v1.ResourceStorage])
	}
	for name, r := range p.reserved {
		if _, shown, _ := p.volumes.GetIndexer().GetByKey(name); r.node == node && !shown {
			free.Sub(r.size)
		}
	}
	if free.Sign() < 0 {
		return *resource.NewQuantity(0, free.Format)
	}
	return free
}
