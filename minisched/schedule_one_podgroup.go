// A pod group's way through the scheduler (chapter 19, the GenericWorkload
// gate), as kube-scheduler v1.37.1's schedule_one_podgroup.go, beside
// schedule_one.go's pod, whose steps it reuses:
//
//	scheduleOnePodGroup        snapshot, the group checked, members being
//	                           deleted or already assumed dropped
//	  podGroupCycle            the algorithm, PodGroupPostFilter when the
//	                           group is unschedulable, then submit
//	    podGroupAlgorithm      one of the two below; all undone at the end
//	      defaultPodGroupAlgorithm    PlacementFeasible; each member through
//	                           schedulingAlgorithm, placed in the SNAPSHOT
//	                           (assumeAndReserve with InPodGroupCycle);
//	                           PlacementFeasible after each
//	      placementPodGroupAlgorithm  (TopologyAwareWorkloadScheduling)
//	                           PlacementGenerate; per placement, the snapshot
//	                           restricted to its nodes and the default
//	                           algorithm run and undone; PlacementScore picks
//	                           the best of those that held the group
//	    submitPodGroupResult   each placed member of a feasible group:
//	                           prepareForBindingCycle (cache, Reserve, Permit,
//	                           GangScheduling's barrier), runBindingCycle;
//	                           every other member: the failure handler, with
//	                           its shape of message; the PodGroup's condition;
//	                           the queue told the attempt ended
//
// What a member's FailedScheduling says depends on how far it got:
//
//  1. placed in the simulation, but the group failed: "pod group is
//     unschedulable, " and the group's message;
//  2. tried and fitting nowhere: its own FitError (no "preemption:" part:
//     a member's PostFilter does not run);
//  3. never tried (the loop stopped when minCount could no longer be met):
//     a copy of the group's status at that moment;
//  4. an error: the error.
//
// The group's message is PlacementFeasible's reason, then the
// PodGroupPostFilter's. When the group's status itself carries "pod group
// is unschedulable" (no member was placed, or minCount was still unmet at
// the end, or no placement held the group: "0/2 placements are available,
// first placement status: ..."), shape 1 repeats that prefix:
// kube-scheduler's message, kept.
//
// Three cycle states serve a group's cycle, as in kube-scheduler: the
// group's (PodGroupPostFilter's, and PlacementGenerate's), one per
// placement tried (PlacementFeasible's and PlacementScore's), and one per
// member's try, which links to the group's (CycleState.PodGroupCycleState)
// so that a plugin can keep what it learnt of each member for the group's
// extension points.

package minisched

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/minisched/metrics"
	"github.com/minisched/minisched/podstatus"
)

// errPodGroupUnschedulable is kube-scheduler's error for a group that
// cannot be scheduled: its text leads the messages of shape 1.
var errPodGroupUnschedulable = errors.New("pod group is unschedulable")

// The PodGroup condition the scheduler writes, and its reasons
// (scheduling.k8s.io/v1beta1; "Scheduled" is a literal upstream too).
const (
	podGroupInitiallyScheduled   = "PodGroupInitiallyScheduled"
	podGroupReasonScheduled      = "Scheduled"
	podGroupReasonUnschedulable  = "Unschedulable"
	podGroupReasonSchedulerError = "SchedulerError"
)

// memberResult is one member's try in its group's cycle.
type memberResult struct {
	podInfo *framework.QueuedPodInfo
	state   *framework.CycleState
	result  scheduleResult
	status  *framework.Status
	// tried says the member went through the algorithm (shapes 1 and 2);
	// a member never tried carries a copy of the group's status (shape 3).
	tried bool
	// duration is how long the member's own algorithm took (zero when it
	// was never tried): its attempt is timed from now less that, as in
	// kube-scheduler, not from the group cycle's start (schedulingStart).
	duration time.Duration
}

// schedulingStart is when the member's attempt counts as begun, for its
// attempt metric and its binding cycle: now less its own algorithm's time,
// kube-scheduler's podSchedulingStart ("to be consistent with pod-by-pod
// scheduling"); the group's cycle also spent time on the other members and
// on PodGroupPostFilter, which is not this member's.
func (mr memberResult) schedulingStart() time.Time { return time.Now().Add(-mr.duration) }

