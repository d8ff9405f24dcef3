// This file is NodeResourcesFit's PlacementScore (chapter 19, the
// TopologyAwareWorkloadScheduling gate): among the placements (topology
// domains) that held a whole pod group, prefer the one the group would
// fill most, so that gangs pack into few domains and leave others whole.

package noderesources

import (
	"context"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
)

var _ framework.PlacementScorePlugin = &Fit{}

// newPlacementScorer is the scorer of placements: MostAllocated over the
// profile's scored resources and weights, whatever the strategy nodes are
// scored with, as kube-scheduler builds it. It counts non-zero requests
// and no DeviceClass-backed resource.
func newPlacementScorer(resources []configv1.ResourceSpec) *resourceAllocationScorer {
	return &resourceAllocationScorer{name: string(configv1.MostAllocated), resources: resources,
		scorer: mostAllocatedScorer(resources)}
}

// PlacementScoreExtensions returns nil: the score is already in [0, 100].
func (pl *Fit) PlacementScoreExtensions() framework.PlacementScoreExtensions { return nil }

// ScorePlacement rates the placement as if it were one node: the
// allocatable of its nodes summed, against what their pods request plus
// what the group's members placed there request, with MostAllocated. The
// members' tries were undone before scoring, so the nodes hold none of
// them.
func (pl *Fit) ScorePlacement(ctx context.Context, _ *framework.CycleState, podGroup *framework.PodGroupInfo,
	assignments *framework.PodGroupAssignments) (int64, *framework.Status) {
	r := pl.placementScorer
	n := len(r.resources)
	requested := make([]int64, n)
	for _, a := range assignments.ProposedAssignments {
		for i, q := range r.placementPodRequests(a.PodInfo.Pod) {
			requested[i] += q
		}
	}
	allocated, allocatable := make([]int64, n), make([]int64, n)
	for _, ni := range assignments.Placement.Nodes {
		for i, res := range r.resources {
			// A scalar resource nobody asks for (the group, nor the nodes
			// counted so far) is left out, as in a node's score.
			if requested[i] == 0 && framework.IsScalarResourceName(v1.ResourceName(res.Name)) {
				continue
			}
			nodeAllocatable, nodeAllocated := r.allocatableAndAllocated(ctx, ni, v1.ResourceName(res.Name), nil)
			if nodeAllocatable == 0 {
				continue
			}
			allocatable[i] += nodeAllocatable
			allocated[i] += nodeAllocated
			requested[i] += nodeAllocated
		}
	}
	score := r.scorer(requested, allocated, allocatable)
	if logger := klog.FromContext(ctx).V(10); logger.Enabled() {
		logger.Info("Listed internal info for placement's allocatable resources, requested resources and placement score",
			"podGroup", klog.KRef(podGroup.Namespace, podGroup.Name), "placement", assignments.Placement.Name,
			"resourceAllocationScorer", r.name, "allocatableResource", allocatable, "requestedResource", requested,
			"resourceScore", score)
	}
	return score, nil
}

// placementPodRequests is a member's request of each scored resource, as
// kube-scheduler's placement scorer computes it: with the non-zero
// defaults, overhead included, from the containers' spec (neither the
// resources a resize reported in status nor pod-level resources count:
// that scorer is built without those features, unlike a node's).
func (r *resourceAllocationScorer) placementPodRequests(pod *v1.Pod) []int64 {
	return r.scoredFrom(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{
		SkipPodLevelResources:       true,
		NonMissingContainerRequests: nonZeroRequests(),
	}))
}
