// This file is the plugin: PreFilter reads the zone and region labels of the
// volumes bound to the pod's claims, Filter checks each node against them.

package volumezone

import (
	"context"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

const (
	// Name is the plugin's name in the registry and in configurations.
	Name = "VolumeZone"

	// ErrReasonConflict is the reason Filter gives for a node outside the
	// zone or region of one of the pod's volumes.
	ErrReasonConflict = "node(s) had no available volume zone"

	// preFilterStateKey is where PreFilter leaves the volumes' topology for
	// Filter.
	preFilterStateKey framework.StateKey = "PreFilter" + Name
)

// Reasons PreFilter (or Filter, when it has to collect the topology itself)
// gives when a claim cannot be followed to a volume. Lister misses read as
// the lister's own NotFound error (`persistentvolumeclaim "data" not found`,
// `storageclass.storage.k8s.io "fast" not found`, `persistentvolume "pv1" not
// found`).
const (
	// ErrReasonPVCNoName is for a volume whose claimName is empty.
	ErrReasonPVCNoName = "PersistentVolumeClaim had no name"
	// ErrReasonPVCNoPVNoClass is for an unbound claim without a storage class.
	ErrReasonPVCNoPVNoClass = "PersistentVolumeClaim had no pv name and storageClass name"
	// ErrReasonPVNoName is for an unbound claim whose class binds at once
	// (Immediate): its volume should exist already.
	ErrReasonPVNoName = "PersistentVolume had no name"
	// ErrReasonNoBindingMode is the format (%q: the class's name) of the
	// reason for a class without volumeBindingMode; the apiserver defaults
	// the field, so only a hand-made object lacks it.
	ErrReasonNoBindingMode = "VolumeBindingMode not set for StorageClass %q"
)

// topologyLabels are the volume labels this plugin matches, beta keys first,
// as upstream. The order is also the order of the collected topology, which
// the PersistentVolume queueing hint compares.
var topologyLabels = []string{
	v1.LabelFailureDomainBetaZone,
	v1.LabelFailureDomainBetaRegion,
	v1.LabelTopologyZone,
	v1.LabelTopologyRegion,
}

// multiZoneDelimiter separates the zones of a volume that spans several
// ("us-east-1a__us-east-1b"); cloud-provider's LabelMultiZoneDelimiter.
const multiZoneDelimiter = "__"

// VolumeZone rejects nodes outside the zones and regions of the volumes bound
// to the pod's claims. It reads claims, volumes and classes from listers and
// keeps no state between cycles.
type VolumeZone struct {
	pvLister  corelisters.PersistentVolumeLister
	pvcLister corelisters.PersistentVolumeClaimLister
	scLister  storagelisters.StorageClassLister
}

var (
	_ framework.PreFilterPlugin   = &VolumeZone{}
	_ framework.FilterPlugin      = &VolumeZone{}
	_ framework.EnqueueExtensions = &VolumeZone{}
	_ framework.SignPlugin        = &VolumeZone{}
)

// New returns the plugin with listers of PersistentVolumes,
// PersistentVolumeClaims and StorageClasses from the handle's informer
// factory. It takes no args; any pluginConfig is ignored.
func New(_ context.Context, _ *runtime.RawExtension, h framework.Handle) (framework.Plugin, error) {
	factory := h.SharedInformerFactory()
	return &VolumeZone{
		pvLister:  factory.Core().V1().PersistentVolumes().Lister(),
		pvcLister: factory.Core().V1().PersistentVolumeClaims().Lister(),
		scLister:  factory.Storage().V1().StorageClasses().Lister(),
	}, nil
}

// Name returns Name.
func (pl *VolumeZone) Name() string { return Name }

// SignPod signs the pod's volumes (VolumesSigner, which leaves out ConfigMap
// and Secret volumes): PreFilter and Filter read the pod's claims (its
// persistentVolumeClaim and ephemeral volumes) and nothing else of its spec.
// The claims are looked up in the pod's namespace, which the fragment leaves
// out, as kube-scheduler's does.
func (pl *VolumeZone) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	return []framework.SignFragment{{Key: framework.VolumesSignerName, Value: framework.VolumesSigner(pod)}}, nil
}

