// Tests that run NodeAffinity in a real framework over a snapshot, as the
// scheduler does, down to the FailedScheduling message.
package nodeaffinity_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/nodeaffinity"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// The cluster: node1 zone=a,tier=gold; node2 zone=b,tier=gold; node3 zone=a.
var nodes = []*v1.Node{
	st.MakeNode().Name("node1").Label("zone", "a").Label("tier", "gold").Obj(),
	st.MakeNode().Name("node2").Label("zone", "b").Label("tier", "gold").Obj(),
	st.MakeNode().Name("node3").Label("zone", "a").Obj(),
}

// addedTierExists is a profile's addedAffinity requiring a tier label.
const addedTierExists = `{"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
	{"matchExpressions": [{"key": "tier", "operator": "Exists"}]}]}}}`

// newFramework builds a profile with NodeAffinity at every point it
// implements, Score weighted 2, over a snapshot of nodes.
func newFramework(t *testing.T, args string) (*framework.Framework, []*framework.NodeInfo) {
	t.Helper()
	var rawArgs *runtime.RawExtension
	if args != "" {
		rawArgs = &runtime.RawExtension{Raw: []byte(args)}
	}
	snapshot := cache.NewSnapshot(nil, nodes)
	schedFramework, _, err := plugintesting.NewPluginFramework[framework.Plugin](context.Background(), nodeaffinity.Name,
		nodeaffinity.New, &configv1.Plugins{
			PreFilter: plugintesting.Enable(nodeaffinity.Name),
			Filter:    plugintesting.Enable(nodeaffinity.Name),
			PreScore:  plugintesting.Enable(nodeaffinity.Name),
			Score:     configv1.PluginSet{Enabled: []configv1.Plugin{{Name: nodeaffinity.Name, Weight: ptr.To[int32](2)}}},
		}, rawArgs, framework.WithSnapshotSharedLister(snapshot))
	if err != nil {
		t.Fatal(err)
	}
	all, err := snapshot.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	return schedFramework, all
}

