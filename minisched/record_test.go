package minisched

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
)

// recordTestScheduler is a scheduler over nodes with the plugins enabled
// (weights as given) and the extenders.
func recordTestScheduler(t *testing.T, nodes []*v1.Node, enabled []configv1.Plugin,
	exts ...framework.Extender) (*Scheduler, *framework.Framework) {
	t.Helper()
	snapshot := cache.NewSnapshot(nil, nodes)
	profile := &configv1.KubeSchedulerProfile{SchedulerName: ptr.To("p"),
		Plugins: &configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: enabled}}}
	fwk, err := framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(), profile,
		framework.WithSnapshotSharedLister(snapshot), framework.WithParallelism(1), framework.WithExtenders(exts))
	if err != nil {
		t.Fatal(err)
	}
	s := &Scheduler{snapshot: snapshot, profilePercentage: map[string]*int32{}, rng: newTestScheduler().rng}
	return s, fwk
}

// recordCycle runs a recorded Filter and Score as schedulePod does, and
// builds the record of attempt a.
func recordCycle(t *testing.T, s *Scheduler, fwk *framework.Framework, pod *v1.Pod, a Attempt) *AttemptRecord {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	startRecording(state)
	feasible, diagnosis, err := s.findNodesThatFitPod(ctx, fwk, state, pod)
	if err != nil {
		t.Fatal(err)
	}
	recorderOf(state).filtered(s.snapshot.NodeInfos(), feasible, &diagnosis)
	if len(feasible) > 1 {
		if _, err := s.prioritizeNodes(ctx, fwk, state, pod, feasible); err != nil {
			t.Fatal(err)
		}
	}
	return recorderOf(state).record(fwk, &a)
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
		wantScorers   []Scorer
		wantScores    map[string][][3]int64
	}{
		{
			name:        "each node's first failing plugin and its reason; the feasible nodes' scores",
			wantFilters: []string{"NodeUnschedulable", "NodeResourcesFit", "TaintToleration"},
			wantRejected: map[string]string{
				"n0": "NodeUnschedulable: node(s) were unschedulable (unresolvable)",
				"n1": "NodeResourcesFit: Insufficient cpu (unresolvable)",
			},
			wantScorers: []Scorer{{Name: "NodeResourcesFit", Weight: 1}, {Name: "TaintToleration", Weight: 3}},
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
			wantScorers: []Scorer{{Name: "NodeResourcesFit", Weight: 1}, {Name: "TaintToleration", Weight: 3},
				{Name: "e2", Weight: 2, Extender: true}},
			wantScores: map[string][][3]int64{
				"n2": {{50, 50, 50}, {1, 0, 0}, {0, 0, 0}},
				"n3": {{50, 50, 50}, {0, 100, 300}, {5, 50, 100}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, fwk := recordTestScheduler(t, nodes, enabled, tt.exts...)
			rec := recordCycle(t, s, fwk, pod, Attempt{Result: Scheduled, Node: "n3", Profile: "p", Attempts: 1})
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
// error before Filter could finish (here, an extender that fails): no node
// has a verdict, but the record still says how many nodes there were.
func TestAttemptRecordOfAnError(t *testing.T) {
	nodes := []*v1.Node{st.MakeNode().Name("n0").Obj(), st.MakeNode().Name("n1").Obj()}
	enabled := []configv1.Plugin{{Name: "PrioritySort"}, {Name: "NodeUnschedulable"}, {Name: "DefaultBinder"}}
	s, fwk := recordTestScheduler(t, nodes, enabled,
		&fakeExtender{name: "broken", filter: true, err: errors.New("connection refused")})
	state := framework.NewCycleState()
	startRecording(state)
	if _, _, err := s.findNodesThatFitPod(context.Background(), fwk, state, st.MakePod().Name("p").Obj()); err == nil {
		t.Fatal("the failing extender did not fail the cycle")
	}
	rec := recorderOf(state).record(fwk, &Attempt{Result: SchedulerError, Attempts: 1, Time: time.Now()})
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
	s, fwk := recordTestScheduler(t, nodes, []configv1.Plugin{{Name: "PrioritySort"}, {Name: "NodeUnschedulable"},
		{Name: "TaintToleration"}, {Name: "DefaultBinder"}})
	s.percentageOfNodesToScore = 10 // of 200, but never fewer than 100
	rec := recordCycle(t, s, fwk, st.MakePod().Name("p").Obj(), Attempt{Result: Scheduled, Node: "n000"})
	if len(rec.Nodes) != 100 || rec.NotEvaluated != 100 || rec.NumNodes != 200 {
		t.Errorf("nodes %d, notEvaluated %d, numNodes %d; want 100, 100, 200", len(rec.Nodes), rec.NotEvaluated,
			rec.NumNodes)
	}
}

// bigRecord is a record of numNodes nodes: n0 selected, the next 10 scored,
// the others rejected for one of three long reasons.
func bigRecord(numNodes int) *AttemptRecord {
	rec := &AttemptRecord{Version: RecordVersion, Result: Scheduled, Node: "n0", NumNodes: numNodes,
		Filters: []string{"F"}, Scorers: []Scorer{{Name: "S", Weight: 1}}}
	for i := range numNodes {
		n := NodeRecord{Name: fmt.Sprintf("n%d", i)}
		if i <= 10 {
			n.Scores, n.Total = [][3]int64{{int64(i), int64(i), int64(100 - i)}}, int64(100-i)
		} else {
			n.RejectedBy = "F"
			n.Reason = fmt.Sprintf("reason %d %s", i%3, strings.Repeat("x", 100))
		}
		rec.Nodes = append(rec.Nodes, n)
	}
	return rec
}

func TestEncodeBoundsTheRecord(t *testing.T) {
	tests := []struct {
		name      string
		numNodes  int
		limit     int
		wantWhole bool
	}{
		{name: "a small record is whole", numNodes: 20, limit: MaxRecordBytes, wantWhole: true},
		{name: "5000 nodes are cut to the limit", numNodes: 5000, limit: MaxRecordBytes},
		{name: "a tight limit keeps the most telling nodes", numNodes: 300, limit: 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := bigRecord(tt.numNodes).Encode(tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > tt.limit {
				t.Fatalf("encoded %d bytes, limit %d", len(data), tt.limit)
			}
			got, err := DecodeRecord(string(data))
			if err != nil {
				t.Fatal(err)
			}
			kept := len(got.Nodes)
			if got.Omitted != nil {
				kept += got.Omitted.Nodes
			}
			if kept != tt.numNodes {
				t.Errorf("nodes kept %d + omitted = %d, want %d", len(got.Nodes), kept, tt.numNodes)
			}
			if (got.Omitted == nil) != tt.wantWhole {
				t.Fatalf("omitted = %+v, want whole: %v", got.Omitted, tt.wantWhole)
			}
			if tt.wantWhole {
				return
			}
			// The selected node first, then the best scored, then one node
			// per reason before any repeat.
			if got.Nodes[0].Name != "n0" || got.Nodes[1].Name != "n1" {
				t.Errorf("first nodes %s, %s; want n0 (selected), n1 (best scored)", got.Nodes[0].Name, got.Nodes[1].Name)
			}
			reasons := map[string]bool{}
			for _, n := range got.Nodes {
				if !n.Passed() {
					reasons[n.Reason] = true
				}
			}
			if len(reasons) != 3 {
				t.Errorf("kept %d distinct reasons, want all 3", len(reasons))
			}
			sum := 0
			for _, c := range got.Omitted.Reasons {
				sum += c
			}
			if sum != got.Omitted.Nodes {
				t.Errorf("omitted reasons count %d nodes, want %d", sum, got.Omitted.Nodes)
			}
		})
	}
}

func TestDecodeRecord(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		wantErr string
	}{
		{name: "version 1", value: `{"v":1,"result":"Scheduled","node":"n1","numNodes":1}`},
		{name: "a version from the future", value: `{"v":2,"whatever":[]}`,
			wantErr: "minisched.io/last-attempt has version 2; this minisched reads version 1 only"},
		{name: "no version", value: `{"result":"Scheduled"}`, wantErr: "has version 0"},
		{name: "not JSON", value: `Scheduled on n1`, wantErr: "decoding minisched.io/last-attempt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := DecodeRecord(tt.value)
			if tt.wantErr == "" {
				if err != nil || rec.Node != "n1" {
					t.Fatalf("DecodeRecord = %+v, %v; want node n1", rec, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRecordingIsOffWithoutAReader(t *testing.T) {
	s := newTestScheduler()
	state := framework.NewCycleState()
	if s.recording() {
		t.Fatal("a scheduler without observer or annotations records")
	}
	if recorderOf(state) != nil || framework.RecordOf(state) != nil {
		t.Fatal("a cycle that was not started recording has a recorder")
	}
	// Every recorder method is a no-op on a nil recorder.
	var rec *attemptRecorder
	rec.preFiltered(nil, nil, 0)
	rec.scored(nil)
	if got := rec.record(nil, &Attempt{Time: time.Now()}); got != nil {
		t.Errorf("record of an unrecorded cycle = %+v, want nil", got)
	}
}
