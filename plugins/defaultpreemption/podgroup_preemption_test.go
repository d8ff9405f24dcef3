// Tests of preemption with GenericWorkload: victims as units, their order,
// a pod's preemption with pod groups about, and a whole pod group's
// preemption (PodGroupPostFilter), over a cache and snapshot that track pod
// groups, with a fake clientset taking the evictions.

package defaultpreemption

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	policylisters "k8s.io/client-go/listers/policy/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/minisched/metrics"
	"github.com/minisched/minisched/plugins/defaultbinder"
	"github.com/minisched/minisched/plugins/noderesources"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/plugins/prioritysort"
)

// groupFixture is a cluster as the scheduler holds it with GenericWorkload
// (a cache tracking pod groups, and its snapshot), DefaultPreemption on a
// framework with PrioritySort, NodeResourcesFit and DefaultBinder over
// them, and a fake clientset holding the pods, which takes the evictions.
type groupFixture struct {
	pl       *DefaultPreemption
	fw       *framework.Framework
	snapshot *cache.Snapshot
	client   *fake.Clientset
	metrics  *metrics.Metrics
}

// newGroupFixture builds the fixture: bound pods on their nodes, pending
// pods of groups known to their groups, and the PodGroups. The framework
// has GenericWorkload on.
func newGroupFixture(t *testing.T, nodes []*v1.Node, pods []*v1.Pod,
	podGroups []*schedulingv1beta1.PodGroup) *groupFixture {
	return newFixture(t, features.Gates{GenericWorkload: true}, nodes, pods, podGroups)
}

// newFixture is newGroupFixture with the gates given: without
// GenericWorkload the framework has no PodGroupManager, and the plugin
// knows no pod group.
func newFixture(t *testing.T, gates features.Gates, nodes []*v1.Node, pods []*v1.Pod,
	podGroups []*schedulingv1beta1.PodGroup) *groupFixture {
	t.Helper()
	logger, ctx := ktesting.NewTestContext(t)
	c := cache.New(0, cache.WithPodGroups())
	for _, n := range nodes {
		c.AddNode(logger, n)
	}
	var objects []runtime.Object
	for _, p := range pods {
		objects = append(objects, p)
		if p.Spec.NodeName != "" {
			if err := c.AddPod(logger, p); err != nil {
				t.Fatal(err)
			}
		} else {
			c.AddPodGroupMember(p)
		}
	}
	for _, pg := range podGroups {
		c.AddPodGroup(pg)
	}
	snapshot := cache.NewEmptySnapshot()
	if err := c.UpdateSnapshot(logger, snapshot); err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(objects...)
	m := metrics.New()
	m.RegisterWorkloadPreemption()
	registry := framework.Registry{
		prioritysort.Name:  prioritysort.New,
		noderesources.Name: noderesources.New,
		defaultbinder.Name: defaultbinder.New,
	}
	opts := []framework.Option{framework.WithSnapshotSharedLister(snapshot), framework.WithClientSet(client),
		framework.WithMetrics(m), framework.WithFeatureGates(gates)}
	if gates.GenericWorkload {
		opts = append(opts, framework.WithPodGroupManager(c))
	}
	fw, err := plugintesting.NewFramework(ctx, registry, &configv1.Plugins{
		MultiPoint: plugintesting.Enable(prioritysort.Name, noderesources.Name, defaultbinder.Name),
	}, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := New(ctx, nil, fw)
	if err != nil {
		t.Fatal(err)
	}
	return &groupFixture{pl: pl.(*DefaultPreemption), fw: fw, snapshot: snapshot, client: client, metrics: m}
}

// greedy is a PodGroupSchedulingFunc for tests, standing in for the
// pod-group cycle's algorithm: it places the members in order, each on the
// first node (in List order) where PreFilter and Filter pass, in the
// snapshot, so that the next member counts it; it undoes every placement
// before it returns. Placing fewer than minCount members is Unschedulable,
// in GangScheduling's words.
func (f *groupFixture) greedy(members []*v1.Pod, minCount int) framework.PodGroupSchedulingFunc {
	return func(ctx context.Context) (*framework.PodGroupAssignments, *framework.Status) {
		out := &framework.PodGroupAssignments{}
		var assumed []*v1.Pod
		defer func() {
			for _, p := range slices.Backward(assumed) {
				if err := f.snapshot.ForgetPod(ktesting.NewLogger(nil, ktesting.NewConfig()), p); err != nil {
					panic(err)
				}
			}
		}()
		for _, pod := range members {
			state := framework.NewCycleState()
			nodes, _ := f.snapshot.List()
			if _, s, _ := f.fw.RunPreFilterPlugins(ctx, state, pod, nodes); !s.IsSuccess() {
				continue
			}
			for _, ni := range nodes {
				if !f.fw.RunFilterPlugins(ctx, state, pod, ni).IsSuccess() {
					continue
				}
				placed := pod.DeepCopy()
				placed.Spec.NodeName = ni.Node().Name
				if err := f.snapshot.AssumePod(framework.NewPodInfo(placed)); err != nil {
					return nil, framework.AsStatus(err)
				}
				assumed = append(assumed, placed)
				out.ProposedAssignments = append(out.ProposedAssignments, framework.ProposedAssignment{
					PodInfo: framework.NewPodInfo(pod), NodeName: ni.Node().Name, State: state})
				break
			}
		}
		if n := len(out.ProposedAssignments); n < minCount {
			return nil, framework.NewStatus(framework.Unschedulable,
				fmt.Sprintf("minCount (%d) cannot be satisfied: %d scheduled, 0 remaining", minCount, n))
		}
		return out, nil
	}
}

// nodeState is what a test compares of a snapshot: each node's pods (by
// name, in order) and requested CPU.
func nodeState(s *cache.Snapshot) map[string]string {
	out := map[string]string{}
	list, _ := s.List()
	for _, ni := range list {
		var names []string
		for _, pi := range ni.Pods {
			names = append(names, pi.Pod.Name)
		}
		out[ni.Node().Name] = fmt.Sprintf("%v %dm", names, ni.Requested.MilliCPU)
	}
	return out
}

// waitForEvictions waits until the preemption keyed by uid has no
// goroutine left, and returns the pods the fake clientset no longer has,
// by name.
func (f *groupFixture) waitForEvictions(t *testing.T, uid types.UID, pods []*v1.Pod) []string {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) {
			f.pl.executor.mu.RLock()
			defer f.pl.executor.mu.RUnlock()
			return !f.pl.executor.preempting.Has(uid), nil
		})
	if err != nil {
		t.Fatalf("the preemption did not finish: %v", err)
	}
	var gone []string
	for _, p := range pods {
		if _, err := f.client.CoreV1().Pods(p.Namespace).Get(t.Context(), p.Name, metav1.GetOptions{}); err != nil {
			gone = append(gone, p.Name)
		}
	}
	return gone
}

