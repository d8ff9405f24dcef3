package defaultpreemption

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/defaultbinder"
	"github.com/minisched/minisched/plugins/noderesources"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/plugins/prioritysort"
)

func cpu(q string) map[v1.ResourceName]string { return map[v1.ResourceName]string{v1.ResourceCPU: q} }

// boundPod is a pod bound to node with the priority and cpu request given.
func boundPod(name, node string, priority int32, cpuReq string) *st.PodWrapper {
	return st.MakePod().Name(name).UID(name).NodeName(node).Priority(priority).Req(cpu(cpuReq))
}

func pdb(selector map[string]string, allowed int32, disrupted ...string) *policyv1.PodDisruptionBudget {
	p := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pdb"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: selector}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
	if len(disrupted) > 0 {
		p.Status.DisruptedPods = map[string]metav1.Time{}
		for _, n := range disrupted {
			p.Status.DisruptedPods[n] = metav1.Now()
		}
	}
	return p
}

// newPlugin builds DefaultPreemption on a framework with PrioritySort,
// NodeResourcesFit and DefaultBinder over a snapshot of nodes and pods (no
// informers: no listers, so no PDBs but those a test passes in).
func newPlugin(t *testing.T, nodes []*v1.Node, pods []*v1.Pod) (*DefaultPreemption, *framework.Framework) {
	t.Helper()
	ctx := context.Background()
	registry := framework.Registry{
		prioritysort.Name:  prioritysort.New,
		noderesources.Name: noderesources.New,
		defaultbinder.Name: defaultbinder.New,
	}
	schedFramework, err := plugintesting.NewFramework(ctx, registry, &configv1.Plugins{
		MultiPoint: plugintesting.Enable(prioritysort.Name, noderesources.Name, defaultbinder.Name),
	}, nil, framework.WithSnapshotSharedLister(cache.NewSnapshot(pods, nodes)))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := New(ctx, nil, schedFramework)
	if err != nil {
		t.Fatal(err)
	}
	return pl.(*DefaultPreemption), schedFramework
}

func names(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestSelectVictimsOnNode(t *testing.T) {
	node := st.MakeNode().Name("n").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "3"}).Obj()
	tests := []struct {
		name          string
		pods          []*v1.Pod
		pdbs          []*policyv1.PodDisruptionBudget
		preemptor     *v1.Pod
		wantVictims   []string
		wantViolating int
		wantReason    string
	}{
		{
			name: "the least important pods go, the most important are reprieved",
			pods: []*v1.Pod{boundPod("p10", "n", 10, "1").Obj(), boundPod("p20", "n", 20, "1").Obj(),
				boundPod("p30", "n", 30, "1").Obj()},
			preemptor:   st.MakePod().Name("pre").UID("pre").Priority(100).Req(cpu("2")).Obj(),
			wantVictims: []string{"p20", "p10"},
		},
		{
			name:       "no pod of lower priority",
			pods:       []*v1.Pod{boundPod("peer", "n", 100, "3").Obj()},
			preemptor:  st.MakePod().Name("pre").UID("pre").Priority(100).Req(cpu("1")).Obj(),
			wantReason: msgNoVictims,
		},
		{
			name:       "does not fit even with every lower-priority pod gone",
			pods:       []*v1.Pod{boundPod("boss", "n", 200, "2").Obj(), boundPod("low", "n", 1, "1").Obj()},
			preemptor:  st.MakePod().Name("pre").UID("pre").Priority(100).Req(cpu("2")).Obj(),
			wantReason: "Insufficient cpu",
		},
		{
			name:        "a PDB-protected pod is reprieved first, even if less important",
			pods:        []*v1.Pod{boundPod("guarded", "n", 10, "1").Label("app", "db").Obj(), boundPod("plain", "n", 20, "2").Obj()},
			pdbs:        []*policyv1.PodDisruptionBudget{pdb(map[string]string{"app": "db"}, 0)},
			preemptor:   st.MakePod().Name("pre").UID("pre").Priority(100).Req(cpu("2")).Obj(),
			wantVictims: []string{"plain"},
		},
		{
			name:          "a PDB-protected pod that must go counts as a violation",
			pods:          []*v1.Pod{boundPod("guarded", "n", 10, "3").Label("app", "db").Obj()},
			pdbs:          []*policyv1.PodDisruptionBudget{pdb(map[string]string{"app": "db"}, 0)},
			preemptor:     st.MakePod().Name("pre").UID("pre").Priority(100).Req(cpu("1")).Obj(),
			wantVictims:   []string{"guarded"},
			wantViolating: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			pl, schedFramework := newPlugin(t, []*v1.Node{node}, tt.pods)
			state := framework.NewCycleState()
			nodeInfos, _ := schedFramework.SnapshotSharedLister().NodeInfos().List()
			if _, s, _ := schedFramework.RunPreFilterPlugins(ctx, state, tt.preemptor, nodeInfos); !s.IsSuccess() {
				t.Fatalf("PreFilter: %v", s)
			}
			units, err := pl.victimsOn(nodeInfos[:1])
			if err != nil {
				t.Fatal(err)
			}
			got, violating, status := pl.selectVictimsOnNode(ctx, state, tt.preemptor, nodeInfos[0].Snapshot(), units, tt.pdbs)
			if tt.wantReason != "" {
				if status.IsSuccess() || !strings.Contains(status.Message(), tt.wantReason) {
					t.Fatalf("status = %v, want a rejection saying %q", status, tt.wantReason)
				}
				return
			}
			if !status.IsSuccess() {
				t.Fatalf("status = %v", status)
			}
			if diff := cmp.Diff(tt.wantVictims, names(got)); diff != "" {
				t.Errorf("victims (-want +got):\n%s", diff)
			}
			if violating != tt.wantViolating {
				t.Errorf("violating = %d, want %d", violating, tt.wantViolating)
			}
		})
	}
}

