package minisched

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	configv1 "k8s.io/kube-scheduler/config/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
)

// fakeExtender rejects the nodes in failed / unresolvable, scores nodes
// from scores, records binds, and fails every verb with err when set.
type fakeExtender struct {
	name                   string
	filter, prio, binder   bool
	ignorable              bool
	interested             func(*v1.Pod) bool
	failed, unresolvable   map[string]string
	scores                 map[string]int64
	weight                 int64
	err                    error
	bound                  []string
	filterCalls, prioCalls int
}

func (f *fakeExtender) Name() string             { return f.name }
func (f *fakeExtender) IsIgnorable() bool        { return f.ignorable }
func (f *fakeExtender) IsFilter() bool           { return f.filter }
func (f *fakeExtender) IsPrioritizer() bool      { return f.prio }
func (f *fakeExtender) IsBinder() bool           { return f.binder }
func (f *fakeExtender) SupportsPreemption() bool { return false }
func (f *fakeExtender) IsInterested(p *v1.Pod) bool {
	return f.interested == nil || f.interested(p)
}

func (f *fakeExtender) Filter(_ *v1.Pod, nodes []*framework.NodeInfo) ([]*framework.NodeInfo,
	extenderv1.FailedNodesMap, extenderv1.FailedNodesMap, error) {
	f.filterCalls++
	if f.err != nil {
		return nil, nil, nil, f.err
	}
	var passed []*framework.NodeInfo
	for _, n := range nodes {
		_, bad := f.failed[n.Node().Name]
		_, hopeless := f.unresolvable[n.Node().Name]
		if !bad && !hopeless {
			passed = append(passed, n)
		}
	}
	return passed, f.failed, f.unresolvable, nil
}

func (f *fakeExtender) Prioritize(_ *v1.Pod, nodes []*framework.NodeInfo) (*extenderv1.HostPriorityList, int64, error) {
	f.prioCalls++
	if f.err != nil {
		return nil, 0, f.err
	}
	var list extenderv1.HostPriorityList
	for _, n := range nodes {
		list = append(list, extenderv1.HostPriority{Host: n.Node().Name, Score: f.scores[n.Node().Name]})
	}
	return &list, f.weight, nil
}

func (f *fakeExtender) Bind(b *v1.Binding) error {
	if f.err != nil {
		return f.err
	}
	f.bound = append(f.bound, b.Name+"@"+b.Target.Name)
	return nil
}

func (f *fakeExtender) ProcessPreemption(*v1.Pod, map[string]*extenderv1.Victims,
	framework.NodeInfoLister) (map[string]*extenderv1.Victims, error) {
	return nil, errors.New("not a preempting extender")
}

// extenderTestScheduler is a Scheduler over nodes n0…n<count-1> with the
// given plugins and extenders.
func extenderTestScheduler(t *testing.T, count int, pluginNames []string, exts ...framework.Extender) (*Scheduler, *framework.Framework) {
	t.Helper()
	var nodes []*v1.Node
	for i := range count {
		nodes = append(nodes, st.MakeNode().Name(fmt.Sprintf("n%d", i)).
			Capacity(map[v1.ResourceName]string{v1.ResourcePods: "10", v1.ResourceCPU: "4"}).Obj())
	}
	snapshot := cache.NewSnapshot(nil, nodes)
	var enabled []configv1.Plugin
	for _, n := range pluginNames {
		enabled = append(enabled, configv1.Plugin{Name: n})
	}
	profile := &configv1.KubeSchedulerProfile{SchedulerName: ptr.To("p"),
		Plugins: &configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: enabled}}}
	schedFramework, err := framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(), profile,
		framework.WithSnapshotSharedLister(snapshot), framework.WithParallelism(1), framework.WithExtenders(exts))
	if err != nil {
		t.Fatal(err)
	}
	s := &Scheduler{Cache: cache.New(0), snapshot: snapshot, profilePercentage: map[string]*int32{},
		rng: newTestScheduler().rng, bindSlots: make(chan struct{}, maxConcurrentBinds)}
	return s, schedFramework
}

