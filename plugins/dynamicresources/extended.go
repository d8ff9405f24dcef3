// Extended resources backed by DeviceClasses (kube-scheduler's
// DRAExtendedResource, GA and locked on in 1.37). A pod may ask for
// example.com/gpu, or for deviceclass.resource.kubernetes.io/<class>, in its
// containers' requests; on a node whose allocatable has none of it, a
// DeviceClass naming that resource lets this plugin hand out devices
// instead of a device plugin, through a ResourceClaim the scheduler writes
// for the pod. That claim goes last in stateData.claims and meets every
// step:
//
//	PreFilter   an earlier attempt's claim (annotated, controlled by the
//	            pod), or a claim in memory named "<extended-resources>", with
//	            a temporary UID and no requests
//	Filter      an earlier attempt's claim: unschedulable, for PostFilter to
//	            delete; otherwise, per node, what the node's allocatable
//	            lacks becomes a node-specific copy of the claim, one
//	            exactly-request per container and resource, allocated with
//	            the pod's own claims
//	PostFilter  an earlier attempt's claim is deleted
//	Reserve     the chosen node's copy goes in flight, under the temporary UID
//	Unreserve   out of flight; a claim PreBind created is deleted
//	PreBind     created (generateName <pod>-extended-resources-), then
//	            allocated and reserved like any claim, awaited in the assume
//	            cache, and named in the pod's status.extendedResourceClaimStatus
//	            with the container-to-request mappings the kubelet reads

package dynamicresources

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/dynamicresources/dramanager"
	"github.com/minisched/minisched/podstatus"
)

// PreBind waits this long for the informer to bring the claim it created
// into the assume cache, polling every assumeExtendedClaimPollInterval:
// kube-scheduler's 120s and 1s.
const (
	assumeExtendedClaimTimeout      = 120 * time.Second
	assumeExtendedClaimPollInterval = time.Second
)

// draExtendedResource is what PreFilter learnt of the pod's extended
// resources backed by DeviceClasses.
type draExtendedResource struct {
	// podScalarResources are the pod's effective requests of scalar
	// resources, extended ones among them; nil when no DeviceClass backs
	// any of them.
	podScalarResources map[v1.ResourceName]int64
	// hasClaim says that the last entry of stateData.claims is the
	// extended-resource claim.
	hasClaim bool
	// initialClaimUID is that claim's UID as PreFilter found or made it.
	// Its in-flight allocation stays under this UID after PreBind created
	// the claim (with a UID of the apiserver's).
	initialClaimUID types.UID
}

// extendedResourceClaim returns the pod's extended-resource claim, or nil.
// It is read-only: the cache's, or the cycle's in-memory one.
func (s *stateData) extendedResourceClaim() *resourceapi.ResourceClaim {
	if !s.draExtendedResource.hasClaim {
		return nil
	}
	return s.claims[len(s.claims)-1]
}

// isExtendedResourceClaim reports whether claims[index] is the
// extended-resource claim.
func (s *stateData) isExtendedResourceClaim(index int) bool {
	return s.draExtendedResource.hasClaim && index == len(s.claims)-1
}

// userClaims returns the claims of the pod's spec.resourceClaims: all but
// the extended-resource claim.
func (s *stateData) userClaims() []*resourceapi.ResourceClaim {
	if s.draExtendedResource.hasClaim {
		return s.claims[:len(s.claims)-1]
	}
	return s.claims
}

// isSpecialClaimName reports whether name is the in-memory claim's: a claim
// PreBind has not created yet.
func isSpecialClaimName(name string) bool {
	return name == dramanager.SpecialClaimInMemName
}

// hasDeviceClassMappedExtendedResource reports whether reqs has a non-zero
// request of an extended resource that some DeviceClass backs.
func hasDeviceClassMappedExtendedResource(reqs v1.ResourceList, resolver framework.DeviceClassResolver) bool {
	for name, quantity := range reqs {
		if !quantity.IsZero() && framework.IsDRAExtendedResourceName(name) && resolver.GetDeviceClass(name) != nil {
			return true
		}
	}
	return false
}