// podGroupResult is what a group's cycle decided.
type podGroupResult struct {
	members []memberResult
	// status is the group's: Success (bind the placed members),
	// Unschedulable (none binds), or Error.
	status *framework.Status
	// waitingOnPreemption says PodGroupPostFilter is making room: the
	// members go back nominated, and the group is retried.
	waitingOnPreemption bool
	// anyScheduled says a member was placed in this cycle.
	anyScheduled bool
	// placementState is the cycle state the placement was tried with
	// (PlacementFeasible's), for PlacementScore.
	placementState *framework.CycleState
}

// revertFns undo, last first, what a cycle placed in the snapshot.
type revertFns []func()

func (r *revertFns) revert() {
	for i := len(*r) - 1; i >= 0; i-- {
		(*r)[i]()
	}
	*r = nil
}

// scheduleOnePodGroup takes one pod group through its cycle.
func (s *Scheduler) scheduleOnePodGroup(ctx, bindCtx context.Context, group *framework.QueuedPodGroupInfo) {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "podGroup", klog.KRef(group.Namespace, group.Name))
	ctx = klog.NewContext(ctx, logger)
	start := time.Now()
	if err := s.Cache.UpdateSnapshot(logger, s.snapshot); err != nil {
		s.failPodGroupBeforeScheduling(ctx, group, err)
		return
	}
	// The queue's copy of the PodGroup may be older: the cycle decides on
	// the snapshot's.
	pg, err := s.snapshot.PodGroups().Get(group.Namespace, group.Name)
	if err != nil {
		group.PodGroup = nil // nothing to write a condition to
		s.failPodGroupBeforeScheduling(ctx, group, err)
		return
	}
	group.PodGroup = pg
	if err := s.validatePodGroup(group); err != nil {
		s.failPodGroupBeforeScheduling(ctx, group, err)
		return
	}
	schedFramework := s.Profiles[group.Members[0].Pod.Spec.SchedulerName]
	s.skipPodGroupPods(logger, group)
	if group.Size() == 0 {
		// Members that arrived meanwhile must not wait for ever.
		if err := s.Queue.AddAttemptedPodGroupIfNeeded(logger, group, nil); err != nil {
			logger.Error(err, "Ending a skipped pod group's attempt")
		}
		return
	}
	logger.V(3).Info("Attempting to schedule pod group", "members", group.Size(), "attempts", group.Attempts)
	s.podGroupCycle(ctx, bindCtx, schedFramework, group, start)
}

// failPodGroupBeforeScheduling fails every member with err (a
// SchedulerError), writes the condition, and ends the group's attempt.
func (s *Scheduler) failPodGroupBeforeScheduling(ctx context.Context, group *framework.QueuedPodGroupInfo, err error) {
	logger := klog.FromContext(ctx)
	status := framework.AsStatus(err)
	for _, m := range group.Members {
		schedFramework, ferr := s.frameworkForPod(m.Pod)
		if ferr != nil {
			logger.Error(ferr, "Popped a pod no profile schedules")
			s.Queue.Done(m.Pod.UID)
			continue
		}
		s.handleSchedulingFailure(ctx, schedFramework, m, status, clearNominatedNode, time.Now(), nil)
	}
	if group.PodGroup != nil {
		s.updatePodGroupCondition(ctx, group.PodGroup, metav1.Condition{Type: podGroupInitiallyScheduled,
			Status: metav1.ConditionFalse, Reason: podGroupReasonSchedulerError, Message: err.Error()})
	}
	if err := s.Queue.AddAttemptedPodGroupIfNeeded(logger, group, status); err != nil {
		logger.Error(err, "Requeueing the pod group failed")
	}
}

