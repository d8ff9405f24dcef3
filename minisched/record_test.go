package minisched

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
)

// recordTestScheduler is a scheduler over nodes with the plugins enabled
// (weights as given) and the extenders, which records attempts (it has an
// observer).
func recordTestScheduler(t *testing.T, nodes []*v1.Node, enabled []configv1.Plugin,
	exts ...framework.Extender) (*Scheduler, *framework.Framework) {
	t.Helper()
	snapshot := cache.NewSnapshot(nil, nodes)
	profile := &configv1.KubeSchedulerProfile{SchedulerName: ptr.To("p"),
		Plugins: &configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: enabled}}}
	schedFramework, err := framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(), profile,
		framework.WithSnapshotSharedLister(snapshot), framework.WithParallelism(1), framework.WithExtenders(exts))
	if err != nil {
		t.Fatal(err)
	}
	s := &Scheduler{snapshot: snapshot, profilePercentage: map[string]*int32{}, rng: newTestScheduler().rng,
		observer: func(Attempt) {}}
	return s, schedFramework
}

// recordCycle runs Filter, Score and selectHost as schedulePod does, and builds the
// record of the attempt with recordAttempt.
func recordCycle(t *testing.T, s *Scheduler, schedFramework *framework.Framework, pod *v1.Pod) *attempt.Record {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	feasible, diagnosis, _, err := s.findNodesThatFitPod(ctx, schedFramework, state, queuedPod(pod), 0)
	if err != nil {
		t.Fatal(err)
	}
	result := scheduleResult{seen: cycleSeen{diagnosis: diagnosis, feasible: feasible}}
	if len(feasible) > 1 {
		if result.seen.scores, result.seen.extenderWeights, err = s.prioritizeNodes(ctx, schedFramework, state, pod, feasible); err != nil {
			t.Fatal(err)
		}
		// selectHost reorders the scores in place, as in schedulePod.
		selectHost(result.seen.scores).Pop()
	}
	return s.recordAttempt(schedFramework, state, &framework.QueuedPodInfo{PodInfo: framework.NewPodInfo(pod), QueueingParams: framework.QueueingParams{Attempts: 1}}, result)
}

