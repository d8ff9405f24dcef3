package queue

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// TestContents puts pods in every place the queue has and checks that
// Contents shows each where it is, in the documented order, with what a
// live view needs: the backoff's end, the rejecting and gating plugins,
// the events that may move a pod, and the nominations.
func TestContents(t *testing.T) {
	// row is one pod of a Contents list, or one group with its members, as
	// the test compares it.
	type row struct {
		Name         string
		Attempts     int
		Backoff      time.Duration // from the queue's now
		Plugins      []string
		GatingPlugin string
		MovingEvents []string
		Members      []row
	}
	podRows := func(q *PriorityQueue, now time.Time, pods []QueuedPod) []row {
		var out []row
		for _, p := range pods {
			r := row{Name: p.Pod.Name, Attempts: p.Attempts, GatingPlugin: p.GatingPlugin}
			if len(p.Plugins) > 0 {
				r.Plugins = p.Plugins
			}
			if !p.BackoffExpiry.IsZero() {
				r.Backoff = p.BackoffExpiry.Sub(now)
			}
			if len(p.Plugins) > 0 {
				r.MovingEvents = eventStrings(q.MovingEvents(p))
			}
			out = append(out, r)
		}
		return out
	}
	groupRow := func(q *PriorityQueue, now time.Time, g QueuedPodGroup) row {
		r := row{Name: "group " + g.Name, Attempts: g.Attempts, GatingPlugin: g.GatingPlugin,
			MovingEvents: eventStrings(q.GroupMovingEvents(g)), Members: podRows(q, now, g.Members)}
		if !g.BackoffExpiry.IsZero() {
			r.Backoff = g.BackoffExpiry.Sub(now)
		}
		return r
	}
	rows := func(q *PriorityQueue, now time.Time, entities []QueuedEntity) []row {
		var out []row
		for _, e := range entities {
			if e.Group != nil {
				out = append(out, groupRow(q, now, *e.Group))
				continue
			}
			out = append(out, podRows(q, now, []QueuedPod{*e.Pod})...)
		}
		return out
	}
	groupRows := func(q *PriorityQueue, now time.Time, groups []QueuedPodGroup) []row {
		var out []row
		for _, g := range groups {
			out = append(out, groupRow(q, now, g))
		}
		return out
	}
	tests := []struct {
		name string
		// setUp fills the queue; the clock starts at startTime.
		setUp                                func(t *testing.T, q *PriorityQueue, logger klog.Logger)
		wantActive, wantBackoff, wantUnsched []row
		wantIncomplete, wantPending          []row
		wantInFlight                         []string
		wantNominated                        map[string]string
	}{
		{
			name: "activeQ in pop order: priority, then arrival",
			setUp: func(t *testing.T, q *PriorityQueue, logger klog.Logger) {
				q.Add(logger, makePod("low").Obj())
				q.Add(logger, makePod("high").Priority(10).Obj())
				q.Add(logger, makePod("low-later").Obj())
			},
			wantActive: []row{{Name: "high"}, {Name: "low"}, {Name: "low-later"}},
		},
		{
			name: "a rejected pod with an event in flight goes to backoffQ, one without waits unschedulable",
			setUp: func(t *testing.T, q *PriorityQueue, logger klog.Logger) {
				if err := failAttempt(t, q, logger, makePod("waits").Obj(), attempt{unschedulable: []string{fooPlugin}}); err != nil {
					t.Fatal(err)
				}
				err := failAttempt(t, q, logger, makePod("retries").Obj(), attempt{unschedulable: []string{barPlugin},
					during: func(q *PriorityQueue, logger klog.Logger) {
						q.MoveAllToActiveOrBackoffQueue(logger, framework.NodeAdd, nil, makeNode("n"), nil)
					}})
				if err != nil {
					t.Fatal(err)
				}
			},
			wantBackoff: []row{{Name: "retries", Attempts: 1, Backoff: time.Second}},
			wantUnsched: []row{{Name: "waits", Attempts: 1, Plugins: []string{fooPlugin},
				MovingEvents: []string{"AssignedPodDelete"}}},
		},
		{
			name: "a gated pod is moved only by its gate's events",
			setUp: func(t *testing.T, q *PriorityQueue, logger klog.Logger) {
				q.Add(logger, makePod("gated").SchedulingGates("example.com/wait").Obj())
			},
			wantUnsched: []row{{Name: "gated", Plugins: []string{gatesPlugin}, GatingPlugin: gatesPlugin,
				MovingEvents: []string{gatesHint.Event.String()}}},
		},
		{
			name: "a popped pod is in flight; a nominated one is listed with its node",
			setUp: func(t *testing.T, q *PriorityQueue, logger klog.Logger) {
				q.Add(logger, makePod("popped").Obj())
				mustPop(t, q, logger)
				q.Add(logger, makePod("nominee").NominatedNodeName("n1").Obj())
			},
			wantActive:    []row{{Name: "nominee"}},
			wantInFlight:  []string{"popped"},
			wantNominated: map[string]string{"nominee": "n1"},
		},
		{
			name: "a pod group is one entity in pop order, its members in the order its cycle tries them",
			setUp: func(t *testing.T, q *PriorityQueue, logger klog.Logger) {
				q.AddPodGroup(logger, gang)
				q.Add(logger, makePod("low").Obj())
				q.Add(logger, member("b").Priority(100).Obj())
				q.Add(logger, member("a").Priority(100).Obj())
			},
			wantActive: []row{{Name: "group gang", Members: []row{{Name: "a"}, {Name: "b"}}}, {Name: "low"}},
		},
		{
			name: "members wait for their PodGroup; others arrive while their group is scheduled",
			setUp: func(t *testing.T, q *PriorityQueue, logger klog.Logger) {
				q.Add(logger, makePod("early").PodGroup("later").Obj())
				q.AddPodGroup(logger, gang)
				q.Add(logger, member("a").Priority(100).Obj())
				q.Add(logger, member("b").Priority(100).Obj())
				popGroup(t, q)
				q.Add(logger, member("c").Priority(100).Obj())
			},
			wantIncomplete: []row{{Name: "group later", Members: []row{{Name: "early"}}}},
			wantPending:    []row{{Name: "group gang", Members: []row{{Name: "c"}}}},
			wantInFlight:   []string{"a", "b"},
		},
		{
			name: "a failed group backs off as one, with the members that arrived meanwhile",
			setUp: func(t *testing.T, q *PriorityQueue, logger klog.Logger) {
				q.AddPodGroup(logger, gang)
				q.Add(logger, member("a").Priority(100).Obj())
				q.Add(logger, member("b").Priority(100).Obj())
				group, _ := popGroup(t, q)
				q.Add(logger, member("c").Priority(100).Obj())
				failMembers(t, q, group, framework.NewStatus(framework.Unschedulable, "no"))
			},
			wantBackoff: []row{{Name: "group gang", Attempts: 1, Backoff: time.Second, Members: []row{
				{Name: "a", Attempts: 1, Backoff: time.Second}, {Name: "b", Attempts: 1, Backoff: time.Second},
				{Name: "c", Backoff: time.Second}}}},
		},
		{
			name: "a group gated by a member waits unschedulable, moved by its gate's events",
			setUp: func(t *testing.T, q *PriorityQueue, logger klog.Logger) {
				q.AddPodGroup(logger, gang)
				q.Add(logger, member("a").Priority(100).Obj())
				q.Add(logger, member("b").Priority(100).SchedulingGates("wait").Obj())
			},
			wantUnsched: []row{{Name: "group gang", GatingPlugin: gatesPlugin, MovingEvents: []string{gatesHint.Event.String()},
				Members: []row{{Name: "a"}, {Name: "b", Plugins: []string{gatesPlugin}, GatingPlugin: gatesPlugin,
					MovingEvents: []string{gatesHint.Event.String()}}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := testLogger(t)
			profile := newProfile(map[string][]framework.ClusterEventWithHint{
				fooPlugin: {on(framework.AssignedPodDelete)},
				barPlugin: {on(framework.NodeAdd)},
			})
			q, _ := newTestQueue(profile, WithPodGroups())
			tt.setUp(t, q, logger)
			c := q.Contents()
			if !c.Now.Equal(startTime) {
				t.Errorf("Now = %v, want the queue clock's %v", c.Now, startTime)
			}
			for _, l := range []struct {
				name      string
				got, want []row
			}{
				{"activeQ", rows(q, c.Now, c.ActiveQ), tt.wantActive},
				{"backoffQ", rows(q, c.Now, c.BackoffQ), tt.wantBackoff},
				{"unschedulable", rows(q, c.Now, c.Unschedulable), tt.wantUnsched},
				{"incomplete pod groups", groupRows(q, c.Now, c.IncompletePodGroups), tt.wantIncomplete},
				{"pending pod groups", groupRows(q, c.Now, c.PendingPodGroups), tt.wantPending},
			} {
				if diff := cmp.Diff(l.want, l.got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", l.name, diff)
				}
			}
			var inFlight []string
			for _, p := range c.InFlight {
				inFlight = append(inFlight, p.Name)
			}
			slices.Sort(inFlight) // Contents lists them in no order
			if diff := cmp.Diff(tt.wantInFlight, inFlight); diff != "" {
				t.Errorf("in flight (-want +got):\n%s", diff)
			}
			nominated := map[string]string{}
			for _, n := range c.Nominated {
				nominated[n.Pod.Name] = n.Node
			}
			if tt.wantNominated == nil {
				tt.wantNominated = map[string]string{}
			}
			if diff := cmp.Diff(tt.wantNominated, nominated); diff != "" {
				t.Errorf("nominated (-want +got):\n%s", diff)
			}
		})
	}
}

// eventStrings names events, in order.
func eventStrings(events []framework.ClusterEvent) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.String())
	}
	return out
}