// validatePodGroup checks, as kube-scheduler does, that every pod of the
// group, queued or already placed, names the same scheduler, has the
// PodGroup's priority and the same preemption policy, and that a profile
// schedules them.
func (s *Scheduler) validatePodGroup(group *framework.QueuedPodGroupInfo) error {
	schedulerName := group.Members[0].Pod.Spec.SchedulerName
	priority := group.Priority()
	var policy v1.PreemptionPolicy
	check := func(pod *v1.Pod) error {
		if pod.Spec.SchedulerName != schedulerName {
			return fmt.Errorf("all pods in a single pod group should have the same .spec.schedulerName set, "+
				"got: %q and %q", pod.Spec.SchedulerName, schedulerName)
		}
		if p := corev1helpers.PodPriority(pod); p != priority {
			return fmt.Errorf("all pods in a single pod group should have the same priority as the pod group's "+
				"priority, got %d and %d", p, priority)
		}
		podPolicy := v1.PreemptLowerPriority
		if pod.Spec.PreemptionPolicy != nil {
			podPolicy = *pod.Spec.PreemptionPolicy
		}
		if policy == "" {
			policy = podPolicy
		} else if podPolicy != policy {
			return fmt.Errorf("all pods in a single pod group should have the same preemption policy, got %v and %v",
				podPolicy, policy)
		}
		return nil
	}
	for _, m := range group.Members {
		if err := check(m.Pod); err != nil {
			return err
		}
	}
	state, err := s.snapshot.PodGroupStates().Get(group.Namespace, group.Name)
	if err != nil {
		return fmt.Errorf("failed to get pod group state: %w", err)
	}
	for _, pod := range state.ScheduledPods() {
		if err := check(pod); err != nil {
			return err
		}
	}
	if _, ok := s.Profiles[schedulerName]; !ok {
		return fmt.Errorf("profile not found for scheduler name %q", schedulerName)
	}
	return nil
}

// skipPodGroupPods drops the members being deleted or already assumed, as
// skipPodSchedule does for a pod; their in-flight period ends here.
func (s *Scheduler) skipPodGroupPods(logger klog.Logger, group *framework.QueuedPodGroupInfo) {
	for _, m := range append([]*framework.QueuedPodInfo(nil), group.Members...) {
		if s.skipPodSchedule(logger.WithValues("pod", klog.KObj(m.Pod)), m.Pod) {
			group.RemoveMember(m.Pod.UID)
			s.Queue.Done(m.Pod.UID)
		}
	}
}

// podGroupCycle runs the algorithm, lets the PodGroupPostFilter plugins
// make room when the group is unschedulable, and submits the result.
func (s *Scheduler) podGroupCycle(ctx, bindCtx context.Context, schedFramework *framework.Framework,
	group *framework.QueuedPodGroupInfo, start time.Time) {
	groupState := framework.NewCycleState()
	res := s.podGroupAlgorithm(ctx, schedFramework, groupState, group)
	// The algorithm's verdict, kept before the PodGroupPostFilter's message
	// is appended to the group's status.
	rootStatus := res.status.Clone()
	completePodGroupResult(group, res)
	s.metrics.PodGroupAlgorithm(time.Since(start))
	if rootStatus.Code() == framework.Unschedulable {
		schedule := func(ctx context.Context) (*framework.PodGroupAssignments, *framework.Status) {
			again := s.podGroupAlgorithm(ctx, schedFramework, framework.NewCycleState(), group)
			return proposedAssignments(again), again.status
		}
		pfResult, pfStatus := schedFramework.RunPodGroupPostFilterPlugins(ctx, groupState, group.PodGroupInfo, schedule)
		applyPodGroupPostFilterResult(res, pfResult, pfStatus)
	}
	s.submitPodGroupResult(ctx, bindCtx, schedFramework, group, res, rootStatus, start)
}

// podGroupAlgorithm runs the group's algorithm: with
// TopologyAwareWorkloadScheduling the placement algorithm, which tries the
// group in each placement, otherwise the default one, in a single
// placement of every node. Either undoes every placement of a member in
// the snapshot before it returns: the members a feasible group binds are
// assumed again, in the cache, by submitPodGroupResult. A Success in which
// no member was placed is Unschedulable: there is nothing to bind.
func (s *Scheduler) podGroupAlgorithm(ctx context.Context, schedFramework *framework.Framework,
	groupState *framework.CycleState, group *framework.QueuedPodGroupInfo) *podGroupResult {
	var res *podGroupResult
	if s.gates.TopologyAwareWorkloadScheduling {
		res = s.placementPodGroupAlgorithm(ctx, schedFramework, groupState, group)
	} else {
		var placed revertFns
		res = s.defaultPodGroupAlgorithm(ctx, schedFramework, newPlacementCycleState(groupState), group, &placed)
		placed.revert()
	}
	if res.status.IsSuccess() && !res.anyScheduled {
		res.status = framework.NewStatus(framework.Unschedulable).WithError(errPodGroupUnschedulable)
	}
	return res
}

