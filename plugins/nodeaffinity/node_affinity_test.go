// Tests for NodeAffinity's PreFilter (Skip, node-name narrowing, conflicts)
// and Filter (exact reasons and codes).
package nodeaffinity

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// newPlugin builds the plugin from args, failing the test on error.
func newPlugin(t *testing.T, args *runtime.RawExtension) *NodeAffinity {
	t.Helper()
	p, err := New(context.Background(), args, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.(*NodeAffinity)
}

// addedZoneA is an addedAffinity requiring zone=a.
var addedZoneA = rawArgs(`{"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
	{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}`)

func TestPreFilter(t *testing.T) {
	tests := []struct {
		name       string
		args       *runtime.RawExtension
		pod        *v1.Pod
		wantResult *framework.PreFilterResult
		wantStatus *framework.Status
		// wantState says whether PreFilter left its state for Filter.
		wantState bool
	}{
		{
			name:       "no selector, no affinity: Skip",
			pod:        st.MakePod().Name("p").Obj(),
			wantStatus: framework.NewStatus(framework.Skip),
		},
		{
			name: "preferred node affinity only: Skip",
			pod: st.MakePod().Name("p").NodeAffinity(preferred(pref(1,
				labelTerm(expr("zone", v1.NodeSelectorOpExists))))).Obj(),
			wantStatus: framework.NewStatus(framework.Skip),
		},
		{
			name:       "node affinity without a required selector: Skip",
			pod:        st.MakePod().Name("p").NodeAffinity(&v1.NodeAffinity{}).Obj(),
			wantStatus: framework.NewStatus(framework.Skip),
		},
		{
			// kube-scheduler skips only for a nil nodeSelector.
			name: "empty but non-nil nodeSelector: checked",
			pod: func() *v1.Pod {
				p := st.MakePod().Name("p").Obj()
				p.Spec.NodeSelector = map[string]string{}
				return p
			}(),
			wantState: true,
		},
		{
			name:      "nodeSelector",
			pod:       st.MakePod().Name("p").NodeSelector("zone", "a").Obj(),
			wantState: true,
		},
		{
			name:      "addedAffinity applies to a pod without selectors",
			args:      addedZoneA,
			pod:       st.MakePod().Name("p").Obj(),
			wantState: true,
		},
		{
			name:      "required label term: all nodes",
			pod:       st.MakePod().Name("p").NodeAffinity(required(labelTerm(expr("zone", v1.NodeSelectorOpIn, "a")))).Obj(),
			wantState: true,
		},
		{
			name:      "required selector without terms: all nodes (Filter rejects them)",
			pod:       st.MakePod().Name("p").NodeAffinity(required()).Obj(),
			wantState: true,
		},
		{
			name:       "one term pins a node name",
			pod:        st.MakePod().Name("p").NodeAffinity(required(fieldTerm(nameIn("node1")))).Obj(),
			wantResult: &framework.PreFilterResult{NodeNames: sets.New("node1")},
			wantState:  true,
		},
		{
			name: "name pinned alongside label requirements in the same term",
			pod: st.MakePod().Name("p").NodeAffinity(required(v1.NodeSelectorTerm{
				MatchExpressions: []v1.NodeSelectorRequirement{expr("zone", v1.NodeSelectorOpIn, "a")},
				MatchFields:      []v1.NodeSelectorRequirement{nameIn("node1")},
			})).Obj(),
			wantResult: &framework.PreFilterResult{NodeNames: sets.New("node1")},
			wantState:  true,
		},
		{
			name: "two terms pin two names: union",
			pod: st.MakePod().Name("p").NodeAffinity(required(fieldTerm(nameIn("node1")),
				fieldTerm(nameIn("node2")))).Obj(),
			wantResult: &framework.PreFilterResult{NodeNames: sets.New("node1", "node2")},
			wantState:  true,
		},
		{
			name: "two name requirements in one term: intersection",
			pod: st.MakePod().Name("p").NodeAffinity(required(fieldTerm(nameIn("node1", "node2"),
				nameIn("node2", "node3")))).Obj(),
			wantResult: &framework.PreFilterResult{NodeNames: sets.New("node2")},
			wantState:  true,
		},
		{
			// The narrowing takes every value, though Filter will reject
			// every node: a matchFields In with two values does not parse.
			name:       "name requirement with two values",
			pod:        st.MakePod().Name("p").NodeAffinity(required(fieldTerm(nameIn("node1", "node2")))).Obj(),
			wantResult: &framework.PreFilterResult{NodeNames: sets.New("node1", "node2")},
			wantState:  true,
		},
		{
			name: "one term pins a name, another does not: all nodes",
			pod: st.MakePod().Name("p").NodeAffinity(required(fieldTerm(nameIn("node1")),
				labelTerm(expr("zone", v1.NodeSelectorOpIn, "a")))).Obj(),
			wantState: true,
		},
		{
			name: "metadata.name NotIn does not narrow",
			pod: st.MakePod().Name("p").NodeAffinity(required(fieldTerm(v1.NodeSelectorRequirement{
				Key: "metadata.name", Operator: v1.NodeSelectorOpNotIn, Values: []string{"node1"},
			}))).Obj(),
			wantState: true,
		},
		{
			name:       "conflicting name requirements in the only term",
			pod:        st.MakePod().Name("p").NodeAffinity(required(fieldTerm(nameIn("node1"), nameIn("node2")))).Obj(),
			wantStatus: framework.NewStatus(framework.UnschedulableAndUnresolvable, "pod affinity terms conflict"),
			wantState:  true,
		},
		{
			name: "a conflicting term and a term pinning another name",
			pod: st.MakePod().Name("p").NodeAffinity(required(fieldTerm(nameIn("node1"), nameIn("node2")),
				fieldTerm(nameIn("node3")))).Obj(),
			wantResult: &framework.PreFilterResult{NodeNames: sets.New("node3")},
			wantState:  true,
		},
		{
			name: "addedAffinity pinning names does not narrow",
			args: rawArgs(`{"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
				{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node1"]}]}]}}}`),
			pod:       st.MakePod().Name("p").Obj(),
			wantState: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := newPlugin(t, tt.args)
			state := framework.NewCycleState()
			gotResult, gotStatus := pl.PreFilter(ctx, state, tt.pod, nil)
			if diff := cmp.Diff(tt.wantStatus, gotStatus); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantResult, gotResult); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			_, err := state.Read(preFilterStateKey)
			if got := err == nil; got != tt.wantState {
				t.Errorf("state written = %v, want %v", got, tt.wantState)
			}
		})
	}
}