func TestFilterVictimsWithPDBViolation(t *testing.T) {
	labelled := func(name string) *framework.PodInfo {
		return framework.NewPodInfo(st.MakePod().Name(name).Label("app", "db").Obj())
	}
	single := func(name string) *victim { return newVictim([]*framework.PodInfo{labelled(name)}, 0, kindPod) }
	tests := []struct {
		name  string
		units []*victim
		pdbs  []*policyv1.PodDisruptionBudget
		// wantViolating names each violating unit by its first pod, with
		// its count of violating pods.
		wantViolating map[string]int
	}{
		{name: "no budget", units: []*victim{single("a"), single("b")}},
		{name: "one disruption allowed: the second pod violates", units: []*victim{single("a"), single("b")},
			pdbs: []*policyv1.PodDisruptionBudget{pdb(map[string]string{"app": "db"}, 1)}, wantViolating: map[string]int{"b": 1}},
		{name: "an already disrupted pod costs nothing", units: []*victim{single("a"), single("b")},
			pdbs: []*policyv1.PodDisruptionBudget{pdb(map[string]string{"app": "db"}, 1, "a")}},
		{name: "an empty selector matches nothing", units: []*victim{single("a"), single("b")},
			pdbs: []*policyv1.PodDisruptionBudget{pdb(nil, 0)}},
		{name: "a group is violating as a whole when one of its pods is",
			units: []*victim{newVictim([]*framework.PodInfo{labelled("a"), labelled("b"), labelled("c")}, 0, kindPodGroup)},
			pdbs:  []*policyv1.PodDisruptionBudget{pdb(map[string]string{"app": "db"}, 1)}, wantViolating: map[string]int{"a": 2}},
		{name: "a group uses up the allowance before the pod after it",
			units: []*victim{newVictim([]*framework.PodInfo{labelled("a"), labelled("b")}, 0, kindPodGroup), single("c")},
			pdbs:  []*policyv1.PodDisruptionBudget{pdb(map[string]string{"app": "db"}, 2)}, wantViolating: map[string]int{"c": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			violating, nonViolating := filterVictimsWithPDBViolation(tt.units, tt.pdbs)
			got := map[string]int{}
			for _, vv := range violating {
				got[vv.victim.pods[0].Pod.Name] = vv.pods
			}
			if diff := cmp.Diff(tt.wantViolating, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("violating (-want +got):\n%s", diff)
			}
			if len(violating)+len(nonViolating) != len(tt.units) {
				t.Errorf("lost units: %d violating + %d not, of %d", len(violating), len(nonViolating), len(tt.units))
			}
		})
	}
}