// specNamesDRAExtendedResource reports whether a request in the pod's
// spec (a container's, an init container's, the pod's own, or the
// overhead) names a resource IsDRAExtendedResourceName accepts. The
// requests PodRequests adds up without status resources come from those
// alone, so when none does, the pod asks for no extended resource a
// DeviceClass could back, and PreFilter need not add them up: the common
// pod, on every cycle.
func specNamesDRAExtendedResource(pod *v1.Pod) bool {
	names := func(list v1.ResourceList) bool {
		for name := range list {
			if framework.IsDRAExtendedResourceName(name) {
				return true
			}
		}
		return false
	}
	for _, containers := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range containers {
			if names(containers[i].Resources.Requests) {
				return true
			}
		}
	}
	return (pod.Spec.Resources != nil && names(pod.Spec.Resources.Requests)) || names(pod.Spec.Overhead)
}

// findExtendedResourceClaim returns the claim an earlier attempt created
// for the pod's extended resources (annotated so, and controlled by the
// pod), or nil. claims must be every claim of the cache.
func findExtendedResourceClaim(pod *v1.Pod, claims []*resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
	for _, c := range claims {
		if c.Annotations[resourceapi.ExtendedResourceClaimAnnotation] != "true" {
			continue
		}
		for _, owner := range c.OwnerReferences {
			if owner.Name == pod.Name && ptr.Deref(owner.Controller, false) && owner.UID == pod.UID {
				return c
			}
		}
	}
	return nil
}

// preFilterExtendedResources returns the pod's extended-resource claim, or
// nil when no DeviceClass backs any extended resource it asks for. That is
// the claim an earlier attempt created, if there is one: it may have been
// allocated for a node that no longer suits, and rather than reason about
// that, Filter rejects every node and PostFilter deletes it, so that the
// next attempt starts afresh. Otherwise it is a claim in memory, with no
// requests yet (Filter writes them per node), owned by the pod, and a
// temporary UID under which Reserve can put its allocation in flight.
func (pl *DynamicResources) preFilterExtendedResources(pod *v1.Pod, logger klog.Logger,
	s *stateData) (*resourceapi.ResourceClaim, *framework.Status) {
	if !specNamesDRAExtendedResource(pod) {
		return nil, nil
	}
	resolver := pl.draManager.DeviceClassResolver()
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	if !hasDeviceClassMappedExtendedResource(reqs, resolver) {
		return nil, nil
	}
	s.draExtendedResource.podScalarResources = framework.NewResource(reqs).ScalarResources

	claims, err := pl.draManager.ResourceClaims().List()
	if err != nil {
		return nil, statusError(logger, err, "pod", klog.KObj(pod))
	}
	if claim := findExtendedResourceClaim(pod, claims); claim != nil {
		return claim, nil
	}
	// The apiserver truncates the generated name if it would be too long.
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    pod.Namespace,
			Name:         dramanager.SpecialClaimInMemName,
			UID:          types.UID(uuid.NewUUID()),
			GenerateName: pod.Name + "-extended-resources-",
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true),
			}},
			Annotations: map[string]string{resourceapi.ExtendedResourceClaimAnnotation: "true"},
		},
	}, nil
}