func TestAttemptRecord(t *testing.T) {
	cpu := func(name, n string) *st.NodeWrapper {
		return st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{v1.ResourcePods: "10", v1.ResourceCPU: n})
	}
	nodes := []*v1.Node{
		cpu("n0", "4").Unschedulable(true).Obj(),
		cpu("n1", "1").Obj(),
		cpu("n2", "4").Taint("dedicated", "x", v1.TaintEffectPreferNoSchedule).Obj(),
		cpu("n3", "4").Obj(),
		cpu("n4", "4").Obj(),
	}
	enabled := []configv1.Plugin{{Name: "PrioritySort"}, {Name: "NodeUnschedulable"}, {Name: "NodeResourcesFit"},
		{Name: "TaintToleration", Weight: ptr.To[int32](3)}, {Name: "DefaultBinder"}}
	pod := st.MakePod().Name("p").Req(map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Obj()
	tests := []struct {
		name          string
		exts          []framework.Extender
		wantFilters   []string
		wantExtenders []string
		wantRejected  map[string]string // node → rejectedBy: reason
		wantScorers   []attempt.Scorer
		wantScores    map[string][][3]int64
	}{
		{
			name:        "each node's first failing plugin and its reason; the feasible nodes' scores",
			wantFilters: []string{"NodeUnschedulable", "NodeResourcesFit", "TaintToleration"},
			wantRejected: map[string]string{
				"n0": "NodeUnschedulable: node(s) were unschedulable (unresolvable)",
				"n1": "NodeResourcesFit: Insufficient cpu (unresolvable)",
			},
			wantScorers: []attempt.Scorer{{Name: "NodeResourcesFit", Weight: 1}, {Name: "TaintToleration", Weight: 3}},
			// TaintToleration counts the taints it does not tolerate (raw),
			// then turns the counts round (normalised): fewest is best.
			wantScores: map[string][][3]int64{
				"n2": {{50, 50, 50}, {1, 0, 0}},
				"n3": {{50, 50, 50}, {0, 100, 300}},
				"n4": {{50, 50, 50}, {0, 100, 300}},
			},
		},
		{
			name: "extenders: their rejections after every Filter plugin passed, and their scores",
			exts: []framework.Extender{
				&fakeExtender{name: "e1", filter: true, failed: map[string]string{"n4": "in maintenance"}},
				&fakeExtender{name: "e2", prio: true, weight: 2, scores: map[string]int64{"n3": 5}},
			},
			wantFilters:   []string{"NodeUnschedulable", "NodeResourcesFit", "TaintToleration"},
			wantExtenders: []string{"e1"},
			wantRejected: map[string]string{
				"n0": "NodeUnschedulable: node(s) were unschedulable (unresolvable)",
				"n1": "NodeResourcesFit: Insufficient cpu (unresolvable)",
				"n4": "e1: in maintenance",
			},
			wantScorers: []attempt.Scorer{{Name: "NodeResourcesFit", Weight: 1}, {Name: "TaintToleration", Weight: 3},
				{Name: "e2", Weight: 2, Extender: true}},
			wantScores: map[string][][3]int64{
				"n2": {{50, 50, 50}, {1, 0, 0}, {0, 0, 0}},
				"n3": {{50, 50, 50}, {0, 100, 300}, {5, 50, 100}},
			},
		},
		{
			name: "prioritizing extenders in the order they are configured, whichever answered first",
			exts: []framework.Extender{
				&fakeExtender{name: "e2", prio: true, weight: 2, scores: map[string]int64{"n4": 5}},
				&fakeExtender{name: "e3", prio: true, weight: 1, scores: map[string]int64{"n2": 3}},
			},
			wantFilters: []string{"NodeUnschedulable", "NodeResourcesFit", "TaintToleration"},
			wantRejected: map[string]string{
				"n0": "NodeUnschedulable: node(s) were unschedulable (unresolvable)",
				"n1": "NodeResourcesFit: Insufficient cpu (unresolvable)",
			},
			wantScorers: []attempt.Scorer{{Name: "NodeResourcesFit", Weight: 1}, {Name: "TaintToleration", Weight: 3},
				{Name: "e2", Weight: 2, Extender: true}, {Name: "e3", Weight: 1, Extender: true}},
			wantScores: map[string][][3]int64{
				"n2": {{50, 50, 50}, {1, 0, 0}, {0, 0, 0}, {3, 30, 30}},
				"n3": {{50, 50, 50}, {0, 100, 300}, {0, 0, 0}, {0, 0, 0}},
				"n4": {{50, 50, 50}, {0, 100, 300}, {5, 50, 100}, {0, 0, 0}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, schedFramework := recordTestScheduler(t, nodes, enabled, tt.exts...)
			rec := recordCycle(t, s, schedFramework, pod)
			if diff := cmp.Diff(tt.wantFilters, rec.Filters); diff != "" {
				t.Errorf("filters (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantExtenders, rec.Extenders); diff != "" {
				t.Errorf("extenders (-want +got):\n%s", diff)
			}
			rejected, scores := map[string]string{}, map[string][][3]int64{}
			for _, n := range rec.Nodes {
				if n.Passed() {
					scores[n.Name] = n.Scores
					var total int64
					for _, s := range n.Scores {
						total += s[2]
					}
					if total != n.Total {
						t.Errorf("node %s: total %d, want the sum of its weighted scores, %d", n.Name, n.Total, total)
					}
					continue
				}
				v := n.RejectedBy + ": " + n.Reason
				if n.Unresolvable {
					v += " (unresolvable)"
				}
				rejected[n.Name] = v
			}
			if diff := cmp.Diff(tt.wantRejected, rejected); diff != "" {
				t.Errorf("rejections (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantScorers, rec.Scorers); diff != "" {
				t.Errorf("scorers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantScores, scores); diff != "" {
				t.Errorf("scores [raw, normalised, weighted] (-want +got):\n%s", diff)
			}
			if rec.NumNodes != len(nodes) || rec.NotEvaluated != 0 {
				t.Errorf("numNodes %d, notEvaluated %d; want %d, 0", rec.NumNodes, rec.NotEvaluated, len(nodes))
			}
		})
	}
}

// TestAttemptRecordOfAnError checks the record of a cycle that ended in an
// error before the search for feasible nodes could finish (here, an
// extender that fails): no node has a verdict, but the record still says
// how many nodes there were.
func TestAttemptRecordOfAnError(t *testing.T) {
	nodes := []*v1.Node{st.MakeNode().Name("n0").Obj(), st.MakeNode().Name("n1").Obj()}
	enabled := []configv1.Plugin{{Name: "PrioritySort"}, {Name: "NodeUnschedulable"}, {Name: "DefaultBinder"}}
	s, schedFramework := recordTestScheduler(t, nodes, enabled,
		&fakeExtender{name: "broken", filter: true, err: errors.New("connection refused")})
	state := framework.NewCycleState()
	pod := st.MakePod().Name("p").Obj()
	if _, _, _, err := s.findNodesThatFitPod(context.Background(), schedFramework, state, queuedPod(pod), 0); err == nil {
		t.Fatal("the failing extender did not fail the cycle")
	}
	rec := s.recordAttempt(schedFramework, state, &framework.QueuedPodInfo{PodInfo: framework.NewPodInfo(pod), QueueingParams: framework.QueueingParams{Attempts: 1}},
		scheduleResult{})
	if rec.NumNodes != len(nodes) || len(rec.Nodes) != 0 {
		t.Errorf("numNodes %d with %d node records; want %d and none", rec.NumNodes, len(rec.Nodes), len(nodes))
	}
}

func TestAttemptRecordNotEvaluated(t *testing.T) {
	var nodes []*v1.Node
	for i := range 200 {
		nodes = append(nodes, st.MakeNode().Name(fmt.Sprintf("n%03d", i)).
			Capacity(map[v1.ResourceName]string{v1.ResourcePods: "10", v1.ResourceCPU: "4"}).Obj())
	}
	s, schedFramework := recordTestScheduler(t, nodes, []configv1.Plugin{{Name: "PrioritySort"}, {Name: "NodeUnschedulable"},
		{Name: "TaintToleration"}, {Name: "DefaultBinder"}})
	s.percentageOfNodesToScore = 10 // of 200, but never fewer than 100
	rec := recordCycle(t, s, schedFramework, st.MakePod().Name("p").Obj())
	if len(rec.Nodes) != 100 || rec.NotEvaluated != 100 || rec.NumNodes != 200 {
		t.Errorf("nodes %d, notEvaluated %d, numNodes %d; want 100, 100, 200", len(rec.Nodes), rec.NotEvaluated,
			rec.NumNodes)
	}
}

// TestRecordingIsOffWithoutAReader checks that a cycle builds a record only
// for someone who reads it: not without observer, annotations or watcher,
// nor for a watcher that is not watching (the live view with no page
// open), which is told of nothing.
func TestRecordingIsOffWithoutAReader(t *testing.T) {
	tests := []struct {
		name     string
		watcher  *countingWatcher
		wantRecs bool
	}{
		{name: "no reader"},
		{name: "a watcher that does not watch", watcher: &countingWatcher{}},
		{name: "a watcher that watches", watcher: &countingWatcher{watching: true}, wantRecs: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, schedFramework := recordTestScheduler(t, []*v1.Node{st.MakeNode().Name("n").Obj()},
				[]configv1.Plugin{{Name: "PrioritySort"}, {Name: "DefaultBinder"}})
			s.observer = nil
			if tt.watcher != nil {
				s.watcher = tt.watcher
			}
			if s.recording() != tt.wantRecs {
				t.Fatalf("recording() = %v, want %v", s.recording(), tt.wantRecs)
			}
			pod := st.MakePod().Name("p").Obj()
			rec := s.recordAttempt(schedFramework, framework.NewCycleState(),
				&framework.QueuedPodInfo{PodInfo: framework.NewPodInfo(pod)}, scheduleResult{})
			if (rec != nil) != tt.wantRecs {
				t.Fatalf("record = %+v, want one: %v", rec, tt.wantRecs)
			}
			if rec != nil {
				s.publishRecord(pod, rec)
			}
			if tt.watcher != nil && tt.watcher.observed != btoi(tt.wantRecs) {
				t.Errorf("the watcher was told of %d attempts, want %d", tt.watcher.observed, btoi(tt.wantRecs))
			}
		})
	}
}

// countingWatcher is a Watcher that counts what it is told.
type countingWatcher struct {
	watching bool
	observed int
}

func (w *countingWatcher) Watching() bool  { return w.watching }
func (w *countingWatcher) Observe(Attempt) { w.observed++ }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
