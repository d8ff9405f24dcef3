// This file is how NodeResourcesFit and NodeResourcesBalancedAllocation treat
// extended resources backed by DeviceClasses (kube-scheduler's
// DRAExtendedResource, GA and locked on in 1.37). A pod may ask for
// example.com/gpu, or for deviceclass.resource.kubernetes.io/<class>, and a
// DeviceClass that names that resource (spec.extendedResourceName, or its
// own name for the implicit form) lets DynamicResources hand out devices for
// it instead of a device plugin. Filter leaves such a request to
// DynamicResources on a node that advertises none of the resource; scoring
// counts the class's devices on the node as its allocatable and the
// allocated ones as in use.

package noderesources

import (
	"context"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/framework"
)

// deviceClassFor returns the DeviceClass that backs the extended resource
// name, or nil: none does, or the profile was built without DRA.
func deviceClassFor(draManager framework.SharedDRAManager, name v1.ResourceName) *resourceapi.DeviceClass {
	if draManager == nil {
		return nil
	}
	resolver := draManager.DeviceClassResolver()
	if resolver == nil {
		return nil
	}
	return resolver.GetDeviceClass(name)
}

// shouldDelegateResourceToDRA reports whether Fit leaves a request for name
// to DynamicResources: the node has none of it from a device plugin
// (allocatable is the node's allocatable of it) and a DeviceClass backs it.
// A node that does advertise the resource is checked as before, whatever
// the classes say: its device plugin serves the pod.
func shouldDelegateResourceToDRA(name v1.ResourceName, allocatable int64,
	draManager framework.SharedDRAManager) bool {
	return allocatable <= 0 && deviceClassFor(draManager, name) != nil
}

// errReasonDRASignature is why SignPod refuses a pod that requests an
// extended resource a DeviceClass backs, kube-scheduler's words.
const errReasonDRASignature = "signature disabled when dra extended resources are used in the cluster"

// signResources is the fragment of NodeResourcesFit and BalancedAllocation:
// the pod's effective requests (PodRequests, as Fit's PreFilter computes
// them). It refuses, Unschedulable, a pod with a non-zero request of an
// extended resource that a DeviceClass of draManager (which may be nil)
// backs: on a node without a device plugin for it, that request is left to
// DynamicResources, whose answer depends on the devices other pods' claims
// hold, as kube-scheduler refuses such a pod.
func signResources(pod *v1.Pod, draManager framework.SharedDRAManager) ([]framework.SignFragment, *framework.Status) {
	request := framework.PodRequests(pod)
	for name, quantity := range request.ScalarResources {
		// No node: the signature holds for every node, including those
		// that advertise none of the resource.
		if quantity != 0 && shouldDelegateResourceToDRA(name, 0, draManager) {
			return nil, framework.NewStatus(framework.Unschedulable, errReasonDRASignature)
		}
	}
	return []framework.SignFragment{{Key: framework.ResourcesSignerName, Value: request}}, nil
}

// draPreScoreState is what scoring needs to count a DeviceClass's devices,
// gathered once per cycle: which devices are allocated (or pending in a
// binding cycle) and every ResourceSlice.
type draPreScoreState struct {
	allocatedState *structured.AllocatedState
	resourceSlices []*resourceapi.ResourceSlice
}

// draScorer counts, for the scoring plugins, the devices behind an extended
// resource on a node. Its caches live as long as the plugin, and are keyed
// as kube-scheduler keys them: by names and expressions, not by the node's
// labels or a device's attributes. A node relabelled, or a device
// republished with other attributes under the same name, keeps its first
// answer until the scheduler restarts; kube-scheduler behaves so, and
// minisched's scores must equal its.
type draScorer struct {
	// draManager gives the classes, slices and allocated devices.
	draManager framework.SharedDRAManager
	// celCache holds compiled DeviceClass selectors.
	celCache *cel.Cache
	// deviceMatchCache maps expression|driver|pool|device to true for a
	// device a selector matched (a mismatch is not cached).
	deviceMatchCache sync.Map
	// nodeMatchCache maps node|nodeName|allNodes|selector to whether a
	// slice's or device's node selection includes the node.
	nodeMatchCache sync.Map
}

