// Package volumerestrictions is the plugin that keeps two pods off a volume
// that only one of them may use, as kube-scheduler's VolumeRestrictions does:
//
//   - an inline GCE persistent disk, AWS EBS volume, iSCSI LUN or Ceph RBD
//     image that a pod on the node already mounts, unless both mount it
//     read-only (EBS: never shared) — a per-node check;
//   - a PersistentVolumeClaim with the ReadWriteOncePod access mode that a
//     pod anywhere in the cluster already uses — a cluster-wide check, so
//     every node fails it alike, and preemption may free the claim.
package volumerestrictions

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "VolumeRestrictions"

// Reasons this plugin reports.
const (
	// ErrReasonDiskConflict is the reason for an inline disk that a pod on
	// the node already mounts.
	ErrReasonDiskConflict = "node(s) had no available disk"
	// ErrReasonReadWriteOncePodConflict is the reason for a ReadWriteOncePod
	// claim that another pod already uses.
	ErrReasonReadWriteOncePodConflict = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)

// preFilterStateKey is where PreFilter leaves its preFilterState.
const preFilterStateKey framework.StateKey = "PreFilter" + Name

// VolumeRestrictions rejects nodes where the pod's inline disks are in use,
// and every node while one of its ReadWriteOncePod claims is in use.
type VolumeRestrictions struct {
	// pvcLister reads the pod's claims, for their access modes.
	pvcLister listersv1.PersistentVolumeClaimLister
	// sharedLister is the cycle's snapshot: it says which claims the pods on
	// nodes (bound or assumed) use.
	sharedLister framework.SharedLister
}

var (
	_ framework.PreFilterPlugin     = &VolumeRestrictions{}
	_ framework.PreFilterExtensions = &VolumeRestrictions{}
	_ framework.FilterPlugin        = &VolumeRestrictions{}
	_ framework.EnqueueExtensions   = &VolumeRestrictions{}
	_ framework.SignPlugin          = &VolumeRestrictions{}
)

// New returns the plugin. It takes no args; any pluginConfig is ignored, as
// kube-scheduler does for plugins without args. The claim lister is asked
// for here, so its informer is started with the others.
func New(_ context.Context, _ *runtime.RawExtension, h framework.Handle) (framework.Plugin, error) {
	if h == nil || h.SnapshotSharedLister() == nil {
		return nil, fmt.Errorf("SnapshotSharedLister is nil")
	}
	if h.SharedInformerFactory() == nil {
		return nil, fmt.Errorf("SharedInformerFactory is nil")
	}
	return &VolumeRestrictions{
		pvcLister:    h.SharedInformerFactory().Core().V1().PersistentVolumeClaims().Lister(),
		sharedLister: h.SnapshotSharedLister(),
	}, nil
}

// Name returns Name.
func (pl *VolumeRestrictions) Name() string { return Name }

// SignPod signs the pod's volumes (VolumesSigner, which leaves out ConfigMap
// and Secret volumes): PreFilter and Filter read the pod's inline disks and
// claims and nothing else of its spec. The claims are looked up in the pod's
// namespace, which the fragment leaves out, as kube-scheduler's does.
func (pl *VolumeRestrictions) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	return []framework.SignFragment{{Key: framework.VolumesSignerName, Value: framework.VolumesSigner(pod)}}, nil
}

// preFilterState is what PreFilter learnt about the pod's ReadWriteOncePod
// claims.
type preFilterState struct {
	// readWriteOncePodPVCs names the pod's claims (in its namespace) whose
	// access modes include ReadWriteOncePod. It is never modified after
	// PreFilter, so clones share it.
	readWriteOncePodPVCs sets.Set[string]
	// conflictingPVCRefCount counts uses of those claims by other pods:
	// PreFilter counts each claim in use once (a ReadWriteOncePod claim has
	// at most one user), AddPod and RemovePod add or subtract each volume of
	// a pod that names one.
	conflictingPVCRefCount int
}

// Clone returns a copy whose count can change independently.
func (s *preFilterState) Clone() framework.StateData {
	c := *s
	return &c
}

// refsFromPod counts the volumes of pod that name one of the claims.
func (s *preFilterState) refsFromPod(pod *v1.Pod) int {
	n := 0
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && s.readWriteOncePodPVCs.Has(v.PersistentVolumeClaim.ClaimName) {
			n++
		}
	}
	return n
}

func getPreFilterState(state *framework.CycleState) (*preFilterState, error) {
	c, err := state.Read(preFilterStateKey)
	if err != nil {
		// Likely PreFilter was not run.
		return nil, fmt.Errorf("cannot read %q from cycleState", preFilterStateKey)
	}
	s, ok := c.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%+v convert to volumerestrictions.state error", c)
	}
	return s, nil
}

// PreFilter reads the pod's claims and counts its ReadWriteOncePod claims
// already in use.
//
// A claim missing from the lister is UnschedulableAndUnresolvable with the
// lister's message: evicting pods cannot create it, its creation
// (PersistentVolumeClaim Add) can. Any other lister error is an Error.
// A pod with no inline disk and no claim in use has nothing to check:
// Skip, so Filter (and AddPod/RemovePod) are not called for it.
func (pl *VolumeRestrictions) PreFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	_ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	pvcs, err := pl.readWriteOncePodPVCs(pod)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
		}
		return nil, framework.AsStatus(err)
	}
	s := &preFilterState{readWriteOncePodPVCs: pvcs}
	for name := range pvcs {
		if pl.sharedLister.StorageInfos().IsPVCUsedByPods(framework.PVCKey(pod.Namespace, name)) {
			s.conflictingPVCRefCount++
		}
	}
	if !slices.ContainsFunc(pod.Spec.Volumes, isInlineDisk) && s.conflictingPVCRefCount == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	if s.conflictingPVCRefCount > 0 {
		klog.FromContext(ctx).V(5).Info("ReadWriteOncePod claims of the pod are in use by other pods",
			"pod", klog.KObj(pod), "claims", sets.List(pvcs), "inUse", s.conflictingPVCRefCount)
	}
	state.Write(preFilterStateKey, s)
	return nil, nil
}

