// This file is the plugin: PreFilter collects the pod's host ports once,
// Filter checks them against the ports in use on each node.

package nodeports

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

const (
	// Name is the plugin's name in the registry and in configurations.
	Name = "NodePorts"

	// ErrReason is the reason Filter gives for a node where a wanted host
	// port is taken.
	ErrReason = "node(s) didn't have free ports for the requested pod ports"

	// preFilterStateKey is where PreFilter leaves the pod's host ports for
	// Filter.
	preFilterStateKey framework.StateKey = "PreFilter" + Name
)

// NodePorts keeps pods that want the same host IP, protocol and port off the
// same node. It keeps no state between cycles.
type NodePorts struct{}

var (
	_ framework.PreFilterPlugin   = &NodePorts{}
	_ framework.FilterPlugin      = &NodePorts{}
	_ framework.EnqueueExtensions = &NodePorts{}
	_ framework.SignPlugin        = &NodePorts{}
)

// New returns the plugin. It takes no args; any pluginConfig is ignored, as
// for the other plugins without args.
func New(_ context.Context, _ *runtime.RawExtension, _ framework.Handle) (framework.Plugin, error) {
	return &NodePorts{}, nil
}

// Name returns Name.
func (pl *NodePorts) Name() string { return Name }

// SignPod signs the host ports the pod's containers ask for
// (HostPortsSigner), as kube-scheduler does: PreFilter and Filter read the
// pod's host ports and nothing else of it. The fragment holds the port
// numbers only, not their protocol or host IP, and counts ordinary init
// containers' ports too, as kube-scheduler's does.
func (pl *NodePorts) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	return []framework.SignFragment{{Key: framework.HostPortsSignerName, Value: framework.HostPortsSigner(pod)}}, nil
}

// preFilterState is the pod's host ports, computed once per cycle.
type preFilterState []v1.ContainerPort

// Clone returns the same state: it depends on the pod alone, so preemption's
// "what if" never changes it.
func (s preFilterState) Clone() framework.StateData { return s }

// hostPorts lists the ports of pod that bind a host port (hostPort > 0):
// those of its sidecars (init containers with restartPolicy Always, which
// run as long as the pod) and of its regular containers. Ordinary init
// containers are left out: they have exited by the time the others start.
func hostPorts(pod *v1.Pod) []v1.ContainerPort {
	var ports []v1.ContainerPort
	add := func(c *v1.Container) {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				ports = append(ports, p)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return ports
}

// PreFilter collects the pod's host ports. A pod that wants none cannot
// conflict, so PreFilter returns Skip and Filter is not called for it.
func (pl *NodePorts) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod,
	_ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	ports := hostPorts(pod)
	if len(ports) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterStateKey, preFilterState(ports))
	return nil, nil
}

// PreFilterExtensions returns nil: the state depends on the pod alone, not
// on the pods of a node.
func (pl *NodePorts) PreFilterExtensions() framework.PreFilterExtensions { return nil }

func getPreFilterState(state *framework.CycleState) (preFilterState, error) {
	c, err := state.Read(preFilterStateKey)
	if err != nil {
		return nil, fmt.Errorf("reading %q from cycleState: %w", preFilterStateKey, err)
	}
	s, ok := c.(preFilterState)
	if !ok {
		return nil, fmt.Errorf("%+v convert to nodeports.preFilterState error", c)
	}
	return s, nil
}

// Filter rejects the node if one of the pod's host ports clashes with one in
// use there (see framework.HostPortInfo.CheckConflict for what clashes). The
// code is Unschedulable: evicting the pod that holds the port frees it.
func (pl *NodePorts) Filter(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) *framework.Status {
	want, err := getPreFilterState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	if p, clash := firstConflict(want, nodeInfo.UsedPorts); clash {
		klog.FromContext(ctx).V(5).Info("Host port is taken on the node",
			"pod", klog.KObj(pod), "node", klog.KObj(nodeInfo.Node()),
			"hostIP", p.HostIP, "protocol", p.Protocol, "hostPort", p.HostPort)
		return framework.NewStatus(framework.Unschedulable, ErrReason)
	}
	return nil
}

// firstConflict returns the first of want that clashes with a port in used,
// and whether there is one.
func firstConflict(want []v1.ContainerPort, used framework.HostPortInfo) (v1.ContainerPort, bool) {
	for _, p := range want {
		if used.CheckConflict(p.HostIP, string(p.Protocol), p.HostPort) {
			return p, true
		}
	}
	return v1.ContainerPort{}, false
}
