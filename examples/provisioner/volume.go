// Making and deleting volumes: syncClaim gives a claim its PV or sends it
// back to the scheduler, syncVolume deletes a released PV, and the
// reservations in between keep two claims from both taking a node's last
// free space.

package provisioner

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// syncClaim provisions the claim key (namespace/name) if it is ours to
// provision: unbound, of a class whose provisioner is Name, annotated by
// the PV binder with storage-provisioner Name and by the scheduler with the
// selected node, and without its PV yet. Then, in order:
//
//  1. If the node is gone, or its disk lacks room for the claim's request,
//     remove the selected-node annotation: the scheduler picks again.
//  2. Otherwise reserve the space and create the PV pvc-<claim uid>,
//     pre-bound to the claim; the PV binder binds them.
//
// A claim without a selected node waits for the scheduler (a claim of an
// Immediate class waits for ever: a node-local volume needs its node).
func (p *Provisioner) syncClaim(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	claim, err := p.claims.PersistentVolumeClaims(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // deleted before it was provisioned
	}
	if err != nil {
		return err
	}
	nodeName := claim.Annotations[annSelectedNode]
	pvName := "pvc-" + string(claim.UID)
	if claim.Spec.VolumeName != "" || claim.Annotations[annStorageProvisioner] != Name || nodeName == "" {
		return nil
	}
	if _, provisioned, err := p.volumes.GetIndexer().GetByKey(pvName); err != nil || provisioned {
		return err
	}
	className := ptr.Deref(claim.Spec.StorageClassName, "")
	class, err := p.classes.Get(className)
	if err != nil {
		// The PV binder saw the class; this informer will too.
		return fmt.Errorf("claim %s: class %q: %w", key, className, err)
	}
	if class.Provisioner != Name {
		return nil
	}
	logger := klog.FromContext(ctx).WithValues("pvc", klog.KObj(claim), "node", klog.KRef("", nodeName))

	// Read the node from the apiserver, not the informer: a node the
	// informer has not seen yet is not a node that is gone.
	node, err := p.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return p.reschedule(ctx, claim, fmt.Sprintf("node %s does not exist", nodeName))
	}
	if err != nil {
		return err
	}
	size := claim.Spec.Resources.Requests[v1.ResourceStorage]
	if err := p.reserve(pvName, nodeName, size); err != nil { // 1
		return p.reschedule(ctx, claim, err.Error())
	}
	pv := p.volume(claim, class.ReclaimPolicy, node, pvName, size) // 2
	if _, err := p.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil &&
		!apierrors.IsAlreadyExists(err) { // it exists: created by an earlier sync the informer had not shown
		p.release(pvName)
		return fmt.Errorf("claim %s: creating PV %s: %w", key, pvName, err)
	}
	logger.V(2).Info("Provisioned a volume", "pv", klog.KObj(pv), "size", size.String())
	return nil
}

// reschedule removes the claim's selected-node annotation, which tells the
// scheduler that this node will not do and it must pick again (VolumeBinding
// PreBind, polling the claim, fails with "provisioning failed").
func (p *Provisioner) reschedule(ctx context.Context, claim *v1.PersistentVolumeClaim, why string) error {
	updated := claim.DeepCopy() // never modify the informer's object
	delete(updated.Annotations, annSelectedNode)
	if _, err := p.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("claim %s: removing %s: %w", klog.KObj(claim), annSelectedNode, err)
	}
	klog.FromContext(ctx).V(2).Info("Cannot provision on the selected node, asked the scheduler for another",
		"pvc", klog.KObj(claim), "node", klog.KRef("", claim.Annotations[annSelectedNode]), "reason", why)
	return nil
}

// volume is the PV of a volume on node's disk for claim: what the PV binder
// needs to bind them (claimRef with the claim's uid, class, capacity,
// access modes, volume mode), and what the scheduler needs to keep the
// claim's pods on that node.
func (p *Provisioner) volume(claim *v1.PersistentVolumeClaim, reclaim *v1.PersistentVolumeReclaimPolicy,
	node *v1.Node, pvName string, size resource.Quantity) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        pvName,
			Annotations: map[string]string{annProvisionedBy: Name, NodeAnnotation: node.Name},
		},
		Spec: v1.PersistentVolumeSpec{
			ClaimRef: &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID},
			StorageClassName:              ptr.Deref(claim.Spec.StorageClassName, ""),
			Capacity:                      v1.ResourceList{v1.ResourceStorage: size},
			AccessModes:                   claim.Spec.AccessModes,
			VolumeMode:                    claim.Spec.VolumeMode,
			PersistentVolumeReclaimPolicy: ptr.Deref(reclaim, v1.PersistentVolumeReclaimDelete),
			// A csi source, not hostPath or local: NodeVolumeLimits counts
			// a node's volumes per CSI driver.
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver:       Name,
				VolumeHandle: node.Name + "/" + pvName,
			}},
			// The data is on this node's disk: only pods there can use it.
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{
					Key:      v1.LabelHostname,
					Operator: v1.NodeSelectorOpIn,
					Values:   []string{hostname(node)},
				}}}},
			}},
		},
	}
}

// hostname is the node's kubernetes.io/hostname label, which kubelets set
// and node affinity matches; a node without it (made by hand) is known by
// its name.
func hostname(node *v1.Node) string {
	if h, ok := node.Labels[v1.LabelHostname]; ok {
		return h
	}
	return node.Name
}

// syncVolume deletes the PV name if it is ours, released (its claim is
// gone: the PV binder says so) and to be deleted with its claim. Its space
// is free once the informer shows it gone (capacity.go). Until the
// PV-protection controller lifts its finalizer, it stays, being deleted.
func (p *Provisioner) syncVolume(ctx context.Context, name string) error {
	obj, exists, err := p.volumes.GetIndexer().GetByKey(name)
	if err != nil || !exists {
		return err
	}
	pv := obj.(*v1.PersistentVolume)
	if pv.Annotations[annProvisionedBy] != Name || pv.Status.Phase != v1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete || pv.DeletionTimestamp != nil {
		return nil
	}
	// The precondition: delete this PV, not a namesake made since.
	err = p.client.CoreV1().PersistentVolumes().Delete(ctx, name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(pv.UID)}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting released PV %s: %w", name, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted a released volume", "pv", klog.KObj(pv), "node", pv.Annotations[NodeAnnotation])
	return nil
}

// reserve grants size on node's disk to the volume pvName, or says why
// not. Granting the same volume again (a sync after a failed create) is
// granting it once.
func (p *Provisioner) reserve(pvName, node string, size resource.Quantity) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.reserved[pvName]; ok {
		return nil
	}
	if free := p.freeLocked(node); free.Cmp(size) < 0 {
		return fmt.Errorf("node %s has %s free, the claim asks for %s", node, free.String(), size.String())
	}
	p.reserved[pvName] = reservation{node: node, size: size}
	p.capacityQueue.Add(node)
	return nil
}

// release forgets the reservation of volume pvName, if any: its PV now
// counts, or was never made.
func (p *Provisioner) release(pvName string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.reserved[pvName]; ok {
		delete(p.reserved, pvName)
		p.capacityQueue.Add(r.node)
	}
}
