// This file is the plugin: PreScore reads the pod's digit once, Score
// compares it with each node's, Permit holds the pod for that many seconds.

package nodenumber

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minisched/minisched/minisched/framework"
)

const (
	// Name is the plugin's name in the registry and in configurations.
	Name = "NodeNumber"

	// MatchScore is the score of a node whose number matches the pod's (or,
	// with Reverse, does not).
	MatchScore int64 = 10

	// maxPermitTimeout caps how long Permit lets a pod wait.
	maxPermitTimeout = 15 * time.Second
	// permitGrace is how much longer than its delay a pod may wait before
	// the framework gives up on it.
	permitGrace = 5 * time.Second

	// preScoreStateKey is where PreScore leaves the pod's number for Score.
	preScoreStateKey framework.StateKey = "PreScore" + Name
)

// NodeNumber scores nodes by the trailing digit of their name, and delays
// binding by the trailing digit of the pod's name. It never filters nodes;
// it rejects a pod only if Permit's wait timed out.
type NodeNumber struct {
	handle  framework.Handle
	reverse bool
	// clock runs the timers that allow waiting pods (a fake one in tests).
	clock clock.WithDelayedExecution
}

var (
	_ framework.PreScorePlugin    = &NodeNumber{}
	_ framework.ScorePlugin       = &NodeNumber{}
	_ framework.PermitPlugin      = &NodeNumber{}
	_ framework.EnqueueExtensions = &NodeNumber{}
)

// New builds the plugin from its NodeNumberArgs; unknown fields are errors.
func New(ctx context.Context, args *runtime.RawExtension, h framework.Handle) (framework.Plugin, error) {
	return newWithClock(clock.RealClock{})(ctx, args, h)
}

// newWithClock returns a factory whose plugins time Permit with clk.
func newWithClock(clk clock.WithDelayedExecution) framework.PluginFactory {
	return func(_ context.Context, rawArgs *runtime.RawExtension, h framework.Handle) (framework.Plugin, error) {
		args := &NodeNumberArgs{}
		if err := framework.DecodeArgs(rawArgs, args); err != nil {
			return nil, fmt.Errorf("decoding NodeNumberArgs: %w", err)
		}
		return &NodeNumber{handle: h, reverse: args.Reverse, clock: clk}, nil
	}
}

// Name returns Name.
func (pl *NodeNumber) Name() string { return Name }

// trailingDigit returns the last character of name as a number, if it is a
// digit. Like the original, only one digit counts: "pod12" is 2.
func trailingDigit(name string) (int, bool) {
	if name == "" {
		return 0, false
	}
	c := name[len(name)-1]
	if c < '0' || c > '9' {
		return 0, false
	}
	return int(c - '0'), true
}

// preScoreState is the pod's number, read once per cycle.
type preScoreState struct {
	podNumber int
}

// Clone returns a copy.
func (s *preScoreState) Clone() framework.StateData {
	c := *s
	return &c
}

// PreScore reads the pod's number. A pod whose name does not end in a digit
// has nothing to match, so PreScore returns Skip and Score is not called.
func (pl *NodeNumber) PreScore(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	_ []*framework.NodeInfo) *framework.Status {
	n, ok := trailingDigit(pod.Name)
	if !ok {
		klog.FromContext(ctx).V(5).Info("Pod name does not end in a digit; not scoring", "pod", klog.KObj(pod))
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreStateKey, &preScoreState{podNumber: n})
	return nil
}

// Score gives MatchScore to a node whose name ends in the pod's number and 0
// to the others; with Reverse, the other way round. A node whose name does
// not end in a digit never matches. Scores are already in range, so there is
// no NormalizeScore.
func (pl *NodeNumber) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod,
	nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	data, err := state.Read(preScoreStateKey)
	if err != nil {
		return 0, framework.AsStatus(fmt.Errorf("reading %q from cycleState: %w", preScoreStateKey, err))
	}
	s, ok := data.(*preScoreState)
	if !ok {
		return 0, framework.AsStatus(fmt.Errorf("%+v convert to NodeNumber.preScoreState error", data))
	}
	node := nodeInfo.Node()
	if node == nil {
		return 0, framework.AsStatus(fmt.Errorf("node not found"))
	}
	n, ok := trailingDigit(node.Name)
	if match := ok && n == s.podNumber; match != pl.reverse {
		return MatchScore, nil
	}
	return 0, nil
}

// ScoreExtensions returns nil: scores need no normalisation.
func (pl *NodeNumber) ScoreExtensions() framework.ScoreExtensions { return nil }

// Permit holds a pod whose name ends in a digit N ≥ 1 for N seconds: it asks
// the framework to wait (N+5 seconds at most, capped at 15) and starts a
// timer that allows the pod after N seconds. Other pods pass at once.
func (pl *NodeNumber) Permit(ctx context.Context, _ *framework.CycleState, pod *v1.Pod,
	nodeName string) (*framework.Status, time.Duration) {
	n, ok := trailingDigit(pod.Name)
	if !ok || n == 0 {
		return nil, 0
	}
	delay := time.Duration(n) * time.Second
	timeout := min(delay+permitGrace, maxPermitTimeout)
	logger := klog.FromContext(ctx)
	logger.V(4).Info("Holding pod at Permit",
		"pod", klog.KObj(pod), "node", klog.KRef("", nodeName), "delay", delay, "timeout", timeout)

	// A fake clock runs AfterFunc callbacks while holding its own lock, and
	// Allow stops the framework's timeout timer on that same clock: allowing
	// from a fresh goroutine keeps the two from deadlocking. With the real
	// clock the callback has its own goroutine anyway.
	pl.clock.AfterFunc(delay, func() { go pl.allow(logger, pod) })
	return framework.NewStatus(framework.Wait,
		fmt.Sprintf("pod name ends in %d: waiting %v before binding", n, delay)), timeout
}

// allow lets the waiting pod go, if it is still waiting (it may have been
// rejected, or timed out, in the meantime).
func (pl *NodeNumber) allow(logger klog.Logger, pod *v1.Pod) {
	wp := pl.handle.GetWaitingPod(pod.UID)
	if wp == nil {
		logger.V(4).Info("Pod is no longer waiting at Permit", "pod", klog.KObj(pod))
		return
	}
	logger.V(4).Info("Allowing pod held at Permit", "pod", klog.KObj(pod))
	wp.Allow(Name)
}

// EventsToRegister lists what may help a pod whose Permit wait timed out: a
// new node.
func (pl *NodeNumber) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}},
	}, nil
}
