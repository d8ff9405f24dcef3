// Package gangscheduling is kube-scheduler's GangScheduling plugin (chapter
// 19, the GenericWorkload gate): the pods of a PodGroup whose policy is
// gang go to binding at least minCount at once, or not at all.
//
// It keeps that promise at three points:
//   - PreEnqueue holds a member back until the scheduler knows its PodGroup
//     and, for a gang, at least minCount of its pods;
//   - PlacementFeasible, in the pod-group cycle, says before the first
//     member is tried and after each whether minCount can still be placed;
//     the framework makes this plugin the only PlacementFeasible plugin
//     whenever it is in the profile and GenericWorkload is on, as
//     kube-scheduler does;
//   - Permit holds each placed member of a gang until minCount of them are
//     placed, then lets them all go to binding at once.
//
// A basic group (and a pod in no group) passes PreEnqueue and Permit at
// once; in the pod-group cycle its minCount is 1. CompositePodGroup, whose
// gate is off in v1.37, is not implemented.
package gangscheduling

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "GangScheduling"

// permitTimeoutDuration is how long a placed member of a gang waits at
// Permit for the rest of its minCount; then it is rejected, as in
// kube-scheduler.
const permitTimeoutDuration = 5 * time.Minute

// GangScheduling enforces a gang's minCount. It keeps no state of its own:
// what it knows of the groups, it reads from the handle.
type GangScheduling struct {
	handle framework.Handle
	// podGroupManager is the cache: the PodGroups and each group's pods as
	// they are now. nil without GenericWorkload.
	podGroupManager framework.PodGroupManager
	// snapshotLister is the snapshot the current cycle decided on.
	snapshotLister framework.SharedLister
}

var (
	_ framework.PreEnqueuePlugin        = &GangScheduling{}
	_ framework.PermitPlugin            = &GangScheduling{}
	_ framework.PlacementFeasiblePlugin = &GangScheduling{}
	_ framework.EnqueueExtensions       = &GangScheduling{}
)

// New returns the plugin. It takes no args; any pluginConfig is ignored, as
// for the other plugins without args.
func New(_ context.Context, _ *runtime.RawExtension, fh framework.Handle) (framework.Plugin, error) {
	return &GangScheduling{
		handle:          fh,
		podGroupManager: fh.PodGroupManager(),
		snapshotLister:  fh.SnapshotSharedLister(),
	}, nil
}

// Name returns Name.
func (pl *GangScheduling) Name() string { return Name }

// PreEnqueue lets in a pod in no group, and a member of a basic group once
// the scheduler knows its PodGroup. A gang's member waits until the
// scheduler knows at least minCount pods of the gang (pending, assumed or
// bound): trying fewer could only fail. Both waits are
// UnschedulableAndUnresolvable; the events EventsToRegister lists (the
// PodGroup or another member arriving, minCount going down) retry the pod.
func (pl *GangScheduling) PreEnqueue(_ context.Context, pod *v1.Pod) *framework.Status {
	name, ok := framework.PodGroupName(pod)
	if !ok {
		return nil
	}
	// Without GenericWorkload the scheduler watches no PodGroup: the pod
	// waits for one it will never see, as in kube-scheduler, whose cache
	// then answers every lookup with an error.
	if pl.podGroupManager == nil {
		return waitingForPodGroup(name)
	}
	podGroup, err := pl.podGroupManager.PodGroups().Get(pod.Namespace, name)
	if err != nil {
		return waitingForPodGroup(name)
	}
	gang := podGroup.Spec.SchedulingPolicy.Gang
	if gang == nil {
		return nil
	}
	state, err := pl.podGroupManager.PodGroupStates().Get(pod.Namespace, name)
	if err != nil {
		return framework.AsStatus(err)
	}
	if state.AllPodsCount() < int(gang.MinCount) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable,
			"waiting for minCount pods from a gang to appear in scheduling queue")
	}
	return nil
}