// fakePDBLister lists pdbs.
func fakePDBLister(pdbs []*policyv1.PodDisruptionBudget) policylisters.PodDisruptionBudgetLister {
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	for _, p := range pdbs {
		if err := indexer.Add(p); err != nil {
			panic(err)
		}
	}
	return policylisters.NewPodDisruptionBudgetLister(indexer)
}

// Builders of the tests below.
var (
	fourCPU = st.MakeNode().Name("n").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "4", v1.ResourcePods: "20"}).Obj()
	oneCPU  = st.MakeNode().Name("n2").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourcePods: "20"}).Obj()
	t0      = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

// member is a pending member of group with the priority given, asking 1 CPU.
func member(name, group string, priority int32) *st.PodWrapper {
	return st.MakePod().Name(name).UID(name).PodGroup(group).Priority(priority).Req(cpu("1"))
}

// gang is a gang PodGroup of minCount 3 and priority 1000.
func gang() *schedulingv1beta1.PodGroup {
	return st.MakePodGroup().Name("gang").UID("gang-uid").Gang(3).Priority(1000).Obj()
}

// gangMembers are gang's three members.
func gangMembers() []*v1.Pod {
	return []*v1.Pod{member("a", "gang", 1000).Obj(), member("b", "gang", 1000).Obj(), member("c", "gang", 1000).Obj()}
}

// lows are four 1-CPU pods bound to n, low1 first, with the priority given.
func lows(priority int32) []*v1.Pod {
	var out []*v1.Pod
	for i := 1; i <= 4; i++ {
		out = append(out, boundPod(fmt.Sprintf("low%d", i), "n", priority, "1").Obj())
	}
	return out
}

