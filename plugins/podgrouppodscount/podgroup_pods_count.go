// Package podgrouppodscount is kube-scheduler's PodGroupPodsCount (chapter
// 19, the TopologyAwareWorkloadScheduling gate): the PlacementScore plugin
// that prefers, among the placements that held a pod group, the one that
// holds more of its pods.
//
// Every feasible placement holds minCount pods at least; a basic group, or
// a gang with more pods than minCount, may fit more in one domain than in
// another, and this plugin favours the domain where more fit.
package podgrouppodscount

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/minisched/minisched/minisched/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "PodGroupPodsCount"

// PodGroupPodsCount scores a placement by the number of the group's pods
// it would hold. It keeps no state: it reads the group's placed pods from
// the snapshot.
type PodGroupPodsCount struct {
	// snapshotLister is the snapshot the current cycle decides on.
	snapshotLister framework.SharedLister
}

var (
	_ framework.PlacementScorePlugin     = &PodGroupPodsCount{}
	_ framework.PlacementScoreExtensions = &PodGroupPodsCount{}
)

// New returns the plugin. It takes no args; any pluginConfig is ignored, as
// for the other plugins without args.
func New(_ context.Context, _ *runtime.RawExtension, fh framework.Handle) (framework.Plugin, error) {
	return &PodGroupPodsCount{snapshotLister: fh.SnapshotSharedLister()}, nil
}

// Name returns Name.
func (pl *PodGroupPodsCount) Name() string { return Name }

// ScorePlacement counts the group's pods placed before this cycle (bound,
// or assumed waiting on Permit) and those the cycle placed in this
// placement. Counting the former too, as kube-scheduler does, keeps the
// scores of placements that differ by a pod or two close together once
// normalised.
func (pl *PodGroupPodsCount) ScorePlacement(_ context.Context, _ *framework.CycleState,
	podGroup *framework.PodGroupInfo, assignments *framework.PodGroupAssignments) (int64, *framework.Status) {
	state, err := pl.snapshotLister.PodGroupStates().Get(podGroup.Namespace, podGroup.Name)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	return int64(state.ScheduledPodsCount() + len(assignments.ProposedAssignments)), nil
}

// PlacementScoreExtensions returns the plugin: its counts are normalised.
func (pl *PodGroupPodsCount) PlacementScoreExtensions() framework.PlacementScoreExtensions { return pl }

// NormalizePlacementScore scales the counts to [MinNodeScore,
// MaxNodeScore] by the largest: the placement that holds the most pods
// scores MaxNodeScore. minCount plays no part, so that placements a pod
// apart do not end far apart. A largest count of 0 cannot happen (a
// feasible placement places a pod at least), and is an Error in
// kube-scheduler's words.
func (pl *PodGroupPodsCount) NormalizePlacementScore(_ context.Context, _ *framework.CycleState,
	_ *framework.PodGroupInfo, scores []framework.PlacementScore) *framework.Status {
	var largest int64
	for _, s := range scores {
		largest = max(largest, s.Score)
	}
	if largest == 0 {
		return framework.AsStatus(errors.New("no pods from pod group are assigned to any of the candidate placements"))
	}
	for i := range scores {
		scores[i].Score = framework.MinNodeScore + scores[i].Score*(framework.MaxNodeScore-framework.MinNodeScore)/largest
	}
	return nil
}
