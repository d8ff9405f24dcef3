package queue

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/minisched/metrics"
)

// member starts a pod of the group "gang".
func member(name string) *st.PodWrapper { return makePod(name).PodGroup("gang") }

var gang = st.MakePodGroup().Name("gang").Gang(2).Priority(100).Obj()

// popGroup pops an entity that must be a pod group, and returns it with its
// members' names in the order its cycle tries them.
func popGroup(t *testing.T, q *PriorityQueue) (*framework.QueuedPodGroupInfo, []string) {
	t.Helper()
	if q.activeLen() == 0 {
		t.Fatalf("Pop on an empty activeQ would block")
	}
	e, err := q.Pop(testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	group, ok := e.(*framework.QueuedPodGroupInfo)
	if !ok {
		t.Fatalf("popped %T, want a pod group", e)
	}
	var names []string
	for _, m := range group.Members {
		names = append(names, m.Pod.Name)
	}
	return group, names
}

// failMembers puts every member of a popped group back, as the pod-group
// cycle's failure handling does, then ends the group's attempt with status.
func failMembers(t *testing.T, q *PriorityQueue, group *framework.QueuedPodGroupInfo, status *framework.Status) {
	t.Helper()
	logger := testLogger(t)
	for _, m := range group.Members {
		if err := q.AddUnschedulablePodIfNotPresent(logger, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.AddAttemptedPodGroupIfNeeded(logger, group, status); err != nil {
		t.Fatal(err)
	}
}

// TestPodGroupMembersQueueAsOne: members whose PodGroup has not been seen
// wait silently; once it is, they are one entity, popped whole, members in
// the order the cycle tries them; members that arrive while it is in flight
// wait pending, and the attempt's end makes them one entity again.
func TestPodGroupMembersQueueAsOne(t *testing.T) {
	logger := testLogger(t)
	q, clk := newTestQueue(newProfile(nil), WithPodGroups())
	q.Add(logger, member("b").Priority(100).Obj())
	q.Add(logger, member("a").Priority(100).Obj())
	for _, uid := range []types.UID{"a", "b"} {
		if loc := q.Locate(uid); loc != IncompletePodGroupPods {
			t.Fatalf("before the PodGroup, %s is in %q, want %q", uid, loc, IncompletePodGroupPods)
		}
	}
	q.AddPodGroup(logger, gang)
	for _, uid := range []types.UID{"a", "b"} {
		if loc := q.Locate(uid); loc != ActiveQ {
			t.Fatalf("after the PodGroup, %s is in %q, want %q", uid, loc, ActiveQ)
		}
	}
	if counts := q.PendingPodCounts(); counts["active"] != 2 {
		t.Errorf("pending pod counts %v, want 2 active", counts)
	}
	group, names := popGroup(t, q)
	// Same priority and attempts: a, the earlier... both were added at
	// startTime, so the name decides.
	if diff := cmp.Diff([]string{"a", "b"}, names); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
	if loc := q.Locate("a"); loc != InFlight {
		t.Errorf("popped member a is in %q, want in flight", loc)
	}
	q.Add(logger, member("c").Priority(100).Obj())
	if loc := q.Locate("c"); loc != PendingPodGroupPods {
		t.Errorf("a member added while its group is in flight is in %q, want %q", loc, PendingPodGroupPods)
	}
	clk.Step(time.Second)
	failMembers(t, q, group, framework.NewStatus(framework.Unschedulable, "minCount (2) cannot be satisfied"))
	for _, uid := range []types.UID{"a", "b", "c"} {
		if loc := q.Locate(uid); loc != BackoffQ {
			t.Errorf("after a rejected attempt, %s is in %q, want the group in %q", uid, loc, BackoffQ)
		}
	}
	again := q.getEntity(gang.Namespace + "/" + gang.Name).(*framework.QueuedPodGroupInfo)
	if again.UnschedulableCount != 1 || again.Attempts != 1 || again.Size() != 3 {
		t.Errorf("requeued group: UnschedulableCount %d, Attempts %d, Size %d; want 1, 1, 3",
			again.UnschedulableCount, again.Attempts, again.Size())
	}
}

// TestPodGroupAttemptOutcomes: where a group's leftover members go after an
// attempt, by its status.
func TestPodGroupAttemptOutcomes(t *testing.T) {
	tests := []struct {
		name   string
		status *framework.Status
		// bound members do not come back; the rest do.
		bound         []string
		want          Location
		wantTimestamp time.Time
		wantCounts    [2]int // UnschedulableCount, ConsecutiveErrorsCount
	}{
		{name: "success with a member left: activeQ at once, timestamp kept",
			bound: []string{"a"}, want: ActiveQ, wantTimestamp: startTime},
		{name: "rejected: backoffQ", status: framework.NewStatus(framework.Unschedulable, "no"),
			want: BackoffQ, wantTimestamp: startTime.Add(time.Second), wantCounts: [2]int{1, 0}},
		{name: "an error: backoffQ too", status: framework.AsStatus(errorString("boom")),
			want: BackoffQ, wantTimestamp: startTime.Add(time.Second), wantCounts: [2]int{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := testLogger(t)
			q, clk := newTestQueue(newProfile(nil), WithPodGroups())
			q.AddPodGroup(logger, gang)
			q.Add(logger, member("a").Priority(100).Obj())
			q.Add(logger, member("b").Priority(100).Obj())
			group, _ := popGroup(t, q)
			clk.Step(time.Second)
			for _, m := range group.Members {
				if contains(tt.bound, m.Pod.Name) {
					q.Done(m.Pod.UID)
					continue
				}
				if err := q.AddUnschedulablePodIfNotPresent(logger, m); err != nil {
					t.Fatal(err)
				}
			}
			if err := q.AddAttemptedPodGroupIfNeeded(logger, group, tt.status); err != nil {
				t.Fatal(err)
			}
			if loc := q.Locate("b"); loc != tt.want {
				t.Fatalf("b is in %q, want %q", loc, tt.want)
			}
			again := q.getEntity("default/gang").Params()
			if !again.Timestamp.Equal(tt.wantTimestamp) {
				t.Errorf("timestamp %v, want %v", again.Timestamp, tt.wantTimestamp)
			}
			if got := [2]int{again.UnschedulableCount, again.ConsecutiveErrorsCount}; got != tt.wantCounts {
				t.Errorf("counts %v, want %v", got, tt.wantCounts)
			}
			if loc := q.Locate("a"); tt.bound != nil && loc != NotQueued {
				t.Errorf("bound member a is in %q, want gone", loc)
			}
		})
	}
}

// TestPodGroupGatedByAMember: one gated member gates the whole group; when
// its gate goes, the group goes to activeQ.
func TestPodGroupGatedByAMember(t *testing.T) {
	logger := testLogger(t)
	q, _ := newTestQueue(newProfile(nil), WithPodGroups())
	q.AddPodGroup(logger, gang)
	q.Add(logger, member("a").Priority(100).Obj())
	gated := member("b").Priority(100).SchedulingGates("wait").Obj()
	q.Add(logger, gated)
	for _, uid := range []types.UID{"a", "b"} {
		if loc := q.Locate(uid); loc != UnschedulablePods {
			t.Fatalf("%s is in %q, want the gated group among the unschedulable pods", uid, loc)
		}
	}
	if counts := q.PendingPodCounts(); counts["gated"] != 2 {
		t.Errorf("pending pod counts %v, want 2 gated", counts)
	}
	ungated := gated.DeepCopy()
	ungated.Spec.SchedulingGates = nil
	q.Update(logger, gated, ungated)
	if loc := q.Locate("a"); loc != ActiveQ {
		t.Fatalf("after the gate went, a is in %q, want %q", loc, ActiveQ)
	}
	if _, names := popGroup(t, q); len(names) != 2 {
		t.Errorf("popped members %v, want both", names)
	}
}

// TestPodGroupMembersLeave: deleting members shrinks the group, and the
// last one takes it out of the queue; deleting the PodGroup sends the
// members back to wait for it.
func TestPodGroupMembersLeave(t *testing.T) {
	logger := testLogger(t)
	q, _ := newTestQueue(newProfile(nil), WithPodGroups())
	q.AddPodGroup(logger, gang)
	a, b := member("a").Priority(100).Obj(), member("b").Priority(100).Obj()
	q.Add(logger, a)
	q.Add(logger, b)
	q.Delete(a)
	if loc := q.Locate("a"); loc != NotQueued {
		t.Errorf("deleted member a is in %q", loc)
	}
	if e := q.getEntity("default/gang"); e == nil || e.Size() != 1 {
		t.Fatalf("after one member left, the group is %v, want 1 member", e)
	}
	q.DeletePodGroup(logger, gang)
	if loc := q.Locate("b"); loc != IncompletePodGroupPods {
		t.Errorf("after the PodGroup went, b is in %q, want %q", loc, IncompletePodGroupPods)
	}
	q.Delete(b)
	if loc := q.Locate("b"); loc != NotQueued {
		t.Errorf("deleted member b is in %q", loc)
	}
	if len(q.podGroups.memberOf) != 0 || len(q.podGroups.incomplete) != 0 {
		t.Errorf("leftovers: memberOf %v, incomplete %v", q.podGroups.memberOf, q.podGroups.incomplete)
	}
}

// TestPodGroupActivateAndPriority: activating one member moves the whole
// group; a group is ordered by its PodGroup's priority among pods.
func TestPodGroupActivateAndPriority(t *testing.T) {
	logger := testLogger(t)
	q, clk := newTestQueue(newProfile(nil), WithPodGroups())
	q.AddPodGroup(logger, gang)
	q.Add(logger, member("a").Priority(100).Obj())
	q.Add(logger, member("b").Priority(100).Obj())
	group, _ := popGroup(t, q)
	clk.Step(time.Second)
	failMembers(t, q, group, framework.NewStatus(framework.Unschedulable, "no"))
	if loc := q.Locate("b"); loc != BackoffQ {
		t.Fatalf("b is in %q, want %q", loc, BackoffQ)
	}
	q.Add(logger, makePod("low").Priority(10).Obj())
	q.Activate(logger, map[string]*v1.Pod{"default/b": member("b").Obj()})
	if loc := q.Locate("a"); loc != ActiveQ {
		t.Fatalf("activating b left a in %q, want the whole group in %q", loc, ActiveQ)
	}
	// The group (priority 100) goes before the pod (10) added later... and
	// before it even had it been added first.
	if _, names := popGroup(t, q); len(names) != 2 {
		t.Errorf("popped members %v", names)
	}
}

// TestPodGroupsOff: without WithPodGroups a pod naming a PodGroup is a pod
// like any other.
func TestPodGroupsOff(t *testing.T) {
	logger := testLogger(t)
	q, _ := newTestQueue(newProfile(nil))
	q.Add(logger, member("a").Obj())
	if loc := q.Locate("a"); loc != ActiveQ {
		t.Errorf("a is in %q, want %q", loc, ActiveQ)
	}
	if p := mustPop(t, q, logger); p.Pod.Name != "a" {
		t.Errorf("popped %s", p.Pod.Name)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// errorString is an error with a fixed text.
type errorString string

func (e errorString) Error() string { return string(e) }

// TestPodGroupGauges follows a group through the queue and scrapes what
// the queue reports at each step: scheduler_pending_pods counts members
// (incomplete and pending among them), scheduler_queued_entities counts the
// group once. Without pod groups, only pods are reported.
func TestPodGroupGauges(t *testing.T) {
	logger := testLogger(t)
	m := metrics.New()
	q, clk := newTestQueue(newProfile(nil), WithPodGroups(), WithMetrics(m))
	m.RegisterQueue(q)
	var group *framework.QueuedPodGroupInfo
	steps := []struct {
		name string
		do   func(t *testing.T)
		// pending are scheduler_pending_pods by queue, entities
		// scheduler_queued_entities by "queue/type"; the others are 0.
		pending  map[string]int
		entities map[string]int
	}{
		{
			name:    "two members before their PodGroup: incomplete",
			do:      func(*testing.T) { q.Add(logger, member("a").Obj()); q.Add(logger, member("b").Obj()) },
			pending: map[string]int{"incomplete": 2},
		},
		{
			name: "the PodGroup seen, and a pod in no group: one group and one pod in activeQ",
			do: func(*testing.T) {
				q.AddPodGroup(logger, gang)
				q.Add(logger, makePod("solo").Obj())
			},
			pending:  map[string]int{"active": 3},
			entities: map[string]int{"active/podgroup": 1, "active/pod": 1},
		},
		{
			name: "the group popped, a third member arrives: pending",
			do: func(t *testing.T) {
				group, _ = popGroup(t, q)
				q.Add(logger, member("c").Obj())
			},
			pending:  map[string]int{"active": 1, "pending": 1},
			entities: map[string]int{"active/pod": 1},
		},
		{
			name: "the attempt rejected: the three members one group in backoffQ",
			do: func(t *testing.T) {
				clk.Step(time.Second)
				failMembers(t, q, group, framework.NewStatus(framework.Unschedulable, "no"))
			},
			pending:  map[string]int{"active": 1, "backoff": 3},
			entities: map[string]int{"active/pod": 1, "backoff/podgroup": 1},
		},
		{
			name: "a gated member: the group gated, counted under gated",
			do: func(*testing.T) {
				q.Add(logger, member("d").SchedulingGates("wait").Obj())
			},
			pending:  map[string]int{"active": 1, "gated": 4},
			entities: map[string]int{"active/pod": 1, "gated/podgroup": 1},
		},
		{
			name:     "the PodGroup deleted: its members wait for it again",
			do:       func(*testing.T) { q.DeletePodGroup(logger, gang) },
			pending:  map[string]int{"active": 1, "incomplete": 4},
			entities: map[string]int{"active/pod": 1},
		},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			step.do(t)
			var want strings.Builder
			want.WriteString("# HELP scheduler_pending_pods x\n# TYPE scheduler_pending_pods gauge\n")
			for _, queue := range []string{"active", "backoff", "gated", "incomplete", "pending", "unschedulable"} {
				fmt.Fprintf(&want, "scheduler_pending_pods{queue=%q} %d\n", queue, step.pending[queue])
			}
			want.WriteString("# HELP scheduler_queued_entities x\n# TYPE scheduler_queued_entities gauge\n")
			for _, queue := range []string{"active", "backoff", "gated", "unschedulable"} {
				for _, typ := range []string{"pod", "podgroup"} {
					fmt.Fprintf(&want, "scheduler_queued_entities{queue=%q,type=%q} %d\n", queue, typ,
						step.entities[queue+"/"+typ])
				}
			}
			if err := compareGauges(m, want.String()); err != nil {
				t.Error(err)
			}
		})
	}

	t.Run("without pod groups, entities are pods only", func(t *testing.T) {
		m := metrics.New()
		q, _ := newTestQueue(newProfile(nil), WithMetrics(m))
		m.RegisterQueue(q)
		q.Add(logger, member("a").Obj())
		want := "# HELP scheduler_queued_entities x\n# TYPE scheduler_queued_entities gauge\n" +
			`scheduler_queued_entities{queue="active",type="pod"} 1` + "\n" +
			`scheduler_queued_entities{queue="backoff",type="pod"} 0` + "\n" +
			`scheduler_queued_entities{queue="gated",type="pod"} 0` + "\n" +
			`scheduler_queued_entities{queue="unschedulable",type="pod"} 0` + "\n"
		if err := compareGauges(m, want, "scheduler_queued_entities"); err != nil {
			t.Error(err)
		}
	})
}

// compareGauges compares the named families (by default the queue's two
// gauges of pods and entities) with want, in Prometheus' text format, help
// texts aside (the metrics package's tests check those).
func compareGauges(m *metrics.Metrics, want string, names ...string) error {
	if len(names) == 0 {
		names = []string{"scheduler_pending_pods", "scheduler_queued_entities"}
	}
	families, err := m.Gatherer().Gather()
	if err != nil {
		return err
	}
	for _, f := range families {
		f.Help = ptr.To("x")
	}
	helpless := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return families, nil })
	return testutil.GatherAndCompare(helpless, strings.NewReader(want), names...)
}

// TestPodGroupMemberUpdateRefreshesItsEntry: a member updated wherever it
// waits is held as the new object, signed and measured as it, as a pod
// in no group is (FuzzQueuePodGroups found members keeping the signature
// and the requests of the object they were added as).
func TestPodGroupMemberUpdateRefreshesItsEntry(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, q *PriorityQueue)
		want  Location
	}{
		{name: "in its group in activeQ", setup: func(*testing.T, *PriorityQueue) {}, want: ActiveQ},
		{name: "in its group in backoffQ", setup: func(t *testing.T, q *PriorityQueue) {
			group, _ := popGroup(t, q)
			failMembers(t, q, group, framework.NewStatus(framework.Unschedulable, "no"))
		}, want: BackoffQ},
		{name: "in its gated group", setup: func(t *testing.T, q *PriorityQueue) {
			q.Add(testLogger(t), member("gated").SchedulingGates("wait").Obj())
		}, want: UnschedulablePods},
		{name: "pending", setup: func(t *testing.T, q *PriorityQueue) {
			group, _ := popGroup(t, q)
			if err := q.AddUnschedulablePodIfNotPresent(testLogger(t), group.Members[0]); err != nil {
				t.Fatal(err)
			}
		}, want: PendingPodGroupPods},
		{name: "incomplete", setup: func(t *testing.T, q *PriorityQueue) {
			q.DeletePodGroup(testLogger(t), gang)
		}, want: IncompletePodGroupPods},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := testLogger(t)
			q, _ := newTestQueue(newProfile(nil), WithPodGroups())
			q.AddPodGroup(logger, gang)
			old := member("a").Label(signatureLabel, "before").Req(cpu("500m")).Obj()
			q.Add(logger, old)
			tt.setup(t, q)
			updated := member("a").Label(signatureLabel, "after").Req(cpu("300m")).Obj()
			q.Update(logger, old, updated)
			if loc := q.Locate("a"); loc != tt.want {
				t.Fatalf("a is in %q, want %q", loc, tt.want)
			}
			got := q.entry("a")
			if got.Pod != updated {
				t.Errorf("the queue holds %v, want the updated object", got.Pod)
			}
			if string(got.PodSignature) != "after" {
				t.Errorf("signature %q, want %q", got.PodSignature, "after")
			}
			if cpu := got.Requests.MilliCPU; cpu != 300 {
				t.Errorf("requests %dm cpu, want 300m", cpu)
			}
		})
	}
}
