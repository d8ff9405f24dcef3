// The group part of a pod-group member's attempt record (chapter 19, the
// GenericWorkload gate): built once per attempt, from what the pod-group
// cycle returned, before any member is submitted; every member's record
// (record.go) carries it.

package minisched

import (
	"errors"
	"strings"

	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/minisched/framework"
)

// podGroupResults are the group's verdicts in a record, by the reason of
// the PodGroup condition that says them.
var podGroupResults = map[string]attempt.Result{
	podGroupReasonScheduled:      attempt.Scheduled,
	podGroupReasonUnschedulable:  attempt.Unschedulable,
	podGroupReasonSchedulerError: attempt.SchedulerError,
}

// recordPodGroupAttempt builds the attempt of group whose cycle returned
// res, rootStatus being the algorithm's status before the
// PodGroupPostFilter; nil when nobody reads records. It runs before the
// members are submitted, while the snapshot still counts the group's pods
// scheduled before the cycle (the algorithm undid its placements, and
// submitting assumes members in the cache, not in the snapshot).
func (s *Scheduler) recordPodGroupAttempt(group *framework.QueuedPodGroupInfo, res *podGroupResult,
	rootStatus *framework.Status) *attempt.GroupAttempt {
	if !s.recording() {
		return nil
	}
	cond := podGroupCondition(res)
	g := &attempt.GroupAttempt{
		PodGroup: group.Name, Policy: attempt.PolicyBasic, MinCount: framework.MinCount(group.PodGroup),
		Attempt: group.Attempts, Result: podGroupResults[cond.Reason],
		Message: truncate(cond.Message, attempt.MaxMessageBytes), WaitingOnPreemption: res.waitingOnPreemption,
	}
	if group.PodGroup.Spec.SchedulingPolicy.Gang != nil {
		g.Policy = attempt.PolicyGang
	}
	if st, err := s.snapshot.PodGroupStates().Get(group.Namespace, group.Name); err == nil {
		g.ScheduledBefore = st.ScheduledPodsCount()
	}
	placed, remaining := 0, 0
	for _, mr := range res.members {
		m := attempt.GroupMember{Pod: mr.podInfo.Pod.Name, Tried: mr.tried, Shape: memberOutcomeOf(res, mr).shape}
		switch {
		case !mr.tried:
			remaining++
		case mr.status.IsSuccess():
			m.Node = mr.result.suggestedHost
			placed++
		default:
			m.Message = truncate(mr.status.Message(), attempt.MaxMessageBytes)
		}
		if ni := mr.result.nominatingInfo; ni.Mode() == framework.ModeOverride {
			m.NominatedNode = ni.NominatedNodeName
		}
		g.Members = append(g.Members, m)
	}
	if !rootStatus.IsError() {
		g.Feasibility = &attempt.Feasibility{MinCount: g.MinCount, Scheduled: g.ScheduledBefore + placed,
			Remaining: remaining, Satisfied: rootStatus.IsSuccess(), Reason: feasibilityReason(rootStatus)}
	}
	return g
}

// feasibilityReason is the algorithm's status in its own words: the
// reasons after "pod group is unschedulable" (PlacementFeasible's, say),
// or that alone when there are none (no member was placed); "" on
// success.
func feasibilityReason(status *framework.Status) string {
	reasons := status.Reasons()
	if errors.Is(status.Err(), errPodGroupUnschedulable) && len(reasons) > 1 {
		reasons = reasons[1:]
	}
	return strings.Join(reasons, ", ")
}
