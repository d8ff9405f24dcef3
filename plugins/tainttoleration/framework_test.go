// Tests that run TaintToleration in a real framework, enabled through
// multiPoint as kube-scheduler's default profile does, and check the
// FailedScheduling message and the weighted scores.
package tainttoleration_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/plugins/tainttoleration"
)

// newFramework builds a profile with TaintToleration in multiPoint, at
// kube-scheduler's default weight of 3.
func newFramework(t *testing.T, ctx context.Context) *framework.Framework {
	t.Helper()
	weight := int32(3)
	schedFramework, _, err := plugintesting.NewPluginFramework[framework.Plugin](ctx, tainttoleration.Name,
		tainttoleration.New, &configv1.Plugins{
			MultiPoint: configv1.PluginSet{Enabled: []configv1.Plugin{{Name: tainttoleration.Name, Weight: &weight}}},
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return schedFramework
}

func TestFitErrorMessage(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	schedFramework := newFramework(t, ctx)
	nodes := []*framework.NodeInfo{
		plugintesting.MakeNodeInfo(st.MakeNode().Name("a").Taint("dedicated", "user1", v1.TaintEffectNoSchedule).Obj()),
		plugintesting.MakeNodeInfo(st.MakeNode().Name("b").Taint("gpu", "", v1.TaintEffectNoExecute).Obj()),
		plugintesting.MakeNodeInfo(st.MakeNode().Name("c").Taint("soft", "", v1.TaintEffectPreferNoSchedule).Obj()),
	}
	pod := st.MakePod().Name("p").Obj()
	state := framework.NewCycleState()
	if _, s, _ := schedFramework.RunPreFilterPlugins(ctx, state, pod, nodes); !s.IsSuccess() {
		t.Fatal(s)
	}
	diagnosis := framework.NewDiagnosis()
	feasible, err := plugintesting.RunFilter(ctx, schedFramework, state, pod, &diagnosis, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(feasible) != 1 || feasible[0].Node().Name != "c" {
		t.Fatalf("feasible nodes = %v, want only c", feasible)
	}
	fitErr := &framework.FitError{Pod: pod, NumAllNodes: 3, Diagnosis: diagnosis}
	// Node c passed, so it has no status; the message counts a and b.
	want := "0/3 nodes are available: 2 node(s) had untolerated taint(s)."
	if got := fitErr.Error(); got != want {
		t.Errorf("FitError = %q, want %q", got, want)
	}
	if diff := cmp.Diff([]string{tainttoleration.Name}, diagnosis.UnschedulablePlugins.UnsortedList()); diff != "" {
		t.Errorf("UnschedulablePlugins (-want +got):\n%s", diff)
	}
}

func TestWeightedScores(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	schedFramework := newFramework(t, ctx)
	// Intolerable PreferNoSchedule counts: a 0, b 1, c 2. Normalised,
	// reversed: a 100, b 100-100*1/2 = 50, c 0; times weight 3.
	nodes := []*framework.NodeInfo{
		plugintesting.MakeNodeInfo(st.MakeNode().Name("a").Obj()),
		plugintesting.MakeNodeInfo(st.MakeNode().Name("b").Taint("x", "", v1.TaintEffectPreferNoSchedule).Obj()),
		plugintesting.MakeNodeInfo(st.MakeNode().Name("c").Taint("x", "", v1.TaintEffectPreferNoSchedule).Taint("y", "",
			v1.TaintEffectPreferNoSchedule).Obj()),
	}
	pod := st.MakePod().Name("p").Obj()
	state := framework.NewCycleState()
	if s := schedFramework.RunPreScorePlugins(ctx, state, pod, nodes); !s.IsSuccess() {
		t.Fatal(s)
	}
	got, s := schedFramework.RunScorePlugins(ctx, state, pod, nodes)
	if !s.IsSuccess() {
		t.Fatal(s)
	}
	// raw counts the taints the pod does not tolerate.
	score := func(node string, v, raw int64) framework.NodePluginScores {
		return framework.NodePluginScores{Name: node,
			Scores: []framework.PluginScore{{Name: tainttoleration.Name, Score: v, Raw: raw}}, TotalScore: v}
	}
	want := []framework.NodePluginScores{score("a", 300, 0), score("b", 150, 1), score("c", 0, 2)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RunScorePlugins (-want +got):\n%s", diff)
	}
}