// filterExtendedResources decides, for one node, who serves each extended
// resource the pod asks for:
//
//  1. An earlier attempt's claim (it has requests) is unschedulable
//     everywhere: PostFilter deletes it.
//  2. A resource the node's allocatable lacks (0 or absent) and a
//     DeviceClass backs must come from devices. One that is absent and
//     backed by no class makes the node unschedulable. Any other is the
//     device plugin's, which NodeResourcesFit checks.
//  3. A pod without claims of its own whose resources all come from
//     device plugins here has nothing to allocate: nil.
//  4. Otherwise it returns a copy of the claim for this node, with the
//     requests for the resources of 2 (none if there are none: the pod's
//     own claims are then allocated beside an empty one), and which
//     container's resource each request serves.
func (pl *DynamicResources) filterExtendedResources(state *stateData, pod *v1.Pod, nodeInfo *framework.NodeInfo,
	logger klog.Logger) (*resourceapi.ResourceClaim, []v1.ContainerExtendedResourceRequest, *framework.Status) {
	claim := state.extendedResourceClaim()
	if claim == nil {
		return nil, nil, nil
	}
	node := nodeInfo.Node()
	// 1.
	if claim.Spec.Devices.Requests != nil {
		return nil, nil, statusUnschedulable(logger, "cannot schedule extended resource claim",
			"pod", klog.KObj(pod), "node", klog.KObj(node), "claim", klog.KObj(claim))
	}
	// 2.
	resolver := pl.draManager.DeviceClassResolver()
	fromDevices := map[v1.ResourceName]int64{}
	for name, quantity := range state.draExtendedResource.podScalarResources {
		if !framework.IsDRAExtendedResourceName(name) || quantity == 0 {
			continue
		}
		allocatable, advertised := nodeInfo.Allocatable.ScalarResources[name]
		if allocatable == 0 && resolver.GetDeviceClass(name) != nil {
			fromDevices[name] = quantity
		} else if !advertised {
			return nil, nil, statusUnschedulable(logger, "cannot fit resource",
				"pod", klog.KObj(pod), "node", klog.KObj(node), "resource", name)
		}
	}
	// 3.
	if len(state.userClaims()) == 0 && len(fromDevices) == 0 {
		return nil, nil, nil
	}
	// An allocated claim would be an earlier attempt's, rejected in 1.
	if claim.Status.Allocation != nil {
		return nil, nil, nil
	}
	// 4.
	nodeClaim := claim.DeepCopy()
	requests, mappings := createRequestsAndMappings(pod, fromDevices, resolver)
	nodeClaim.Spec.Devices.Requests = requests
	return nodeClaim, mappings, nil
}

// createRequestsAndMappings turns the resources to take from devices
// (resource name to the pod's effective request) into device requests, and
// maps each container's request of each resource to the device requests
// that serve it. Containers are numbered across init containers, then
// containers; a request is named container-<i>-request-<j>, j being the
// resource's index among the container's requests sorted by name.
//
// The number of devices follows the pod's effective request, as the
// kubelet will account for it:
//   - long-lived containers (regular containers and sidecars) run together:
//     each gets its own request;
//   - a run-to-completion init container runs before the sidecars and
//     containers after it, so it first reuses their requests, and asks only
//     for what they lack;
//   - init containers run one at a time, so only the largest of their own
//     requests is made, and all of them map to it.
func createRequestsAndMappings(pod *v1.Pod, fromDevices map[v1.ResourceName]int64,
	resolver framework.DeviceClassResolver) ([]resourceapi.DeviceRequest, []v1.ContainerExtendedResourceRequest) {
	containers := slices.Clone(pod.Spec.InitContainers)
	containers = append(containers, pod.Spec.Containers...)
	longLived, shortLived := partitionContainerIndices(containers, len(pod.Spec.InitContainers))

	var requests []resourceapi.DeviceRequest
	var mappings []v1.ContainerExtendedResourceRequest
	// Sorted, so that requests and mappings come out the same every time.
	names := make([]v1.ResourceName, 0, len(fromDevices))
	for name := range fromDevices {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		class := resolver.GetDeviceClass(name)
		if class == nil {
			continue
		}
		// longLivedRequests has one entry per container (nil: none, or
		// not long-lived): an init container reuses those after it.
		longLivedRequests := make([]*resourceapi.DeviceRequest, len(containers))
		var longLivedMappings, shortLivedMappings []v1.ContainerExtendedResourceRequest
		for _, i := range longLived {
			request, m := createResourceRequestAndMappings(i, &containers[i], name, class.Name, nil)
			longLivedRequests[i] = request
			longLivedMappings = append(longLivedMappings, m...)
		}
		var maxShortLived *resourceapi.DeviceRequest
		shortLivedNames := sets.New[string]()
		for _, i := range shortLived {
			request, m := createResourceRequestAndMappings(i, &containers[i], name, class.Name, longLivedRequests[i:])
			if request != nil {
				shortLivedNames.Insert(request.Name)
				if maxShortLived == nil || maxShortLived.Exactly.Count < request.Exactly.Count {
					maxShortLived = request
				}
			}
			shortLivedMappings = append(shortLivedMappings, m...)
		}
		// Every init container's own request is served by the largest.
		if maxShortLived != nil && len(shortLivedNames) > 1 {
			shortLivedNames.Delete(maxShortLived.Name)
			for i := range shortLivedMappings {
				if shortLivedNames.Has(shortLivedMappings[i].RequestName) {
					shortLivedMappings[i].RequestName = maxShortLived.Name
				}
			}
		}
		if maxShortLived != nil {
			requests = append(requests, *maxShortLived)
		}
		for _, request := range longLivedRequests {
			if request != nil {
				requests = append(requests, *request)
			}
		}
		mappings = append(mappings, longLivedMappings...)
		mappings = append(mappings, shortLivedMappings...)
	}
	sort.Slice(requests, func(i, j int) bool { return requests[i].Name < requests[j].Name })
	return requests, mappings
}