// readWriteOncePodPVCs returns the names of the pod's claims (volumes of
// type persistentVolumeClaim; generic ephemeral volumes are not looked at)
// whose access modes include ReadWriteOncePod. It stops at the first claim
// the lister cannot return.
func (pl *VolumeRestrictions) readWriteOncePodPVCs(pod *v1.Pod) (sets.Set[string], error) {
	pvcs := sets.New[string]()
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvc, err := pl.pvcLister.PersistentVolumeClaims(pod.Namespace).Get(v.PersistentVolumeClaim.ClaimName)
		if err != nil {
			return nil, err
		}
		if slices.Contains(pvc.Spec.AccessModes, v1.ReadWriteOncePod) {
			pvcs.Insert(pvc.Name)
		}
	}
	return pvcs, nil
}

// PreFilterExtensions returns the plugin itself: the count of claims in use
// changes with the pods preemption removes (or nominated pods it adds).
func (pl *VolumeRestrictions) PreFilterExtensions() framework.PreFilterExtensions { return pl }

// AddPod counts the added pod's uses of the pod's ReadWriteOncePod claims.
func (pl *VolumeRestrictions) AddPod(_ context.Context, state *framework.CycleState, _ *v1.Pod,
	podInfoToAdd *framework.PodInfo, _ *framework.NodeInfo) *framework.Status {
	s, err := getPreFilterState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.conflictingPVCRefCount += s.refsFromPod(podInfoToAdd.Pod)
	return nil
}

// RemovePod uncounts the removed pod's uses of the pod's ReadWriteOncePod
// claims: evicting the claim's only user frees it.
func (pl *VolumeRestrictions) RemovePod(_ context.Context, state *framework.CycleState, _ *v1.Pod,
	podInfoToRemove *framework.PodInfo, _ *framework.NodeInfo) *framework.Status {
	s, err := getPreFilterState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.conflictingPVCRefCount -= s.refsFromPod(podInfoToRemove.Pod)
	return nil
}

// Filter rejects the node if one of the pod's inline disks is in use there,
// then rejects it (and so every node) while a ReadWriteOncePod claim of the
// pod is in use. Both are Unschedulable: evicting the pod that holds the
// disk or the claim frees it.
func (pl *VolumeRestrictions) Filter(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) *framework.Status {
	for _, existing := range nodeInfo.Pods {
		if disksConflict(pod, existing.Pod) {
			klog.FromContext(ctx).V(5).Info("An inline disk of the pod is in use on the node",
				"pod", klog.KObj(pod), "node", klog.KObj(nodeInfo.Node()), "user", klog.KObj(existing.Pod))
			return framework.NewStatus(framework.Unschedulable, ErrReasonDiskConflict)
		}
	}
	s, err := getPreFilterState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	if s.conflictingPVCRefCount > 0 {
		return framework.NewStatus(framework.Unschedulable, ErrReasonReadWriteOncePodConflict)
	}
	return nil
}

// isInlineDisk reports whether v is one of the inline disks this plugin
// checks.
func isInlineDisk(v v1.Volume) bool {
	return v.GCEPersistentDisk != nil || v.AWSElasticBlockStore != nil || v.RBD != nil || v.ISCSI != nil
}

// disksConflict reports whether an inline disk of pod is one that existing
// mounts in a way they cannot share. Namespaces do not matter: a disk is a
// disk.
func disksConflict(pod, existing *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !isInlineDisk(*v) {
			continue
		}
		for j := range existing.Spec.Volumes {
			if sameDiskNotShareable(v, &existing.Spec.Volumes[j]) {
				return true
			}
		}
	}
	return false
}

// sameDiskNotShareable reports whether a and b are the same disk and cannot
// both mount it:
//   - GCE PD: the same pdName, unless both are read-only;
//   - AWS EBS: the same volumeID, always (EBS attaches to one instance);
//   - iSCSI: the same IQN, unless both are read-only (the LUN may be
//     mounted read-write once, or read-only many times);
//   - RBD: a Ceph monitor in common, the same pool and image, unless both
//     are read-only.
//
// Each kind is checked on its own, as upstream does.
func sameDiskNotShareable(a, b *v1.Volume) bool {
	if x, y := a.GCEPersistentDisk, b.GCEPersistentDisk; x != nil && y != nil &&
		x.PDName == y.PDName && !(x.ReadOnly && y.ReadOnly) {
		return true
	}
	if x, y := a.AWSElasticBlockStore, b.AWSElasticBlockStore; x != nil && y != nil && x.VolumeID == y.VolumeID {
		return true
	}
	if x, y := a.ISCSI, b.ISCSI; x != nil && y != nil && x.IQN == y.IQN && !(x.ReadOnly && y.ReadOnly) {
		return true
	}
	x, y := a.RBD, b.RBD
	return x != nil && y != nil && shareAny(x.CephMonitors, y.CephMonitors) &&
		x.RBDPool == y.RBDPool && x.RBDImage == y.RBDImage && !(x.ReadOnly && y.ReadOnly)
}

// shareAny reports whether a and b have an element in common.
func shareAny(a, b []string) bool {
	return slices.ContainsFunc(a, func(s string) bool { return slices.Contains(b, s) })
}
