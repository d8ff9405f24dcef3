// This file tests OpportunisticBatching, cycle by cycle, on nodes with a
// number of pod slots each, and how a profile signs pods.

package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	configv1 "k8s.io/kube-scheduler/config/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/metrics"
)

// slotsPlugin is a Filter, Score and Sign plugin over nodes with a number
// of pod slots each: a node fits while it has a free slot, and scores its
// fixed raw score. A pod signs as its "kind" label; a pod without one is
// refused.
type slotsPlugin struct {
	slots map[string]int
	score map[string]int64
}

func (p *slotsPlugin) Name() string { return "Slots" }
func (p *slotsPlugin) Filter(_ context.Context, _ *CycleState, _ *v1.Pod, ni *NodeInfo) *Status {
	if len(ni.Pods) >= p.slots[ni.Node().Name] {
		return NewStatus(Unschedulable, "no free slot")
	}
	return nil
}
func (p *slotsPlugin) Score(_ context.Context, _ *CycleState, _ *v1.Pod, ni *NodeInfo) (int64, *Status) {
	return p.score[ni.Node().Name], nil
}
func (p *slotsPlugin) ScoreExtensions() ScoreExtensions { return nil }
func (p *slotsPlugin) SignPod(_ context.Context, pod *v1.Pod) ([]SignFragment, *Status) {
	kind, ok := pod.Labels["kind"]
	if !ok {
		return nil, NewStatus(Unschedulable, "no kind")
	}
	return []SignFragment{{Key: "kind", Value: kind}}, nil
}

// queueSort is the profile's QueueSort and Bind plugin, which the framework
// requires.
type queueSort struct{}

func (queueSort) Name() string { return "Sort" }
func (queueSort) Less(a, b QueuedEntity) bool {
	return a.Params().Timestamp.Before(b.Params().Timestamp)
}
func (queueSort) Bind(context.Context, *CycleState, *v1.Pod, string) *Status { return nil }

// mapLister is a snapshot over a fixed set of NodeInfos.
type mapLister struct{ nodes map[string]*NodeInfo }

func (l *mapLister) NodeInfos() NodeInfoLister       { return l }
func (l *mapLister) StorageInfos() StorageInfoLister { return nil }

// PodGroups and PodGroupStates: the lister knows no pod group.
func (l *mapLister) PodGroups() PodGroupLister           { return noPodGroups{} }
func (l *mapLister) PodGroupStates() PodGroupStateLister { return noPodGroupStates{} }

// noPodGroups and noPodGroupStates know no group: Get reports an error.
type (
	noPodGroups      struct{}
	noPodGroupStates struct{}
)

func (noPodGroups) Get(namespace, name string) (*schedulingv1beta1.PodGroup, error) {
	return nil, fmt.Errorf("pod group state not found for pod group %s", PodGroupKey(namespace, name))
}
func (noPodGroupStates) Get(namespace, name string) (PodGroupState, error) {
	return nil, fmt.Errorf("pod group state not found for pod group %s/%s", namespace, name)
}
func (l *mapLister) List() ([]*NodeInfo, error) {
	var out []*NodeInfo
	for _, name := range []string{"n1", "n2", "n3", "n4"} {
		if ni, ok := l.nodes[name]; ok {
			out = append(out, ni)
		}
	}
	return out, nil
}
func (l *mapLister) HavePodsWithAffinityList() ([]*NodeInfo, error)             { return nil, nil }
func (l *mapLister) HavePodsWithAffinityScoringTermsList() ([]*NodeInfo, error) { return nil, nil }
func (l *mapLister) HavePodsWithRequiredAntiAffinityList() ([]*NodeInfo, error) { return nil, nil }
func (l *mapLister) RequiredAntiAffinityTermCounts() map[string]*TermCounts     { return nil }
func (l *mapLister) Get(name string) (*NodeInfo, error) {
	if ni, ok := l.nodes[name]; ok {
		return ni, nil
	}
	return nil, fmt.Errorf("node %q not found", name)
}

// batchEnv is a profile with slotsPlugin over four nodes, n1 best, and the
// scheduler's side of batching played by cycle.
type batchEnv struct {
	fw     *Framework
	lister *mapLister
	clock  *clocktesting.FakeClock
	m      *metrics.Metrics
}

