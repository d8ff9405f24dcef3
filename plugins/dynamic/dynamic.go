// Package dynamic is crane-scheduler's load-aware plugin, Dynamic: it keeps
// pods off nodes whose real usage is too high and prefers the least used
// nodes, where kube-scheduler's own plugins look only at requests.
//
// The plugin never asks Prometheus. An annotator (package annotator,
// `minisched annotate`, or crane-scheduler's own controller) copies each
// metric of the policy onto every node as an annotation
//
//	cpu_usage_avg_5m: "0.31250,2026-11-24T01:32:51Z"
//
// and counts recent bindings into node_hot_value. Filter and Score read
// those annotations from the snapshot's node; a value older than its sync
// period plus ExtraActivePeriod is ignored, so a dead annotator turns the
// plugin off rather than freezing old numbers in place.
package dynamic

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/helper"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "Dynamic"

// HotValueScoreFactor is how many score points one point of hot value costs.
const HotValueScoreFactor = 10

// ErrReasonNodeNotFound is the Filter reason when the NodeInfo has no node.
const ErrReasonNodeNotFound = "node not found"

// overloadReason is crane-scheduler's Filter message, word for word.
func overloadReason(metric, node string) string {
	return fmt.Sprintf("Load[%s] of node[%s] is too high", metric, node)
}

// Dynamic is the plugin.
type Dynamic struct {
	// policy is the DynamicSchedulerPolicy loaded at start.
	policy *DynamicSchedulerPolicy
	// clock tells Filter and Score what "now" is when they judge freshness.
	clock clock.PassiveClock
	// location is the zone of crane-style timestamps (TimestampLocation).
	location *time.Location
}

var (
	_ framework.FilterPlugin      = &Dynamic{}
	_ framework.ScorePlugin       = &Dynamic{}
	_ framework.EnqueueExtensions = &Dynamic{}
)

// New returns the plugin. Its args must name a policy file
// (policyConfigPath); a missing or bad file is an error naming it.
func New(_ context.Context, raw *runtime.RawExtension, _ framework.Handle) (framework.Plugin, error) {
	args, err := DecodeArgs(raw)
	if err != nil {
		return nil, fmt.Errorf("%s args: %w", Name, err)
	}
	policy, err := LoadPolicyFile(args.PolicyConfigPath)
	if err != nil {
		return nil, fmt.Errorf("%s args: policyConfigPath: %w", Name, err)
	}
	return newWithPolicy(policy, clock.RealClock{}, TimestampLocation()), nil
}

func newWithPolicy(policy *DynamicSchedulerPolicy, clk clock.PassiveClock, loc *time.Location) *Dynamic {
	return &Dynamic{policy: policy, clock: clk, location: loc}
}

// Name returns Name.
func (pl *Dynamic) Name() string { return Name }

// Filter rejects a node whose fresh usage of any predicate metric is above
// its maxLimitPecent (a limit of 0 is off). Missing and stale values let the
// node through, as does a metric with no syncPolicy entry: no data is not
// proof of load. DaemonSet pods are never filtered: they must run on every
// node, loaded or not. The code is Unschedulable, as in crane-scheduler.
func (pl *Dynamic) Filter(ctx context.Context, _ *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) *framework.Status {
	if isDaemonSetPod(pod) {
		return nil
	}
	node := nodeInfo.Node()
	if node == nil {
		return framework.NewStatus(framework.Error, ErrReasonNodeNotFound)
	}
	if metric, over := pl.overloaded(klog.FromContext(ctx), node); over {
		return framework.NewStatus(framework.Unschedulable, overloadReason(metric, node.Name))
	}
	return nil
}

// overloaded returns the first predicate metric whose fresh value on node
// is above its limit.
func (pl *Dynamic) overloaded(logger klog.Logger, node *v1.Node) (string, bool) {
	now := pl.clock.Now()
	for _, p := range pl.policy.Spec.Predicate {
		if p.MaxLimitPecent == 0 {
			continue
		}
		active, ok := pl.policy.Spec.activeDuration(p.Name)
		if !ok {
			logger.V(5).Info("Predicate metric has no syncPolicy entry; ignored", "metric", p.Name)
			continue
		}
		usage, err := freshValue(node.Annotations, p.Name, active, now, pl.location)
		if err != nil {
			if err != errNoAnnotation {
				logger.V(4).Info("Ignoring node load", "node", klog.KObj(node), "metric", p.Name, "err", err)
			}
			continue
		}
		if usage > p.MaxLimitPecent {
			logger.V(4).Info("Node load over the limit", "node", klog.KObj(node), "metric", p.Name,
				"usage", usage, "limit", p.MaxLimitPecent)
			return p.Name, true
		}
	}
	return "", false
}