// TestFailedSchedulingMessage runs PreFilter and Filter over every node and
// renders the FitError as the scheduler would report it.
func TestFailedSchedulingMessage(t *testing.T) {
	tests := []struct {
		name         string
		args         string
		pod          *v1.Pod
		wantFeasible []string
		wantPlugins  sets.Set[string]
		wantMessage  string
	}{
		{
			name:         "nodeSelector",
			pod:          st.MakePod().Name("p").NodeSelector("zone", "a").Obj(),
			wantFeasible: []string{"node1", "node3"},
		},
		{
			name:        "nodeSelector matches no node",
			pod:         st.MakePod().Name("p").NodeSelector("zone", "c").Obj(),
			wantPlugins: sets.New(nodeaffinity.Name),
			wantMessage: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
		},
		{
			// node3 has no tier: the enforced affinity rejects it first.
			name:        "addedAffinity and the pod's selector reject different nodes",
			args:        addedTierExists,
			pod:         st.MakePod().Name("p").NodeSelector("zone", "c").Obj(),
			wantPlugins: sets.New(nodeaffinity.Name),
			wantMessage: "0/3 nodes are available: 1 node(s) didn't match scheduler-enforced node affinity, 2 node(s) didn't " +
				"match Pod's node affinity/selector.",
		},
		{
			name:         "addedAffinity alone",
			args:         addedTierExists,
			pod:          st.MakePod().Name("p").Obj(),
			wantFeasible: []string{"node1", "node2"},
		},
		{
			name: "node names pinned, label requirement too",
			pod: st.MakePod().Name("p").NodeAffinity(&v1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
					NodeSelectorTerms: []v1.NodeSelectorTerm{{
						MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn,
							Values: []string{"a"}}},
						MatchFields: []v1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn,
							Values: []string{"node2"}}},
					}},
				}}).Obj(),
			wantPlugins: sets.New(nodeaffinity.Name),
			// Only node2 is filtered; the scheduler reports the other two
			// with the absent-nodes status it sets for a narrowed PreFilter.
			wantMessage: "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) didn't " +
				"satisfy plugin(s) [NodeAffinity].",
		},
		{
			name: "conflicting node names",
			pod: st.MakePod().Name("p").NodeAffinity(&v1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
					NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{
						{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: []string{"node1"}},
						{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: []string{"node2"}},
					}}},
				}}).Obj(),
			wantPlugins: sets.New(nodeaffinity.Name),
			wantMessage: "0/3 nodes are available: pod affinity terms conflict.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			schedFramework, all := newFramework(t, tt.args)
			state := framework.NewCycleState()
			diagnosis := framework.NewDiagnosis()

			// The steps of the scheduler's findNodesThatFitPod.
			var feasible []*framework.NodeInfo
			res, s, narrowing := schedFramework.RunPreFilterPlugins(ctx, state, tt.pod, all)
			diagnosis.UnschedulablePlugins = narrowing
			switch {
			case s.IsRejected():
				diagnosis.NodeToStatus.SetAbsentNodesStatus(s)
				diagnosis.PreFilterMsg = s.Message()
				diagnosis.AddPluginStatus(s)
			case !s.IsSuccess():
				t.Fatalf("RunPreFilterPlugins = %v", s)
			default:
				candidates := all
				if !res.AllNodes() {
					candidates = nil
					for _, ni := range all {
						if res.NodeNames.Has(ni.Node().Name) {
							candidates = append(candidates, ni)
						}
					}
					diagnosis.NodeToStatus.SetAbsentNodesStatus(framework.NewStatus(framework.UnschedulableAndUnresolvable,
						"node(s) didn't satisfy plugin(s) "+"["+nodeaffinity.Name+"]"))
				}
				var err error
				if feasible, err = plugintesting.RunFilter(ctx, schedFramework, state, tt.pod, &diagnosis, candidates); err != nil {
					t.Fatal(err)
				}
			}

			var gotFeasible []string
			for _, ni := range feasible {
				gotFeasible = append(gotFeasible, ni.Node().Name)
			}
			// Filter runs on nodes in parallel: compare as sets.
			slices.Sort(gotFeasible)
			if diff := cmp.Diff(tt.wantFeasible, gotFeasible); diff != "" {
				t.Errorf("feasible nodes (-want +got):\n%s", diff)
			}
			if len(feasible) > 0 {
				return
			}
			if diff := cmp.Diff(tt.wantPlugins, diagnosis.UnschedulablePlugins); diff != "" {
				t.Errorf("unschedulable plugins (-want +got):\n%s", diff)
			}
			fitErr := &framework.FitError{Pod: tt.pod, NumAllNodes: len(all), Diagnosis: diagnosis}
			if diff := cmp.Diff(tt.wantMessage, fitErr.Error()); diff != "" {
				t.Errorf("FailedScheduling message (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSkip checks that a pod without node constraints skips Filter and
// Score: the runtime records the plugin in both skip sets.
func TestSkip(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	schedFramework, all := newFramework(t, "")
	pod := st.MakePod().Name("p").Obj()
	state := framework.NewCycleState()
	if _, s, _ := schedFramework.RunPreFilterPlugins(ctx, state, pod, all); !s.IsSuccess() {
		t.Fatalf("RunPreFilterPlugins = %v", s)
	}
	if s := schedFramework.RunPreScorePlugins(ctx, state, pod, all); !s.IsSuccess() {
		t.Fatalf("RunPreScorePlugins = %v", s)
	}
	want := sets.New(nodeaffinity.Name)
	if diff := cmp.Diff(want, state.SkipFilterPlugins); diff != "" {
		t.Errorf("SkipFilterPlugins (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, state.SkipScorePlugins); diff != "" {
		t.Errorf("SkipScorePlugins (-want +got):\n%s", diff)
	}
}

// TestWeightedScores runs PreScore and Score through the framework: raw
// weights are normalised to the best node and multiplied by the plugin's
// weight (2).
func TestWeightedScores(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	schedFramework, all := newFramework(t, `{"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
		{"weight": 1, "preference": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]}}]}}`)
	pod := st.MakePod().Name("p").NodeAffinity(&v1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{
			{Weight: 3,
				Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone",
					Operator: v1.NodeSelectorOpIn, Values: []string{"a"}}}}},
		}}).Obj()
	state := framework.NewCycleState()
	if s := schedFramework.RunPreScorePlugins(ctx, state, pod, all); !s.IsSuccess() {
		t.Fatalf("RunPreScorePlugins = %v", s)
	}
	got, s := schedFramework.RunScorePlugins(ctx, state, pod, all)
	if !s.IsSuccess() {
		t.Fatalf("RunScorePlugins = %v", s)
	}
	// Raw: node1 zone=a 3 + tier=gold 1 = 4; node2 gold 1; node3 zone=a 3.
	// Normalised by 4: 100, 25, 75. Weighted ×2: 200, 50, 150.
	want := []framework.NodePluginScores{
		{Name: "node1", Scores: []framework.PluginScore{{Name: nodeaffinity.Name, Score: 200, Raw: 4}}, TotalScore: 200},
		{Name: "node2", Scores: []framework.PluginScore{{Name: nodeaffinity.Name, Score: 50, Raw: 1}}, TotalScore: 50},
		{Name: "node3", Scores: []framework.PluginScore{{Name: nodeaffinity.Name, Score: 150, Raw: 3}}, TotalScore: 150},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
}

// TestQueueingHintsRegistered checks that the framework collects the
// plugin's node event with its hint.
func TestQueueingHintsRegistered(t *testing.T) {
	schedFramework, _ := newFramework(t, "")
	hints := schedFramework.QueueingHints()[nodeaffinity.Name]
	if len(hints) != 1 || hints[0].QueueingHintFn == nil {
		t.Fatalf("hints = %+v, want one node event with a hint", hints)
	}
	want := framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel}
	if diff := cmp.Diff(want, hints[0].Event); diff != "" {
		t.Errorf("event (-want +got):\n%s", diff)
	}
}