// pvTopology is one topology label of one volume: the label key and the
// zones (or regions) its value lists.
type pvTopology struct {
	pvName string
	key    string
	values sets.Set[string]
}

// preFilterState is the topology of the pod's volumes, collected once per
// cycle.
type preFilterState []pvTopology

// Clone returns the same state: it depends on the pod's volumes alone, so
// preemption's "what if" never changes it.
func (s preFilterState) Clone() framework.StateData { return s }

// PreFilter collects the topology labels of the volumes bound to the pod's
// claims. A claim that cannot be followed to its volume fails the pod
// everywhere: UnschedulableAndUnresolvable for what only a change to the
// claim, class or volume can mend (a lister miss included), Error for any
// other lister error. With no topology to check (no claims, unbound
// WaitForFirstConsumer claims, unlabelled volumes) it returns Skip, and
// Filter is not called.
func (pl *VolumeZone) PreFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	_ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	topologies, status := pl.podPVTopologies(klog.FromContext(ctx), pod)
	if !status.IsSuccess() {
		return nil, status
	}
	if len(topologies) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterStateKey, topologies)
	return nil, nil
}

// PreFilterExtensions returns nil: the state does not depend on the pods on
// a node.
func (pl *VolumeZone) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// podPVTopologies follows each spec.volumes[].persistentVolumeClaim of pod
// to its volume and returns the volumes' topology labels. Generic ephemeral
// volumes are not looked at, as upstream. An unbound claim whose class
// binds at the first consumer has no volume yet and is skipped: the volume
// will be provisioned where the pod goes.
func (pl *VolumeZone) podPVTopologies(logger klog.Logger, pod *v1.Pod) (preFilterState, *framework.Status) {
	topologies := preFilterState{}
	for _, claimName := range claimNames(pod) {
		if claimName == "" {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPVCNoName)
		}
		pvc, err := pl.pvcLister.PersistentVolumeClaims(pod.Namespace).Get(claimName)
		if err != nil {
			return nil, errorAsStatus(err)
		}
		if pvc.Spec.VolumeName == "" {
			if status := pl.checkUnboundClaim(pvc); status != nil {
				return nil, status
			}
			logger.V(5).Info("Claim waits for its first consumer; no zone to match yet",
				"pod", klog.KObj(pod), "pvc", klog.KObj(pvc))
			continue
		}
		pv, err := pl.pvLister.Get(pvc.Spec.VolumeName)
		if err != nil {
			return nil, errorAsStatus(err)
		}
		topologies = append(topologies, pvTopologies(logger, pv)...)
	}
	return topologies, nil
}

// checkUnboundClaim returns nil for an unbound claim of a
// WaitForFirstConsumer class, and otherwise why the claim stops the pod. The
// class is the beta annotation's, else spec.storageClassName.
func (pl *VolumeZone) checkUnboundClaim(pvc *v1.PersistentVolumeClaim) *framework.Status {
	className := storagehelpers.GetPersistentVolumeClaimClass(pvc)
	if className == "" {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPVCNoPVNoClass)
	}
	class, err := pl.scLister.Get(className)
	if err != nil {
		return errorAsStatus(err)
	}
	if class.VolumeBindingMode == nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable,
			fmt.Sprintf(ErrReasonNoBindingMode, className))
	}
	if *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
		return nil
	}
	// Immediate: the claim should have been bound before the pod came.
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPVNoName)
}

// errorAsStatus turns a lister error into a status: NotFound is
// UnschedulableAndUnresolvable with the error's text (the object may yet be
// created, and an event will say so), anything else an Error.
func errorAsStatus(err error) *framework.Status {
	if apierrors.IsNotFound(err) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
	}
	return framework.AsStatus(err)
}

// claimNames lists the claimName of each spec.volumes[].persistentVolumeClaim
// of pod, in order, empty names included.
func claimNames(pod *v1.Pod) []string {
	var names []string
	for i := range pod.Spec.Volumes {
		if src := pod.Spec.Volumes[i].PersistentVolumeClaim; src != nil {
			names = append(names, src.ClaimName)
		}
	}
	return names
}

