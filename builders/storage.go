// This file builds the storage objects the volume plugins read:
// PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes,
// CSIDrivers and CSIStorageCapacities.

package builders

import (
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PVCWrapper builds a PersistentVolumeClaim: MakePVC().Name("data").Class("local").Req("1Gi").Obj().
type PVCWrapper struct{ v1.PersistentVolumeClaim }

// MakePVC starts a ReadWriteOnce claim in namespace "default" with no class
// and no request.
func MakePVC() *PVCWrapper {
	return &PVCWrapper{v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault},
		Spec:       v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}},
	}}
}

// Obj returns a copy of the claim built so far.
func (c *PVCWrapper) Obj() *v1.PersistentVolumeClaim { return c.PersistentVolumeClaim.DeepCopy() }

// Name sets the claim's name.
func (c *PVCWrapper) Name(name string) *PVCWrapper { c.PersistentVolumeClaim.Name = name; return c }

// Namespace sets the claim's namespace.
func (c *PVCWrapper) Namespace(ns string) *PVCWrapper {
	c.PersistentVolumeClaim.Namespace = ns
	return c
}

// UID sets the claim's UID.
func (c *PVCWrapper) UID(uid string) *PVCWrapper {
	c.PersistentVolumeClaim.UID = types.UID(uid)
	return c
}

// Class sets spec.storageClassName ("" asks for no class: static binding
// only, and immediately).
func (c *PVCWrapper) Class(name string) *PVCWrapper { c.Spec.StorageClassName = &name; return c }

// Req sets the storage request.
func (c *PVCWrapper) Req(storage string) *PVCWrapper {
	c.Spec.Resources.Requests = v1.ResourceList{v1.ResourceStorage: resource.MustParse(storage)}
	return c
}

// AccessModes replaces the access modes.
func (c *PVCWrapper) AccessModes(modes ...v1.PersistentVolumeAccessMode) *PVCWrapper {
	c.Spec.AccessModes = modes
	return c
}

// VolumeName pre-binds the claim to a PersistentVolume (spec.volumeName).
func (c *PVCWrapper) VolumeName(pv string) *PVCWrapper { c.Spec.VolumeName = pv; return c }

// Annotation sets an annotation.
func (c *PVCWrapper) Annotation(k, v string) *PVCWrapper {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[k] = v
	return c
}

// Phase sets status.phase.
func (c *PVCWrapper) Phase(phase v1.PersistentVolumeClaimPhase) *PVCWrapper {
	c.Status.Phase = phase
	return c
}

// PVWrapper builds a PersistentVolume: MakePV().Name("pv1").Capacity("1Gi").NodeAffinityIn(...).Obj().
type PVWrapper struct{ v1.PersistentVolume }

// MakePV starts a ReadWriteOnce, Filesystem volume with a hostPath source,
// reclaim policy Retain, no class and no capacity.
func MakePV() *PVWrapper {
	return &PVWrapper{v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{
		AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
		PersistentVolumeSource: v1.PersistentVolumeSource{
			HostPath: &v1.HostPathVolumeSource{Path: "/tmp/minisched"}},
	}}}
}

// Obj returns a copy of the volume built so far.
func (p *PVWrapper) Obj() *v1.PersistentVolume { return p.PersistentVolume.DeepCopy() }

// Name sets the volume's name.
func (p *PVWrapper) Name(name string) *PVWrapper { p.PersistentVolume.Name = name; return p }

// Class sets spec.storageClassName.
func (p *PVWrapper) Class(name string) *PVWrapper { p.Spec.StorageClassName = name; return p }

// Capacity sets the storage capacity.
func (p *PVWrapper) Capacity(storage string) *PVWrapper {
	p.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse(storage)}
	return p
}

// AccessModes replaces the access modes.
func (p *PVWrapper) AccessModes(modes ...v1.PersistentVolumeAccessMode) *PVWrapper {
	p.Spec.AccessModes = modes
	return p
}

// NodeAffinityIn requires nodes whose label key has one of values.
func (p *PVWrapper) NodeAffinityIn(key string, values ...string) *PVWrapper {
	return p.NodeAffinity(key, v1.NodeSelectorOpIn, values...)
}

// NodeAffinity requires nodes whose label key satisfies op with values: one
// term of one requirement. Nothing is checked, so that tests can build what
// the apiserver accepts and a node selector cannot parse (Gt with a value
// that is not an integer).
func (p *PVWrapper) NodeAffinity(key string, op v1.NodeSelectorOperator, values ...string) *PVWrapper {
	p.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}},
	}}}}
	return p
}