func newBatchEnv(t *testing.T, slots map[string]int) *batchEnv {
	t.Helper()
	pl := &slotsPlugin{slots: slots, score: map[string]int64{"n1": 40, "n2": 30, "n3": 20, "n4": 10}}
	lister := &mapLister{nodes: map[string]*NodeInfo{}}
	for name := range pl.score {
		ni := NewNodeInfo()
		ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		lister.nodes[name] = ni
	}
	r := Registry{
		"Sort":  func(context.Context, *runtime.RawExtension, Handle) (Plugin, error) { return queueSort{}, nil },
		"Slots": func(context.Context, *runtime.RawExtension, Handle) (Plugin, error) { return pl, nil },
	}
	prof := &configv1.KubeSchedulerProfile{SchedulerName: ptr.To("test"), Plugins: &configv1.Plugins{
		MultiPoint: configv1.PluginSet{Enabled: []configv1.Plugin{{Name: "Sort"}, {Name: "Slots"}}}}}
	clk := clocktesting.NewFakeClock(time.Now())
	m := metrics.New()
	fw, err := NewFramework(context.Background(), r, prof, WithSnapshotSharedLister(lister), WithClock(clk),
		WithMetrics(m), WithParallelism(1))
	if err != nil {
		t.Fatal(err)
	}
	return &batchEnv{fw: fw, lister: lister, clock: clk, m: m}
}

// cycle schedules pod as the scheduler does with the cycle number n: the
// hint first (on it alone), else every node; the choice is stored, and the
// pod is put on its node. It returns the hint and the chosen node ("" when
// nothing fits).
func (e *batchEnv) cycle(t *testing.T, pod *v1.Pod, n int64) (hint, chosen string) {
	t.Helper()
	ctx := context.Background()
	state := NewCycleState()
	sig := e.fw.SignPod(ctx, pod)
	hint = e.fw.GetNodeHint(ctx, pod, sig, state, n)
	if hint != "" && e.fw.RunFilterPlugins(ctx, state, pod, e.lister.nodes[hint]).IsSuccess() {
		e.fw.StoreScheduleResults(ctx, sig, hint, hint, nil, n)
		e.lister.nodes[hint].AddPod(pod)
		return hint, hint
	}
	all, _ := e.lister.List()
	var feasible []*NodeInfo
	for _, ni := range all {
		if e.fw.RunFilterPlugins(ctx, state, pod, ni).IsSuccess() {
			feasible = append(feasible, ni)
		}
	}
	switch len(feasible) {
	case 0:
		return hint, ""
	case 1:
		chosen = feasible[0].Node().Name
		e.fw.StoreScheduleResults(ctx, sig, hint, chosen, nil, n)
	default:
		scores, sts := e.fw.RunScorePlugins(ctx, state, pod, feasible)
		if !sts.IsSuccess() {
			t.Fatal(sts.AsError())
		}
		ranking := NewSortedScoredNodes(scores)
		chosen = ranking.Pop().Name
		e.fw.StoreScheduleResults(ctx, sig, hint, chosen, ranking, n)
	}
	e.lister.nodes[chosen].AddPod(pod)
	return hint, chosen
}

// counter is the value of a counter family's sample with these labels.
func (e *batchEnv) counter(t *testing.T, family string, labels map[string]string) float64 {
	t.Helper()
	families, err := e.m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, f := range families {
		if f.GetName() == family {
			for _, s := range f.GetMetric() {
				if matches(s, labels) {
					v += s.GetCounter().GetValue()
				}
			}
		}
	}
	return v
}

// batchPod is a pod of kind ("" for none: unsigned); nominated, if set, is
// its nominated node.
func batchPod(name, kind, nominated string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)}}
	if kind != "" {
		pod.Labels = map[string]string{"kind": kind}
	}
	pod.Status.NominatedNodeName = nominated
	return pod
}

// batchStep is one cycle of a TestOpportunisticBatch case.
type batchStep struct {
	pod       *v1.Pod
	cycle     int64
	before    func(e *batchEnv) // changes the cluster or the clock first
	wantHint  string
	wantChose string
}

