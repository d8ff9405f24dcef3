package minisched

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/minisched/framework"
)

// TestRecordPodGroupAttempt builds the group part of the members' records
// from pod-group results made by hand, as the cycle returns them (one pod
// of the group, done, is bound before the cycle), and checks each member's
// message: the four shapes of the file comment of schedule_one_podgroup.go.
func TestRecordPodGroupAttempt(t *testing.T) {
	const noFit = "0/2 nodes are available: 2 Insufficient cpu."
	unschedulable := func(reasons ...string) *framework.Status {
		return framework.NewStatus(framework.Unschedulable, reasons...)
	}
	placed := func(node string) memberResult {
		return memberResult{status: nil, result: scheduleResult{suggestedHost: node}, tried: true}
	}
	rejected := memberResult{status: unschedulable(noFit), tried: true}
	nominated := func(mr memberResult, node string) memberResult {
		mr.result.nominatingInfo = &framework.NominatingInfo{NominatingMode: framework.ModeOverride, NominatedNodeName: node}
		return mr
	}
	tests := []struct {
		name     string
		minCount int32 // 0: basic
		// members are a, b and c's results; status the group's (the
		// PodGroupPostFilter's message, if any, is appended to it
		// after the algorithm's verdict is kept).
		members             []memberResult
		status              *framework.Status
		postFilter          string
		waitingOnPreemption bool
		want                *attempt.GroupAttempt
		wantMessages        []string // a, b, c's FailedScheduling; "" for one going on to binding
	}{
		{
			name: "a gang that can no longer reach minCount: placed, fitted nowhere, never tried", minCount: 4,
			members: []memberResult{placed("n1"), rejected,
				{status: unschedulable("minCount (4) cannot be satisfied: 2 scheduled, 1 remaining")}},
			status:     unschedulable("minCount (4) cannot be satisfied: 2 scheduled, 1 remaining"),
			postFilter: "pod group preemption: No preemption victims found for incoming preemptor",
			want: &attempt.GroupAttempt{Policy: attempt.PolicyGang, MinCount: 4, Members: []attempt.GroupMember{
				{Pod: "a", Tried: true, Node: "n1", Shape: attempt.ShapePlacedGroupFailed},
				{Pod: "b", Tried: true, Message: noFit, Shape: attempt.ShapeFitNowhere},
				{Pod: "c", Shape: attempt.ShapeNotTried}},
				Feasibility: &attempt.Feasibility{MinCount: 4, Scheduled: 2, Remaining: 1,
					Reason: "minCount (4) cannot be satisfied: 2 scheduled, 1 remaining"},
				Result: attempt.Unschedulable,
				Message: "minCount (4) cannot be satisfied: 2 scheduled, 1 remaining, " +
					"pod group preemption: No preemption victims found for incoming preemptor"},
			wantMessages: []string{
				"pod group is unschedulable, minCount (4) cannot be satisfied: 2 scheduled, 1 remaining, " +
					"pod group preemption: No preemption victims found for incoming preemptor",
				noFit,
				"minCount (4) cannot be satisfied: 2 scheduled, 1 remaining"},
		},
		{
			name:    "a basic group placed but for one member: the others go on to binding",
			members: []memberResult{placed("n1"), rejected, placed("n2")},
			want: &attempt.GroupAttempt{Policy: attempt.PolicyBasic, MinCount: 1, Members: []attempt.GroupMember{
				{Pod: "a", Tried: true, Node: "n1"},
				{Pod: "b", Tried: true, Message: noFit, Shape: attempt.ShapeFitNowhere},
				{Pod: "c", Tried: true, Node: "n2"}},
				Feasibility: &attempt.Feasibility{MinCount: 1, Scheduled: 3, Satisfied: true},
				Result:      attempt.Scheduled},
			wantMessages: []string{"", noFit, ""},
		},
		{
			name:    "a basic group none of whose members fits: the group is unschedulable, though minCount was met before",
			members: []memberResult{rejected, rejected, rejected},
			status:  framework.NewStatus(framework.Unschedulable).WithError(errPodGroupUnschedulable),
			want: &attempt.GroupAttempt{Policy: attempt.PolicyBasic, MinCount: 1, Members: []attempt.GroupMember{
				{Pod: "a", Tried: true, Message: noFit, Shape: attempt.ShapeFitNowhere},
				{Pod: "b", Tried: true, Message: noFit, Shape: attempt.ShapeFitNowhere},
				{Pod: "c", Tried: true, Message: noFit, Shape: attempt.ShapeFitNowhere}},
				Feasibility: &attempt.Feasibility{MinCount: 1, Scheduled: 1, Reason: "pod group is unschedulable"},
				Result:      attempt.Unschedulable, Message: "pod group is unschedulable"},
			wantMessages: []string{noFit, noFit, noFit},
		},
		{
			name: "a gang waiting on preemption: its members nominated", minCount: 4,
			members: []memberResult{nominated(placed("n1"), "n1"), nominated(rejected, "n2"),
				nominated(memberResult{status: unschedulable("minCount (4) cannot be satisfied: 2 scheduled, 1 remaining")}, "n2")},
			status:              unschedulable("minCount (4) cannot be satisfied: 2 scheduled, 1 remaining"),
			postFilter:          "pod group preemption: found a placement for podgroup, preempting 1 victims",
			waitingOnPreemption: true,
			want: &attempt.GroupAttempt{Policy: attempt.PolicyGang, MinCount: 4, Members: []attempt.GroupMember{
				{Pod: "a", Tried: true, Node: "n1", NominatedNode: "n1", Shape: attempt.ShapePlacedGroupFailed},
				{Pod: "b", Tried: true, Message: noFit, NominatedNode: "n2", Shape: attempt.ShapeFitNowhere},
				{Pod: "c", NominatedNode: "n2", Shape: attempt.ShapeNotTried}},
				Feasibility: &attempt.Feasibility{MinCount: 4, Scheduled: 2, Remaining: 1,
					Reason: "minCount (4) cannot be satisfied: 2 scheduled, 1 remaining"},
				Result: attempt.Unschedulable, WaitingOnPreemption: true,
				Message: "minCount (4) cannot be satisfied: 2 scheduled, 1 remaining, " +
					"pod group preemption: found a placement for podgroup, preempting 1 victims"},
			wantMessages: []string{
				"minCount (4) cannot be satisfied: 2 scheduled, 1 remaining, " +
					"pod group preemption: found a placement for podgroup, preempting 1 victims",
				noFit,
				"minCount (4) cannot be satisfied: 2 scheduled, 1 remaining"},
		},
		{
			name: "a member's error ends the cycle: every member says it", minCount: 2,
			members: []memberResult{placed("n1"), {status: framework.AsStatus(errors.New("boom")), tried: true},
				{status: framework.AsStatus(errors.New("boom"))}},
			status: framework.AsStatus(errors.New("failed to schedule other pod from a pod group: boom")),
			want: &attempt.GroupAttempt{Policy: attempt.PolicyGang, MinCount: 2, Members: []attempt.GroupMember{
				{Pod: "a", Tried: true, Node: "n1", Shape: attempt.ShapeError},
				{Pod: "b", Tried: true, Message: "boom", Shape: attempt.ShapeError},
				{Pod: "c", Shape: attempt.ShapeError}},
				Result: attempt.SchedulerError, Message: "failed to schedule other pod from a pod group: boom"},
			wantMessages: []string{"failed to schedule other pod from a pod group: boom", "boom", "boom"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pg := st.MakePodGroup().Namespace("ns").Name("g")
			if tt.minCount > 0 {
				pg.Gang(tt.minCount)
			}
			c := cache.New(0, cache.WithPodGroups())
			logger := klog.Background()
			c.AddNode(logger, st.MakeNode().Name("n1").Obj())
			c.AddPodGroup(pg.Obj())
			if err := c.AddPod(logger, st.MakePod().Namespace("ns").Name("done").UID("done").PodGroup("g").
				NodeName("n1").Obj()); err != nil {
				t.Fatal(err)
			}
			snapshot := cache.NewEmptySnapshot()
			if err := c.UpdateSnapshot(logger, snapshot); err != nil {
				t.Fatal(err)
			}
			group := framework.NewQueuedPodGroupInfo(pg.Obj(), time.Now())
			group.Attempts = 2
			res := &podGroupResult{status: tt.status, waitingOnPreemption: tt.waitingOnPreemption}
			for i, name := range []string{"a", "b", "c"} {
				pod := st.MakePod().Namespace("ns").Name(name).UID(name).PodGroup("g").Obj()
				m := framework.NewQueuedPodInfo(pod, time.Now())
				group.AddMember(m)
				mr := tt.members[i]
				mr.podInfo = m
				res.members = append(res.members, mr)
			}
			rootStatus := res.status.Clone()
			if tt.postFilter != "" {
				res.status.AppendReason(tt.postFilter)
			}

			s := &Scheduler{snapshot: snapshot}
			if got := s.recordPodGroupAttempt(group, res, rootStatus); got != nil {
				t.Fatalf("with nobody reading records: %+v, want nil", got)
			}
			s.observer = func(Attempt) {}
			got := s.recordPodGroupAttempt(group, res, rootStatus)
			want := tt.want
			want.PodGroup, want.Attempt, want.ScheduledBefore = "g", 2, 1
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("group attempt (-want +got):\n%s", diff)
			}
			var messages []string
			for _, mr := range res.members {
				messages = append(messages, memberOutcomeOf(res, mr).status.Message())
			}
			if diff := cmp.Diff(tt.wantMessages, messages); diff != "" {
				t.Errorf("the members' messages (-want +got):\n%s", diff)
			}
		})
	}
}