func TestPickOneNodeForPreemption(t *testing.T) {
	pods := func(prios ...int32) []*v1.Pod {
		var out []*v1.Pod
		for _, p := range prios {
			out = append(out, st.MakePod().Priority(p).Obj())
		}
		return out
	}
	tests := []struct {
		name       string
		candidates []*candidate
		want       string
	}{
		{name: "fewest PDB violations", candidates: []*candidate{
			{name: "a", victims: pods(1), numPDBViolations: 1}, {name: "b", victims: pods(50)}}, want: "b"},
		{name: "lowest highest-priority victim", candidates: []*candidate{
			{name: "a", victims: pods(50)}, {name: "b", victims: pods(20, 10, 10)}}, want: "b"},
		{name: "smallest priority sum", candidates: []*candidate{
			{name: "a", victims: pods(20, 20)}, {name: "b", victims: pods(20, 10)}}, want: "b"},
		{name: "negative priorities still prefer fewer victims' sum", candidates: []*candidate{
			{name: "a", victims: pods(-10, -10)}, {name: "b", victims: pods(-10)}}, want: "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 20 { // the input order is shuffled: the answer must not depend on it
				if got := pickOneNodeForPreemption(klog.Background(), tt.candidates); got.name != tt.want {
					t.Fatalf("picked %s, want %s", got.name, tt.want)
				}
			}
		})
	}
}

func TestPodEligibleToPreemptOthers(t *testing.T) {
	terminatingVictim := boundPod("victim", "n", 1, "1").Obj()
	terminatingVictim.DeletionTimestamp = ptr.To(metav1.Now())
	terminatingVictim.Status.Conditions = []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
		Reason: v1.PodReasonPreemptionByScheduler}}
	node := st.MakeNode().Name("n").Obj()
	tests := []struct {
		name    string
		pod     *v1.Pod
		status  *framework.Status
		wantMsg string
	}{
		{name: "preemptionPolicy Never", pod: st.MakePod().Priority(100).PreemptionPolicy(v1.PreemptNever).Obj(),
			wantMsg: msgPreemptNever},
		{name: "a victim still terminating on the nominated node",
			pod: st.MakePod().Priority(100).NominatedNodeName("n").Obj(), status: framework.NewStatus(framework.Unschedulable),
			wantMsg: msgTerminatingOnNode},
		{name: "the nominated node is hopeless: preempt again",
			pod:    st.MakePod().Priority(100).NominatedNodeName("n").Obj(),
			status: framework.NewStatus(framework.UnschedulableAndUnresolvable)},
		{name: "no nomination", pod: st.MakePod().Priority(100).Obj()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, _ := newPlugin(t, []*v1.Node{node}, []*v1.Pod{terminatingVictim})
			ok, msg := pl.podEligibleToPreemptOthers(tt.pod, tt.status)
			if ok != (tt.wantMsg == "") || msg != tt.wantMsg {
				t.Errorf("eligible = %v %q, want message %q", ok, msg, tt.wantMsg)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		want    [2]int32
		wantErr string
	}{
		{name: "defaults", want: [2]int32{10, 100}},
		{name: "set", args: `{"minCandidateNodesPercentage": 50, "minCandidateNodesAbsolute": 5}`, want: [2]int32{50, 5}},
		{name: "percentage out of range", args: `{"minCandidateNodesPercentage": 101}`,
			wantErr: "minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]"},
		{name: "both zero", args: `{"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}`,
			wantErr: "cannot be zero at the same time as minCandidateNodesAbsolute"},
		{name: "unknown field", args: `{"minCandidates": 1}`, wantErr: "minCandidates"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var raw *runtime.RawExtension
			if tt.args != "" {
				raw = &runtime.RawExtension{Raw: []byte(tt.args)}
			}
			args, err := DecodeArgs(raw)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := [2]int32{*args.MinCandidateNodesPercentage, *args.MinCandidateNodesAbsolute}; got != tt.want {
				t.Errorf("args = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNumCandidates(t *testing.T) {
	pl := &DefaultPreemption{args: configv1.DefaultPreemptionArgs{
		MinCandidateNodesPercentage: ptr.To[int32](10), MinCandidateNodesAbsolute: ptr.To[int32](100)}}
	var got []int32
	for _, n := range []int32{5, 100, 1000, 5000} {
		got = append(got, pl.numCandidates(n))
	}
	if want := []int32{5, 100, 100, 500}; !slices.Equal(got, want) {
		t.Errorf("numCandidates = %v, want %v", got, want)
	}
}
