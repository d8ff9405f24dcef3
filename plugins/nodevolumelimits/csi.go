// This file is the plugin: New wires the listers and the VolumeAttachment
// index, PreFilter skips pods without countable volumes, Filter compares the
// counts with the node's limits.

package nodevolumelimits

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	csitrans "k8s.io/csi-translation-lib"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "NodeVolumeLimits"

// Reasons this plugin reports.
const (
	// ErrReasonMaxVolumeCountExceeded is the reason for a node where the
	// pod's volumes would exceed a driver's attach limit.
	ErrReasonMaxVolumeCountExceeded = "node(s) exceed max volume count"
	// ErrReasonCSIDriverNotInstalled is the format (with the driver's name)
	// of the reason for a node whose CSINode lacks a driver that must be
	// there (CSIDriver.spec.preventPodSchedulingIfMissing).
	ErrReasonCSIDriverNotInstalled = "%s CSI driver is not installed on the node"
)

// vaIndexKey names the index of VolumeAttachments by spec.nodeName, as
// upstream names it (another plugin asking for it finds it there).
const vaIndexKey = "va.spec.nodename"

// CSILimits counts a node's attached CSI volumes per driver against the
// limits of its CSINode. It keeps no state between cycles.
type CSILimits struct {
	csiNodeLister   storagelisters.CSINodeLister
	pvLister        corelisters.PersistentVolumeLister
	pvcLister       corelisters.PersistentVolumeClaimLister
	scLister        storagelisters.StorageClassLister
	csiDriverLister storagelisters.CSIDriverLister
	// vaIndexer holds the VolumeAttachments, indexed by vaIndexKey.
	vaIndexer cache.Indexer
	// randomVolumeIDPrefix makes the handles of claims not bound yet
	// ("<prefix>-<ns>/<claim>") unlike any real volume handle.
	randomVolumeIDPrefix string
	// translator maps in-tree volumes to their CSI driver and handle.
	translator csitrans.CSITranslator
}

var (
	_ framework.PreFilterPlugin   = &CSILimits{}
	_ framework.FilterPlugin      = &CSILimits{}
	_ framework.EnqueueExtensions = &CSILimits{}
	_ framework.SignPlugin        = &CSILimits{}
)

// New returns the plugin. It takes no args; any pluginConfig is ignored, as
// for the other plugins without args. It asks for its listers here, so that
// their informers are started, and adds the index by node to the
// VolumeAttachment informer.
func New(_ context.Context, _ *runtime.RawExtension, h framework.Handle) (framework.Plugin, error) {
	if h == nil || h.SharedInformerFactory() == nil {
		return nil, fmt.Errorf("SharedInformerFactory is nil")
	}
	factory := h.SharedInformerFactory()
	vaInformer := factory.Storage().V1().VolumeAttachments().Informer()
	if err := vaInformer.AddIndexers(cache.Indexers{vaIndexKey: volumeAttachmentIndexer}); err != nil {
		// The plugin of another profile, sharing the factory, added it first.
		if vaInformer.GetIndexer().GetIndexers()[vaIndexKey] == nil {
			return nil, fmt.Errorf("failed to add index to VA informer: %w", err)
		}
	}
	return &CSILimits{
		csiNodeLister:        factory.Storage().V1().CSINodes().Lister(),
		pvLister:             factory.Core().V1().PersistentVolumes().Lister(),
		pvcLister:            factory.Core().V1().PersistentVolumeClaims().Lister(),
		scLister:             factory.Storage().V1().StorageClasses().Lister(),
		csiDriverLister:      factory.Storage().V1().CSIDrivers().Lister(),
		vaIndexer:            vaInformer.GetIndexer(),
		randomVolumeIDPrefix: rand.String(32),
		translator:           csitrans.New(),
	}, nil
}

// Name returns Name.
func (pl *CSILimits) Name() string { return Name }

// SignPod signs the pod's volumes (VolumesSigner, which leaves out ConfigMap
// and Secret volumes): PreFilter and Filter read the pod's claims and inline
// volumes, to count them per CSI driver, and nothing else of its spec. The
// claims are looked up in the pod's namespace, which the fragment leaves out,
// as kube-scheduler's does.
func (pl *CSILimits) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	return []framework.SignFragment{{Key: framework.VolumesSignerName, Value: framework.VolumesSigner(pod)}}, nil
}

