// This file is NodeResourcesFit's filtering half: New, PreFilter (the pod's
// requests, once) and Filter (do they fit in what the node has left, leaving
// requests served by DeviceClasses to DynamicResources; see dra.go).

package noderesources

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
)

const (
	// Name is the plugin's name in the registry and in configurations.
	Name = "NodeResourcesFit"

	// preFilterStateKey is where PreFilter leaves the pod's requests for
	// Filter.
	preFilterStateKey framework.StateKey = "PreFilter" + Name
)

// Fit rejects nodes that lack room for the pod: too many pods already, or not
// enough cpu, memory, ephemeral storage or an extended resource left after
// what the node's pods request.
type Fit struct {
	// draManager resolves extended resources to the DeviceClasses that back
	// them; nil when the profile has no DRA (then none is backed).
	draManager framework.SharedDRAManager
	// ignoredResources are extended resources Filter does not check (another
	// component, such as a scheduler extender, accounts for them).
	ignoredResources sets.Set[string]
	// ignoredResourceGroups are extended-resource domains ("example.com")
	// Filter does not check.
	ignoredResourceGroups sets.Set[string]
	// scoringStrategy says how Score rates nodes (defaulted: LeastAllocated
	// over cpu and memory, weight 1 each).
	scoringStrategy *configv1.ScoringStrategy
	// scorer is scoringStrategy made executable.
	scorer *resourceAllocationScorer
	// placementScorer scores a pod group's placements (placement_score.go);
	// the pod-group cycle asks only with TopologyAwareWorkloadScheduling.
	placementScorer *resourceAllocationScorer
}

var (
	_ framework.PreFilterPlugin   = &Fit{}
	_ framework.FilterPlugin      = &Fit{}
	_ framework.EnqueueExtensions = &Fit{}
	_ framework.SignPlugin        = &Fit{}
)

// New builds the plugin from its NodeResourcesFitArgs (see DecodeArgs). h
// may be nil (in tests): the plugin then has no DRA manager.
func New(_ context.Context, rawArgs *runtime.RawExtension, h framework.Handle) (framework.Plugin, error) {
	args, err := DecodeArgs(rawArgs)
	if err != nil {
		return nil, err
	}
	scorer, err := newFitScorer(args.ScoringStrategy)
	if err != nil {
		return nil, err
	}
	draManager := sharedDRAManager(h)
	scorer.dra = newDRAScorer(draManager)
	return &Fit{
		draManager:            draManager,
		ignoredResources:      sets.New(args.IgnoredResources...),
		ignoredResourceGroups: sets.New(args.IgnoredResourceGroups...),
		scoringStrategy:       args.ScoringStrategy,
		scorer:                scorer,
		placementScorer:       newPlacementScorer(args.ScoringStrategy.Resources),
	}, nil
}

// Name returns Name.
func (pl *Fit) Name() string { return Name }

// SignPod signs the pod's effective requests as PreFilter computes them
// (PodRequests): Filter reads nothing else of the pod. Score reads the same
// requests for the scored resources, but counts a container that requests
// no cpu or memory as asking for 100m and 200Mi, which the sum does not
// show: kube-scheduler signs the same sum. See signResources for the pods
// it refuses.
func (pl *Fit) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	return signResources(pod, pl.draManager)
}

// preFilterState is the pod's effective requests, computed once per cycle.
type preFilterState struct {
	framework.Resource
}

// Clone returns a deep copy.
func (s *preFilterState) Clone() framework.StateData {
	return &preFilterState{Resource: *s.Resource.Clone()}
}

// PreFilter keeps the pod's effective requests (the larger of its running
// containers and its largest init container, plus overhead) for Filter,
// which would otherwise compute them per node. They are the PodInfo's, when
// the scheduler recorded it in the state; computed otherwise.
func (pl *Fit) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod,
	_ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	requests, ok := state.PodRequests(pod)
	if !ok {
		requests = framework.PodRequests(pod)
	}
	state.Write(preFilterStateKey, &preFilterState{Resource: requests})
	return nil, nil
}

// PreFilterExtensions returns nil: the state depends on the pod alone, not on
// the pods of a node.
func (pl *Fit) PreFilterExtensions() framework.PreFilterExtensions { return nil }

func getPreFilterState(state *framework.CycleState) (*preFilterState, error) {
	c, err := state.Read(preFilterStateKey)
	if err != nil {
		return nil, fmt.Errorf("error reading %q from cycleState: %w", preFilterStateKey, err)
	}
	s, ok := c.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%+v convert to NodeResourcesFit.preFilterState error", c)
	}
	return s, nil
}

