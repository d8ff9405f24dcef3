// Package nodename is the Filter plugin that honours spec.nodeName: a pod
// that names a node fits only that node, as kube-scheduler's NodeName does.
package nodename

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/helper"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "NodeName"

// ErrReason is the reason reported for a node other than the requested one.
const ErrReason = "node(s) didn't match the requested node name"

// NodeName rejects every node but the one in the pod's spec.nodeName, if set.
type NodeName struct{}

var (
	_ framework.FilterPlugin      = &NodeName{}
	_ framework.EnqueueExtensions = &NodeName{}
	_ framework.SignPlugin        = &NodeName{}
)

// New returns the plugin. It takes no args; any pluginConfig is ignored, as
// kube-scheduler does for plugins without args.
func New(_ context.Context, _ *runtime.RawExtension, _ framework.Handle) (framework.Plugin, error) {
	return &NodeName{}, nil
}

// Name returns Name.
func (pl *NodeName) Name() string { return Name }

// SignPod signs spec.nodeName: it is all of the pod that Filter reads.
func (pl *NodeName) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	return []framework.SignFragment{{Key: framework.NodeNameSignerName, Value: pod.Spec.NodeName}}, nil
}

// Filter rejects the node unless the pod names no node or names this one.
// Preemption cannot rename a node, so the code is UnschedulableAndUnresolvable.
func (pl *NodeName) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if node == nil || !fits(pod, node) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
	}
	return nil
}

// fits reports whether pod may run on node as far as spec.nodeName goes.
func fits(pod *v1.Pod, node *v1.Node) bool {
	return pod.Spec.NodeName == "" || pod.Spec.NodeName == node.Name
}

// EventsToRegister lists what can undo this plugin's rejection: only the
// requested node appearing. Nodes cannot be renamed, so updates never help.
func (pl *NodeName) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add},
			QueueingHintFn: isSchedulableAfterNodeAdd},
	}, nil
}

// isSchedulableAfterNodeAdd queues the pod when the added node is the one it
// asks for (or it asks for none).
func isSchedulableAfterNodeAdd(logger klog.Logger, pod *v1.Pod, _, newObj interface{}) (framework.QueueingHint, error) {
	_, node, err := helper.NodesOfEvent(nil, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if !fits(pod, node) {
		logger.V(5).Info("Added node is not the one the pod asks for",
			"pod", klog.KObj(pod), "node", klog.KObj(node), "requestedNode", pod.Spec.NodeName)
		return framework.QueueSkip, nil
	}
	logger.V(5).Info("Added node may fit the pod", "pod", klog.KObj(pod), "node", klog.KObj(node))
	return framework.Queue, nil
}
