// Tests that run NodeNumber in a real framework with a fake clock: the pod
// waits at Permit and is allowed when the clock reaches its number.
package nodenumber_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	testingclock "k8s.io/utils/clock/testing"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/defaultbinder"
	"github.com/minisched/minisched/plugins/nodenumber"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/plugins/prioritysort"
)

// newFramework builds a profile with NodeNumber at PreScore, Score and
// Permit, timed by clk.
func newFramework(t *testing.T, clk *testingclock.FakeClock,
	pluginConfig []configv1.PluginConfig) *framework.Framework {
	t.Helper()
	registry := framework.Registry{
		prioritysort.Name:  prioritysort.New,
		defaultbinder.Name: defaultbinder.New,
		nodenumber.Name:    nodenumber.NewWithClock(clk),
	}
	schedFramework, err := plugintesting.NewFramework(context.Background(), registry, &configv1.Plugins{
		QueueSort: plugintesting.Enable(prioritysort.Name),
		PreScore:  plugintesting.Enable(nodenumber.Name),
		Score:     plugintesting.Enable(nodenumber.Name),
		Permit:    plugintesting.Enable(nodenumber.Name),
		Bind:      plugintesting.Enable(defaultbinder.Name),
	}, pluginConfig, framework.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	return schedFramework
}

// waitOnPermit runs WaitOnPermit in the background, as the binding cycle
// does, and returns where its verdict arrives.
func waitOnPermit(ctx context.Context, schedFramework *framework.Framework, pod *v1.Pod) <-chan *framework.Status {
	done := make(chan *framework.Status, 1)
	go func() { done <- schedFramework.WaitOnPermit(ctx, pod) }()
	return done
}

// verdict receives the WaitOnPermit result, failing if none comes. The
// deadline is a guard against a hung test, not a wait for scheduling.
func verdict(t *testing.T, done <-chan *framework.Status) *framework.Status {
	t.Helper()
	select {
	case s := <-done:
		return s
	case <-time.After(30 * time.Second):
		t.Fatal("WaitOnPermit did not return")
		return nil
	}
}

func TestPermitAllowsAfterDelay(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	schedFramework := newFramework(t, clk, nil)
	pod := st.MakePod().Name("pod3").UID("uid-3").Obj()

	s := schedFramework.RunPermitPlugins(ctx, framework.NewCycleState(), pod, "node1")
	if !s.IsWait() {
		t.Fatalf("RunPermitPlugins = %v, want Wait", s)
	}
	wp := schedFramework.GetWaitingPod(pod.UID)
	if wp == nil {
		t.Fatal("pod is not waiting")
	}
	if diff := cmp.Diff([]string{nodenumber.Name}, wp.GetPendingPlugins()); diff != "" {
		t.Errorf("pending plugins (-want +got):\n%s", diff)
	}
	done := waitOnPermit(ctx, schedFramework, pod)

	// Just before three seconds nothing fires: the pod still waits.
	clk.Step(3*time.Second - time.Millisecond)
	select {
	case s := <-done:
		t.Fatalf("WaitOnPermit returned %v before the delay", s)
	default:
	}
	if diff := cmp.Diff([]string{nodenumber.Name}, wp.GetPendingPlugins()); diff != "" {
		t.Errorf("pending plugins before the delay (-want +got):\n%s", diff)
	}

	// At three seconds NodeNumber allows the pod, well before the framework's
	// eight-second timeout.
	clk.Step(time.Millisecond)
	if s := verdict(t, done); !s.IsSuccess() {
		t.Fatalf("WaitOnPermit = %v, want Success", s)
	}
	if schedFramework.GetWaitingPod(pod.UID) != nil {
		t.Error("pod still listed as waiting after it was allowed")
	}
	if clk.HasWaiters() {
		t.Error("the timeout timer was not stopped when the pod was allowed")
	}
}

func TestPermitPassesAtOnce(t *testing.T) {
	for _, name := range []string{"pod0", "nginx"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			schedFramework := newFramework(t, clk, nil)
			pod := st.MakePod().Name(name).UID("uid").Obj()
			if s := schedFramework.RunPermitPlugins(ctx, framework.NewCycleState(), pod, "node1"); !s.IsSuccess() {
				t.Fatalf("RunPermitPlugins = %v, want Success", s)
			}
			if schedFramework.GetWaitingPod(pod.UID) != nil {
				t.Error("pod is waiting")
			}
			if clk.HasWaiters() {
				t.Error("a timer was started")
			}
		})
	}
}

func TestPermitRejectedBeforeDelay(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	schedFramework := newFramework(t, clk, nil)
	pod := st.MakePod().Name("pod2").UID("uid-2").Obj()

	if s := schedFramework.RunPermitPlugins(ctx, framework.NewCycleState(), pod, "node1"); !s.IsWait() {
		t.Fatalf("RunPermitPlugins = %v, want Wait", s)
	}
	done := waitOnPermit(ctx, schedFramework, pod)
	if !schedFramework.RejectWaitingPod(pod.UID) {
		t.Fatal("RejectWaitingPod found no waiting pod")
	}
	if s := verdict(t, done); s.Code() != framework.Unschedulable {
		t.Fatalf("WaitOnPermit = %v, want Unschedulable", s)
	}
	// NodeNumber's timer still fires; the pod is gone, so it does nothing.
	clk.Step(2 * time.Second)
	if schedFramework.GetWaitingPod(pod.UID) != nil {
		t.Error("rejected pod is waiting again")
	}
}

func TestScoreThroughFramework(t *testing.T) {
	nodes := []*framework.NodeInfo{
		plugintesting.MakeNodeInfo(st.MakeNode().Name("node1").Obj()),
		plugintesting.MakeNodeInfo(st.MakeNode().Name("node2").Obj()),
	}
	reverse, err := framework.EncodeArgs(&nodenumber.NodeNumberArgs{Reverse: true})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		pluginConfig []configv1.PluginConfig
		pod          string
		want         map[string]int64
	}{
		{name: "pod2 prefers node2", pod: "pod2", want: map[string]int64{"node1": 0, "node2": 10}},
		{
			name:         "reverse from pluginConfig",
			pluginConfig: []configv1.PluginConfig{{Name: nodenumber.Name, Args: *reverse}},
			pod:          "pod2",
			want:         map[string]int64{"node1": 10, "node2": 0},
		},
		{name: "no digit: Score is skipped", pod: "nginx", want: map[string]int64{"node1": 0, "node2": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			schedFramework := newFramework(t, clk, tt.pluginConfig)
			pod := st.MakePod().Name(tt.pod).Obj()
			state := framework.NewCycleState()
			if s := schedFramework.RunPreScorePlugins(ctx, state, pod, nodes); !s.IsSuccess() {
				t.Fatalf("RunPreScorePlugins = %v", s)
			}
			scores, s := schedFramework.RunScorePlugins(ctx, state, pod, nodes)
			if !s.IsSuccess() {
				t.Fatalf("RunScorePlugins = %v", s)
			}
			got := map[string]int64{}
			for _, ns := range scores {
				got[ns.Name] = ns.TotalScore
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("scores (-want +got):\n%s", diff)
			}
		})
	}
}