// sharedDRAManager returns h's DRA manager; nil without a handle (in
// tests) or without DRA. It asks the manager for its resolver at once: a
// manager starts its informers on first use, which must come in the
// factory function, before the informer factory starts (package
// dramanager). So a profile with this plugin watches DeviceClasses, claims
// and slices even without DynamicResources, as kube-scheduler always does.
func sharedDRAManager(h framework.Handle) framework.SharedDRAManager {
	if h == nil {
		return nil
	}
	m := h.SharedDRAManager()
	if m != nil {
		m.DeviceClassResolver()
	}
	return m
}

// manager returns d's DRA manager, nil when d is nil (no DRA).
func (d *draScorer) manager() framework.SharedDRAManager {
	if d == nil {
		return nil
	}
	return d.draManager
}

// newDRAScorer returns a scorer's DRA counter over draManager, or nil when
// there is none: then no resource is backed by a DeviceClass.
func newDRAScorer(draManager framework.SharedDRAManager) *draScorer {
	if draManager == nil {
		return nil
	}
	return &draScorer{
		draManager: draManager,
		// The features of kube-scheduler 1.37's defaults: consumable
		// capacity (beta, on), list-type attributes (alpha, off). Ten
		// entries, as kube-scheduler sizes this cache.
		celCache: cel.NewCache(10, cel.Features{EnableConsumableCapacity: true}),
	}
}

// getDRAPreScoredParams gathers the allocated devices and the slices when
// one of the scored resources is backed by a DeviceClass. It returns nil
// when none is (or d is nil): there is nothing to count, and the cycle
// skips listing every slice.
func (d *draScorer) getDRAPreScoredParams(resources []configv1.ResourceSpec) (*draPreScoreState, *framework.Status) {
	if d == nil {
		return nil, nil
	}
	anyBackedByDRA := false
	for _, r := range resources {
		name := v1.ResourceName(r.Name)
		if framework.IsDRAExtendedResourceName(name) && deviceClassFor(d.draManager, name) != nil {
			anyBackedByDRA = true
			break
		}
	}
	if !anyBackedByDRA {
		return nil, nil
	}
	allocatedState, err := d.draManager.ResourceClaims().GatherAllocatedState()
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	slices, err := d.draManager.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	return &draPreScoreState{allocatedState: allocatedState, resourceSlices: slices}, nil
}

// calculateDRAExtendedResourceAllocatableRequest returns how many devices
// of the class backing name the node has, and how many of them are
// allocated. It returns 0, 0 when no class backs name, and logs and returns
// 0, 0 on an error (a selector that does not compile or evaluate): the
// resource is then left out of the node's score, as kube-scheduler does.
func (d *draScorer) calculateDRAExtendedResourceAllocatableRequest(ctx context.Context, node *v1.Node,
	name v1.ResourceName, s *draPreScoreState) (int64, int64) {
	logger := klog.FromContext(ctx)
	class := deviceClassFor(d.draManager, name)
	if class == nil {
		logger.V(7).Info("Extended resource not found in device class mapping", "resource", name)
		return 0, 0
	}
	capacity, allocated, err := d.calculateDRAResourceTotals(ctx, node, class, s)
	if err != nil {
		logger.Error(err, "Failed to calculate DRA resource capacity and allocated",
			"node", klog.KObj(node), "resource", name, "deviceClass", klog.KObj(class))
		return 0, 0
	}
	logger.V(7).Info("DRA extended resource calculation", "node", klog.KObj(node), "resource", name,
		"deviceClass", klog.KObj(class), "capacity", capacity, "allocated", allocated)
	return capacity, allocated
}

// calculateDRAResourceTotals counts the devices of every slice that are
// reachable from node and match class, and how many of those are
// allocated. Every slice counts, whatever its pool's generation, and
// devices are counted one each, whatever their capacity: this is a score,
// not an allocation.
func (d *draScorer) calculateDRAResourceTotals(ctx context.Context, node *v1.Node,
	class *resourceapi.DeviceClass, s *draPreScoreState) (totalCapacity, totalAllocated int64, err error) {
	for _, slice := range s.resourceSlices {
		devices, err := d.devicesForNode(node, slice)
		if err != nil {
			return 0, 0, err
		}
		driver, pool := slice.Spec.Driver, slice.Spec.Pool.Name
		for _, device := range devices {
			matches, err := d.deviceMatchesClass(ctx, device, class, driver, pool)
			if err != nil {
				return 0, 0, err
			}
			if !matches {
				continue
			}
			totalCapacity++
			if structured.IsDeviceAllocated(structured.MakeDeviceID(driver, pool, device.Name), s.allocatedState) {
				totalAllocated++
			}
		}
	}
	return totalCapacity, totalAllocated, nil
}

