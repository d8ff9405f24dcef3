package explain

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/minisched/minisched/minisched/attempt"
)

func TestRender(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	filters := []string{"NodeUnschedulable", "TaintToleration", "NodeResourcesFit"}
	tests := []struct {
		name string
		rec  *attempt.Record
		wide bool
		want string
	}{
		{
			name: "pending: each node's failing plugin, the plugins after it not run, preemption's nomination",
			rec: &attempt.Record{Version: 1, Time: at, Profile: "p", Attempt: 2,
				Result: attempt.Unschedulable, NominatedNode: "n1", Victims: []string{"ns/low"},
				Message: "0/3 nodes are available: 1 node(s) had untolerated taint {a: b}, 2 Insufficient cpu.",
				Filters: filters, NumNodes: 3,
				Nodes: []attempt.NodeRecord{
					{Name: "n1", RejectedBy: "NodeResourcesFit", Reason: "Insufficient cpu"},
					{Name: "n2", RejectedBy: "TaintToleration", Reason: "node(s) had untolerated taint {a: b}",
						Unresolvable: true},
					{Name: "n3", RejectedBy: "NodeResourcesFit", Reason: "Insufficient cpu"},
				}},
			want: `Pod ns/web: Unschedulable (attempt 2, profile p, 2026-01-02 03:04:05)

Filter (✓ passed, – not run: a node's plugins stop at its first failure):
NODE  TaintToleration                       NodeResourcesFit
n1    ✓                                     Insufficient cpu
n2    node(s) had untolerated taint {a: b}  –
n3    ✓                                     Insufficient cpu
Rejected no node: NodeUnschedulable

No node: 0/3 nodes are available: 1 node(s) had untolerated taint {a: b}, 2 Insufficient cpu.
Nominated: n1 (preemption makes room there; victims: ns/low)
`,
		},
		{
			name: "volumes: each node's first failing volume plugin, one of them with two reasons",
			rec: &attempt.Record{Version: 1, Time: at, Profile: "p", Attempt: 1, Result: attempt.Unschedulable,
				Message: "0/3 nodes are available: 1 node(s) did not have enough free storage, " +
					"1 node(s) didn't match PersistentVolume's node affinity, 1 node(s) exceed max volume count, " +
					"1 node(s) had no available volume zone. preemption: 0/3 nodes are available: " +
					"1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.",
				Filters:  []string{"NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone"},
				NumNodes: 3,
				Nodes: []attempt.NodeRecord{
					{Name: "n1", RejectedBy: "NodeVolumeLimits", Reason: "node(s) exceed max volume count"},
					{Name: "n2", RejectedBy: "VolumeBinding", Unresolvable: true, Reason: "node(s) didn't match " +
						"PersistentVolume's node affinity, node(s) did not have enough free storage"},
					{Name: "n3", RejectedBy: "VolumeZone", Reason: "node(s) had no available volume zone",
						Unresolvable: true},
				}},
			want: `Pod ns/web: Unschedulable (attempt 1, profile p, 2026-01-02 03:04:05)

Filter (✓ passed, – not run: a node's plugins stop at its first failure):
NODE  NodeVolumeLimits                 VolumeBinding                                                                                    VolumeZone
n1    node(s) exceed max volume count  –                                                                                                –
n2    ✓                                node(s) didn't match PersistentVolume's node affinity, node(s) did not have enough free storage  –
n3    ✓                                ✓                                                                                                node(s) had no available volume zone
Rejected no node: NodeResourcesFit, VolumeRestrictions

No node: 0/3 nodes are available: 1 node(s) did not have enough free storage, 1 node(s) didn't match PersistentVolume's node affinity, 1 node(s) exceed max volume count, 1 node(s) had no available volume zone. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.
`,
		},
		{
			name: "bound: the scores, the winner and the runner-up",
			rec: &attempt.Record{Version: 1, Time: at, Profile: "p", Attempt: 1,
				Result: attempt.Scheduled, Node: "n2", Filters: filters, NumNodes: 4, NotEvaluated: 1,
				Scorers: []attempt.Scorer{{Name: "NodeResourcesFit", Weight: 1}, {Name: "TaintToleration", Weight: 3}},
				Nodes: []attempt.NodeRecord{
					{Name: "n1", Scores: [][3]int64{{40, 40, 40}, {0, 100, 300}}, Total: 340},
					{Name: "n2", Scores: [][3]int64{{90, 90, 90}, {0, 100, 300}}, Total: 390},
					{Name: "n3", RejectedBy: "NodeUnschedulable", Reason: "node(s) were unschedulable"},
				}},
			want: `Pod ns/web: Scheduled (attempt 1, profile p, 2026-01-02 03:04:05)

Filter (✓ passed, – not run: a node's plugins stop at its first failure):
NODE  NodeUnschedulable
n2    ✓
n1    ✓
n3    node(s) were unschedulable
Rejected no node: TaintToleration, NodeResourcesFit

Score (weighted: normalised score × weight; --wide shows raw and normalised):
NODE  NodeResourcesFit×1  TaintToleration×3  TOTAL
n2    90                  300                390
n1    40                  300                340

Not evaluated: 1 of 4 nodes (the search stops once it has found enough feasible nodes, percentageOfNodesToScore, or at a nominated or hinted node that fits).
Selected: n2 (total 390; next best n1, 340)
`,
		},
		{
			name: "wide: every Filter plugin, raw/normalised/weighted",
			wide: true,
			rec: &attempt.Record{Version: 1, Time: at, Profile: "p", Attempt: 1,
				Result: attempt.Scheduled, Node: "n1", Filters: filters[:2], Skipped: []string{"TaintToleration"},
				NumNodes: 2, Scorers: []attempt.Scorer{{Name: "TaintToleration", Weight: 3}},
				Nodes: []attempt.NodeRecord{
					{Name: "n1", Scores: [][3]int64{{0, 100, 300}}, Total: 300},
					{Name: "n2", Scores: [][3]int64{{0, 100, 300}}, Total: 300},
				}},
			want: `Pod ns/web: Scheduled (attempt 1, profile p, 2026-01-02 03:04:05)

Filter (✓ passed, – not run: a node's plugins stop at its first failure):
NODE  NodeUnschedulable  TaintToleration
n1    ✓                  skip
n2    ✓                  skip
Skipped (their PreFilter had nothing to check): TaintToleration

Score (raw/normalised/weighted; an extender's 0–10 is normalised to 0–100):
NODE  TaintToleration×3  TOTAL
n1    0/100/300          300
n2    0/100/300          300

Selected: n1 (total 300, tied with n2: a tie goes to the node found first, or at random among nodes an extender scored)
`,
		},
		{
			name: "bound on OpportunisticBatching's hint: one node filtered, none scored",
			rec: &attempt.Record{Version: 1, Time: at, Profile: "p", Attempt: 1,
				Result: attempt.Scheduled, Node: "n2", Hint: "n2", Filters: filters, NumNodes: 3, NotEvaluated: 2,
				Nodes: []attempt.NodeRecord{{Name: "n2"}}},
			want: `Pod ns/web: Scheduled (attempt 1, profile p, 2026-01-02 03:04:05)

Filter: every plugin passed on the 1 node(s) examined: n2

Not evaluated: 2 of 3 nodes (the search stops once it has found enough feasible nodes, percentageOfNodesToScore, or at a nominated or hinted node that fits).
Selected: n2 (OpportunisticBatching's hint: the best node left of the ranking an alike pod's cycle kept; no other node was filtered or scored)
`,
		},
		{
			name: "PreFilter rejected the pod on every node",
			rec: &attempt.Record{Version: 1, Time: at, Profile: "p", Attempt: 3,
				Result: attempt.Unschedulable, NumNodes: 5, Message: "0/5 nodes are available: x.",
				PreFilter: &attempt.Verdict{Plugin: "VolumeBinding", Reason: "pvc not found"}},
			want: `Pod ns/web: Unschedulable (attempt 3, profile p, 2026-01-02 03:04:05)

PreFilter: VolumeBinding rejected the pod before any node was examined, on all 5 nodes:
  pvc not found

No node: 0/5 nodes are available: x.
`,
		},
		{
			name: "a record cut to size says what it left out",
			rec: &attempt.Record{Version: 1, Time: at, Profile: "p", Attempt: 1,
				Result: attempt.Unschedulable, Message: "0/900 nodes are available.", Filters: filters, NumNodes: 900,
				Nodes:   []attempt.NodeRecord{{Name: "n1", RejectedBy: "NodeResourcesFit", Reason: "Insufficient cpu"}},
				Omitted: &attempt.Omitted{Nodes: 899, Reasons: map[string]int{"Insufficient cpu": 800, "x": 99}}},
			want: `Pod ns/web: Unschedulable (attempt 1, profile p, 2026-01-02 03:04:05)

Filter (✓ passed, – not run: a node's plugins stop at its first failure):
NODE  NodeResourcesFit
n1    Insufficient cpu
Rejected no node: NodeUnschedulable, TaintToleration

Left out of the record to bound its size: 899 nodes (800 Insufficient cpu, 99 x).
No node: 0/900 nodes are available.
`,
		},
		{
			name: "a gang member placed in the simulation whose group failed (shape 1)",
			rec: &attempt.Record{Version: 1, Time: at, Profile: "p", Attempt: 2, Result: attempt.Unschedulable,
				Message: "pod group is unschedulable, minCount (3) cannot be satisfied: 1 scheduled, 1 remaining",
				Filters: filters, NumNodes: 2,
				Nodes: []attempt.NodeRecord{{Name: "n1"}, {Name: "n2", RejectedBy: "NodeResourcesFit", Reason: "Insufficient cpu"}},
				Group: gang(attempt.GroupMember{Pod: "web", Tried: true, Node: "n1", Shape: attempt.ShapePlacedGroupFailed})},
			want: `Pod ns/web: Unschedulable (attempt 2, profile p, 2026-01-02 03:04:05)

Pod group ns/shop (gang, minCount 3), group attempt 2: Unschedulable. Its members, in the order the cycle tried them:
MEMBER          IN THE SIMULATION                             MESSAGE
web (this pod)  placed on n1                                  1: the group's
db              0/2 nodes are available: 2 Insufficient cpu.  2: its own
cache           not tried                                     3: the group's status then
Scheduled before this cycle (assumed or bound): 0.
PlacementFeasible at the end: minCount 3: 1 scheduled, 1 remaining → minCount (3) cannot be satisfied: 1 scheduled, 1 remaining.
The group: Unschedulable: minCount (3) cannot be satisfied: 1 scheduled, 1 remaining
This pod was placed in the simulation, but its group failed: its message is the group's (shape 1).

Filter (✓ passed, – not run: a node's plugins stop at its first failure):
NODE  NodeResourcesFit
n1    ✓
n2    Insufficient cpu
Rejected no node: NodeUnschedulable, TaintToleration

Not scheduled: pod group is unschedulable, minCount (3) cannot be satisfied: 1 scheduled, 1 remaining
`,
		},
		{
			name: "a gang member never tried (shape 3), its group waiting on preemption",
			rec: &attempt.Record{Version: 1, Time: at, Profile: "p", Attempt: 2, Result: attempt.Unschedulable,
				Message: "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining", NumNodes: 2, NominatedNode: "n2",
				Group: func() *attempt.GroupAttempt {
					g := gang(attempt.GroupMember{Pod: "web", NominatedNode: "n2", Shape: attempt.ShapeNotTried})
					g.Members[2], g.Members[0] = g.Members[0], g.Members[2]
					g.WaitingOnPreemption = true
					g.Message += ", pod group preemption: found a placement for podgroup, preempting 1 victims"
					return g
				}()},
			want: `Pod ns/web: Unschedulable (attempt 2, profile p, 2026-01-02 03:04:05)

Pod group ns/shop (gang, minCount 3), group attempt 2: Unschedulable. Its members, in the order the cycle tried them:
MEMBER          IN THE SIMULATION                             MESSAGE
cache           not tried                                     3: the group's status then
db              0/2 nodes are available: 2 Insufficient cpu.  2: its own
web (this pod)  not tried; nominated to n2                    3: the group's status then
Scheduled before this cycle (assumed or bound): 0.
PlacementFeasible at the end: minCount 3: 1 scheduled, 1 remaining → minCount (3) cannot be satisfied: 1 scheduled, 1 remaining.
The group: Unschedulable: minCount (3) cannot be satisfied: 1 scheduled, 1 remaining, pod group preemption: found a placement for podgroup, preempting 1 victims (waiting on preemption: its members are nominated, and the group is retried)
This pod was never tried, the cycle having stopped once minCount could no longer be met: its message is the group's status at that moment (shape 3).

Filter: no node was examined (2 nodes).

Not scheduled: minCount (3) cannot be satisfied: 1 scheduled, 1 remaining
Nominated: n2 (preemption makes room there; victims: none evicted in this attempt)
`,
		},
		{
			name: "a basic group's member bound, in a record cut to size",
			rec: &attempt.Record{Version: 1, Time: at, Profile: "p", Attempt: 1, Result: attempt.Scheduled, Node: "n1",
				Filters: filters, NumNodes: 1, Nodes: []attempt.NodeRecord{{Name: "n1"}},
				Group: &attempt.GroupAttempt{PodGroup: "batch", Policy: attempt.PolicyBasic, MinCount: 1, Attempt: 1,
					ScheduledBefore: 4, Members: []attempt.GroupMember{{Pod: "web", Tried: true, Node: "n1"}},
					OmittedMembers: 500, Result: attempt.Scheduled,
					Feasibility: &attempt.Feasibility{MinCount: 1, Scheduled: 5, Satisfied: true}}},
			want: `Pod ns/web: Scheduled (attempt 1, profile p, 2026-01-02 03:04:05)

Pod group ns/batch (basic), group attempt 1: Scheduled. Its members, in the order the cycle tried them:
MEMBER          IN THE SIMULATION  MESSAGE
web (this pod)  placed on n1       none: went on to binding
Left out of the record to bound its size: 500 members (the last ones tried).
Scheduled before this cycle (assumed or bound): 4.
PlacementFeasible at the end: minCount 1: 5 scheduled, 0 remaining → satisfied.
The group: Scheduled
This pod was placed and its group scheduled: it went on to Reserve, Permit and binding.

Filter: every plugin passed on the 1 node(s) examined: n1

Selected: n1 (the only feasible node: nothing to rank)
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			Render(&b, "ns/web", tt.rec, Options{Wide: tt.wide})
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("Render (-want +got):\n%s", diff)
			}
			// The live view's text: the tables as data, printed.
			var fromTables strings.Builder
			RecordTables("ns/web", tt.rec, Options{Wide: tt.wide}).Write(&fromTables)
			if diff := cmp.Diff(tt.want, fromTables.String()); diff != "" {
				t.Errorf("RecordTables(...).Write (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseFailedScheduling(t *testing.T) {
	tests := []struct {
		name   string
		msg    string
		want   FailedScheduling
		wantOK bool
	}{
		{
			name: "reasons and preemption",
			msg: "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/x: }, " +
				"2 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
			want: FailedScheduling{NumNodes: 3, Reasons: []ReasonCount{
				{Nodes: 1, Reason: "node(s) had untolerated taint {node.kubernetes.io/x: }"},
				{Nodes: 2, Reason: "Insufficient cpu"}},
				PostFilter: "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."},
			wantOK: true,
		},
		{
			name: "a reason with a comma in it",
			msg:  "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules, or worse.",
			want: FailedScheduling{NumNodes: 2, Reasons: []ReasonCount{
				{Nodes: 2, Reason: "node(s) didn't match pod anti-affinity rules, or worse"}}},
			wantOK: true,
		},
		{
			name: "PreFilter: one reason for every node",
			msg:  `0/4 nodes are available: persistentvolumeclaim "data" not found.`,
			want: FailedScheduling{NumNodes: 4, Reasons: []ReasonCount{
				{Reason: `persistentvolumeclaim "data" not found`}}},
			wantOK: true,
		},
		{
			name: "PreFilter unresolvable, then DynamicResources' PostFilter fails: no preemption, \"not found\"",
			msg:  `0/2 nodes are available: persistentvolumeclaim "nope" not found. not found`,
			want: FailedScheduling{NumNodes: 2, Reasons: []ReasonCount{
				{Reason: `persistentvolumeclaim "nope" not found`}}, PostFilter: "not found"},
			wantOK: true,
		},
		{name: "something else", msg: "binding rejected: timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseFailedScheduling(tt.msg)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseFailedScheduling (-want +got):\n%s", diff)
			}
		})
	}
}

// gang is the attempt of the gang shop (minCount 3, nothing scheduled
// before) as its members' records carry it: web as given, then db, tried
// and placed nowhere, then cache, never tried.
func gang(web attempt.GroupMember) *attempt.GroupAttempt {
	return &attempt.GroupAttempt{PodGroup: "shop", Policy: attempt.PolicyGang, MinCount: 3, Attempt: 2,
		Members: []attempt.GroupMember{web,
			{Pod: "db", Tried: true, Message: "0/2 nodes are available: 2 Insufficient cpu.", Shape: attempt.ShapeFitNowhere},
			{Pod: "cache", Shape: attempt.ShapeNotTried}},
		Feasibility: &attempt.Feasibility{MinCount: 3, Scheduled: 1, Remaining: 1,
			Reason: "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining"},
		Result: attempt.Unschedulable, Message: "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining"}
}