// PreFilter lets Filter run only for a pod with a volume that may count: a
// claim, a generic ephemeral volume, or an in-tree inline volume that can be
// translated to CSI. Any other pod (configMaps, secrets, emptyDirs only) is
// Skip.
func (pl *CSILimits) PreFilter(_ context.Context, _ *framework.CycleState, pod *v1.Pod,
	_ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.PersistentVolumeClaim != nil || vol.Ephemeral != nil || pl.translator.IsInlineMigratable(vol) {
			return nil, nil
		}
	}
	return nil, framework.NewStatus(framework.Skip)
}

// PreFilterExtensions returns nil: PreFilter keeps no state.
func (pl *CSILimits) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// Filter counts the pod's volumes and those already on the node, per driver,
// and rejects the node if a driver with a limit would exceed it.
//
// Codes: a claim of the pod that does not exist is UnschedulableAndUnresolvable
// (no node helps until it is created); a driver missing from the node, or a
// limit exceeded, is Unschedulable (preemption may free attachments); any
// other failure to read the pod's volumes is Error.
func (pl *CSILimits) Filter(ctx context.Context, _ *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) *framework.Status {
	if len(pod.Spec.Volumes) == 0 {
		return nil
	}
	logger := klog.FromContext(ctx)
	node := nodeInfo.Node()
	// A node without a CSINode (kubelet has not written it yet) has no
	// drivers and no limits.
	csiNode, err := pl.csiNodeLister.Get(node.Name)
	if err != nil {
		logger.V(5).Info("Could not get a CSINode object for the node", "node", klog.KObj(node), "err", err)
		csiNode = nil
	}

	newVolumes := map[string]string{}
	for i := range pod.Spec.Volumes {
		if err := pl.addVolume(logger, pod, &pod.Spec.Volumes[i], csiNode, newVolumes); err != nil {
			if apierrors.IsNotFound(err) {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
			}
			return framework.AsStatus(err)
		}
	}
	if len(newVolumes) == 0 {
		return nil
	}
	if status := pl.checkDriversInstalled(newVolumes, csiNode); status != nil {
		return status
	}
	limits := volumeLimits(csiNode)
	if len(limits) == 0 {
		return nil
	}

	attachedCount, err := pl.attachedVolumeCount(logger, nodeInfo, csiNode, newVolumes)
	if err != nil {
		return framework.AsStatus(err)
	}
	newCount := map[string]int{}
	for _, driver := range newVolumes {
		newCount[driver]++
	}
	for driver, count := range newCount {
		limit, ok := limits[driver]
		if !ok {
			continue
		}
		logger.V(5).Info("Found plugin volume limits", "node", klog.KObj(node), "driverName", driver,
			"maxLimits", limit, "currentVolumeCount", attachedCount[driver], "newVolumeCount", count,
			"pod", klog.KObj(pod))
		if int64(attachedCount[driver]+count) > limit {
			return framework.NewStatus(framework.Unschedulable, ErrReasonMaxVolumeCountExceeded)
		}
	}
	return nil
}

// attachedVolumeCount counts, per driver, the volumes the node's pods use
// and the volumes attached to it by a VolumeAttachment that no pod there
// accounts for. It removes from newVolumes those a pod on the node already
// uses: they are attached once. A volume attached only by a
// VolumeAttachment stays in newVolumes, so it counts twice, as upstream.
func (pl *CSILimits) attachedVolumeCount(logger klog.Logger, nodeInfo *framework.NodeInfo,
	csiNode *storagev1.CSINode, newVolumes map[string]string) (map[string]int, error) {
	inUse, err := pl.podsVolumes(logger, nodeInfo, csiNode)
	if err != nil {
		return nil, err
	}
	count := map[string]int{}
	for volume, driver := range inUse {
		delete(newVolumes, volume)
		count[driver]++
	}
	attachments, err := pl.nodeVolumeAttachments(logger, nodeInfo.Node().Name)
	if err != nil {
		return nil, err
	}
	for volume, driver := range attachments {
		if _, ok := inUse[volume]; !ok {
			count[driver]++
		}
	}
	return count, nil
}

