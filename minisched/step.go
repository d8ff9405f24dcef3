// Step mode (docs/web.md): before each extension point of a cycle the
// scheduler tells its Stepper, which may hold the cycle there until the
// person watching says go on; Filter's and Score's per-node results are
// reported as they are known. Without a Stepper (the default) every call
// here is a nil check.

package minisched

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// step tells the Stepper that pod's cycle is about to run point (with node,
// once chosen), and returns when it may: the context it returns is the one
// the step runs with.
func (s *Scheduler) step(ctx context.Context, schedFramework *framework.Framework, state *framework.CycleState,
	pod *v1.Pod, cycle, point, node string) context.Context {
	if s.stepper == nil {
		return ctx
	}
	if cycle == framework.SchedulingCycle && state.InPodGroupCycle {
		cycle = framework.PodGroupCycle
	}
	st := framework.Step{Pod: pod, State: state, Cycle: cycle, Point: point,
		Plugins: schedFramework.StepPlugins(point), Node: node, Stop: s.stepsStop}
	if point == "WaitOnPermit" {
		if wp := schedFramework.GetWaitingPod(pod.UID); wp != nil {
			st.Waiting = wp.GetPendingPlugins()
		}
	}
	return s.stepper.Before(ctx, st)
}

// stepFilterResult reports a node's Filter verdict to the Stepper, if any.
func (s *Scheduler) stepFilterResult(state *framework.CycleState, node *framework.NodeInfo, status *framework.Status) {
	if s.stepper != nil {
		s.stepper.FilterResult(state, node.Node().Name, status)
	}
}

// stepScores reports the nodes' total scores to the Stepper, if any.
func (s *Scheduler) stepScores(state *framework.CycleState, scores []framework.NodePluginScores) {
	if s.stepper == nil {
		return
	}
	for _, ns := range scores {
		s.stepper.ScoreResult(state, ns.Name, ns.TotalScore)
	}
}