// Filter reports every resource the node lacks for the pod, all on one
// status. The code is Unschedulable, since evicting pods may make room,
// unless some request exceeds what the node has in total: then no
// preemption can help and it is UnschedulableAndUnresolvable.
func (pl *Fit) Filter(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) *framework.Status {
	s, err := getPreFilterState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	insufficient := fitsRequest(&s.Resource, nodeInfo, pl.ignoredResources, pl.ignoredResourceGroups, pl.draManager)
	if len(insufficient) == 0 {
		return nil
	}
	code := framework.Unschedulable
	reasons := make([]string, 0, len(insufficient))
	for _, r := range insufficient {
		reasons = append(reasons, r.reason)
		if r.unresolvable {
			code = framework.UnschedulableAndUnresolvable
		}
	}
	if logger := klog.FromContext(ctx).V(5); logger.Enabled() {
		logger.Info("Node lacks resources for the pod",
			"pod", klog.KObj(pod), "node", klog.KObj(nodeInfo.Node()), "reasons", reasons)
	}
	return framework.NewStatus(code, reasons...)
}

// insufficientResource is one resource the node lacks for the pod.
type insufficientResource struct {
	name   v1.ResourceName
	reason string
	// unresolvable means the request exceeds the node's allocatable, so no
	// preemption can make room.
	unresolvable bool
}

// fitsRequest lists what the node lacks for podRequest, in kube-scheduler's
// order: pod count, cpu, memory, ephemeral storage, then extended resources
// (sorted by name, where kube-scheduler's order varies from run to run).
// Extended resources named in ignored, or in a domain named in ignoredGroups,
// are not checked; nor is one the node does not advertise but a DeviceClass
// of draManager (which may be nil) backs: DynamicResources' Filter decides
// whether the node's devices can serve it.
func fitsRequest(podRequest *framework.Resource, nodeInfo *framework.NodeInfo,
	ignored, ignoredGroups sets.Set[string], draManager framework.SharedDRAManager) []insufficientResource {
	var out []insufficientResource
	alloc, used := nodeInfo.Allocatable, nodeInfo.Requested

	// Every pod takes one of the node's pod slots, whatever it requests.
	if int64(len(nodeInfo.Pods))+1 > alloc.AllowedPodNumber {
		out = append(out, insufficientResource{name: v1.ResourcePods, reason: "Too many pods"})
	}
	if podRequest.MilliCPU == 0 && podRequest.Memory == 0 && podRequest.EphemeralStorage == 0 &&
		len(podRequest.ScalarResources) == 0 {
		return out
	}

	check := func(name v1.ResourceName, reason string, req, allocatable, requested int64) {
		if req > 0 && req > allocatable-requested {
			out = append(out, insufficientResource{name: name, reason: reason, unresolvable: req > allocatable})
		}
	}
	check(v1.ResourceCPU, "Insufficient cpu", podRequest.MilliCPU, alloc.MilliCPU, used.MilliCPU)
	check(v1.ResourceMemory, "Insufficient memory", podRequest.Memory, alloc.Memory, used.Memory)
	check(v1.ResourceEphemeralStorage, "Insufficient ephemeral-storage", podRequest.EphemeralStorage,
		alloc.EphemeralStorage, used.EphemeralStorage)
	if len(podRequest.ScalarResources) == 0 {
		return out // most pods: no sorted keys to allocate on every node
	}
	for _, name := range slices.Sorted(maps.Keys(podRequest.ScalarResources)) {
		if isIgnored(name, ignored, ignoredGroups) ||
			shouldDelegateResourceToDRA(name, alloc.ScalarResources[name], draManager) {
			continue
		}
		check(name, fmt.Sprintf("Insufficient %v", name), podRequest.ScalarResources[name], alloc.ScalarResources[name],
			used.ScalarResources[name])
	}
	return out
}

// isIgnored reports whether name is an extended resource the configuration
// tells Filter to leave alone. Hugepages and other scalar resources are always
// checked.
func isIgnored(name v1.ResourceName, ignored, ignoredGroups sets.Set[string]) bool {
	if !framework.IsExtendedResourceName(name) {
		return false
	}
	if ignored.Has(string(name)) {
		return true
	}
	// An extended resource always has a domain: "example.com/gpu".
	domain, _, _ := strings.Cut(string(name), "/")
	return ignoredGroups.Has(domain)
}
