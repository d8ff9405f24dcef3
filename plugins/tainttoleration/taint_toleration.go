// This file is TaintToleration's filtering half: New, PreFilter and Filter.

package tainttoleration

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "TaintToleration"

// ErrReasonUntoleratedTaint is the reason Filter gives for a node with a
// NoSchedule or NoExecute taint the pod does not tolerate. As in
// kube-scheduler v1.37 it does not name the taint, so nodes with different
// taints add up to one count in FailedScheduling; the taint is logged.
const ErrReasonUntoleratedTaint = "node(s) had untolerated taint(s)"

// errNodeNotFound is returned for a NodeInfo without a node, which the
// snapshot never hands out; it would be a bug, hence an Error.
var errNodeNotFound = errors.New("invalid nodeInfo: node not found")

// enableComparisonOperators is kube-scheduler's TaintTolerationComparisonOperators
// feature gate (tolerations with operators Lt and Gt). It is alpha and off by
// default in v1.37, and minisched does not offer it.
const enableComparisonOperators = false

// TaintToleration filters and scores nodes by their taints and the pod's
// tolerations. It keeps no state between cycles.
type TaintToleration struct{}

var (
	_ framework.PreFilterPlugin   = &TaintToleration{}
	_ framework.FilterPlugin      = &TaintToleration{}
	_ framework.PreScorePlugin    = &TaintToleration{}
	_ framework.ScorePlugin       = &TaintToleration{}
	_ framework.ScoreExtensions   = &TaintToleration{}
	_ framework.EnqueueExtensions = &TaintToleration{}
	_ framework.SignPlugin        = &TaintToleration{}
)

// New returns the plugin. It takes no args; any pluginConfig is ignored, as
// for the other plugins without args.
func New(_ context.Context, _ *runtime.RawExtension, _ framework.Handle) (framework.Plugin, error) {
	return &TaintToleration{}, nil
}

// Name returns Name.
func (pl *TaintToleration) Name() string { return Name }

// SignPod signs the pod's tolerations (TolerationsSigner): Filter and Score
// read nothing else of the pod, only which of the node's taints they
// tolerate.
func (pl *TaintToleration) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	return []framework.SignFragment{{Key: framework.TolerationsSignerName, Value: framework.TolerationsSigner(pod)}}, nil
}

// PreFilter does nothing and returns Success. kube-scheduler's PreFilter only
// acts behind the alpha InPlacePodVerticalScalingSchedulerPreemption gate
// (off by default in v1.37); it is kept so that a configuration enabling
// TaintToleration at preFilter, as kube-scheduler allows, is accepted.
func (pl *TaintToleration) PreFilter(_ context.Context, _ *framework.CycleState, _ *v1.Pod,
	_ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	return nil, nil
}

// PreFilterExtensions returns nil: the plugin keeps no per-node state.
func (pl *TaintToleration) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// doNotScheduleTaints selects the taints that keep a pod off a node:
// NoSchedule and NoExecute. PreferNoSchedule only lowers the score.
func doNotScheduleTaints(t *v1.Taint) bool {
	return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
}

// untoleratedTaint returns the first NoSchedule or NoExecute taint of the
// node that the tolerations do not tolerate, and whether there is one.
func untoleratedTaint(logger klog.Logger, taints []v1.Taint, tolerations []v1.Toleration) (v1.Taint, bool) {
	return corev1helpers.FindMatchingUntoleratedTaint(logger, taints, tolerations, doNotScheduleTaints,
		enableComparisonOperators)
}

// Filter rejects the node if one of its NoSchedule or NoExecute taints is not
// tolerated by the pod. Evicting pods cannot remove a taint, so the code is
// UnschedulableAndUnresolvable and preemption leaves the node alone.
func (pl *TaintToleration) Filter(ctx context.Context, _ *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if node == nil {
		return framework.AsStatus(errNodeNotFound)
	}
	logger := klog.FromContext(ctx)
	taint, found := untoleratedTaint(logger, node.Spec.Taints, pod.Spec.Tolerations)
	if !found {
		return nil
	}
	logger.V(4).Info("Node has a taint the pod does not tolerate",
		"pod", klog.KObj(pod), "node", klog.KObj(node), "untoleratedTaint", taint)
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUntoleratedTaint)
}