func TestPodGroupPostFilter(t *testing.T) {
	terminating := boundPod("leaving", "n", 100, "1").Obj()
	terminating.DeletionTimestamp = ptr.To(metav1.Now())
	terminating.Finalizers = []string{"example.com/keep"} // the fake clientset takes no deleted pod without one
	terminating.Status.Conditions = []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
		Reason: v1.PodReasonPreemptionByScheduler}}
	allGroup := st.MakePodGroup().Name("victims").UID("victims-uid").Gang(3).Priority(100).DisruptionModeAll().Obj()
	singleGroup := st.MakePodGroup().Name("single").UID("single-uid").Gang(1).Priority(100).Obj()
	nominated := gangMembers()
	nominated[0].Status.NominatedNodeName = "n"
	never := gangMembers()
	for _, m := range never {
		m.Spec.PreemptionPolicy = ptr.To(v1.PreemptNever)
	}
	tests := []struct {
		name      string
		nodes     []*v1.Node
		pods      []*v1.Pod
		podGroups []*schedulingv1beta1.PodGroup
		pdbs      []*policyv1.PodDisruptionBudget
		// members are the gang's pending members (gangMembers if nil).
		members    []*v1.Pod
		wantCode   framework.Code
		wantMsg    string
		wantEvicts []string
		// wantNominated are the members' nominated nodes (nil: no result).
		wantNominated map[string]string
	}{
		{
			name:  "the oldest of equal victims is reprieved: victims that never started count as made in node order",
			nodes: []*v1.Node{fourCPU}, pods: lows(100),
			wantCode: framework.Success, wantMsg: "pod group preemption: found a placement for podgroup, preempting 3 victims",
			wantEvicts: []string{"low2", "low3", "low4"}, wantNominated: map[string]string{"a": "n", "b": "n", "c": "n"},
		},
		{
			name:  "the pod that started first is reprieved",
			nodes: []*v1.Node{fourCPU},
			pods: []*v1.Pod{boundPod("low1", "n", 100, "1").StartTime(t0.Add(3 * time.Hour)).Obj(),
				boundPod("low2", "n", 100, "1").StartTime(t0.Add(2 * time.Hour)).Obj(),
				boundPod("low3", "n", 100, "1").StartTime(t0).Obj(),
				boundPod("low4", "n", 100, "1").StartTime(t0.Add(time.Hour)).Obj()},
			wantCode: framework.Success, wantMsg: "pod group preemption: found a placement for podgroup, preempting 3 victims",
			wantEvicts: []string{"low1", "low2", "low4"}, wantNominated: map[string]string{"a": "n", "b": "n", "c": "n"},
		},
		{
			name:  "a PDB-protected victim is reprieved first",
			nodes: []*v1.Node{fourCPU},
			pods: append(lows(100)[:3],
				boundPod("guarded", "n", 100, "1").Label("app", "db").Obj()),
			pdbs:     []*policyv1.PodDisruptionBudget{pdb(map[string]string{"app": "db"}, 0)},
			wantCode: framework.Success, wantMsg: "pod group preemption: found a placement for podgroup, preempting 3 victims",
			wantEvicts: []string{"low1", "low2", "low3"}, wantNominated: map[string]string{"a": "n", "b": "n", "c": "n"},
		},
		{
			name:  "a pod group disrupted as a whole goes whole, with its pod on another node",
			nodes: []*v1.Node{fourCPU, oneCPU},
			pods: []*v1.Pod{boundPod("g1", "n", 100, "1").PodGroup("victims").Obj(),
				boundPod("g2", "n", 100, "1").PodGroup("victims").Obj(),
				boundPod("g3", "n2", 100, "1").PodGroup("victims").Obj(),
				boundPod("solo1", "n", 100, "1").Obj(), boundPod("solo2", "n", 100, "1").Obj()},
			podGroups: []*schedulingv1beta1.PodGroup{allGroup},
			wantCode:  framework.Success, wantMsg: "pod group preemption: found a placement for podgroup, preempting 4 victims",
			wantEvicts: []string{"g1", "g2", "g3", "solo2"}, wantNominated: map[string]string{"a": "n", "b": "n", "c": "n"},
		},
		{
			name:  "a member of a pod group is judged by its group's priority, not its own",
			nodes: []*v1.Node{fourCPU},
			pods: []*v1.Pod{boundPod("member", "n", 5000, "2").PodGroup("single").Obj(),
				boundPod("boss", "n", 5000, "1").Obj()},
			podGroups: []*schedulingv1beta1.PodGroup{singleGroup},
			wantCode:  framework.Success, wantMsg: "pod group preemption: found a placement for podgroup, preempting 1 victims",
			wantEvicts: []string{"member"}, wantNominated: map[string]string{"a": "n", "b": "n", "c": "n"},
		},
		{
			name:  "nothing of lower priority anywhere",
			nodes: []*v1.Node{fourCPU}, pods: lows(1000),
			wantCode: framework.UnschedulableAndUnresolvable,
			wantMsg:  "pod group preemption: No preemption victims found for incoming preemptor",
		},
		{
			name:     "preemption cannot help: the algorithm's status says why, and nothing is evicted",
			nodes:    []*v1.Node{fourCPU},
			pods:     []*v1.Pod{boundPod("boss", "n", 5000, "3").Obj(), boundPod("low", "n", 100, "1").Obj()},
			wantCode: framework.Unschedulable,
			wantMsg:  "pod group preemption: minCount (3) cannot be satisfied: 1 scheduled, 0 remaining",
		},
		{
			name:  "a member's preemptionPolicy is Never",
			nodes: []*v1.Node{fourCPU}, pods: lows(100), members: never,
			wantCode: framework.Unschedulable, wantMsg: "pod group preemption: not eligible due to preemptionPolicy=Never.",
		},
		{
			name:  "an earlier preemption is still going on: the nominations stay",
			nodes: []*v1.Node{fourCPU}, pods: append(lows(100)[:3], terminating), members: nominated,
			wantCode: framework.Success, wantMsg: "pod group preemption: ongoing preemption on nominated nodes",
			wantNominated: map[string]string{"a": "n", "b": "", "c": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			members := tt.members
			if members == nil {
				members = gangMembers()
			}
			f := newGroupFixture(t, tt.nodes, append(slices.Clone(tt.pods), members...),
				append([]*schedulingv1beta1.PodGroup{gang()}, tt.podGroups...))
			f.pl.pdbLister = fakePDBLister(tt.pdbs)
			before := nodeState(f.snapshot)
			pgi := &framework.PodGroupInfo{Namespace: "default", Name: "gang", PodGroup: gang(), UnscheduledPods: members}
			result, status := f.pl.PodGroupPostFilter(ctx, framework.NewCycleState(), pgi, f.greedy(members, 3))
			if status.Code() != tt.wantCode || status.Message() != tt.wantMsg {
				t.Errorf("status %v %q, want %v %q", status.Code(), status.Message(), tt.wantCode, tt.wantMsg)
			}
			var got map[string]string
			if result != nil {
				got = map[string]string{}
				for key, info := range result.NominatingInfos {
					if info.NominatingMode != framework.ModeOverride {
						t.Errorf("%s: nominating mode %v, want ModeOverride", key, info.NominatingMode)
					}
					got[key.Name] = info.NominatedNodeName
				}
			}
			if diff := cmp.Diff(tt.wantNominated, got); diff != "" {
				t.Errorf("nominations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, nodeState(f.snapshot)); diff != "" {
				t.Errorf("the snapshot is not as it was (-before +after):\n%s", diff)
			}
			if err := f.snapshot.StartMutations(); err != nil {
				t.Errorf("the session was not ended: %v", err)
			}
			gone := f.waitForEvictions(t, "gang-uid", tt.pods)
			if diff := cmp.Diff(tt.wantEvicts, gone, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("evicted (-want +got):\n%s", diff)
			}
			want := fmt.Sprintf(`# HELP scheduler_workload_preemption_attempts_total Total preemption attempts initiated by workload (including pod groups) in the cluster till now.
# TYPE scheduler_workload_preemption_attempts_total counter
scheduler_workload_preemption_attempts_total{result=%q} 1
`, tt.wantCode)
			if err := testutil.GatherAndCompare(f.metrics.Gatherer(), strings.NewReader(want),
				"scheduler_workload_preemption_attempts_total"); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestSelectPodGroupVictims checks what a pod group's preemption chose:
// the victims, most important first, how many violate a budget, and how
// many units count as pod groups' (a lone member of a group disrupted one
// pod at a time counts too, as in kube-scheduler).
func TestSelectPodGroupVictims(t *testing.T) {
	allGroup := st.MakePodGroup().Name("victims").UID("victims-uid").Gang(2).Priority(50).DisruptionModeAll().Obj()
	singleGroup := st.MakePodGroup().Name("single").UID("single-uid").Gang(1).Priority(60).Obj()
	tests := []struct {
		name          string
		pods          []*v1.Pod
		podGroups     []*schedulingv1beta1.PodGroup
		pdbs          []*policyv1.PodDisruptionBudget
		wantVictims   []string
		wantPDB       int
		wantGroupings int
	}{
		{name: "the highest priority is reprieved; victims most important first",
			pods: []*v1.Pod{boundPod("p10", "n", 10, "1").Obj(), boundPod("p40", "n", 40, "1").Obj(),
				boundPod("p20", "n", 20, "1").Obj(), boundPod("p30", "n", 30, "1").Obj()},
			wantVictims: []string{"p30", "p20", "p10"}},
		{name: "every victim is protected: the first is reprieved, the others count as violations",
			pods: func() []*v1.Pod {
				var out []*v1.Pod
				for _, p := range lows(100) {
					p.Labels = map[string]string{"app": "db"}
					out = append(out, p)
				}
				return out
			}(),
			pdbs:        []*policyv1.PodDisruptionBudget{pdb(map[string]string{"app": "db"}, 0)},
			wantVictims: []string{"low2", "low3", "low4"}, wantPDB: 3},
		{name: "a whole group and a group's lone member count as pod-group disruptions",
			pods: []*v1.Pod{boundPod("g1", "n", 50, "1").PodGroup("victims").Obj(),
				boundPod("g2", "n", 50, "1").PodGroup("victims").Obj(),
				boundPod("s1", "n", 60, "1").PodGroup("single").Obj(),
				boundPod("p70", "n", 70, "1").Obj()},
			podGroups:   []*schedulingv1beta1.PodGroup{allGroup, singleGroup},
			wantVictims: []string{"s1", "g1", "g2"}, wantGroupings: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			members := gangMembers()
			f := newGroupFixture(t, []*v1.Node{fourCPU}, append(slices.Clone(tt.pods), members...),
				append([]*schedulingv1beta1.PodGroup{gang()}, tt.podGroups...))
			nodes, _ := f.snapshot.List()
			if err := f.snapshot.StartMutations(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = f.snapshot.EndMutations() }()
			units, err := f.pl.victimsOn(nodes)
			if err != nil {
				t.Fatal(err)
			}
			sel, status := f.pl.selectPodGroupVictims(ctx, f.snapshot, 1000, units, tt.pdbs, f.greedy(members, 3))
			if !status.IsSuccess() {
				t.Fatalf("status %v", status)
			}
			if diff := cmp.Diff(tt.wantVictims, names(sel.victims)); diff != "" {
				t.Errorf("victims (-want +got):\n%s", diff)
			}
			if sel.numPDBViolations != tt.wantPDB || sel.groupDisruptions != tt.wantGroupings {
				t.Errorf("PDB violations %d, pod-group disruptions %d; want %d, %d", sel.numPDBViolations,
					sel.groupDisruptions, tt.wantPDB, tt.wantGroupings)
			}
		})
	}
}

// TestVictimsOn checks the units found on nodes and what they are judged
// by: without GenericWorkload every pod alone, by its own priority; with
// it, a member by its PodGroup's priority (its own if the PodGroup is
// unknown) and ranked as a group's, and the members of a group disrupted
// as a whole together, wherever they are, by name, once.
func TestVictimsOn(t *testing.T) {
	allGroup := st.MakePodGroup().Name("all").Gang(2).Priority(50).DisruptionModeAll().Obj()
	singleGroup := st.MakePodGroup().Name("single").Gang(1).Priority(60).Obj()
	pods := []*v1.Pod{
		boundPod("plain", "n", 10, "1").Obj(),
		boundPod("g2", "n", 5000, "1").PodGroup("all").Obj(),
		boundPod("g1", "n", 5000, "1").PodGroup("all").Obj(),
		boundPod("g3", "n2", 5000, "1").PodGroup("all").Obj(),
		boundPod("s1", "n", 5000, "1").PodGroup("single").Obj(),
		boundPod("stray", "n", 30, "1").PodGroup("unknown").Obj(),
	}
	tests := []struct {
		name  string
		gates features.Gates
		want  []string
	}{
		{name: "without GenericWorkload", want: []string{"pod [plain] 10", "pod [g2] 5000", "pod [g1] 5000",
			"pod [s1] 5000", "pod [stray] 30", "pod [g3] 5000"}},
		{name: "with GenericWorkload", gates: features.Gates{GenericWorkload: true},
			want: []string{"pod [plain] 10", "podgroup [g1 g2 g3] 50 on [n n2]", "podgroup [s1] 60",
				"podgroup [stray] 30"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.gates, []*v1.Node{fourCPU, oneCPU}, pods,
				[]*schedulingv1beta1.PodGroup{allGroup, singleGroup})
			nodes, _ := f.snapshot.List()
			units, err := f.pl.victimsOn(nodes)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range units {
				desc := fmt.Sprintf("%s %v %d", v.kind, names(victimPods([]*victim{v})), v.priority)
				if len(v.nodes) > 1 {
					var ns []string
					for n := range v.nodes {
						ns = append(ns, n)
					}
					slices.Sort(ns)
					desc += fmt.Sprintf(" on %v", ns)
				}
				got = append(got, desc)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("units (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMoreImportantVictim(t *testing.T) {
	unit := func(priority int32, kind string, starts ...time.Time) *victim {
		var pods []*framework.PodInfo
		for i, start := range starts {
			pods = append(pods, framework.NewPodInfo(st.MakePod().Name(fmt.Sprint(i)).StartTime(start).Obj()))
		}
		return newVictim(pods, priority, kind)
	}
	tests := []struct {
		name string
		a, b *victim
		want bool
	}{
		{name: "higher priority first, whatever else", a: unit(20, kindPod, t0), b: unit(10, kindPodGroup, t0, t0),
			want: true},
		{name: "a group's unit before a pod's", a: unit(10, kindPodGroup, t0.Add(time.Hour)), b: unit(10, kindPod, t0),
			want: true},
		{name: "the bigger group first", a: unit(10, kindPodGroup, t0.Add(time.Hour), t0.Add(time.Hour)),
			b: unit(10, kindPodGroup, t0), want: true},
		{name: "then the one that started earlier", a: unit(10, kindPod, t0), b: unit(10, kindPod, t0.Add(time.Hour)),
			want: true},
		{name: "a group's earliest pod counts", a: unit(10, kindPodGroup, t0.Add(2*time.Hour), t0),
			b: unit(10, kindPodGroup, t0.Add(time.Hour), t0.Add(time.Hour)), want: true},
		{name: "equals are not more important", a: unit(10, kindPod, t0), b: unit(10, kindPod, t0), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := moreImportantVictim(tt.a, tt.b); got != tt.want {
				t.Errorf("moreImportantVictim(a, b) = %v, want %v", got, tt.want)
			}
			if tt.want && moreImportantVictim(tt.b, tt.a) {
				t.Error("moreImportantVictim(b, a) is true too")
			}
		})
	}
}

// TestSelectVictimsOnNodeWithPodGroups: a pod's preemption, with
// GenericWorkload, evicts a group disrupted as a whole as one unit, its pod
// on another node included, where without the gate its members are pods
// like any other. The node (3 CPU) holds g1 and g2 of that group and solo,
// which started last; g3 is on n2; the preemptor asks 2 CPU.
func TestSelectVictimsOnNodeWithPodGroups(t *testing.T) {
	node := st.MakeNode().Name("n").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "3"}).Obj()
	allGroup := st.MakePodGroup().Name("all").Gang(3).Priority(50).DisruptionModeAll().Obj()
	pods := []*v1.Pod{
		boundPod("g1", "n", 50, "1").PodGroup("all").StartTime(t0).Obj(),
		boundPod("g2", "n", 50, "1").PodGroup("all").StartTime(t0.Add(time.Hour)).Obj(),
		boundPod("solo", "n", 50, "1").StartTime(t0.Add(2 * time.Hour)).Obj(),
		boundPod("g3", "n2", 50, "1").PodGroup("all").StartTime(t0).Obj(),
	}
	preemptor := st.MakePod().Name("pre").UID("pre").Priority(1000).Req(cpu("2")).Obj()
	tests := []struct {
		name        string
		gates       features.Gates
		wantVictims []string
	}{
		{name: "without GenericWorkload: the oldest pod stays", wantVictims: []string{"g2", "solo"}},
		{name: "with GenericWorkload: the group goes whole, solo stays", gates: features.Gates{GenericWorkload: true},
			wantVictims: []string{"g1", "g2", "g3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t, tt.gates, []*v1.Node{node, oneCPU}, pods, []*schedulingv1beta1.PodGroup{allGroup})
			main, err := f.snapshot.Get("n")
			if err != nil {
				t.Fatal(err)
			}
			state := framework.NewCycleState()
			nodes, _ := f.snapshot.List()
			if _, s, _ := f.fw.RunPreFilterPlugins(ctx, state, preemptor, nodes); !s.IsSuccess() {
				t.Fatalf("PreFilter: %v", s)
			}
			units, err := f.pl.victimsOn([]*framework.NodeInfo{main})
			if err != nil {
				t.Fatal(err)
			}
			got, _, status := f.pl.selectVictimsOnNode(ctx, state, preemptor, main.Snapshot(), units, nil)
			if !status.IsSuccess() {
				t.Fatalf("status %v", status)
			}
			if diff := cmp.Diff(tt.wantVictims, names(got)); diff != "" {
				t.Errorf("victims (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodGroupPreEnqueue: while a pod group's preemption runs, each of its
// members is held back; other pods are not, nor is a member whose PodGroup
// the scheduler has not seen.
func TestPodGroupPreEnqueue(t *testing.T) {
	f := newGroupFixture(t, []*v1.Node{fourCPU}, gangMembers(), []*schedulingv1beta1.PodGroup{gang()})
	f.pl.executor.preempting.Insert("gang-uid")
	tests := []struct {
		name    string
		pod     *v1.Pod
		wantMsg string
	}{
		{name: "a member of the preempting group", pod: gangMembers()[0], wantMsg: msgWaitingForPodGroup},
		{name: "a member of a group the scheduler has not seen", pod: member("x", "unknown", 1000).Obj()},
		{name: "a pod in no group", pod: st.MakePod().Name("alone").UID("alone").Obj()},
		{name: "a pod whose UID is the group's is no member", pod: st.MakePod().Name("odd").UID("gang-uid").Obj(),
			wantMsg: msgWaitingForVictims},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := f.pl.PreEnqueue(context.Background(), tt.pod)
			wantCode := framework.Success
			if tt.wantMsg != "" {
				wantCode = framework.UnschedulableAndUnresolvable
			}
			if s.Code() != wantCode || s.Message() != tt.wantMsg {
				t.Errorf("PreEnqueue = %v %q, want %v %q", s.Code(), s.Message(), wantCode, tt.wantMsg)
			}
		})
	}
}

// TestPodEligibleWithPodGroups: with GenericWorkload, a terminating victim
// on the nominated node is judged by its PodGroup's priority.
func TestPodEligibleWithPodGroups(t *testing.T) {
	leaving := boundPod("leaving", "n", 5000, "1").PodGroup("low").Obj()
	leaving.DeletionTimestamp = ptr.To(metav1.Now())
	leaving.Finalizers = []string{"example.com/keep"}
	leaving.Status.Conditions = []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
		Reason: v1.PodReasonPreemptionByScheduler}}
	low := st.MakePodGroup().Name("low").Gang(1).Priority(10).Obj()
	preemptor := st.MakePod().Name("pre").UID("pre").Priority(100).NominatedNodeName("n").Obj()
	tests := []struct {
		name    string
		gates   features.Gates
		wantMsg string
	}{
		{name: "without GenericWorkload: the victim's own priority is higher"},
		{name: "with GenericWorkload: its group's is lower", gates: features.Gates{GenericWorkload: true},
			wantMsg: msgTerminatingOnNode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.gates, []*v1.Node{fourCPU}, []*v1.Pod{leaving}, []*schedulingv1beta1.PodGroup{low})
			ok, msg := f.pl.podEligibleToPreemptOthers(preemptor, framework.NewStatus(framework.Unschedulable))
			if ok != (tt.wantMsg == "") || msg != tt.wantMsg {
				t.Errorf("eligible = %v %q, want message %q", ok, msg, tt.wantMsg)
			}
		})
	}
}