func TestOpportunisticBatch(t *testing.T) {
	onePerNode := map[string]int{"n1": 1, "n2": 1, "n3": 1, "n4": 1}
	tests := []struct {
		name  string
		slots map[string]int
		steps []batchStep
		// wantFlushed and wantAttempts are the batching counters by reason
		// and by result at the end.
		wantFlushed  map[string]float64
		wantAttempts map[string]float64
		wantRescores float64
	}{
		{
			name:  "alike pods in a row take the next best nodes as hints",
			slots: onePerNode,
			steps: []batchStep{
				{pod: batchPod("a1", "a", ""), cycle: 1, wantChose: "n1"},
				{pod: batchPod("a2", "a", ""), cycle: 2, wantHint: "n2", wantChose: "n2"},
				{pod: batchPod("a3", "a", ""), cycle: 3, wantHint: "n3", wantChose: "n3"},
				{pod: batchPod("a4", "a", ""), cycle: 4, wantHint: "n4", wantChose: "n4"},
			},
			// Each last chosen node is full by the next cycle: Filter rejects
			// it, so it is left out and not rescored.
			wantAttempts: map[string]float64{metrics.BatchAttemptNoHint: 1, metrics.BatchAttemptHintUsed: 3},
		},
		{
			name:  "a pod popped in between (another cycle) spoils the ranking",
			slots: onePerNode,
			steps: []batchStep{
				{pod: batchPod("a1", "a", ""), cycle: 1, wantChose: "n1"},
				{pod: batchPod("a2", "a", ""), cycle: 3, wantChose: "n2"},
			},
			wantFlushed:  map[string]float64{metrics.BatchFlushPodSkipped: 1},
			wantAttempts: map[string]float64{metrics.BatchAttemptNoHint: 2},
		},
		{
			name:  "a pod of another signature gets no hint, and its own ranking replaces the old",
			slots: onePerNode,
			steps: []batchStep{
				{pod: batchPod("a1", "a", ""), cycle: 1, wantChose: "n1"},
				{pod: batchPod("b1", "b", ""), cycle: 2, wantChose: "n2"},
				{pod: batchPod("b2", "b", ""), cycle: 3, wantHint: "n3", wantChose: "n3"},
			},
			wantFlushed:  map[string]float64{metrics.BatchFlushPodIncompatible: 1},
			wantAttempts: map[string]float64{metrics.BatchAttemptNoHint: 2, metrics.BatchAttemptHintUsed: 1},
		},
		{
			name:  "an unsigned pod is never batched, and stores no ranking",
			slots: onePerNode,
			steps: []batchStep{
				{pod: batchPod("u1", "", ""), cycle: 1, wantChose: "n1"},
				{pod: batchPod("u2", "", ""), cycle: 2, wantChose: "n2"},
			},
			wantFlushed:  map[string]float64{metrics.BatchFlushPodNotBatchable: 2},
			wantAttempts: map[string]float64{metrics.BatchAttemptNoHint: 2},
		},
		{
			name:  "a nominated pod gets no hint",
			slots: onePerNode,
			steps: []batchStep{
				{pod: batchPod("a1", "a", ""), cycle: 1, wantChose: "n1"},
				{pod: batchPod("a2", "a", "n4"), cycle: 2, wantChose: "n2"},
			},
			wantFlushed:  map[string]float64{metrics.BatchFlushPodNominated: 1},
			wantAttempts: map[string]float64{metrics.BatchAttemptNoHint: 2},
		},
		{
			name:  "a ranking older than 500 ms is not used",
			slots: onePerNode,
			steps: []batchStep{
				{pod: batchPod("a1", "a", ""), cycle: 1, wantChose: "n1"},
				{pod: batchPod("a2", "a", ""), cycle: 2, wantHint: "n2", wantChose: "n2",
					before: func(e *batchEnv) { e.clock.Step(300 * time.Millisecond) }},
				// The age counts from the full cycle, not the last hint.
				{pod: batchPod("a3", "a", ""), cycle: 3, wantChose: "n3",
					before: func(e *batchEnv) { e.clock.Step(201 * time.Millisecond) }},
			},
			wantFlushed:  map[string]float64{metrics.BatchFlushExpired: 1},
			wantAttempts: map[string]float64{metrics.BatchAttemptNoHint: 2, metrics.BatchAttemptHintUsed: 1},
		},
		{
			name:  "the last chosen node, still feasible, is rescored and can be the hint again",
			slots: map[string]int{"n1": 2, "n2": 1, "n3": 1, "n4": 1},
			steps: []batchStep{
				{pod: batchPod("a1", "a", ""), cycle: 1, wantChose: "n1"},
				{pod: batchPod("a2", "a", ""), cycle: 2, wantHint: "n1", wantChose: "n1"},
				{pod: batchPod("a3", "a", ""), cycle: 3, wantHint: "n2", wantChose: "n2"},
			},
			wantAttempts: map[string]float64{metrics.BatchAttemptNoHint: 1, metrics.BatchAttemptHintUsed: 2},
			wantRescores: 1,
		},
		{
			name:  "the last chosen node gone: no hint",
			slots: onePerNode,
			steps: []batchStep{
				{pod: batchPod("a1", "a", ""), cycle: 1, wantChose: "n1"},
				{pod: batchPod("a2", "a", ""), cycle: 2, wantChose: "n2",
					before: func(e *batchEnv) { delete(e.lister.nodes, "n1") }},
			},
			wantFlushed:  map[string]float64{metrics.BatchFlushNodeMissing: 1},
			wantAttempts: map[string]float64{metrics.BatchAttemptNoHint: 2},
		},
		{
			name:  "a hint that no longer fits is not used; the full cycle's ranking replaces it",
			slots: onePerNode,
			steps: []batchStep{
				{pod: batchPod("a1", "a", ""), cycle: 1, wantChose: "n1"},
				{pod: batchPod("a2", "a", ""), cycle: 2, wantHint: "n2", wantChose: "n3",
					before: func(e *batchEnv) { e.lister.nodes["n2"].AddPod(batchPod("other", "", "")) }},
				{pod: batchPod("a3", "a", ""), cycle: 3, wantHint: "n4", wantChose: "n4"},
			},
			wantAttempts: map[string]float64{metrics.BatchAttemptNoHint: 1, metrics.BatchAttemptHintNotUsed: 1,
				metrics.BatchAttemptHintUsed: 1},
		},
		{
			name:  "a single feasible node leaves nothing to keep",
			slots: map[string]int{"n1": 1},
			steps: []batchStep{
				{pod: batchPod("a1", "a", ""), cycle: 1, wantChose: "n1"},
				{pod: batchPod("a2", "a", ""), cycle: 2},
			},
			wantFlushed:  map[string]float64{metrics.BatchFlushEmptyList: 1},
			wantAttempts: map[string]float64{metrics.BatchAttemptNoHint: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newBatchEnv(t, tt.slots)
			for _, s := range tt.steps {
				if s.before != nil {
					s.before(e)
				}
				hint, chosen := e.cycle(t, s.pod, s.cycle)
				if hint != s.wantHint || chosen != s.wantChose {
					t.Fatalf("%s: hint %q, chose %q; want hint %q, chose %q", s.pod.Name, hint, chosen,
						s.wantHint, s.wantChose)
				}
			}
			gotFlushed, gotAttempts := map[string]float64{}, map[string]float64{}
			for _, r := range []string{metrics.BatchFlushPodSkipped,
				metrics.BatchFlushPodNominated, metrics.BatchFlushNodeMissing, metrics.BatchFlushEmptyList,
				metrics.BatchFlushExpired, metrics.BatchFlushPodIncompatible, metrics.BatchFlushPodNotBatchable,
				metrics.BatchFlushFilterError, metrics.BatchFlushPreScoreError, metrics.BatchFlushRescoreError,
				metrics.BatchFlushNormalizeError} {
				if v := e.counter(t, "scheduler_batch_cache_flushed_total", map[string]string{"reason": r}); v > 0 {
					gotFlushed[r] = v
				}
			}
			for _, r := range []string{metrics.BatchAttemptNoHint, metrics.BatchAttemptHintUsed, metrics.BatchAttemptHintNotUsed} {
				if v := e.counter(t, "scheduler_batch_attempts_total", map[string]string{"result": r, "profile": "test"}); v > 0 {
					gotAttempts[r] = v
				}
			}
			if tt.wantFlushed == nil {
				tt.wantFlushed = map[string]float64{}
			}
			if diff := cmp.Diff(tt.wantFlushed, gotFlushed); diff != "" {
				t.Errorf("scheduler_batch_cache_flushed_total by reason (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantAttempts, gotAttempts); diff != "" {
				t.Errorf("scheduler_batch_attempts_total by result (-want +got):\n%s", diff)
			}
			if got := e.counter(t, "scheduler_batch_rescore_attempts_total", nil); got != tt.wantRescores {
				t.Errorf("scheduler_batch_rescore_attempts_total = %v, want %v", got, tt.wantRescores)
			}
		})
	}
}

// TestSignPod checks how a profile signs pods: the fragments joined with
// the scheduler name, nil when a plugin refuses, and nil for every pod of a
// profile with a plugin that cannot sign or with extenders.
func TestSignPod(t *testing.T) {
	ctx := context.Background()
	e := newBatchEnv(t, nil)
	a1, a2, b := batchPod("a1", "a", ""), batchPod("a2", "a", ""), batchPod("b", "b", "")
	a1.Spec.SchedulerName, a2.Spec.SchedulerName, b.Spec.SchedulerName = "test", "test", "test"
	if got, want := string(e.fw.SignPod(ctx, a1)), `{"kind":"a","v1.Pod.Spec.SchedulerName":"test"}`; got != want {
		t.Errorf("signature = %s, want %s", got, want)
	}
	if string(e.fw.SignPod(ctx, a1)) != string(e.fw.SignPod(ctx, a2)) {
		t.Error("two pods of one kind signed differently")
	}
	if string(e.fw.SignPod(ctx, a1)) == string(e.fw.SignPod(ctx, b)) {
		t.Error("pods of two kinds signed alike")
	}
	if sig := e.fw.SignPod(ctx, batchPod("u", "", "")); sig != nil {
		t.Errorf("a refused pod signed %s", sig)
	}

	// A Filter plugin that cannot sign (fakePlugin) turns signing off.
	unsigned := newTestFramework(t, []*fakePlugin{{name: "A"}}, nil)
	if sig := unsigned.SignPod(ctx, a1); sig != nil {
		t.Errorf("a profile with an unsigned Filter plugin signed %s", sig)
	}
}