func TestExtenderFilterInTheCycle(t *testing.T) {
	noScore := []string{"PrioritySort", "NodeUnschedulable", "DefaultBinder"}
	gpuOnly := func(p *v1.Pod) bool { return p.Labels["gpu"] == "yes" }
	tests := []struct {
		name          string
		exts          []*fakeExtender
		pod           *v1.Pod
		wantFeasible  []string
		wantStatuses  map[string]string // node → code: message
		wantExtender  bool              // "Extender" among the unschedulable plugins
		wantErr       string
		wantFilterCnt []int
	}{
		{
			name: "extenders filter one after another on the shrinking list; the search finds every node first",
			exts: []*fakeExtender{
				{name: "e1", filter: true, failed: map[string]string{"n0": "in maintenance"}},
				{name: "e2", filter: true, unresolvable: map[string]string{"n1": "retired"},
					failed: map[string]string{"n1": "ignored: unresolvable wins"}},
			},
			wantFeasible:  []string{"n2", "n3"},
			wantStatuses:  map[string]string{"n0": "Unschedulable: in maintenance", "n1": "UnschedulableAndUnresolvable: retired"},
			wantExtender:  true,
			wantFilterCnt: []int{1, 1},
		},
		{
			name: "an extender not interested in the pod is not asked",
			exts: []*fakeExtender{{name: "e1", filter: true, failed: map[string]string{"n0": "x"}, interested: gpuOnly}},
			// A filtering extender is configured, so the search does not
			// stop at the first feasible node, interested or not.
			wantFeasible:  []string{"n0", "n1", "n2", "n3"},
			wantStatuses:  map[string]string{},
			wantFilterCnt: []int{0},
		},
		{
			name:          "a failing ignorable extender is skipped",
			exts:          []*fakeExtender{{name: "e1", filter: true, ignorable: true, err: errors.New("down")}},
			wantFeasible:  []string{"n0", "n1", "n2", "n3"},
			wantStatuses:  map[string]string{},
			wantFilterCnt: []int{1},
		},
		{
			name:    "a failing required extender fails the attempt",
			exts:    []*fakeExtender{{name: "e1", filter: true, err: errors.New("down")}},
			wantErr: "down",
		},
		{
			name: "no node left: later extenders are not asked",
			exts: []*fakeExtender{
				{name: "e1", filter: true, failed: map[string]string{"n0": "a", "n1": "a", "n2": "a", "n3": "a"}},
				{name: "e2", filter: true},
			},
			wantStatuses: map[string]string{"n0": "Unschedulable: a", "n1": "Unschedulable: a",
				"n2": "Unschedulable: a", "n3": "Unschedulable: a"},
			wantExtender:  true,
			wantFilterCnt: []int{1, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exts := make([]framework.Extender, len(tt.exts))
			for i, e := range tt.exts {
				exts[i] = e
			}
			s, schedFramework := extenderTestScheduler(t, 4, noScore, exts...)
			pod := tt.pod
			if pod == nil {
				pod = st.MakePod().Name("p").Obj()
			}
			feasible, diagnosis, _, err := s.findNodesThatFitPod(context.Background(), schedFramework, framework.NewCycleState(), queuedPod(pod), 0)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantFeasible, names(feasible)); diff != "" {
				t.Errorf("feasible (-want +got):\n%s", diff)
			}
			statuses := map[string]string{}
			diagnosis.NodeToStatus.ForEachExplicitNode(func(node string, s *framework.Status) {
				statuses[node] = s.Code().String() + ": " + s.Message()
			})
			if diff := cmp.Diff(tt.wantStatuses, statuses); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			if got := diagnosis.UnschedulablePlugins.Has(framework.ExtenderName); got != tt.wantExtender {
				t.Errorf("Extender among unschedulable plugins: %v, want %v", got, tt.wantExtender)
			}
			for i, want := range tt.wantFilterCnt {
				if tt.exts[i].filterCalls != want {
					t.Errorf("%s asked %d times, want %d", tt.exts[i].name, tt.exts[i].filterCalls, want)
				}
			}
		})
	}
}