// newPlacementCycleState is the cycle state of one placement's try, linked
// to the group's.
func newPlacementCycleState(groupState *framework.CycleState) *framework.CycleState {
	state := framework.NewCycleState()
	state.SetPodGroupCycleState(groupState)
	return state
}

// defaultPodGroupAlgorithm is kube-scheduler's default algorithm, in the
// placement the snapshot presents (every node, or the one
// placementPodGroupAlgorithm assumed). PlacementFeasible judges the group
// before the first member and after each; Unschedulable stops the loop, a
// Success is kept even if later members fail, and a Wait left at the end
// fails the group. What undoes the members placed is appended to placed;
// a failed group undoes them at once.
func (s *Scheduler) defaultPodGroupAlgorithm(ctx context.Context, schedFramework *framework.Framework,
	placementState *framework.CycleState, group *framework.QueuedPodGroupInfo, placed *revertFns) (res *podGroupResult) {
	res = &podGroupResult{status: framework.NewStatus(framework.Unschedulable).WithError(errPodGroupUnschedulable),
		placementState: placementState}
	defer func() {
		if !res.status.IsSuccess() {
			placed.revert()
			res.anyScheduled = false
		}
	}()
	pgState, err := s.snapshot.PodGroupStates().Get(group.Namespace, group.Name)
	if err != nil {
		res.status = framework.AsStatus(fmt.Errorf("failed to get podGroup state for podGroup %s to compute gang "+
			"feasibility: %w", klog.KRef(group.Namespace, group.Name), err))
		return res
	}
	progress := framework.PlacementProgress{Remaining: len(group.Members), Scheduled: pgState.ScheduledPodsCount()}
	feasible := schedFramework.RunPlacementFeasiblePlugins(ctx, placementState, group.PodGroupInfo, progress)
	switch {
	case feasible.IsError():
		res.status = framework.AsStatus(fmt.Errorf("failed to evaluate placement feasibility: %w", feasible.AsError()))
		return res
	case feasible.Code() == framework.Unschedulable:
		res.status = framework.NewStatus(framework.Unschedulable, feasible.Reasons()...).WithError(errPodGroupUnschedulable)
		return res
	}
	res.status = feasible
	for _, m := range group.Members {
		mr, revert := s.podGroupMemberAlgorithm(ctx, schedFramework, placementState.PodGroupCycleState(), m)
		res.members = append(res.members, mr)
		if revert != nil {
			*placed = append(*placed, revert)
		}
		if !mr.status.IsSuccess() && !mr.status.IsRejected() {
			res.status = framework.AsStatus(fmt.Errorf("failed to schedule other pod from a pod group: %w",
				mr.status.AsError()))
			break
		}
		progress.Remaining--
		if mr.status.IsSuccess() {
			progress.Scheduled++
		}
		feasible := schedFramework.RunPlacementFeasiblePlugins(ctx, placementState, group.PodGroupInfo, progress)
		if feasible.IsError() {
			res.status = framework.AsStatus(fmt.Errorf("failed to evaluate placement feasibility: %w", feasible.AsError()))
			break
		}
		res.status = feasible
		if feasible.Code() == framework.Unschedulable {
			break
		}
		res.anyScheduled = res.anyScheduled || mr.status.IsSuccess()
	}
	if res.status.IsWait() {
		res.status = framework.NewStatus(framework.Unschedulable, res.status.Reasons()...).WithError(errPodGroupUnschedulable)
	}
	return res
}

