// This file is step mode's hook (docs/web.md, "Step mode"): what the
// scheduler tells a Stepper before each extension point of a cycle, and
// the per-node results it reports while Filter and Score run.

package framework

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// The steps of one pod's attempt, in the order the scheduler meets them:
// the extension points of the scheduling cycle, then those of the binding
// cycle (WaitOnPermit is where the binding cycle waits for Permit's
// verdict). A step is taken only where its extension point runs: PostFilter
// only when no node fits, the binding cycle only once a node was chosen.
// The live view's step document carries this list, so the page keeps no
// copy of its own.
var StepPoints = []string{"PreFilter", "Filter", "PostFilter", "PreScore", "Score", "Reserve", "Permit",
	"WaitOnPermit", "PreBind", "Bind", "PostBind"}

// The cycles of an attempt, as Step.Cycle names them: a member of a pod
// group is tried in its group's cycle (PodGroupCycle, chapter 19) instead
// of a scheduling cycle of its own, then bound in its binding cycle.
const (
	SchedulingCycle = "scheduling"
	PodGroupCycle   = "pod group"
	BindingCycle    = "binding"
)

// Step is what the scheduler is about to do: one extension point of one
// pod's cycle.
type Step struct {
	// Pod is the pod the cycle is for. The Stepper must not change it.
	Pod *v1.Pod
	// State is the cycle's CycleState: it names the attempt (a pod's
	// scheduling and binding cycles share it; each attempt has its own),
	// and its Keys are what the plugins have written so far.
	State *CycleState
	// Cycle is SchedulingCycle, PodGroupCycle or BindingCycle; Point one
	// of StepPoints.
	Cycle string
	Point string
	// Plugins are the profile's plugins at Point, in the order they run
	// (WaitOnPermit: the Permit plugins).
	Plugins []string
	// Node is the node chosen for the pod, from Reserve on ("" before).
	Node string
	// Waiting, at WaitOnPermit, are the Permit plugins the pod waits for
	// (none: Permit approved it at once).
	Waiting []string
	// Stop is closed when the scheduler stops: a held step then goes on,
	// and no later one is held, so that its binding cycles can finish.
	Stop <-chan struct{}
}

// Stepper is told each step of each cycle before it is taken, and the
// nodes' results while Filter and Score run: the live view's step mode
// (web.Stepper), which shows them to a person and lets the cycle go on
// when told to.
//
// Before is called by the goroutine that runs the cycle: the scheduling
// loop for the scheduling cycle, a binding goroutine for the binding
// cycle. It may block until the person watching says go on, or until ctx
// ends; it returns the context the step runs with, which may carry what
// the Stepper needs to recognise the step's own requests to the apiserver
// (PreBind's writes). FilterResult and ScoreResult are called from
// Filter's and Score's parallel workers, so they must be safe for
// concurrent use and must not block.
//
// A Scheduler without a Stepper (nil, the default) calls none of this:
// step mode off costs a nil check per extension point.
type Stepper interface {
	Before(ctx context.Context, step Step) context.Context
	// FilterResult is a node's Filter verdict, as soon as it is known:
	// nil when the node passed; otherwise the status of the plugin that
	// rejected it (Plugin and Reasons).
	FilterResult(state *CycleState, node string, status *Status)
	// ScoreResult is a node's total score, once its plugins' scores were
	// normalised, weighed and summed (and the extenders' added).
	ScoreResult(state *CycleState, node string, total int64)
}

// StepPlugins returns the profile's plugins at a step's point, in order
// (WaitOnPermit's are the Permit plugins).
func (f *Framework) StepPlugins(point string) []string {
	if point == "WaitOnPermit" {
		point = "Permit"
	}
	return f.ListPlugins()[point]
}

// Keys returns the keys written so far, in the order they were first
// written.
func (c *CycleState) Keys() []StateKey {
	l := c.storage.list.Load()
	if l == nil {
		return nil
	}
	keys := make([]StateKey, len(*l))
	for i, e := range *l {
		keys[i] = e.key
	}
	return keys
}