func TestExtenderScores(t *testing.T) {
	withScore := []string{"PrioritySort", "TaintToleration", "DefaultBinder"}
	tests := []struct {
		name    string
		plugins []string
		exts    []*fakeExtender
		want    map[string]int64 // node → total
	}{
		{
			name:    "score × weight × 10 added to the plugins' total",
			plugins: withScore,
			exts: []*fakeExtender{
				{name: "e1", prio: true, weight: 2, scores: map[string]int64{"n0": 10, "n1": 3}},
				{name: "e2", prio: true, weight: 1, scores: map[string]int64{"n1": 1}},
			},
			// TaintToleration: 100 for every node without taints.
			want: map[string]int64{"n0": 100 + 200, "n1": 100 + 60 + 10, "n2": 100},
		},
		{
			name:    "a failing prioritizer loses its say, the others count",
			plugins: withScore,
			exts: []*fakeExtender{
				{name: "e1", prio: true, weight: 5, err: errors.New("down")},
				{name: "e2", prio: true, weight: 1, scores: map[string]int64{"n2": 7}},
			},
			want: map[string]int64{"n0": 100, "n1": 100, "n2": 170},
		},
		{
			name:    "extenders alone rank the nodes when no Score plugin does",
			plugins: []string{"PrioritySort", "DefaultBinder"},
			exts:    []*fakeExtender{{name: "e1", prio: true, weight: 1, scores: map[string]int64{"n1": 4}}},
			want:    map[string]int64{"n0": 0, "n1": 40, "n2": 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exts := make([]framework.Extender, len(tt.exts))
			for i, e := range tt.exts {
				exts[i] = e
			}
			s, schedFramework := extenderTestScheduler(t, 3, tt.plugins, exts...)
			nodes, _ := s.snapshot.NodeInfos().List()
			pod := st.MakePod().Name("p").Obj()
			scores, _, err := s.prioritizeNodes(context.Background(), schedFramework, framework.NewCycleState(), pod, nodes)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, ns := range scores {
				got[ns.Name] = ns.TotalScore
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("totals (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExtenderBind(t *testing.T) {
	gpuOnly := func(p *v1.Pod) bool { return p.Labels["gpu"] == "yes" }
	tests := []struct {
		name        string
		exts        []*fakeExtender
		wantBoundBy int // index of the extender that binds; -1: the Bind plugins; -2: nobody
		wantErr     bool
	}{
		{name: "no binder: DefaultBinder", exts: []*fakeExtender{{name: "f", filter: true}}, wantBoundBy: -1},
		{name: "the interested binder binds instead of DefaultBinder",
			exts: []*fakeExtender{{name: "b", binder: true}}, wantBoundBy: 0},
		{name: "a binder not interested in the pod leaves it to DefaultBinder",
			exts: []*fakeExtender{{name: "b", binder: true, interested: gpuOnly}}, wantBoundBy: -1},
		{name: "a failing ignorable binder passes the turn",
			exts:        []*fakeExtender{{name: "b1", binder: true, ignorable: true, err: errors.New("down")}},
			wantBoundBy: -1},
		{name: "a failing required binder fails the binding",
			exts:    []*fakeExtender{{name: "b1", binder: true, err: errors.New("down")}},
			wantErr: true, wantBoundBy: -2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exts := make([]framework.Extender, len(tt.exts))
			for i, e := range tt.exts {
				exts[i] = e
			}
			pod := st.MakePod().Name("p").UID("uid-p").Obj()
			client := fake.NewClientset(pod)
			var bindings int
			client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
				if action.GetSubresource() == "binding" {
					bindings++
				}
				return false, nil, nil
			})
			s, _ := extenderTestScheduler(t, 1, []string{"PrioritySort", "DefaultBinder"}, exts...)
			profile := &configv1.KubeSchedulerProfile{SchedulerName: ptr.To("p"), Plugins: &configv1.Plugins{
				MultiPoint: configv1.PluginSet{Enabled: []configv1.Plugin{{Name: "PrioritySort"}, {Name: "DefaultBinder"}}}}}
			schedFramework, err := framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(), profile,
				framework.WithClientSet(client), framework.WithExtenders(exts))
			if err != nil {
				t.Fatal(err)
			}
			sts := s.bind(context.Background(), framework.NewCycleState(), schedFramework, pod, "n0")
			if got := !sts.IsSuccess(); got != tt.wantErr {
				t.Fatalf("bind = %v, want error: %v", sts, tt.wantErr)
			}
			for i, e := range tt.exts {
				if got := len(e.bound) > 0; got != (i == tt.wantBoundBy) {
					t.Errorf("extender %s bound: %v", e.name, e.bound)
				}
			}
			if got := bindings == 1; got != (tt.wantBoundBy == -1) {
				t.Errorf("DefaultBinder posted %d bindings", bindings)
			}
		})
	}
}
