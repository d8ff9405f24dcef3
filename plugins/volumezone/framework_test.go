// Tests that run VolumeZone in a real framework: which pods skip Filter, and
// how its rejections read in kube-scheduler's FailedScheduling message.
package volumezone

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// TestFailedSchedulingMessage runs the steps of the scheduler's
// findNodesThatFitPod over three nodes: one per zone of us-west1 and one
// without zone labels.
func TestFailedSchedulingMessage(t *testing.T) {
	env := newTestEnv(t, objects(
		[]*v1.PersistentVolumeClaim{
			boundPVC("pvc-a", "vol-a"),
			boundPVC("pvc-c", "vol-c"),
			boundPVC("pvc-unlabelled", "vol-unlabelled"),
			st.MakePVC().Name("pvc-wait").Class("class-wait").Obj(),
			st.MakePVC().Name("pvc-immediate").Class("class-immediate").Obj(),
		},
		[]*v1.PersistentVolume{
			labelledPV("vol-a", zone, "us-west1-a", region, "us-west1"),
			labelledPV("vol-c", zone, "us-west1-c"),
			st.MakePV().Name("vol-unlabelled").Obj(),
		},
		st.MakeStorageClass().Name("class-wait").WaitForFirstConsumer().Obj(),
		st.MakeStorageClass().Name("class-immediate").Obj())...)
	nodes := []*framework.NodeInfo{
		plugintesting.MakeNodeInfo(node("a", zone, "us-west1-a", region, "us-west1")),
		plugintesting.MakeNodeInfo(node("b", zone, "us-west1-b", region, "us-west1")),
		plugintesting.MakeNodeInfo(node("unlabelled")),
	}
	tests := []struct {
		name         string
		pod          *v1.Pod
		wantSkip     bool
		wantFeasible []string
		wantMessage  string
	}{
		{
			name:         "volume in zone a fits node a and the unlabelled node",
			pod:          podWithClaim("pvc-a"),
			wantFeasible: []string{"a", "unlabelled"},
		},
		{
			name:         "volume in zone c fits only the unlabelled node",
			pod:          podWithClaim("pvc-c"),
			wantFeasible: []string{"unlabelled"},
			wantMessage:  "0/3 nodes are available: 2 node(s) had no available volume zone.",
		},
		{
			name:         "unlabelled volume skips Filter",
			pod:          podWithClaim("pvc-unlabelled"),
			wantSkip:     true,
			wantFeasible: []string{"a", "b", "unlabelled"},
		},
		{
			name:         "WaitForFirstConsumer claim skips Filter",
			pod:          podWithClaim("pvc-wait"),
			wantSkip:     true,
			wantFeasible: []string{"a", "b", "unlabelled"},
		},
		{
			name:        "unbound Immediate claim is rejected once, in PreFilter",
			pod:         podWithClaim("pvc-immediate"),
			wantMessage: "0/3 nodes are available: PersistentVolume had no name.",
		},
		{
			name:        "missing claim is rejected once, in PreFilter",
			pod:         podWithClaim("pvc-missing"),
			wantMessage: `0/3 nodes are available: persistentvolumeclaim "pvc-missing" not found.`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			state := framework.NewCycleState()
			diagnosis := framework.NewDiagnosis()

			// The steps of the scheduler's findNodesThatFitPod.
			var feasible []*framework.NodeInfo
			_, s, _ := env.schedFramework.RunPreFilterPlugins(ctx, state, tt.pod, nodes)
			switch {
			case s.IsRejected():
				if s.Code() != framework.UnschedulableAndUnresolvable || s.Plugin() != Name {
					t.Errorf("PreFilter status = %v, want UnschedulableAndUnresolvable from %s", s, Name)
				}
				diagnosis.NodeToStatus.SetAbsentNodesStatus(s)
				diagnosis.PreFilterMsg = s.Message()
				diagnosis.AddPluginStatus(s)
			case !s.IsSuccess():
				t.Fatalf("RunPreFilterPlugins = %v", s)
			default:
				if skipped := state.SkipFilterPlugins.Has(Name); skipped != tt.wantSkip {
					t.Errorf("Filter skipped = %v, want %v", skipped, tt.wantSkip)
				}
				var err error
				if feasible, err = plugintesting.RunFilter(ctx, env.schedFramework, state, tt.pod, &diagnosis, nodes); err != nil {
					t.Fatal(err)
				}
			}

			var gotFeasible []string
			for _, ni := range feasible {
				gotFeasible = append(gotFeasible, ni.Node().Name)
			}
			if diff := cmp.Diff(tt.wantFeasible, gotFeasible); diff != "" {
				t.Errorf("feasible nodes (-want +got):\n%s", diff)
			}
			if tt.wantMessage != "" {
				fitErr := &framework.FitError{Pod: tt.pod, NumAllNodes: len(nodes), Diagnosis: diagnosis}
				if diff := cmp.Diff(tt.wantMessage, fitErr.Error()); diff != "" {
					t.Errorf("FailedScheduling message (-want +got):\n%s", diff)
				}
			}
		})
	}
}
