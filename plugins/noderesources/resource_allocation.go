// This file is the part of resource scoring that NodeResourcesFit's
// strategies and NodeResourcesBalancedAllocation share: for each scored
// resource, what the pod requests, what the node's pods already take and what
// the node can give. Each plugin plugs in its own formula on top.

package noderesources

import (
	"context"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// resourceScorer turns per-resource figures into a node score in
// [0, MaxNodeScore]. The three slices follow the scorer's resources: the
// node's use with the pod placed (requested), without it (allocated), and
// what the node has (allocatable). A zero allocatable marks a resource that
// is left out of the score.
type resourceScorer func(requested, allocated, allocatable []int64) int64

// weightedAverageScorer scores each resource the node has with perResource
// (0-100) and averages the scores by the resources' weights, in integer
// arithmetic, as LeastAllocated and MostAllocated do.
func weightedAverageScorer(resources []configv1.ResourceSpec,
	perResource func(requested, capacity int64) int64) resourceScorer {
	return func(requested, _, allocatable []int64) int64 {
		var nodeScore, weightSum int64
		for i := range requested {
			if allocatable[i] == 0 {
				continue
			}
			nodeScore += perResource(requested[i], allocatable[i]) * resources[i].Weight
			weightSum += resources[i].Weight
		}
		if weightSum == 0 {
			return 0
		}
		return nodeScore / weightSum
	}
}

// resourceAllocationScorer scores a node from the pod's and the node's use of
// a list of weighted resources, as kube-scheduler's resource-allocation
// scorers do.
type resourceAllocationScorer struct {
	// name identifies the scorer in logs: the strategy or the plugin.
	name string
	// resources are the scored resources, with their weights.
	resources []configv1.ResourceSpec
	// useRequested counts cpu and memory as requested. When false, a
	// container without a cpu or memory request counts as asking for 100m
	// and 200Mi (the "non-zero" requests), on the node and for the pod.
	useRequested bool
	// scorer is the formula.
	scorer resourceScorer
	// dra counts the devices behind extended resources backed by
	// DeviceClasses; nil when the profile has no DRA.
	dra *draScorer
}

// podRequests returns the pod's request for each scored resource, in the
// order of r.resources (cpu in millicores): the larger of its running
// containers and its largest init container, plus overhead. When no
// container's request is defaulted (useRequested, or every container
// requests cpu and memory), they are the requests the scheduler computed
// when the pod was queued, if state has them; otherwise they are computed.
func (r *resourceAllocationScorer) podRequests(state *framework.CycleState, pod *v1.Pod) []int64 {
	defaulted := !r.useRequested && framework.ContainersMayLackRequests(pod)
	if !defaulted {
		if requests, ok := state.PodRequests(pod); ok {
			if out, ok := r.scoredRequests(requests); ok {
				return out
			}
		}
	}
	opts := resourcehelper.PodResourcesOptions{
		UseStatusResources: true,
		InPlacePodLevelResourcesVerticalScalingEnabled: true,
	}
	if defaulted {
		opts.NonMissingContainerRequests = nonZeroRequests()
	}
	return r.scoredFrom(resourcehelper.PodRequests(pod, opts))
}

// nonZeroRequests are the requests a container that states none is scored
// with: 100m CPU and 200Mi.
func nonZeroRequests() v1.ResourceList {
	return v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(framework.DefaultMilliCPURequest, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(framework.DefaultMemoryRequest, resource.DecimalSI),
	}
}

// scoredFrom picks the scored resources out of reqs, in the order of
// r.resources (cpu in millicores).
func (r *resourceAllocationScorer) scoredFrom(reqs v1.ResourceList) []int64 {
	out := make([]int64, len(r.resources))
	for i, res := range r.resources {
		q := reqs[v1.ResourceName(res.Name)]
		if res.Name == string(v1.ResourceCPU) {
			out[i] = q.MilliValue()
		} else {
			out[i] = q.Value()
		}
	}
	return out
}

// scoredRequests picks each scored resource's request, in the order of
// r.resources, out of requests; ok is false if a scored resource is one
// framework.Resource does not hold.
func (r *resourceAllocationScorer) scoredRequests(requests framework.Resource) (_ []int64, ok bool) {
	out := make([]int64, len(r.resources))
	for i, res := range r.resources {
		switch name := v1.ResourceName(res.Name); {
		case name == v1.ResourceCPU:
			out[i] = requests.MilliCPU
		case name == v1.ResourceMemory:
			out[i] = requests.Memory
		case name == v1.ResourceEphemeralStorage:
			out[i] = requests.EphemeralStorage
		case name == v1.ResourcePods:
			out[i] = requests.AllowedPodNumber
		case framework.IsScalarResourceName(name):
			out[i] = requests.ScalarResources[name]
		default:
			return nil, false
		}
	}
	return out, true
}

// isBestEffort reports whether the pod requests none of the scored resources.
func isBestEffort(podRequests []int64) bool {
	for _, q := range podRequests {
		if q != 0 {
			return false
		}
	}
	return true
}

// nodeUsage returns, for each scored resource, the node's use with the pod
// (requested) and without it (allocated), and its allocatable, as three
// parts of figures (3 × len(r.resources) long). Two kinds of
// resource are left out, with all three figures zero: a scalar resource
// (extended, hugepages...) the pod does not request, so that nodes with
// special hardware are not favoured or shunned by pods that do not use it,
// and a resource the node does not have. draState is PreScore's DRA state
// (nil when no scored resource is backed by a DeviceClass).
func (r *resourceAllocationScorer) nodeUsage(ctx context.Context, ni *framework.NodeInfo,
	podRequests []int64, draState *draPreScoreState, figures []int64) (requested, allocated, allocatable []int64) {
	n := len(r.resources)
	clear(figures)
	requested, allocated, allocatable = figures[:n:n], figures[n:2*n:2*n], figures[2*n:3*n]
	for i, res := range r.resources {
		name := v1.ResourceName(res.Name)
		if podRequests[i] == 0 && framework.IsScalarResourceName(name) {
			continue
		}
		nodeAllocatable, nodeAllocated := r.allocatableAndAllocated(ctx, ni, name, draState)
		if nodeAllocatable == 0 {
			continue
		}
		allocatable[i] = nodeAllocatable
		allocated[i] = nodeAllocated
		requested[i] = nodeAllocated + podRequests[i]
	}
	return requested, allocated, allocatable
}

// allocatableAndAllocated returns the node's allocatable of one resource and
// what its pods request of it. Only cpu and memory have non-zero requests;
// ephemeral storage and scalar resources always count as requested. A
// scalar resource the node does not advertise (no device plugin serves it)
// but a DeviceClass backs counts the class's devices on the node instead:
// all of them as allocatable, the allocated ones as requested.
func (r *resourceAllocationScorer) allocatableAndAllocated(ctx context.Context, ni *framework.NodeInfo,
	name v1.ResourceName, draState *draPreScoreState) (int64, int64) {
	used := ni.NonZeroRequested
	if r.useRequested {
		used = ni.Requested
	}
	switch name {
	case v1.ResourceCPU:
		return ni.Allocatable.MilliCPU, used.MilliCPU
	case v1.ResourceMemory:
		return ni.Allocatable.Memory, used.Memory
	case v1.ResourceEphemeralStorage:
		return ni.Allocatable.EphemeralStorage, ni.Requested.EphemeralStorage
	}
	alloc, ok := ni.Allocatable.ScalarResources[name]
	if alloc == 0 && r.dra != nil && draState != nil {
		if draAlloc, draAllocated := r.dra.calculateDRAExtendedResourceAllocatableRequest(ctx, ni.Node(), name,
			draState); draAlloc > 0 {
			return draAlloc, draAllocated
		}
	}
	if ok {
		return alloc, ni.Requested.ScalarResources[name]
	}
	return 0, 0
}

// score rates the node for a pod whose requests are podRequests, with
// PreScore's DRA state (see nodeUsage).
func (r *resourceAllocationScorer) score(ctx context.Context, pod *v1.Pod, ni *framework.NodeInfo,
	podRequests []int64, draState *draPreScoreState) (int64, *framework.Status) {
	if len(r.resources) == 0 {
		return 0, framework.NewStatus(framework.Error, "resources not found")
	}
	buf := figuresPool.Get().(*[]int64)
	defer figuresPool.Put(buf)
	if need := 3 * len(r.resources); cap(*buf) < need {
		*buf = make([]int64, need)
	}
	requested, allocated, allocatable := r.nodeUsage(ctx, ni, podRequests, draState, *buf)
	score := r.scorer(requested, allocated, allocatable)
	if logger := klog.FromContext(ctx).V(10); logger.Enabled() {
		logger.Info("Resource allocation score", "pod", klog.KObj(pod), "node", klog.KObj(ni.Node()), "scorer", r.name,
			"allocatable", slices.Clone(allocatable), "requested", slices.Clone(requested), "score", score)
	}
	return score, nil
}

// figuresPool holds the buffers score hands nodeUsage (a *[]int64 each):
// Score runs for every feasible node, twice with the default plugins, and
// the figures are not needed once the node's score is known, so a buffer
// serves one call after another instead of each call allocating its own.
var figuresPool = sync.Pool{New: func() any { return new([]int64) }}
