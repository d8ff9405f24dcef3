// Tests that run NodePorts in a real framework: a pod without host ports
// skips Filter, and rejections read as kube-scheduler's FailedScheduling.
package nodeports_test

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/nodeports"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func newFramework(t *testing.T, ctx context.Context) *framework.Framework {
	t.Helper()
	schedFramework, _, err := plugintesting.NewPluginFramework[framework.Plugin](ctx, nodeports.Name, nodeports.New,
		&configv1.Plugins{MultiPoint: plugintesting.Enable(nodeports.Name)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return schedFramework
}

func TestInFramework(t *testing.T) {
	busy := st.MakePod().Name("busy").UID("busy").NodeName("a").HostPort(v1.ProtocolTCP, "", 80).Obj()
	tests := []struct {
		name        string
		pod         *v1.Pod
		wantSkip    bool
		wantFitting int
		wantMessage string
	}{
		{name: "pod without host ports skips Filter", pod: st.MakePod().Name("p").Obj(), wantSkip: true, wantFitting: 2},
		{name: "port free on every node", pod: st.MakePod().Name("p").HostPort(v1.ProtocolTCP, "", 81).Obj(), wantFitting: 2},
		{
			name:        "port taken everywhere",
			pod:         st.MakePod().Name("p").HostPort(v1.ProtocolTCP, "", 80).Obj(),
			wantMessage: "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			schedFramework := newFramework(t, ctx)
			nodes := []*framework.NodeInfo{
				plugintesting.MakeNodeInfo(st.MakeNode().Name("a").Obj(), busy),
				plugintesting.MakeNodeInfo(st.MakeNode().Name("b").Obj(),
					st.MakePod().Name("busy2").UID("busy2").NodeName("b").HostPort(v1.ProtocolTCP, "10.0.0.1", 80).Obj()),
			}
			state := framework.NewCycleState()
			if _, s, _ := schedFramework.RunPreFilterPlugins(ctx, state, tt.pod, nodes); !s.IsSuccess() {
				t.Fatal(s)
			}
			if _, skipped := state.SkipFilterPlugins[nodeports.Name]; skipped != tt.wantSkip {
				t.Errorf("Filter skipped = %v, want %v", skipped, tt.wantSkip)
			}
			diagnosis := framework.NewDiagnosis()
			feasible, err := plugintesting.RunFilter(ctx, schedFramework, state, tt.pod, &diagnosis, nodes)
			if err != nil {
				t.Fatal(err)
			}
			if len(feasible) != tt.wantFitting {
				t.Errorf("%d nodes fit, want %d", len(feasible), tt.wantFitting)
			}
			if tt.wantMessage != "" {
				fitErr := &framework.FitError{Pod: tt.pod, NumAllNodes: len(nodes), Diagnosis: diagnosis}
				if got := fitErr.Error(); got != tt.wantMessage {
					t.Errorf("FitError = %q, want %q", got, tt.wantMessage)
				}
			}
		})
	}
}
