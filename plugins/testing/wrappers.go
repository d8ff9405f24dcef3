// Package plugintesting holds the builders plugin tests share: pods and nodes
// made in one readable line, NodeInfos, and a framework built from a few
// plugins. It is imported by tests only.
package plugintesting

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minisched/minisched/minisched/framework"
)

// DefaultPodCapacity is the pod count MakeNode gives every node, as kubelet
// does by default.
const DefaultPodCapacity = "110"

// ResourceList turns {"cpu": "500m"} into a v1.ResourceList. It panics on a
// malformed quantity, which in a test table is a typo to fix.
func ResourceList(m map[v1.ResourceName]string) v1.ResourceList {
	if m == nil {
		return nil
	}
	rl := make(v1.ResourceList, len(m))
	for name, q := range m {
		rl[name] = resource.MustParse(q)
	}
	return rl
}

// PodWrapper builds a pod step by step: MakePod().Name("p").Req(...).Obj().
type PodWrapper struct{ v1.Pod }

// MakePod starts a pod in namespace "default".
func MakePod() *PodWrapper {
	return &PodWrapper{v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault}}}
}

// Obj returns the built pod.
func (p *PodWrapper) Obj() *v1.Pod { return &p.Pod }

// Name sets the pod's name.
func (p *PodWrapper) Name(name string) *PodWrapper { p.Pod.Name = name; return p }

// Namespace sets the pod's namespace.
func (p *PodWrapper) Namespace(ns string) *PodWrapper { p.Pod.Namespace = ns; return p }

// UID sets the pod's UID.
func (p *PodWrapper) UID(uid string) *PodWrapper { p.Pod.UID = types.UID(uid); return p }

// Req adds a regular container requesting the given resources.
func (p *PodWrapper) Req(req map[v1.ResourceName]string) *PodWrapper {
	p.Spec.Containers = append(p.Spec.Containers, container(fmt.Sprintf("c%d", len(p.Spec.Containers)), req))
	return p
}

// InitReq adds a regular (run-to-completion) init container requesting the
// given resources.
func (p *PodWrapper) InitReq(req map[v1.ResourceName]string) *PodWrapper {
	p.Spec.InitContainers = append(p.Spec.InitContainers, container(fmt.Sprintf("init%d", len(p.Spec.InitContainers)), req))
	return p
}

// SidecarReq adds a restartable init container (a sidecar, restartPolicy
// Always) requesting the given resources. It keeps running beside the
// regular containers, so its requests add up with theirs.
func (p *PodWrapper) SidecarReq(req map[v1.ResourceName]string) *PodWrapper {
	c := container(fmt.Sprintf("init%d", len(p.Spec.InitContainers)), req)
	always := v1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	return p
}

func container(name string, req map[v1.ResourceName]string) v1.Container {
	return v1.Container{Name: name, Image: "registry.k8s.io/pause:3.10", Resources: v1.ResourceRequirements{Requests: ResourceList(req)}}
}

// Overhead sets the pod's runtime-class overhead.
func (p *PodWrapper) Overhead(o map[v1.ResourceName]string) *PodWrapper {
	p.Spec.Overhead = ResourceList(o)
	return p
}

// Priority sets the pod's resolved priority.
func (p *PodWrapper) Priority(prio int32) *PodWrapper { p.Spec.Priority = &prio; return p }

// Toleration adds a toleration.
func (p *PodWrapper) Toleration(t v1.Toleration) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, t)
	return p
}

// NodeName sets spec.nodeName (the pod is bound, or asks for that node).
func (p *PodWrapper) NodeName(name string) *PodWrapper { p.Spec.NodeName = name; return p }

// NominatedNodeName sets status.nominatedNodeName.
func (p *PodWrapper) NominatedNodeName(name string) *PodWrapper {
	p.Status.NominatedNodeName = name
	return p
}

// NodeWrapper builds a node step by step: MakeNode().Name("n").Capacity(...).Obj().
type NodeWrapper struct{ v1.Node }

// MakeNode starts a node with room for DefaultPodCapacity pods and nothing
// else.
func MakeNode() *NodeWrapper {
	pods := resource.MustParse(DefaultPodCapacity)
	return &NodeWrapper{v1.Node{Status: v1.NodeStatus{
		Capacity:    v1.ResourceList{v1.ResourcePods: pods},
		Allocatable: v1.ResourceList{v1.ResourcePods: pods.DeepCopy()},
	}}}
}

// Obj returns the built node.
func (n *NodeWrapper) Obj() *v1.Node { return &n.Node }

// Name sets the node's name.
func (n *NodeWrapper) Name(name string) *NodeWrapper { n.Node.Name = name; return n }

// Capacity sets the given resources in both capacity and allocatable
// (overriding the default pod count when "pods" is given).
func (n *NodeWrapper) Capacity(c map[v1.ResourceName]string) *NodeWrapper {
	for name, q := range ResourceList(c) {
		n.Status.Capacity[name] = q
		n.Status.Allocatable[name] = q.DeepCopy()
	}
	return n
}

// Unschedulable sets spec.unschedulable (a cordoned node).
func (n *NodeWrapper) Unschedulable(u bool) *NodeWrapper { n.Spec.Unschedulable = u; return n }

// Label adds a label.
func (n *NodeWrapper) Label(k, v string) *NodeWrapper {
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[k] = v
	return n
}

// MakeNodeInfo returns a NodeInfo for node holding pods.
func MakeNodeInfo(node *v1.Node, pods ...*v1.Pod) *framework.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(node)
	return ni
}
