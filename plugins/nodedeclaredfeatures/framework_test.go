// Tests that run NodeDeclaredFeatures in a real framework, enabled through
// multiPoint as kube-scheduler's default profile does, and check the Skip
// path and the FailedScheduling message.
package nodedeclaredfeatures

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// newFramework builds a profile with NodeDeclaredFeatures in multiPoint.
func newFramework(t *testing.T, ctx context.Context) *framework.Framework {
	t.Helper()
	schedFramework, _, err := plugintesting.NewPluginFramework[framework.Plugin](ctx, Name, New, &configv1.Plugins{
		MultiPoint: plugintesting.Enable(Name),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return schedFramework
}

func TestInFramework(t *testing.T) {
	nodes := func() []*framework.NodeInfo {
		return []*framework.NodeInfo{
			plugintesting.MakeNodeInfo(nodeDeclaring("a", featureUserNSHostNetwork)),
			plugintesting.MakeNodeInfo(nodeDeclaring("b")),
			plugintesting.MakeNodeInfo(nodeDeclaring("c", featureRestartAll)),
		}
	}
	tests := []struct {
		name         string
		pod          *v1.Pod
		wantSkipped  bool
		wantFeasible []string
		// wantMessage is the FitError message, when some node is rejected.
		wantMessage string
	}{
		{
			name:         "pod without requirements skips Filter and fits everywhere",
			pod:          plainPod(),
			wantSkipped:  true,
			wantFeasible: []string{"a", "b", "c"},
		},
		{
			name:         "pod requiring a feature fits only where it is declared",
			pod:          userNSPod(),
			wantFeasible: []string{"a"},
			wantMessage:  "0/3 nodes are available: 2 node(s) didn't match Pod's required features.",
		},
		{
			name:        "pod requiring two features fits nowhere",
			pod:         withRestartAll(userNSPod()),
			wantMessage: "0/3 nodes are available: 3 node(s) didn't match Pod's required features.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			schedFramework := newFramework(t, ctx)
			state := framework.NewCycleState()
			nodeInfos := nodes()
			if _, s, _ := schedFramework.RunPreFilterPlugins(ctx, state, tt.pod, nodeInfos); !s.IsSuccess() {
				t.Fatal(s)
			}
			if _, skipped := state.SkipFilterPlugins[Name]; skipped != tt.wantSkipped {
				t.Errorf("Filter skipped = %v, want %v", skipped, tt.wantSkipped)
			}
			diagnosis := framework.NewDiagnosis()
			feasible, err := plugintesting.RunFilter(ctx, schedFramework, state, tt.pod, &diagnosis, nodeInfos)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ni := range feasible {
				got = append(got, ni.Node().Name)
			}
			// Filter runs on nodes in parallel: feasible nodes come back in the
			// order they were found.
			if diff := cmp.Diff(tt.wantFeasible, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("feasible nodes (-want +got):\n%s", diff)
			}
			if tt.wantMessage == "" {
				return
			}
			fitErr := &framework.FitError{Pod: tt.pod, NumAllNodes: len(nodeInfos), Diagnosis: diagnosis}
			if got := fitErr.Error(); got != tt.wantMessage {
				t.Errorf("FitError = %q, want %q", got, tt.wantMessage)
			}
			if diff := cmp.Diff([]string{Name}, diagnosis.UnschedulablePlugins.UnsortedList()); diff != "" {
				t.Errorf("UnschedulablePlugins (-want +got):\n%s", diff)
			}
		})
	}
}