// Label sets a label (zone labels are what VolumeZone reads).
func (p *PVWrapper) Label(k, v string) *PVWrapper {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}

// CSI replaces the source with a CSI volume of driver and handle.
func (p *PVWrapper) CSI(driver, handle string) *PVWrapper {
	p.Spec.PersistentVolumeSource = v1.PersistentVolumeSource{
		CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}}
	return p
}

// Source replaces the source with any kind (an in-tree disk, say).
func (p *PVWrapper) Source(src v1.PersistentVolumeSource) *PVWrapper {
	p.Spec.PersistentVolumeSource = src
	return p
}

// ClaimRef pre-binds the volume to a claim (spec.claimRef).
func (p *PVWrapper) ClaimRef(namespace, name string) *PVWrapper {
	p.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
		Namespace: namespace, Name: name}
	return p
}

// Phase sets status.phase.
func (p *PVWrapper) Phase(phase v1.PersistentVolumePhase) *PVWrapper {
	p.Status.Phase = phase
	return p
}

// StorageClassWrapper builds a StorageClass: MakeStorageClass().Name("local").WaitForFirstConsumer().Obj().
type StorageClassWrapper struct{ storagev1.StorageClass }

// MakeStorageClass starts an Immediate class of provisioner
// kubernetes.io/no-provisioner (static volumes only).
func MakeStorageClass() *StorageClassWrapper {
	mode := storagev1.VolumeBindingImmediate
	return &StorageClassWrapper{storagev1.StorageClass{
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: &mode,
	}}
}

// Obj returns a copy of the class built so far.
func (s *StorageClassWrapper) Obj() *storagev1.StorageClass { return s.StorageClass.DeepCopy() }

// Name sets the class's name.
func (s *StorageClassWrapper) Name(name string) *StorageClassWrapper {
	s.StorageClass.Name = name
	return s
}

// Provisioner sets the provisioner.
func (s *StorageClassWrapper) Provisioner(name string) *StorageClassWrapper {
	s.StorageClass.Provisioner = name
	return s
}

// WaitForFirstConsumer delays binding until a pod using a claim of this
// class is scheduled.
func (s *StorageClassWrapper) WaitForFirstConsumer() *StorageClassWrapper {
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	s.VolumeBindingMode = &mode
	return s
}

// AllowedTopologyIn adds an allowedTopologies term: label key in values.
func (s *StorageClassWrapper) AllowedTopologyIn(key string, values ...string) *StorageClassWrapper {
	s.AllowedTopologies = append(s.AllowedTopologies, v1.TopologySelectorTerm{
		MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: key, Values: values}}})
	return s
}

// MakeCSINode returns the CSINode of node, listing each driver with its
// attach limit (allocatable.count; 0 means none is set).
func MakeCSINode(node string, limits map[string]int32) *storagev1.CSINode {
	n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node}}
	for driver, limit := range limits {
		d := storagev1.CSINodeDriver{Name: driver, NodeID: node}
		if limit > 0 {
			d.Allocatable = &storagev1.VolumeNodeResources{Count: &limit}
		}
		n.Spec.Drivers = append(n.Spec.Drivers, d)
	}
	// Drivers by name, so a CSINode built from a map is always the same.
	slices.SortFunc(n.Spec.Drivers, func(a, b storagev1.CSINodeDriver) int { return strings.Compare(a.Name, b.Name) })
	return n
}

// MakeCSIDriver returns a CSIDriver object. storageCapacity makes
// VolumeBinding check CSIStorageCapacity objects for its classes; a
// non-nil preventPodSchedulingIfMissing makes NodeVolumeLimits reject nodes
// whose CSINode lacks the driver.
func MakeCSIDriver(name string, storageCapacity bool, preventPodSchedulingIfMissing *bool) *storagev1.CSIDriver {
	return &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.CSIDriverSpec{
			StorageCapacity:               &storageCapacity,
			PreventPodSchedulingIfMissing: preventPodSchedulingIfMissing,
		},
	}
}

// MakeCSIStorageCapacity returns a CSIStorageCapacity in namespace
// "default" saying class has capacity left on the nodes labelled
// kubernetes.io/hostname=node.
func MakeCSIStorageCapacity(name, class, node, capacity string) *storagev1.CSIStorageCapacity {
	q := resource.MustParse(capacity)
	return &storagev1.CSIStorageCapacity{
		ObjectMeta:       metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		StorageClassName: class,
		NodeTopology:     &metav1.LabelSelector{MatchLabels: map[string]string{v1.LabelHostname: node}},
		Capacity:         &q,
	}
}
