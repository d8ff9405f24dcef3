// Tests for TaintToleration's Filter, and for the plugin run by a real
// framework at every extension point it implements.
package tainttoleration

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// untolerated is the status Filter returns for a rejected node.
var untolerated = framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint(s)")

func TestFilter(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		node *v1.Node
		want *framework.Status
	}{
		{
			name: "no taints, no tolerations",
			pod:  st.MakePod().Name("p").Obj(),
			node: st.MakeNode().Name("n").Obj(),
		},
		{
			name: "pod without tolerations, node with a NoSchedule taint",
			pod:  st.MakePod().Name("p").Obj(),
			node: st.MakeNode().Name("n").Taint("dedicated", "user1", v1.TaintEffectNoSchedule).Obj(),
			want: untolerated,
		},
		{
			name: "pod without tolerations, node with a NoExecute taint",
			pod:  st.MakePod().Name("p").Obj(),
			node: st.MakeNode().Name("n").Taint("dedicated", "user1", v1.TaintEffectNoExecute).Obj(),
			want: untolerated,
		},
		{
			name: "PreferNoSchedule taints never reject",
			pod:  st.MakePod().Name("p").Obj(),
			node: st.MakeNode().Name("n").Taint("dedicated", "user1", v1.TaintEffectPreferNoSchedule).Obj(),
		},
		{
			name: "Equal toleration with matching key, value and effect",
			pod: st.MakePod().Name("p").Toleration(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual,
				Value: "user1", Effect: v1.TaintEffectNoSchedule}).Obj(),
			node: st.MakeNode().Name("n").Taint("dedicated", "user1", v1.TaintEffectNoSchedule).Obj(),
		},
		{
			name: "Equal toleration with another value",
			pod: st.MakePod().Name("p").Toleration(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual,
				Value: "user1", Effect: v1.TaintEffectNoSchedule}).Obj(),
			node: st.MakeNode().Name("n").Taint("dedicated", "user2", v1.TaintEffectNoSchedule).Obj(),
			want: untolerated,
		},
		{
			name: "Exists toleration for the key",
			pod: st.MakePod().Name("p").Toleration(v1.Toleration{Key: "foo", Operator: v1.TolerationOpExists,
				Effect: v1.TaintEffectNoSchedule}).Obj(),
			node: st.MakeNode().Name("n").Taint("foo", "bar", v1.TaintEffectNoSchedule).Obj(),
		},
		{
			name: "every taint tolerated",
			pod: st.MakePod().Name("p").
				Toleration(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual,
					Value: "user2", Effect: v1.TaintEffectNoSchedule}).
				Toleration(v1.Toleration{Key: "foo", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}).Obj(),
			node: st.MakeNode().Name("n").
				Taint("dedicated", "user2", v1.TaintEffectNoSchedule).
				Taint("foo", "bar", v1.TaintEffectNoSchedule).Obj(),
		},
		{
			name: "one of two taints not tolerated",
			pod: st.MakePod().Name("p").Toleration(v1.Toleration{Key: "foo", Operator: v1.TolerationOpExists,
				Effect: v1.TaintEffectNoSchedule}).Obj(),
			node: st.MakeNode().Name("n").
				Taint("foo", "bar", v1.TaintEffectNoSchedule).
				Taint("dedicated", "user2", v1.TaintEffectNoExecute).Obj(),
			want: untolerated,
		},
		{
			name: "toleration with another (non-empty) effect",
			pod: st.MakePod().Name("p").Toleration(v1.Toleration{Key: "foo", Operator: v1.TolerationOpEqual,
				Value: "bar", Effect: v1.TaintEffectPreferNoSchedule}).Obj(),
			node: st.MakeNode().Name("n").Taint("foo", "bar", v1.TaintEffectNoSchedule).Obj(),
			want: untolerated,
		},
		{
			name: "toleration with empty effect tolerates every effect",
			pod: st.MakePod().Name("p").Toleration(v1.Toleration{Key: "foo", Operator: v1.TolerationOpEqual,
				Value: "bar"}).Obj(),
			node: st.MakeNode().Name("n").Taint("foo", "bar", v1.TaintEffectNoSchedule).Obj(),
		},
		{
			name: "untolerated PreferNoSchedule taint beside a tolerated NoSchedule one",
			pod: st.MakePod().Name("p").Toleration(v1.Toleration{Key: "foo", Operator: v1.TolerationOpExists,
				Effect: v1.TaintEffectNoSchedule}).Obj(),
			node: st.MakeNode().Name("n").
				Taint("foo", "bar", v1.TaintEffectNoSchedule).
				Taint("soft", "x", v1.TaintEffectPreferNoSchedule).Obj(),
		},
		{
			name: "Exists with no key tolerates everything",
			pod:  st.MakePod().Name("p").Toleration(v1.Toleration{Operator: v1.TolerationOpExists}).Obj(),
			node: st.MakeNode().Name("n").Taint("foo", "bar", v1.TaintEffectNoExecute).Taint("a", "b",
				v1.TaintEffectNoSchedule).Obj(),
		},
		{
			// The TaintTolerationComparisonOperators gate is off in v1.37:
			// a Gt toleration tolerates nothing.
			name: "Gt toleration is not honoured",
			pod: st.MakePod().Name("p").Toleration(v1.Toleration{Key: "sla", Operator: v1.TolerationOperator("Gt"),
				Value: "900", Effect: v1.TaintEffectNoSchedule}).Obj(),
			node: st.MakeNode().Name("n").Taint("sla", "950", v1.TaintEffectNoSchedule).Obj(),
			want: untolerated,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl, err := New(ctx, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := pl.(framework.FilterPlugin).Filter(ctx, framework.NewCycleState(), tt.pod,
				plugintesting.MakeNodeInfo(tt.node))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Filter (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilterWithoutNode(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	got := (&TaintToleration{}).Filter(ctx, framework.NewCycleState(), st.MakePod().Name("p").Obj(),
		framework.NewNodeInfo())
	if got.Code() != framework.Error {
		t.Errorf("Filter on a NodeInfo without node = %v, want code Error", got)
	}
}

func TestPreFilter(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl := &TaintToleration{}
	result, s := pl.PreFilter(ctx, framework.NewCycleState(), st.MakePod().Name("p").Obj(), nil)
	if result != nil || !s.IsSuccess() {
		t.Errorf("PreFilter = (%v, %v), want (nil, Success)", result, s)
	}
	if pl.PreFilterExtensions() != nil {
		t.Error("PreFilterExtensions() is not nil")
	}
}
