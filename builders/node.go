// This file builds nodes.

package builders

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// DefaultPodCapacity is the pod count MakeNode gives every node, as kubelet
// does by default.
const DefaultPodCapacity = "110"

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

// Obj returns a copy of the node built so far.
func (n *NodeWrapper) Obj() *v1.Node { return n.Node.DeepCopy() }

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

// Annotation adds an annotation.
func (n *NodeWrapper) Annotation(k, v string) *NodeWrapper {
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[k] = v
	return n
}

// Taint adds a taint to the node.
func (n *NodeWrapper) Taint(key, value string, effect v1.TaintEffect) *NodeWrapper {
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Value: value, Effect: effect})
	return n
}

// Images adds container images (by their names) with a size in bytes.
func (n *NodeWrapper) Images(size int64, names ...string) *NodeWrapper {
	n.Status.Images = append(n.Status.Images, v1.ContainerImage{Names: names, SizeBytes: size})
	return n
}

// UID sets the node's UID.
func (n *NodeWrapper) UID(uid string) *NodeWrapper { n.Node.UID = types.UID(uid); return n }

// Region sets the topology.kubernetes.io/region label.
func (n *NodeWrapper) Region(region string) *NodeWrapper {
	return n.Label(v1.LabelTopologyRegion, region)
}

// Zone sets the topology.kubernetes.io/zone label.
func (n *NodeWrapper) Zone(zone string) *NodeWrapper { return n.Label(v1.LabelTopologyZone, zone) }