// waitingForPodGroup is PreEnqueue's status for a pod whose PodGroup the
// scheduler has not seen. "pods's" is kube-scheduler's typo, kept so that
// the message matches its word for word.
func waitingForPodGroup(name string) *framework.Status {
	return framework.NewStatus(framework.UnschedulableAndUnresolvable,
		fmt.Sprintf("waiting for pods's pod group %q to appear in scheduling queue", name))
}

// Permit lets a member of a gang go to binding once minCount pods of the
// gang are placed, counting this one, which is already assumed in the
// cache. Until then it waits (Wait, permitTimeoutDuration), and the gang's
// pending members are activated, in case they were held back waiting for
// this one. The member that completes minCount allows every member waiting
// here. A pod in no group, or in a basic group, is allowed at once.
//
// The PodGroup is the snapshot's, the one the cycle decided on; the group's
// pods are the cache's, where the members placed by earlier cycles, and
// earlier in this one, are assumed.
func (pl *GangScheduling) Permit(ctx context.Context, _ *framework.CycleState, pod *v1.Pod,
	_ string) (*framework.Status, time.Duration) {
	name, ok := framework.PodGroupName(pod)
	if !ok {
		return nil, 0
	}
	podGroup, err := pl.snapshotLister.PodGroups().Get(pod.Namespace, name)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("failed to get podGroup %s/%s: %w", pod.Namespace, name, err)), 0
	}
	state, err := pl.podGroupManager.PodGroupStates().Get(pod.Namespace, podGroup.Name)
	if err != nil {
		return framework.AsStatus(err), 0
	}
	return pl.permitPodGroup(klog.FromContext(ctx), pod, podGroup, state)
}

// permitPodGroup is Permit's verdict once the group and its pods are known.
func (pl *GangScheduling) permitPodGroup(logger klog.Logger, pod *v1.Pod, podGroup *schedulingv1beta1.PodGroup,
	state framework.PodGroupState) (*framework.Status, time.Duration) {
	gang := podGroup.Spec.SchedulingPolicy.Gang
	if gang == nil {
		return nil, 0
	}
	if state.ScheduledPodsCount() < int(gang.MinCount) {
		unscheduled := state.UnscheduledPods()
		pl.handle.Activate(logger, unscheduled)
		logger.V(4).Info("Quorum is not met for a gang. Waiting for another pod to allow",
			"pod", klog.KObj(pod), "schedulingGroup", podGroup.Name, "activatedPods", len(unscheduled))
		return framework.NewStatus(framework.Wait, "waiting for minCount pods from a gang to be scheduled"),
			permitTimeoutDuration
	}
	assumed := state.AssumedPods()
	logger.V(4).Info("Quorum is met for a gang. Allowing other pods from a gang waiting on permit",
		"pod", klog.KObj(pod), "schedulingGroup", podGroup.Name, "allowedPods", len(assumed))
	// This pod is not waiting yet (Success lets it through); the others
	// assumed before it are, each until its last waiting plugin allows it.
	for uid := range assumed {
		if wp := pl.handle.GetWaitingPod(uid); wp != nil {
			wp.Allow(Name)
		}
	}
	return nil, 0
}

// PlacementFeasible judges one placement of a pod-group cycle, before any
// member is tried and after each: Unschedulable once the members left
// cannot bring the group to minCount (the cycle stops trying), Wait while
// they still could, Success once minCount are placed (1 for a basic
// group: one member placed is enough).
func (pl *GangScheduling) PlacementFeasible(_ context.Context, _ *framework.CycleState,
	podGroup *framework.PodGroupInfo, progress framework.PlacementProgress) *framework.Status {
	minCount := framework.MinCount(podGroup.PodGroup)
	scheduled, remaining := progress.Scheduled, progress.Remaining
	if remaining+scheduled < minCount {
		return framework.NewStatus(framework.Unschedulable,
			fmt.Sprintf("minCount (%d) cannot be satisfied: %d scheduled, %d remaining", minCount, scheduled, remaining))
	}
	if scheduled < minCount {
		return framework.NewStatus(framework.Wait,
			fmt.Sprintf("minCount (%d) is not yet satisfied: %d scheduled, %d remaining", minCount, scheduled, remaining))
	}
	return nil
}