// devicesForNode returns the devices of slice that node can reach: with
// per-device node selection, each device by its own nodeName, allNodes or
// nodeSelector; otherwise all or none, by the slice's.
func (d *draScorer) devicesForNode(node *v1.Node, slice *resourceapi.ResourceSlice) ([]resourceapi.Device, error) {
	if ptr.Deref(slice.Spec.PerDeviceNodeSelection, false) {
		devices := make([]resourceapi.Device, 0, len(slice.Spec.Devices))
		for _, device := range slice.Spec.Devices {
			nodeName, allNodes := ptr.Deref(device.NodeName, ""), ptr.Deref(device.AllNodes, false)
			if allNodes || (nodeName != "" && nodeName == node.Name) {
				devices = append(devices, device)
				continue
			}
			// A device with neither a matching name nor a selector is
			// another node's.
			if device.NodeSelector == nil {
				continue
			}
			matches, err := d.nodeMatches(node, nodeName, allNodes, device.NodeSelector)
			if err != nil {
				return nil, err
			}
			if matches {
				devices = append(devices, device)
			}
		}
		return devices, nil
	}
	nodeName, allNodes := ptr.Deref(slice.Spec.NodeName, ""), ptr.Deref(slice.Spec.AllNodes, false)
	switch {
	case !allNodes && nodeName != node.Name && slice.Spec.NodeSelector != nil:
		matches, err := d.nodeMatches(node, nodeName, allNodes, slice.Spec.NodeSelector)
		if err != nil || !matches {
			return nil, err
		}
	case !allNodes && nodeName != "" && nodeName != node.Name:
		return nil, nil
	}
	return slice.Spec.Devices, nil
}

// nodeMatches is structured.NodeMatches behind nodeMatchCache. Every
// allocator implementation has the same NodeMatches, so the zero feature
// set (which picks the stable one) answers as the scheduler's features do.
func (d *draScorer) nodeMatches(node *v1.Node, nodeNameToMatch string, allNodesMatch bool,
	nodeSelector *v1.NodeSelector) (bool, error) {
	key := strings.Join([]string{node.Name, nodeNameToMatch, boolKey(allNodesMatch), nodeSelector.String()}, "|")
	if matches, ok := d.nodeMatchCache.Load(key); ok {
		return matches.(bool), nil
	}
	matches, err := structured.NodeMatches(structured.Features{}, node, nodeNameToMatch, allNodesMatch, nodeSelector)
	if err == nil {
		d.nodeMatchCache.Store(key, matches)
	}
	return matches, err
}

// boolKey is a bool as one character of a cache key.
func boolKey(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// deviceMatchesClass reports whether the device satisfies every CEL
// selector of class. A class without selectors takes every device.
func (d *draScorer) deviceMatchesClass(ctx context.Context, device resourceapi.Device,
	class *resourceapi.DeviceClass, driver, pool string) (bool, error) {
	celDevice := cel.Device{Driver: driver, Attributes: device.Attributes, Capacity: device.Capacity}
	for _, selector := range class.Spec.Selectors {
		if selector.CEL == nil {
			continue
		}
		key := strings.Join([]string{selector.CEL.Expression, driver, pool, device.Name}, "|")
		if _, ok := d.deviceMatchCache.Load(key); ok {
			continue // only matches are cached
		}
		result := d.celCache.GetOrCompile(selector.CEL.Expression)
		if result.Error != nil {
			return false, result.Error
		}
		matches, _, err := result.DeviceMatches(ctx, celDevice)
		if err != nil || !matches {
			return false, err
		}
		d.deviceMatchCache.Store(key, true)
	}
	return true, nil
}