// checkDriversInstalled rejects the node if a driver of the pod's volumes
// must be installed (its CSIDriver sets preventPodSchedulingIfMissing) and
// the node's CSINode does not list it. Drivers are checked by name, so the
// message names the same driver every time.
func (pl *CSILimits) checkDriversInstalled(newVolumes map[string]string, csiNode *storagev1.CSINode) *framework.Status {
	var drivers []string
	for _, driver := range newVolumes {
		drivers = append(drivers, driver)
	}
	slices.Sort(drivers)
	for _, driver := range slices.Compact(drivers) {
		installed, err := pl.checkCSIDriverOnNode(driver, csiNode)
		if err != nil {
			return framework.AsStatus(err)
		}
		if !installed {
			return framework.NewStatus(framework.Unschedulable, fmt.Sprintf(ErrReasonCSIDriverNotInstalled, driver))
		}
	}
	return nil
}

// checkCSIDriverOnNode reports whether the node may take volumes of driver.
// Without a CSIDriver object the driver may not be a CSI driver at all, so
// the node is allowed; so it is when the driver does not opt in.
func (pl *CSILimits) checkCSIDriverOnNode(driver string, csiNode *storagev1.CSINode) (bool, error) {
	csiDriver, err := pl.csiDriverLister.Get(driver)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("error getting CSIDriver for provider %s: %w", driver, err)
	}
	if prevent := csiDriver.Spec.PreventPodSchedulingIfMissing; prevent == nil || !*prevent {
		return true, nil
	}
	if csiNode == nil {
		return false, nil
	}
	return slices.ContainsFunc(csiNode.Spec.Drivers, func(d storagev1.CSINodeDriver) bool {
		return d.Name == driver
	}), nil
}

// volumeLimits returns the attach limit of each driver of csiNode that has
// one; a driver missing from the map has no limit.
func volumeLimits(csiNode *storagev1.CSINode) map[string]int64 {
	limits := map[string]int64{}
	if csiNode == nil {
		return limits
	}
	for _, d := range csiNode.Spec.Drivers {
		if d.Allocatable != nil && d.Allocatable.Count != nil {
			limits[d.Name] = int64(*d.Allocatable.Count)
		}
	}
	return limits
}

// volumeAttachmentIndexer indexes a VolumeAttachment by spec.nodeName.
func volumeAttachmentIndexer(obj interface{}) ([]string, error) {
	va, ok := obj.(*storagev1.VolumeAttachment)
	if !ok {
		return []string{}, nil
	}
	return []string{va.Spec.NodeName}, nil
}

// nodeVolumeAttachments returns the volumes attached to nodeName by
// VolumeAttachments, as "<attacher>/<handle>" → attacher. Attachments
// without an attacher, of an inline volume, or of a PV that is missing or
// not CSI are left out.
func (pl *CSILimits) nodeVolumeAttachments(logger klog.Logger, nodeName string) (map[string]string, error) {
	objs, err := pl.vaIndexer.ByIndex(vaIndexKey, nodeName)
	if err != nil {
		return nil, err
	}
	attached := map[string]string{}
	for _, obj := range objs {
		va := obj.(*storagev1.VolumeAttachment) // the informer holds nothing else
		if va.Spec.Attacher == "" || va.Spec.Source.PersistentVolumeName == nil {
			logger.V(5).Info("VolumeAttachment has no attacher or no PV name", "VolumeAttachment", klog.KObj(va))
			continue
		}
		pv, err := pl.pvLister.Get(*va.Spec.Source.PersistentVolumeName)
		if err != nil {
			logger.V(5).Info("Unable to get PV for VolumeAttachment", "VolumeAttachment", klog.KObj(va), "err", err)
			continue
		}
		if pv.Spec.CSI == nil {
			logger.V(5).Info("PV is not a CSI volume", "PV", klog.KObj(pv))
			continue
		}
		attached[volumeUniqueName(va.Spec.Attacher, pv.Spec.CSI.VolumeHandle)] = va.Spec.Attacher
	}
	return attached, nil
}

// volumeUniqueName names a volume across drivers: "<driver>/<handle>".
func volumeUniqueName(driver, handle string) string {
	return driver + "/" + handle
}