// podGroupMemberAlgorithm tries one member, as a pod's cycle would, but
// without PostFilter and placing it in the snapshot only; the member's
// cycle state links to groupState. It returns what undoes the placement
// (nil when it was not placed).
func (s *Scheduler) podGroupMemberAlgorithm(ctx context.Context, schedFramework *framework.Framework,
	groupState *framework.CycleState, m *framework.QueuedPodInfo) (memberResult, func()) {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "pod", klog.KObj(m.Pod))
	ctx = klog.NewContext(ctx, logger)
	state := s.newCycleState(m)
	state.InPodGroupCycle = true
	state.SetPodGroupCycleState(groupState)
	state.SetPodInfo(m.PodInfo)
	mr := memberResult{podInfo: m, state: state, tried: true}
	algorithmStart := time.Now()
	mr.result, mr.status = s.schedulingAlgorithm(ctx, schedFramework, state, m)
	mr.duration = time.Since(algorithmStart)
	if !mr.status.IsSuccess() {
		return mr, nil
	}
	node := mr.result.suggestedHost
	assumed, status := s.assumeAndReserve(ctx, state, schedFramework, m, node)
	if !status.IsSuccess() {
		mr.status = status
		mr.result.nominatingInfo = clearNominatedNode
		return mr, nil
	}
	return mr, func() { s.unreserveAndForget(ctx, state, schedFramework, assumed.Pod, node) }
}

// placementPodGroupAlgorithm is kube-scheduler's placement algorithm
// (TopologyAwareWorkloadScheduling): it tries the whole group in each
// placement and keeps the best.
//
//  1. PlacementGenerate divides the nodes the snapshot presents into
//     placements (TopologyPlacementGenerator: one per domain of the
//     PodGroup's topology key; one of every node without a key). Its
//     failure, or no placement, is the group's status.
//  2. For each placement, the snapshot presents only its nodes
//     (Snapshot.AssumePlacement), the default algorithm runs in it with a
//     placement cycle state of its own, and what it placed is undone at
//     once, so that each placement is tried on the same snapshot. An Error
//     ends the algorithm.
//  3. No placement held the group: the group fails with "0/N placements
//     are available, first placement status: ..." and the first
//     placement's members (their shapes of message come from there).
//  4. One held it: that one. Several: PlacementScore ranks them, and the
//     highest total wins, ties broken at random (findBestPlacement).
//
// The placement the snapshot presented before is restored on the way out
// (none, unless a caller nested placements).
func (s *Scheduler) placementPodGroupAlgorithm(ctx context.Context, schedFramework *framework.Framework,
	groupState *framework.CycleState, group *framework.QueuedPodGroupInfo) (res *podGroupResult) {
	logger := klog.FromContext(ctx)
	// 1.
	allNodes, err := s.snapshot.ListNodesInPlacement()
	if err != nil {
		return &podGroupResult{status: framework.AsStatus(fmt.Errorf("failed to list node infos: %w", err))}
	}
	// As kube-scheduler, every placement cycle times its plugins for now.
	groupState.RecordPluginMetrics = true
	placements, status := schedFramework.RunPlacementGeneratePlugins(ctx, groupState, group.PodGroupInfo, allNodes)
	if !status.IsSuccess() {
		return &podGroupResult{status: status}
	}
	s.metrics.GeneratedPlacements(schedFramework.ProfileName(), len(placements))

	parent := s.snapshot.GetPlacement()
	defer func() {
		if err := s.snapshot.AssumePlacement(parent); err != nil {
			res = &podGroupResult{status: framework.AsStatus(
				fmt.Errorf("failed to restore parent pod group placement: %w", err))}
		}
	}()
	// 2.
	var first *podGroupResult
	var feasible []feasiblePlacement
	for _, placement := range placements {
		logger.V(4).Info("Assuming placement in snapshot", "placement", placement.Name)
		start := time.Now()
		if err := s.snapshot.AssumePlacement(placement); err != nil {
			return &podGroupResult{status: framework.AsStatus(fmt.Errorf("failed to assume pod group placement: %w", err))}
		}
		var placed revertFns
		r := s.defaultPodGroupAlgorithm(ctx, schedFramework, newPlacementCycleState(groupState), group, &placed)
		placed.revert()
		if r.status.IsError() {
			return r
		}
		if first == nil {
			first = r
		}
		result := metrics.InfeasibleResult
		if r.status.IsSuccess() {
			result = metrics.FeasibleResult
			feasible = append(feasible, feasiblePlacement{placement: placement, result: r})
		}
		s.metrics.PlacementEvaluated(result, schedFramework.ProfileName(), time.Since(start))
	}
	// 3. Which placement reports is arbitrary, kube-scheduler says; it is
	// the first tried.
	if len(feasible) == 0 {
		first.status = framework.NewStatus(framework.Unschedulable,
			fmt.Sprintf("0/%d placements are available, first placement status: %v", len(placements),
				first.status.AsError())).WithError(errPodGroupUnschedulable)
		return first
	}
	// 4.
	best, status := s.findBestPlacement(ctx, schedFramework, groupState, group, feasible)
	if !status.IsSuccess() {
		return &podGroupResult{status: status}
	}
	return best
}