// pvTopologies returns the topology labels of pv, in topologyLabels order. A
// value that does not parse as a zone list is ignored, as upstream: such a
// volume constrains nothing by that label. spec.nodeAffinity is not looked
// at; VolumeBinding checks it.
func pvTopologies(logger klog.Logger, pv *v1.PersistentVolume) []pvTopology {
	var topologies []pvTopology
	for _, key := range topologyLabels {
		value, ok := pv.Labels[key]
		if !ok {
			continue
		}
		zones, err := labelZonesToSet(value)
		if err != nil {
			logger.V(5).Info("Ignoring a volume's unparsable topology label", "pv", klog.KObj(pv),
				"label", key, "value", value, "err", err)
			continue
		}
		topologies = append(topologies, pvTopology{pvName: pv.Name, key: key, values: zones})
	}
	return topologies
}

// labelZonesToSet parses a zone label value: zones separated by "__", each
// trimmed of spaces. An empty zone makes the whole value invalid. It is
// cloud-provider's volume/helpers.LabelZonesToSet, written here rather than
// importing that large module for one small function.
func labelZonesToSet(value string) (sets.Set[string], error) {
	zones := sets.New[string]()
	for _, zone := range strings.Split(value, multiZoneDelimiter) {
		zone = strings.TrimSpace(zone)
		if zone == "" {
			return nil, fmt.Errorf("%q separated list (%q) must not contain an empty string",
				multiZoneDelimiter, value)
		}
		zones.Insert(zone)
	}
	return zones, nil
}

// Filter rejects a node that carries topology labels but not the zone or
// region of one of the pod's volumes. A node with none of the four labels
// passes: a single-zone cluster need not label its nodes. Moving pods cannot
// move a node into another zone, so a mismatch is
// UnschedulableAndUnresolvable.
func (pl *VolumeZone) Filter(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) *framework.Status {
	// A pod without volumes has nothing to match: the fast path upstream takes.
	if len(pod.Spec.Volumes) == 0 {
		return nil
	}
	logger := klog.FromContext(ctx)
	topologies, err := readState(state)
	if err != nil {
		// PreFilter did not run (a caller that goes straight to Filter):
		// collect the topology here.
		var status *framework.Status
		if topologies, status = pl.podPVTopologies(logger, pod); !status.IsSuccess() {
			return status
		}
	}
	node := nodeInfo.Node()
	if !hasTopologyLabel(node) {
		return nil
	}
	for _, t := range topologies {
		value, ok := node.Labels[t.key]
		if !ok {
			// A beta key on the volume is met by the GA key on the node.
			value, ok = node.Labels[gaLabel(t.key)]
		}
		if !ok || !t.values.Has(value) {
			logger.V(5).Info("Node is outside a volume's topology", "pod", klog.KObj(pod),
				"node", klog.KObj(node), "pv", klog.KRef("", t.pvName), "label", t.key)
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonConflict)
		}
	}
	return nil
}

// readState returns what PreFilter wrote.
func readState(state *framework.CycleState) (preFilterState, error) {
	data, err := state.Read(preFilterStateKey)
	if err != nil {
		return nil, err
	}
	s, ok := data.(preFilterState)
	if !ok {
		return nil, errors.New("unable to convert state into volumezone's preFilterState")
	}
	return s, nil
}

// hasTopologyLabel reports whether node carries any of the four topology labels.
func hasTopologyLabel(node *v1.Node) bool {
	for _, key := range topologyLabels {
		if _, ok := node.Labels[key]; ok {
			return true
		}
	}
	return false
}

// gaLabel returns the GA key of a beta zone or region key, and any other key
// unchanged. The mapping goes one way only: a GA key on the volume is not
// met by a beta key on the node.
func gaLabel(key string) string {
	switch key {
	case v1.LabelFailureDomainBetaZone:
		return v1.LabelTopologyZone
	case v1.LabelFailureDomainBetaRegion:
		return v1.LabelTopologyRegion
	}
	return key
}
