// Tests that run PodTopologySpread in a real framework, enabled through
// multiPoint at kube-scheduler's default weight of 2, and check the
// FailedScheduling message and the weighted scores.
package podtopologyspread_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/plugins/podtopologyspread"
)

// newFramework builds a profile with PodTopologySpread in multiPoint at
// weight 2, on a snapshot of pods and nodes.
func newFramework(t *testing.T, ctx context.Context, pods []*v1.Pod, nodes []*v1.Node) (*framework.Framework,
	[]*framework.NodeInfo) {
	t.Helper()
	snapshot := cache.NewSnapshot(pods, nodes)
	factory := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	weight := int32(2)
	schedFramework, _, err := plugintesting.NewPluginFramework[framework.Plugin](ctx, podtopologyspread.Name,
		podtopologyspread.New, &configv1.Plugins{
			MultiPoint: configv1.PluginSet{Enabled: []configv1.Plugin{{Name: podtopologyspread.Name, Weight: &weight}}},
		}, nil, framework.WithSnapshotSharedLister(snapshot), framework.WithInformerFactory(factory))
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	nis, err := snapshot.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	return schedFramework, nis
}

func node(name, zone string) *v1.Node {
	n := st.MakeNode().Name(name).Label(v1.LabelHostname, name)
	if zone != "" {
		n.Label(v1.LabelTopologyZone, zone)
	}
	return n.Obj()
}

func webPodOn(name, nodeName string) *v1.Pod {
	return st.MakePod().Name(name).UID(name).Label("app", "web").NodeName(nodeName).Obj()
}

func spread(maxSkew int32, key string, when v1.UnsatisfiableConstraintAction) v1.TopologySpreadConstraint {
	return v1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	}
}

func TestFitErrorMessage(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	// z1 holds 2 web pods, z2 none; c has no zone label.
	nodes := []*v1.Node{node("a", "z1"), node("b", "z1"), node("x", "z2"), node("c", "")}
	pods := []*v1.Pod{webPodOn("w1", "a"), webPodOn("w2", "b"), webPodOn("w3", "x"), webPodOn("w4", "x")}
	schedFramework, nis := newFramework(t, ctx, pods, nodes)
	// The pod spreads over zones and hosts, with maxSkew 1 for both.
	pod := st.MakePod().Name("p").Label("app", "web").
		SpreadConstraint(spread(1, v1.LabelTopologyZone, v1.DoNotSchedule)).
		SpreadConstraint(spread(1, v1.LabelHostname, v1.DoNotSchedule)).Obj()
	state := framework.NewCycleState()
	if _, s, _ := schedFramework.RunPreFilterPlugins(ctx, state, pod, nis); !s.IsSuccess() {
		t.Fatal(s)
	}
	diagnosis := framework.NewDiagnosis()
	feasible, err := plugintesting.RunFilter(ctx, schedFramework, state, pod, &diagnosis, nis)
	if err != nil {
		t.Fatal(err)
	}
	// Hosts: a 1, b 1, x 2 (c is not counted: no zone); minimum 1.
	// a, b: 1+1-1 = 1 fits the host constraint, zone z1: 2+1-2 = 1 fits.
	// x: host 2+1-1 = 2 > 1. c: no zone label.
	var names []string
	for _, ni := range feasible {
		names = append(names, ni.Node().Name)
	}
	if diff := cmp.Diff([]string{"a", "b"}, slices.Sorted(slices.Values(names))); diff != "" {
		t.Errorf("feasible nodes (-want +got):\n%s", diff)
	}
	fitErr := &framework.FitError{Pod: pod, NumAllNodes: len(nis), Diagnosis: diagnosis}
	want := "0/4 nodes are available: 1 node(s) didn't match pod topology spread constraints, " +
		"1 node(s) didn't match pod topology spread constraints (missing required label)."
	if diff := cmp.Diff(want, fitErr.Error()); diff != "" {
		t.Errorf("FitError (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{podtopologyspread.Name}, diagnosis.UnschedulablePlugins.UnsortedList()); diff != "" {
		t.Errorf("UnschedulablePlugins (-want +got):\n%s", diff)
	}
	if got := diagnosis.NodeToStatus.Get("c").Code(); got != framework.UnschedulableAndUnresolvable {
		t.Errorf("code on c = %v, want UnschedulableAndUnresolvable", got)
	}
	if got := diagnosis.NodeToStatus.Get("x").Code(); got != framework.Unschedulable {
		t.Errorf("code on x = %v, want Unschedulable", got)
	}
}

func TestWeightedScores(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	nodes := []*v1.Node{node("a", "z1"), node("b", "z1"), node("x", "z2")}
	pods := []*v1.Pod{webPodOn("w1", "a"), webPodOn("w2", "a"), webPodOn("w3", "b")}
	schedFramework, nis := newFramework(t, ctx, pods, nodes)
	pod := st.MakePod().Name("p").Label("app", "web").
		SpreadConstraint(spread(1, v1.LabelHostname, v1.ScheduleAnyway)).Obj()
	state := framework.NewCycleState()
	if _, s, _ := schedFramework.RunPreFilterPlugins(ctx, state, pod, nis); !s.IsSuccess() {
		t.Fatal(s)
	}
	if s := schedFramework.RunPreScorePlugins(ctx, state, pod, nis); !s.IsSuccess() {
		t.Fatal(s)
	}
	scores, s := schedFramework.RunScorePlugins(ctx, state, pod, nis)
	if !s.IsSuccess() {
		t.Fatal(s)
	}
	// Hostname weight ln 5 = 1.609438: raw a 3.22 → 3, b 1.61 → 2, x 0.
	// Normalised (max 3, min 0): a 0, b 33, x 100; times weight 2.
	got := map[string]int64{}
	for _, ns := range scores {
		got[ns.Name] = ns.TotalScore
	}
	if diff := cmp.Diff(map[string]int64{"a": 0, "b": 66, "x": 200}, got); diff != "" {
		t.Errorf("weighted scores (-want +got):\n%s", diff)
	}
}