// partitionContainerIndices splits the indexes of containers (init
// containers first) into long-lived ones (sidecars and regular
// containers) and run-to-completion init containers.
func partitionContainerIndices(containers []v1.Container, numInitContainers int) (longLived, shortLived []int) {
	for i, c := range containers {
		isSidecar := c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
		if i < numInitContainers && !isSidecar {
			shortLived = append(shortLived, i)
			continue
		}
		longLived = append(longLived, i)
	}
	return longLived, shortLived
}

// createResourceRequestAndMappings returns the device request the
// container at containerIndex needs for resource name (nil if it asks for
// none, or reusable requests cover it) and the mappings of its request to
// device requests. reusable are requests (nil entries skipped) the
// container may use before asking for its own devices.
func createResourceRequestAndMappings(containerIndex int, container *v1.Container, name v1.ResourceName,
	className string, reusable []*resourceapi.DeviceRequest) (*resourceapi.DeviceRequest, []v1.ContainerExtendedResourceRequest) {
	quantity, ok := container.Resources.Requests[name]
	if !ok {
		return nil, nil
	}
	count, ok := quantity.AsInt64()
	if !ok || count == 0 {
		return nil, nil
	}
	var mappings []v1.ContainerExtendedResourceRequest
	sum := int64(0)
	for _, r := range reusable {
		if r == nil {
			continue
		}
		sum += r.Exactly.Count
		mappings = append(mappings, v1.ContainerExtendedResourceRequest{
			ContainerName: container.Name, ResourceName: name.String(), RequestName: r.Name,
		})
		if sum >= count {
			return nil, mappings
		}
	}
	// The resource's index among the container's requests, by name.
	keys := make([]string, 0, len(container.Resources.Requests))
	for k := range container.Resources.Requests {
		keys = append(keys, k.String())
	}
	slices.Sort(keys)
	resourceIndex := slices.Index(keys, name.String())
	requestName := fmt.Sprintf("container-%d-request-%d", containerIndex, resourceIndex)
	mappings = append(mappings, v1.ContainerExtendedResourceRequest{
		ContainerName: container.Name, ResourceName: name.String(), RequestName: requestName,
	})
	return &resourceapi.DeviceRequest{
		Name: requestName,
		Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: className,
			AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
			Count:           count - sum,
		},
	}, mappings
}

// createExtendedResourceClaimInAPI creates the chosen node's copy of the
// extended-resource claim, with a generated name, and returns it as the
// apiserver stored it. The allocation is PreBind's to write afterwards.
func (pl *DynamicResources) createExtendedResourceClaimInAPI(ctx context.Context, pod *v1.Pod, nodeName string,
	state *stateData) (*resourceapi.ResourceClaim, error) {
	logger := klog.FromContext(ctx)
	allocation, ok := state.nodeAllocations[nodeName]
	if !ok || allocation.extendedResourceClaim == nil {
		return nil, fmt.Errorf("extended resource claim not found for node %s", nodeName)
	}
	claim := allocation.extendedResourceClaim.DeepCopy()
	// Name and UID are the in-memory claim's: the apiserver gives its own.
	claim.Status.Allocation = nil
	claim.Name = ""
	claim.UID = ""
	created, err := pl.clientset.ResourceV1().ResourceClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create claim for extended resources %v: %w", klog.KObj(claim), err)
	}
	logger.V(5).Info("Created claim for extended resources", "pod", klog.KObj(pod), "node", nodeName,
		"resourceclaim", klog.KObj(created))
	return created, nil
}

