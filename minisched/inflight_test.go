package minisched

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
)

// TestInFlight checks each in-flight pod's phase, read from what the queue
// (the popped pods), the profiles (waiting pods) and the cache (assumed
// pods) know: a popped pod is Scheduling; an assumed one Binding, unless a
// Permit plugin holds it (WaitingOnPermit); with the node it was assumed on.
func TestInFlight(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	node := st.MakeNode().Name("n1").Obj()
	profile := &configv1.KubeSchedulerProfile{SchedulerName: ptr.To("p"),
		Plugins: &configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: []configv1.Plugin{
			{Name: "PrioritySort"}, {Name: "NodeNumber"}, {Name: "DefaultBinder"}}}}}
	schedFramework, err := framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(), profile,
		framework.WithSnapshotSharedLister(cache.NewSnapshot(nil, []*v1.Node{node})))
	if err != nil {
		t.Fatal(err)
	}
	c := cache.New(0)
	c.AddNode(logger, node)
	s := &Scheduler{Cache: c, Profiles: map[string]*framework.Framework{"p": schedFramework}}

	popped := st.MakePod().Name("popped").UID("popped").Obj()
	// NodeNumber holds a pod whose name ends in 9 for 9 seconds at Permit.
	waiting := st.MakePod().Name("waiting9").UID("waiting9").NodeName("n1").Obj()
	binding := st.MakePod().Name("binding").UID("binding").NodeName("n1").Obj()
	for _, p := range []*v1.Pod{waiting, binding} {
		if err := c.AssumePod(logger, p); err != nil {
			t.Fatal(err)
		}
	}
	if sts := schedFramework.RunPermitPlugins(ctx, framework.NewCycleState(), waiting, "n1"); sts.Code() != framework.Wait {
		t.Fatalf("Permit = %v, want Wait", sts)
	}
	t.Cleanup(func() {
		if wp := schedFramework.GetWaitingPod(waiting.UID); wp != nil {
			wp.Reject("NodeNumber", "the test is over")
		}
	})

	type row struct{ Pod, Phase, Node string }
	var got []row
	for _, p := range s.InFlight([]*v1.Pod{popped}) {
		got = append(got, row{p.Pod.Name, string(p.Phase), p.Node})
	}
	want := []row{{"binding", "Binding", "n1"}, {"popped", "Scheduling", ""}, {"waiting9", "WaitingOnPermit", "n1"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("InFlight (-want +got):\n%s", diff)
	}
}