func TestPreFilterExtensions(t *testing.T) {
	if ext := newPlugin(t, nil).PreFilterExtensions(); ext != nil {
		t.Errorf("PreFilterExtensions = %v, want nil: the state does not depend on pods", ext)
	}
}

func TestFilter(t *testing.T) {
	const (
		reasonPod      = "node(s) didn't match Pod's node affinity/selector"
		reasonEnforced = "node(s) didn't match scheduler-enforced node affinity"
	)
	zoneA := st.MakeNode().Name("node1").Label("zone", "a").Obj()
	tests := []struct {
		name string
		args *runtime.RawExtension
		pod  *v1.Pod
		node *v1.Node
		want *framework.Status
	}{
		{
			name: "no selector, no affinity",
			pod:  st.MakePod().Name("p").Obj(),
			node: zoneA,
		},
		{
			name: "nodeSelector matches",
			pod:  st.MakePod().Name("p").NodeSelector("zone", "a").Obj(),
			node: st.MakeNode().Name("node1").Label("zone", "a").Label("disk", "ssd").Obj(),
		},
		{
			name: "nodeSelector label missing",
			pod:  st.MakePod().Name("p").NodeSelector("zone", "a").NodeSelector("disk", "ssd").Obj(),
			node: zoneA,
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonPod),
		},
		{
			name: "nodeSelector value differs",
			pod:  st.MakePod().Name("p").NodeSelector("zone", "b").Obj(),
			node: zoneA,
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonPod),
		},
		{
			name: "required In matches",
			pod:  st.MakePod().Name("p").NodeAffinity(required(labelTerm(expr("zone", v1.NodeSelectorOpIn, "a", "b")))).Obj(),
			node: zoneA,
		},
		{
			name: "required Gt matches",
			pod:  st.MakePod().Name("p").NodeAffinity(required(labelTerm(expr("cores", v1.NodeSelectorOpGt, "4")))).Obj(),
			node: st.MakeNode().Name("node1").Label("cores", "8").Obj(),
		},
		{
			name: "required NotIn and Exists ANDed, both hold",
			pod: st.MakePod().Name("p").NodeAffinity(required(labelTerm(
				expr("gpu", v1.NodeSelectorOpExists), expr("gpu", v1.NodeSelectorOpNotIn, "amd", "intel")))).Obj(),
			node: st.MakeNode().Name("node1").Label("gpu", "nvidia").Obj(),
		},
		{
			name: "required requirements ANDed, one fails",
			pod: st.MakePod().Name("p").NodeAffinity(required(labelTerm(
				expr("zone", v1.NodeSelectorOpIn, "a"), expr("disk", v1.NodeSelectorOpExists)))).Obj(),
			node: zoneA,
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonPod),
		},
		{
			name: "required terms ORed, second matches",
			pod: st.MakePod().Name("p").NodeAffinity(required(
				labelTerm(expr("zone", v1.NodeSelectorOpIn, "b")), labelTerm(expr("zone", v1.NodeSelectorOpIn, "a")))).Obj(),
			node: zoneA,
		},
		{
			name: "required selector without terms matches nothing",
			pod:  st.MakePod().Name("p").NodeAffinity(required()).Obj(),
			node: zoneA,
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonPod),
		},
		{
			name: "empty required term matches nothing",
			pod:  st.MakePod().Name("p").NodeAffinity(required(v1.NodeSelectorTerm{})).Obj(),
			node: zoneA,
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonPod),
		},
		{
			name: "affinity matches but nodeSelector does not: both must hold",
			pod: st.MakePod().Name("p").NodeSelector("disk", "ssd").
				NodeAffinity(required(labelTerm(expr("zone", v1.NodeSelectorOpIn, "a")))).Obj(),
			node: zoneA,
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonPod),
		},
		{
			name: "invalid value in a term: a mismatch, not an error",
			pod: st.MakePod().Name("p").NodeAffinity(required(labelTerm(expr("zone", v1.NodeSelectorOpNotIn,
				"invalid value: ___@#$%^")))).Obj(),
			node: zoneA,
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonPod),
		},
		{
			name: "invalid term ORed with a matching one",
			pod: st.MakePod().Name("p").NodeAffinity(required(
				labelTerm(expr("zone", v1.NodeSelectorOpGt, "a")), labelTerm(expr("zone", v1.NodeSelectorOpIn, "a")))).Obj(),
			node: zoneA,
		},
		{
			name: "metadata.name In matches",
			pod:  st.MakePod().Name("p").NodeAffinity(required(fieldTerm(nameIn("node1")))).Obj(),
			node: zoneA,
		},
		{
			name: "metadata.name In names another node",
			pod:  st.MakePod().Name("p").NodeAffinity(required(fieldTerm(nameIn("node2")))).Obj(),
			node: zoneA,
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonPod),
		},
		{
			name: "metadata.name In with two values does not parse",
			pod:  st.MakePod().Name("p").NodeAffinity(required(fieldTerm(nameIn("node1", "node2")))).Obj(),
			node: zoneA,
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonPod),
		},
		{
			name: "name term does not match, label term does",
			pod: st.MakePod().Name("p").NodeAffinity(required(
				fieldTerm(nameIn("node2")), labelTerm(expr("zone", v1.NodeSelectorOpIn, "a")))).Obj(),
			node: zoneA,
		},
		{
			name: "addedAffinity and pod affinity both match",
			args: addedZoneA,
			pod:  st.MakePod().Name("p").NodeAffinity(required(fieldTerm(nameIn("node1")))).Obj(),
			node: zoneA,
		},
		{
			name: "addedAffinity matches, pod affinity does not",
			args: addedZoneA,
			pod:  st.MakePod().Name("p").NodeSelector("zone", "b").Obj(),
			node: zoneA,
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonPod),
		},
		{
			name: "addedAffinity does not match a pod without selectors",
			args: addedZoneA,
			pod:  st.MakePod().Name("p").Obj(),
			node: st.MakeNode().Name("node2").Label("zone", "b").Obj(),
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonEnforced),
		},
		{
			name: "neither matches: addedAffinity is reported",
			args: addedZoneA,
			pod:  st.MakePod().Name("p").NodeSelector("zone", "c").Obj(),
			node: st.MakeNode().Name("node2").Label("zone", "b").Obj(),
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonEnforced),
		},
	}
	for _, tt := range tests {
		for _, runPreFilter := range []bool{true, false} {
			name := tt.name
			if !runPreFilter {
				name += " (PreFilter not run)"
			}
			t.Run(name, func(t *testing.T) {
				_, ctx := ktesting.NewTestContext(t)
				pl := newPlugin(t, tt.args)
				state := framework.NewCycleState()
				if runPreFilter {
					if _, s := pl.PreFilter(ctx, state, tt.pod, nil); s.IsSkip() {
						// The runtime would not call Filter; it must still
						// agree if called.
						state = framework.NewCycleState()
					}
				}
				got := pl.Filter(ctx, state, tt.pod, plugintesting.MakeNodeInfo(tt.node))
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Filter (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestFilterWithoutNode(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl := newPlugin(t, nil)
	got := pl.Filter(ctx, framework.NewCycleState(), st.MakePod().Name("p").NodeSelector("zone", "a").Obj(),
		framework.NewNodeInfo())
	want := framework.NewStatus(framework.UnschedulableAndUnresolvable, "node not found")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Filter (-want +got):\n%s", diff)
	}
}

// TestPreFilterStateClone checks that cloning the state (as preemption does)
// keeps what Filter needs.
func TestPreFilterStateClone(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl := newPlugin(t, nil)
	pod := st.MakePod().Name("p").NodeSelector("zone", "a").Obj()
	state := framework.NewCycleState()
	if _, s := pl.PreFilter(ctx, state, pod, nil); !s.IsSuccess() {
		t.Fatalf("PreFilter = %v", s)
	}
	clone := state.Clone()
	for _, n := range []*v1.Node{st.MakeNode().Name("a").Label("zone", "a").Obj(), st.MakeNode().Name("b").Obj()} {
		want := pl.Filter(ctx, state, pod, plugintesting.MakeNodeInfo(n))
		got := pl.Filter(ctx, clone, pod, plugintesting.MakeNodeInfo(n))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("node %s: Filter with cloned state (-original +clone):\n%s", n.Name, diff)
		}
	}
}
