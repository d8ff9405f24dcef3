package scheduler_test

// Pods that ask for what no node can give: each must end Unschedulable with
// a reason that names what is missing, and none may hold up the pods behind
// it.

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/stretchr/testify/require"

	"github.com/minisched/minisched/scenario"
)

func TestAbsurdRequestsAreUnschedulable(t *testing.T) {
	ctx := context.Background()
	h := startHarness(t, "absurd")
	// Other tests' nodes share the apiserver: these pods look only at this
	// test's node, and the others show as not matching their selector.
	const testLabel = "minisched.test/absurd"
	node := scenario.MakeNode("absurd-node").Label(testLabel, "yes").
		Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "4", v1.ResourceMemory: "16Gi"}).Obj()
	require.NoError(t, h.env.CreateNodes(ctx, node))

	tests := []struct {
		name     string
		requests map[v1.ResourceName]string
		want     string
	}{
		{name: "a million cores", requests: map[v1.ResourceName]string{v1.ResourceCPU: "1000000"},
			want: "1 Insufficient cpu"},
		{name: "an exbibyte of memory", requests: map[v1.ResourceName]string{v1.ResourceMemory: "1Ei"},
			want: "1 Insufficient memory"},
		{name: "a resource no node has", requests: map[v1.ResourceName]string{"example.com/unicorn": "1"},
			want: "1 Insufficient example.com/unicorn"},
		{name: "every one of them at once",
			requests: map[v1.ResourceName]string{v1.ResourceCPU: "1000000", v1.ResourceMemory: "1Ei",
				v1.ResourceEphemeralStorage: "1Ei", "example.com/unicorn": "1"},
			want: "1 Insufficient cpu, 1 Insufficient ephemeral-storage, " +
				"1 Insufficient example.com/unicorn, 1 Insufficient memory"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "absurd-" + string(rune('a'+i))
			require.NoError(t, h.env.CreatePods(ctx,
				scenario.MakePod(name).Req(tt.requests).NodeSelector(testLabel, "yes").Obj()))
			msg, err := h.env.WaitForPodUnschedulable(ctx, name, scenario.DefaultWait)
			require.NoError(t, err)
			// "0/N nodes are available: 1 Insufficient cpu, N-1 node(s)
			// didn't match Pod's node affinity/selector. preemption: ..."
			if !strings.HasPrefix(msg, "0/") || !strings.Contains(msg, " nodes are available: "+tt.want) {
				t.Errorf("PodScheduled message = %q, want 0/N nodes are available: %s", msg, tt.want)
			}
		})
	}

	t.Run("a pod that fits is still scheduled behind them", func(t *testing.T) {
		require.NoError(t, h.env.CreatePods(ctx, scenario.MakePod("absurd-sane").
			Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).NodeSelector(testLabel, "yes").Obj()))
		bound, err := h.env.WaitForPodBound(ctx, "absurd-sane", scenario.DefaultWait)
		require.NoError(t, err)
		if bound.Spec.NodeName != node.Name {
			t.Errorf("bound to %s, want %s", bound.Spec.NodeName, node.Name)
		}
	})
}