// waitForExtendedClaimInAssumeCache stores the claim PreBind wrote in the
// assume cache, which can hold it only once the informer has brought the
// created claim: until then it polls, for up to 120s. Giving up is only
// logged: the claim is written, and the informer will bring it.
func (pl *DynamicResources) waitForExtendedClaimInAssumeCache(ctx context.Context, claim *resourceapi.ResourceClaim) {
	logger := klog.FromContext(ctx)
	err := wait.PollUntilContextTimeout(ctx, assumeExtendedClaimPollInterval, assumeExtendedClaimTimeout, true,
		func(context.Context) (bool, error) {
			err := pl.draManager.ResourceClaims().AssumeClaimAfterAPICall(claim)
			var notFound *dramanager.NotFoundError
			if errors.As(err, &notFound) {
				return false, nil
			}
			return err == nil, err
		})
	if err != nil {
		logger.V(5).Info("Claim not stored in assume cache after retries", "claim", klog.KObj(claim), "err", err)
	}
}

// patchPodExtendedResourceClaimStatus names the claim in the pod's
// status.extendedResourceClaimStatus, with the container-to-request
// mappings Filter computed for the node: that is how the kubelet learns
// which devices serve which container's extended resources.
func (pl *DynamicResources) patchPodExtendedResourceClaimStatus(ctx context.Context, pod *v1.Pod,
	claim *resourceapi.ResourceClaim, nodeName string, state *stateData) error {
	mappings := state.nodeAllocations[nodeName].containerResourceRequestMappings
	if len(mappings) == 0 {
		return fmt.Errorf("nil or empty request mappings, no update of pod %s/%s ExtendedResourceClaimStatus",
			pod.Namespace, pod.Name)
	}
	status := pod.Status.DeepCopy()
	status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{
		RequestMappings:   mappings,
		ResourceClaimName: claim.Name,
	}
	if err := podstatus.Patch(ctx, pl.clientset, pod, status); err != nil {
		return fmt.Errorf("update pod %s/%s ExtendedResourceClaimStatus: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// unreserveExtendedResourceClaim takes the extended-resource claim's
// allocation out of flight (under the UID Reserve used) and, if PreBind
// created the claim, deletes it: the next attempt makes a new one.
func (pl *DynamicResources) unreserveExtendedResourceClaim(ctx context.Context, pod *v1.Pod, state *stateData) {
	claim := state.extendedResourceClaim()
	if claim == nil {
		return
	}
	logger := klog.FromContext(ctx)
	if pl.draManager.ResourceClaims().MaybeRemoveClaimPendingAllocation(state.draExtendedResource.initialClaimUID, false) {
		pl.draManager.ResourceClaims().AssumedClaimRestore(claim.Namespace, claim.Name)
	}
	if isSpecialClaimName(claim.Name) {
		return
	}
	logger.V(5).Info("Delete extended resource claim", "resourceclaim", klog.KObj(claim), "pod", klog.KObj(pod))
	if err := pl.deleteClaim(ctx, claim.DeepCopy()); err != nil {
		logger.Error(err, "Delete", "resourceclaim", klog.KObj(claim))
	}
}

// deleteClaim removes the claim's finalizer (re-reading it after a
// conflict), then deletes it. A claim already gone is no error.
func (pl *DynamicResources) deleteClaim(ctx context.Context, claim *resourceapi.ResourceClaim) error {
	claims := pl.clientset.ResourceV1().ResourceClaims(claim.Namespace)
	refresh := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if refresh {
			latest, err := claims.Get(ctx, claim.Name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("get resourceclaim %s/%s: %w", claim.Namespace, claim.Name, err)
			}
			claim = latest
		}
		refresh = true
		if i := slices.Index(claim.Finalizers, resourceapi.Finalizer); i >= 0 {
			claim.Finalizers = slices.Delete(claim.Finalizers, i, i+1)
		}
		if _, err := claims.Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update resourceclaim %s/%s: %w", claim.Namespace, claim.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	klog.FromContext(ctx).V(5).Info("Delete", "resourceclaim", klog.KObj(claim))
	if err := claims.Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