func isDaemonSetPod(pod *v1.Pod) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

// Score ranks a node by its idle share, crane-scheduler's formula:
//
//	score = ⌊Σ (1 − usage) × weight × 100 / Σ weight⌋ − ⌊hot value × 10⌋, clamped to 0..100
//
// over the priority metrics. A missing or stale metric adds 0 to the sum
// but still counts its weight, so a node that stopped reporting ranks as if
// fully used. A stale or missing hot value counts as 0. No priority metrics
// (or weights summing to 0) score every node 0.
func (pl *Dynamic) Score(ctx context.Context, _ *framework.CycleState, _ *v1.Pod,
	nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	node := nodeInfo.Node()
	if node == nil {
		return 0, framework.NewStatus(framework.Error, ErrReasonNodeNotFound)
	}
	logger := klog.FromContext(ctx)
	now := pl.clock.Now()
	load := pl.loadScore(logger, node, now)
	hot, err := freshValue(node.Annotations, HotValueKey, HotValueActivePeriod, now, pl.location)
	if err != nil {
		hot = 0
	}
	score := min(max(int64(load)-int64(hot*HotValueScoreFactor), framework.MinNodeScore), framework.MaxNodeScore)
	logger.V(4).Info("Dynamic score", "node", klog.KObj(node), "score", score, "loadScore", load, "hotValue", hot)
	return score, nil
}

// loadScore is the weighted idle share, before the hot value.
func (pl *Dynamic) loadScore(logger klog.Logger, node *v1.Node, now time.Time) int {
	var sum, weights float64
	for _, p := range pl.policy.Spec.Priority {
		weights += p.Weight
		active, ok := pl.policy.Spec.activeDuration(p.Name)
		if !ok {
			continue
		}
		usage, err := freshValue(node.Annotations, p.Name, active, now, pl.location)
		if err != nil {
			logger.V(5).Info("No fresh value for a priority metric; it adds 0", "node", klog.KObj(node),
				"metric", p.Name, "err", err)
			continue
		}
		sum += (1 - usage) * p.Weight * float64(framework.MaxNodeScore)
	}
	if weights == 0 {
		return 0
	}
	return int(sum / weights)
}

// ScoreExtensions returns nil: scores are already within 0..100.
func (pl *Dynamic) ScoreExtensions() framework.ScoreExtensions { return nil }

// EventsToRegister lists what can undo this plugin's rejection: a node
// added, or a node's annotations changing (the annotator wrote a lower
// load). A value that merely goes stale produces no event; the queue's
// periodic flush of unschedulable pods retries those.
func (pl *Dynamic) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{{
		Event:          framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeAnnotation},
		QueueingHintFn: pl.isSchedulableAfterNodeChange,
	}}, nil
}

// isSchedulableAfterNodeChange queues the pod when the event produces a node
// Filter accepts now and did not before: an added node that is not
// overloaded, or an updated node whose load fell below every limit.
func (pl *Dynamic) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := helper.NodesOfEvent(oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if metric, over := pl.overloaded(logger, newNode); over {
		logger.V(5).Info("Node is still overloaded", "pod", klog.KObj(pod), "node", klog.KObj(newNode),
			"metric", metric)
		return framework.QueueSkip, nil
	}
	if oldNode != nil {
		if _, wasOver := pl.overloaded(logger, oldNode); !wasOver {
			logger.V(5).Info("Annotation change did not change what this plugin decides",
				"pod", klog.KObj(pod), "node", klog.KObj(newNode))
			return framework.QueueSkip, nil
		}
	}
	logger.V(5).Info("Node was added or its load fell below the limits; the pod may fit now",
		"pod", klog.KObj(pod), "node", klog.KObj(newNode))
	return framework.Queue, nil
}