// feasiblePlacement is a placement that held the group, with the result of
// trying the group there.
type feasiblePlacement struct {
	placement *framework.Placement
	result    *podGroupResult
}

// findBestPlacement returns the result of the feasible placement with the
// highest PlacementScore total; ties are broken at random, as
// kube-scheduler does. A lone placement is not scored.
func (s *Scheduler) findBestPlacement(ctx context.Context, schedFramework *framework.Framework,
	groupState *framework.CycleState, group *framework.QueuedPodGroupInfo,
	feasible []feasiblePlacement) (*podGroupResult, *framework.Status) {
	if len(feasible) == 1 {
		return feasible[0].result, nil
	}
	assignments := make([]*framework.PodGroupAssignments, len(feasible))
	states := make([]*framework.CycleState, len(feasible))
	for i, f := range feasible {
		assignments[i] = proposedAssignments(f.result)
		assignments[i].Placement = f.placement
		states[i] = f.result.placementState
	}
	scores, status := schedFramework.RunPlacementScorePlugins(ctx, groupState, group.PodGroupInfo, assignments, states)
	if !status.IsSuccess() {
		return nil, status
	}
	if logger := klog.FromContext(ctx).V(10); logger.Enabled() {
		for _, score := range scores {
			for _, ps := range score.Scores {
				logger.Info("Plugin scored placement for podGroup", "plugin", ps.Name,
					"placement", score.Placement.Name, "score", ps.Score)
			}
			logger.Info("Calculated placement's final score for podGroup", "placement", score.Placement.Name,
				"score", score.TotalScore)
		}
	}
	best, bestDraw := 0, s.randInt()
	for i := 1; i < len(scores); i++ {
		draw := s.randInt()
		if scores[i].TotalScore > scores[best].TotalScore ||
			scores[i].TotalScore == scores[best].TotalScore && draw > bestDraw {
			best, bestDraw = i, draw
		}
	}
	return feasible[best].result, nil
}

// completePodGroupResult gives each member the algorithm did not reach a
// copy of the group's status (shape 3).
func completePodGroupResult(group *framework.QueuedPodGroupInfo, res *podGroupResult) {
	for _, m := range group.Members[len(res.members):] {
		res.members = append(res.members, memberResult{podInfo: m, state: framework.NewCycleState(),
			status: res.status.Clone()})
	}
}

// proposedAssignments are the members a result placed, for a
// PodGroupPostFilter plugin.
func proposedAssignments(res *podGroupResult) *framework.PodGroupAssignments {
	out := &framework.PodGroupAssignments{}
	for _, mr := range res.members {
		if mr.status.IsSuccess() && mr.result.suggestedHost != "" {
			out.ProposedAssignments = append(out.ProposedAssignments, framework.ProposedAssignment{
				PodInfo: mr.podInfo.PodInfo, NodeName: mr.result.suggestedHost, State: mr.state})
		}
	}
	return out
}

// applyPodGroupPostFilterResult folds the PodGroupPostFilter's verdict into
// the result: on Success the group waits on preemption and its members get
// their nominated nodes; an Error replaces the group's status; otherwise
// the verdict's message is appended to the group's.
func applyPodGroupPostFilterResult(res *podGroupResult, pfResult *framework.PodGroupPostFilterResult,
	status *framework.Status) {
	if status.IsSuccess() {
		res.waitingOnPreemption = true
		for i := range res.members {
			pod := res.members[i].podInfo.Pod
			if pfResult != nil {
				if info, ok := pfResult.NominatingInfos[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}]; ok {
					res.members[i].result.nominatingInfo = info
				}
			}
		}
	}
	if status.IsError() {
		res.status = status
		return
	}
	res.status.AppendReason(status.Message())
}

