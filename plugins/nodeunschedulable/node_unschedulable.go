// Package nodeunschedulable is the Filter plugin that keeps pods off cordoned
// nodes (spec.unschedulable) unless they tolerate the unschedulable taint, as
// kube-scheduler's NodeUnschedulable does.
package nodeunschedulable

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/helper"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "NodeUnschedulable"

// Reasons this plugin reports.
const (
	// ErrReasonUnschedulable is the reason for a cordoned node.
	ErrReasonUnschedulable = "node(s) were unschedulable"
	// ErrReasonNodeNotFound is the reason when the NodeInfo has no node
	// (it was deleted while pods still pointed at it).
	ErrReasonNodeNotFound = "node not found"
)

// unschedulableTaint is the taint a cordoned node stands for. kubelet also
// adds it for real, but spec.unschedulable alone is enough to reject; a pod
// that tolerates the taint (DaemonSet pods do) is let through.
var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// NodeUnschedulable rejects nodes whose spec.unschedulable is set, unless the
// pod tolerates {node.kubernetes.io/unschedulable, NoSchedule}.
type NodeUnschedulable struct{}

var (
	_ framework.FilterPlugin      = &NodeUnschedulable{}
	_ framework.EnqueueExtensions = &NodeUnschedulable{}
	_ framework.SignPlugin        = &NodeUnschedulable{}
)

// New returns the plugin. It takes no args; any pluginConfig is ignored, as
// kube-scheduler does for plugins without args.
func New(_ context.Context, _ *runtime.RawExtension, _ framework.Handle) (framework.Plugin, error) {
	return &NodeUnschedulable{}, nil
}

// Name returns Name.
func (pl *NodeUnschedulable) Name() string { return Name }

// SignPod signs the pod's tolerations (TolerationsSigner): Filter reads
// nothing else of the pod, to tell whether it tolerates the unschedulable
// taint.
func (pl *NodeUnschedulable) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	return []framework.SignFragment{{Key: framework.TolerationsSignerName, Value: framework.TolerationsSigner(pod)}}, nil
}

// Filter rejects a cordoned node the pod does not tolerate. Neither outcome
// can be changed by preempting pods, so the code is UnschedulableAndUnresolvable.
func (pl *NodeUnschedulable) Filter(ctx context.Context, _ *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if node == nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeNotFound)
	}
	if !node.Spec.Unschedulable || toleratesUnschedulable(klog.FromContext(ctx), pod) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnschedulable)
}

// toleratesUnschedulable reports whether the pod tolerates the unschedulable
// taint. Comparison operators (Lt/Gt) stay off, as their feature gate is
// alpha and off in v1.37.
func toleratesUnschedulable(logger klog.Logger, pod *v1.Pod) bool {
	return corev1helpers.TolerationsTolerateTaint(logger, pod.Spec.Tolerations, &unschedulableTaint, false)
}

// EventsToRegister lists what can undo this plugin's rejection: a node added
// or uncordoned (its taints may change with it), or the pod gaining a
// toleration for the unschedulable taint.
func (pl *NodeUnschedulable) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{
			Event: framework.ClusterEvent{Resource: framework.Node,
				ActionType: framework.Add | framework.UpdateNodeTaint | framework.UpdateNodeUnschedulable},
			QueueingHintFn: isSchedulableAfterNodeChange,
		},
		{
			Event: framework.ClusterEvent{Resource: framework.UnscheduledPod,
				ActionType: framework.UpdatePodToleration},
			QueueingHintFn: isSchedulableAfterPodTolerationChange,
		},
	}, nil
}

// rejects reports whether this plugin's Filter would turn pod away from node.
func rejects(logger klog.Logger, pod *v1.Pod, node *v1.Node) bool {
	return node.Spec.Unschedulable && !toleratesUnschedulable(logger, pod)
}

// isSchedulableAfterNodeChange queues the pod when the event produces a node
// this plugin accepts: an added node that is schedulable (or tolerated), or
// an updated node that this plugin rejected before and accepts now.
func isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := helper.NodesOfEvent(oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if rejects(logger, pod, newNode) {
		logger.V(5).Info("Node is still unschedulable for the pod", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return framework.QueueSkip, nil
	}
	if oldNode != nil && !rejects(logger, pod, oldNode) {
		logger.V(5).Info("Node update did not change what this plugin decides for the pod",
			"pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return framework.QueueSkip, nil
	}
	logger.V(5).Info("Node was added or uncordoned; the pod may fit now",
		"pod", klog.KObj(pod), "node", klog.KObj(newNode))
	return framework.Queue, nil
}

// isSchedulableAfterPodTolerationChange queues the pod when its new
// tolerations tolerate the unschedulable taint. The old tolerations need no
// look: had they tolerated it, this plugin would not have rejected the pod.
func isSchedulableAfterPodTolerationChange(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	_, newPod, err := framework.As[*v1.Pod](nil, newObj)
	if err == nil && newPod == nil {
		err = fmt.Errorf("pod update event without the new pod")
	}
	if err != nil {
		return framework.Queue, err
	}
	if toleratesUnschedulable(logger, newPod) {
		logger.V(5).Info("Pod now tolerates the unschedulable taint", "pod", klog.KObj(newPod))
		return framework.Queue, nil
	}
	logger.V(5).Info("Pod's new tolerations do not include the unschedulable taint", "pod", klog.KObj(newPod))
	return framework.QueueSkip, nil
}
