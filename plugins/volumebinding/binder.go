// This file is the volume binder: what it reads (the PV and PVC assume
// caches, listers) and the results its steps hand on, from PreFilter's
// podVolumeClaims to Filter's podVolumes, which Reserve assumes and PreBind
// writes.

package volumebinding

import (
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	toolscache "k8s.io/client-go/tools/cache"
	csitrans "k8s.io/csi-translation-lib"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ConflictReason says why a node cannot have the pod's volumes. Filter
// reports every reason that applies, as one status, in the order of the
// constants below.
type ConflictReason string

// Filter's reasons, in the order Filter reports them.
const (
	// ErrReasonNodeConflict: a bound PV's node affinity excludes the node.
	ErrReasonNodeConflict ConflictReason = "node(s) didn't match PersistentVolume's node affinity"
	// ErrReasonBindConflict: an unbound claim finds neither a matching PV
	// nor a way to provision on the node, or was already given to another
	// node (volume.kubernetes.io/selected-node).
	ErrReasonBindConflict ConflictReason = "node(s) didn't find available persistent volumes to bind"
	// ErrReasonNotEnoughSpace: no CSIStorageCapacity reachable from the node
	// can hold a volume to provision.
	ErrReasonNotEnoughSpace ConflictReason = "node(s) did not have enough free storage"
	// ErrReasonPVNotExist: a bound claim's PV does not exist.
	ErrReasonPVNotExist ConflictReason = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)

// ErrReasonUnboundImmediate is PreFilter's reason when a claim that the PV
// controller should bind on its own (Immediate binding, or pre-bound) is not
// bound yet.
const ErrReasonUnboundImmediate = "pod has unbound immediate PersistentVolumeClaims"

// bindingInfo is a static binding: an unbound claim and the PV chosen for
// it.
type bindingInfo struct {
	pvc *v1.PersistentVolumeClaim
	pv  *v1.PersistentVolume
}

// StorageClassName is the chosen PV's class.
func (b *bindingInfo) StorageClassName() string { return b.pv.Spec.StorageClassName }

// StorageResource is the claim's request and the PV's capacity, in bytes.
func (b *bindingInfo) StorageResource() *storageResource {
	requested := b.pvc.Spec.Resources.Requests[v1.ResourceStorage]
	capacity := b.pv.Spec.Capacity[v1.ResourceStorage]
	return &storageResource{Requested: requested.Value(), Capacity: capacity.Value()}
}

// storageResource is what a storage class holds for the pod on a node,
// in bytes: the claims' requests and the capacity they draw on.
type storageResource struct {
	Requested int64
	Capacity  int64
}

// dynamicProvision is an unbound claim to provision on the node.
type dynamicProvision struct {
	PVC *v1.PersistentVolumeClaim
	// NodeCapacity is the CSIStorageCapacity that showed room for it, nil
	// when capacity is not tracked for its driver.
	NodeCapacity *storagev1.CSIStorageCapacity
}

// podVolumes is what Filter found a node needs for the pod's unbound
// claims; Reserve replaces its objects by the assumed ones, and PreBind
// writes them.
type podVolumes struct {
	// StaticBindings are claims given existing PVs.
	StaticBindings []*bindingInfo
	// DynamicProvisions are claims to provision.
	DynamicProvisions []*dynamicProvision
}

// podVolumeClaims is the pod's claims sorted by what they need (see
// GetPodVolumeClaims), computed once per cycle in PreFilter.
type podVolumeClaims struct {
	// boundClaims are bound to a PV (spec.volumeName and the PV controller's
	// bind-completed annotation).
	boundClaims []*v1.PersistentVolumeClaim
	// unboundClaimsDelayBinding wait for this pod (WaitForFirstConsumer).
	unboundClaimsDelayBinding []*v1.PersistentVolumeClaim
	// unboundClaimsImmediate should have been bound by the PV controller
	// already (Immediate binding, pre-bound, no class or an unknown one).
	unboundClaimsImmediate []*v1.PersistentVolumeClaim
	// unboundVolumesDelayBinding are the PVs of the delayed claims' classes,
	// by class, as the PV assume cache had them at PreFilter.
	unboundVolumesDelayBinding map[string][]*v1.PersistentVolume
}

// inTreeToCSITranslator is the part of csi-translation-lib the binder uses
// to see an in-tree PV (a GCE PD, say) as the CSI volume its node mounts.
type inTreeToCSITranslator interface {
	IsPVMigratable(pv *v1.PersistentVolume) bool
	GetInTreePluginNameFromSpec(pv *v1.PersistentVolume, vol *v1.Volume) (string, error)
	TranslateInTreePVToCSI(logger klog.Logger, pv *v1.PersistentVolume) (*v1.PersistentVolume, error)
}

// volumeBinder finds, reserves and binds a pod's volumes:
//
//	PreFilter  GetPodVolumeClaims   sort the pod's claims          claims.go
//	Filter     FindPodVolumes       what one node would need       find.go, static_binding.go, provisioning.go
//	Reserve    AssumePodVolumes     into the assume caches         assume.go
//	Unreserve  RevertAssumedPodVolumes
//	PreBind    BindPodVolumes       write, wait for the PV controller  bind.go
type volumeBinder struct {
	// kubeClient writes PVs and PVCs in PreBind.
	kubeClient kubernetes.Interface

	classLister   storagelisters.StorageClassLister
	podLister     corelisters.PodLister
	nodeLister    corelisters.NodeLister
	csiNodeLister storagelisters.CSINodeLister
	// csiDriverLister says whether a provisioner's driver opted into
	// capacity tracking; csiStorageCapacityLister lists the capacities.
	csiDriverLister          storagelisters.CSIDriverLister
	csiStorageCapacityLister storagelisters.CSIStorageCapacityLister
	// topologySelectors holds the capacities' nodeTopology, converted.
	topologySelectors *topologySelectors

	pvcCache pvcAssumeCache
	pvCache  pvAssumeCache

	// bindTimeout bounds PreBind's wait for the PV controller.
	bindTimeout time.Duration
	// clock and pollInterval drive that wait: kube-scheduler checks every
	// second on the real clock; tests step a fake one.
	clock        clock.WithTicker
	pollInterval time.Duration

	translator inTreeToCSITranslator
}

// newVolumeBinder builds the binder on factory's informers, which must not
// have started: the PV and PVC caches add a handler, the PV cache an index.
func newVolumeBinder(logger klog.Logger, client kubernetes.Interface, factory informers.SharedInformerFactory,
	bindTimeout time.Duration) (*volumeBinder, error) {
	pvcCache, err1 := newPVCAssumeCache(logger, factory.Core().V1().PersistentVolumeClaims().Informer())
	pvCache, err2 := newPVAssumeCache(logger, factory.Core().V1().PersistentVolumes().Informer())
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	selectors := &topologySelectors{}
	if _, err := factory.Storage().V1().CSIStorageCapacities().Informer().AddEventHandler(
		toolscache.ResourceEventHandlerFuncs{DeleteFunc: selectors.forgetDeleted}); err != nil {
		return nil, err
	}
	return &volumeBinder{
		topologySelectors:        selectors,
		kubeClient:               client,
		classLister:              factory.Storage().V1().StorageClasses().Lister(),
		podLister:                factory.Core().V1().Pods().Lister(),
		nodeLister:               factory.Core().V1().Nodes().Lister(),
		csiNodeLister:            factory.Storage().V1().CSINodes().Lister(),
		csiDriverLister:          factory.Storage().V1().CSIDrivers().Lister(),
		csiStorageCapacityLister: factory.Storage().V1().CSIStorageCapacities().Lister(),
		pvcCache:                 pvcCache,
		pvCache:                  pvCache,
		bindTimeout:              bindTimeout,
		clock:                    clock.RealClock{},
		pollInterval:             time.Second,
		translator:               csitrans.New(),
	}, nil
}

// getPodName is "namespace/name", as errors name pods.
func getPodName(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

// getPVCName is "namespace/name": the claim's key in the PVC cache.
func getPVCName(pvc *v1.PersistentVolumeClaim) string { return pvc.Namespace + "/" + pvc.Name }