// submitPodGroupResult acts on the result, member by member, in the order
// they were tried, then writes the PodGroup's condition and tells the queue
// the group's attempt ended. The members' attempt records carry the group's
// attempt, built once beforehand (record_podgroup.go).
func (s *Scheduler) submitPodGroupResult(ctx, bindCtx context.Context, schedFramework *framework.Framework,
	group *framework.QueuedPodGroupInfo, res *podGroupResult, rootStatus *framework.Status, start time.Time) {
	logger := klog.FromContext(ctx)
	groupRecord := s.recordPodGroupAttempt(group, res, rootStatus)
	scheduled, unschedulable := 0, 0
	for _, mr := range res.members {
		mctx := klog.NewContext(ctx, klog.LoggerWithValues(logger, "pod", klog.KObj(mr.podInfo.Pod)))
		mr.result.podGroup = groupRecord
		out := memberOutcomeOf(res, mr)
		if out.bind {
			mr.state.InPodGroupCycle = false
			mr.state.SetPodGroupCycleState(nil)
			if s.submitMember(mctx, bindCtx, schedFramework, mr) {
				scheduled++
			} else {
				unschedulable++
			}
			continue
		}
		rec := s.recordAttempt(schedFramework, mr.state, mr.podInfo, mr.result)
		s.handleSchedulingFailure(mctx, schedFramework, mr.podInfo, out.status, out.nominating, mr.schedulingStart(), rec)
		unschedulable++
	}
	s.writePodGroupCondition(ctx, group, res, scheduled, unschedulable)
	result := metrics.ErrorResult
	switch {
	case res.status.IsSuccess():
		result = metrics.ScheduledResult
	case res.status.IsRejected() && res.waitingOnPreemption:
		result = metrics.WaitingOnPreemptionResult
	case res.status.IsRejected():
		result = metrics.UnschedulableResult
	}
	s.metrics.PodGroupAttempt(result, schedFramework.ProfileName(), time.Since(start))
	if err := s.Queue.AddAttemptedPodGroupIfNeeded(logger, group, rootStatus); err != nil {
		logger.Error(err, "Requeueing the pod group failed")
	}
}

// memberOutcome is what becomes of one member of a group's attempt: it goes
// on to binding, or it fails with status, in its shape of message, and its
// nominated node changes as nominating says.
type memberOutcome struct {
	bind       bool
	status     *framework.Status
	nominating *framework.NominatingInfo
	shape      attempt.Shape
}

// memberOutcomeOf decides a member's outcome from the group's result: one
// case per way a member can end, in kube-scheduler's order.
func memberOutcomeOf(res *podGroupResult, mr memberResult) memberOutcome {
	fail := func(status *framework.Status, nominating *framework.NominatingInfo, shape attempt.Shape) memberOutcome {
		return memberOutcome{status: status, nominating: nominating, shape: shape}
	}
	switch {
	case res.status.IsError() && mr.status.IsError():
		return fail(mr.status, clearNominatedNode, attempt.ShapeError)
	case res.status.IsError():
		return fail(res.status, clearNominatedNode, attempt.ShapeError)
	case !mr.tried:
		return fail(mr.status, mr.result.nominatingInfo, attempt.ShapeNotTried)
	case !mr.status.IsSuccess():
		return fail(mr.status, mr.result.nominatingInfo, attempt.ShapeFitNowhere)
	case res.status.IsSuccess():
		return memberOutcome{bind: true}
	case res.status.IsRejected() && res.waitingOnPreemption:
		return fail(res.status, mr.result.nominatingInfo, attempt.ShapePlacedGroupFailed)
	case res.status.IsRejected():
		return fail(framework.NewStatus(framework.Unschedulable, res.status.Message()).WithError(errPodGroupUnschedulable),
			clearNominatedNode, attempt.ShapePlacedGroupFailed)
	}
	return fail(framework.AsStatus(fmt.Errorf("received unexpected pod group scheduling algorithm status code: %s",
		res.status.Code())), clearNominatedNode, attempt.ShapeError)
}

// submitMember starts a placed member's binding: assumed in the cache,
// Reserve, Permit (where GangScheduling holds it until minCount are
// placed), then its binding cycle in a goroutine, as scheduleOnePod does.
// It reports whether the member went on to bind.
func (s *Scheduler) submitMember(ctx, bindCtx context.Context, schedFramework *framework.Framework,
	mr memberResult) bool {
	start := mr.schedulingStart()
	node := mr.result.suggestedHost
	mr.result.nominatingInfo = clearNominatedNode
	mr.result.record = s.recordAttempt(schedFramework, mr.state, mr.podInfo, mr.result)
	assumedPodInfo, status := s.prepareForBindingCycle(ctx, mr.state, schedFramework, mr.podInfo, node)
	if !status.IsSuccess() {
		s.handleSchedulingFailure(ctx, schedFramework, assumedPodInfo, status, clearNominatedNode, start,
			mr.result.record)
		return false
	}
	result := mr.result
	result.start = start
	logger := klog.FromContext(ctx)
	s.bindings.Add(1)
	go func() {
		defer s.bindings.Done()
		s.runBindingCycle(klog.NewContext(bindCtx, logger), mr.state, schedFramework, result, assumedPodInfo)
	}()
	return true
}

// writePodGroupCondition writes PodGroupInitiallyScheduled for the
// attempt (podGroupCondition).
func (s *Scheduler) writePodGroupCondition(ctx context.Context, group *framework.QueuedPodGroupInfo,
	res *podGroupResult, scheduled, unschedulable int) {
	logger := klog.FromContext(ctx)
	cond := podGroupCondition(res)
	switch cond.Reason {
	case podGroupReasonScheduled:
		logger.V(2).Info("Successfully scheduled a pod group", "scheduledPods", scheduled,
			"unschedulablePods", unschedulable)
	case podGroupReasonUnschedulable:
		logger.V(2).Info("Unable to schedule a pod group", "unschedulablePods", unschedulable,
			"waitingOnPreemption", res.waitingOnPreemption, "err", res.status.Message())
	default:
		logger.Error(res.status.AsError(), "Error scheduling pod group", "errorPods", group.Size())
	}
	s.updatePodGroupCondition(ctx, group.PodGroup, cond)
}

// podGroupCondition is PodGroupInitiallyScheduled for the attempt: True
// once the group was scheduled, else False with the reason and the group's
// message.
func podGroupCondition(res *podGroupResult) metav1.Condition {
	cond := metav1.Condition{Type: podGroupInitiallyScheduled}
	switch {
	case res.status.IsSuccess():
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, podGroupReasonScheduled, res.status.Message()
	case res.status.IsRejected():
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, podGroupReasonUnschedulable, res.status.Message()
	default:
		cond.Status, cond.Reason = metav1.ConditionFalse, podGroupReasonSchedulerError
		cond.Message = res.status.AsError().Error()
	}
	return cond
}

// updatePodGroupCondition patches the condition into the PodGroup's status,
// unless it would take a True condition back to False: once scheduled, a
// group stays so, whatever later attempts for extra members say.
func (s *Scheduler) updatePodGroupCondition(ctx context.Context, pg *schedulingv1beta1.PodGroup, cond metav1.Condition) {
	existing := apimeta.FindStatusCondition(pg.Status.Conditions, cond.Type)
	if existing != nil && existing.Status == metav1.ConditionTrue && cond.Status != metav1.ConditionTrue {
		return
	}
	cond.ObservedGeneration = pg.Generation
	status := pg.Status.DeepCopy()
	if !apimeta.SetStatusCondition(&status.Conditions, cond) {
		return
	}
	if err := patchPodGroupStatus(ctx, s.client, pg, status); err != nil {
		klog.FromContext(ctx).Error(err, "Failed to update PodGroup status", "podGroup", klog.KObj(pg))
	}
}

// patchPodGroupStatus writes status as the PodGroup's, by a merge patch of
// its conditions (the scheduler owns no other part of it), again after a
// conflict or a Retriable error, as kube-scheduler's PatchPodGroupStatus.
func patchPodGroupStatus(ctx context.Context, client kubernetes.Interface, pg *schedulingv1beta1.PodGroup,
	status *schedulingv1beta1.PodGroupStatus) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": status.Conditions}})
	if err != nil {
		return err
	}
	return podstatus.WithRetries(podstatus.RetriableWithConflict, func() error {
		_, err := client.SchedulingV1beta1().PodGroups(pg.Namespace).Patch(ctx, pg.Name, types.MergePatchType, patch,
			metav1.PatchOptions{}, "status")
		return err
	})
}
