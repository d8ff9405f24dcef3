// This file adds the builders the default plugins' tests share: labels,
// taints, tolerations, selectors and affinity, ports, images, topology
// spread constraints, scheduling gates and owners.
package plugintesting

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Label adds a label to the pod.
func (p *PodWrapper) Label(k, v string) *PodWrapper {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}

// NodeSelector adds a spec.nodeSelector entry.
func (p *PodWrapper) NodeSelector(k, v string) *PodWrapper {
	if p.Spec.NodeSelector == nil {
		p.Spec.NodeSelector = map[string]string{}
	}
	p.Spec.NodeSelector[k] = v
	return p
}

// ensureAffinity returns the pod's affinity, creating it.
func (p *PodWrapper) ensureAffinity() *v1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	return p.Spec.Affinity
}

// NodeAffinity sets the pod's node affinity.
func (p *PodWrapper) NodeAffinity(na *v1.NodeAffinity) *PodWrapper {
	p.ensureAffinity().NodeAffinity = na
	return p
}

// PodAffinity sets the pod's pod affinity.
func (p *PodWrapper) PodAffinity(pa *v1.PodAffinity) *PodWrapper {
	p.ensureAffinity().PodAffinity = pa
	return p
}

// PodAntiAffinity sets the pod's pod anti-affinity.
func (p *PodWrapper) PodAntiAffinity(paa *v1.PodAntiAffinity) *PodWrapper {
	p.ensureAffinity().PodAntiAffinity = paa
	return p
}

// HostPort adds a container (named after the port) exposing hostPort.
func (p *PodWrapper) HostPort(protocol v1.Protocol, hostIP string, hostPort int32) *PodWrapper {
	c := v1.Container{Name: "port-" + string(protocol) + "-" + hostIP, Ports: []v1.ContainerPort{{
		Protocol: protocol, HostIP: hostIP, HostPort: hostPort, ContainerPort: hostPort,
	}}}
	p.Spec.Containers = append(p.Spec.Containers, c)
	return p
}

// Image adds a container running image.
func (p *PodWrapper) Image(image string) *PodWrapper {
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "img" + string(rune('a'+len(p.Spec.Containers))), Image: image})
	return p
}

// SpreadConstraint adds a topology spread constraint.
func (p *PodWrapper) SpreadConstraint(c v1.TopologySpreadConstraint) *PodWrapper {
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	return p
}

// SchedulingGates sets the pod's scheduling gates.
func (p *PodWrapper) SchedulingGates(names ...string) *PodWrapper {
	for _, n := range names {
		p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, v1.PodSchedulingGate{Name: n})
	}
	return p
}

// OwnerReference makes kind/name (with uid) the pod's controller.
func (p *PodWrapper) OwnerReference(kind, name string, uid types.UID) *PodWrapper {
	isController := true
	p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
		APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: &isController,
	})
	return p
}

// SchedulerName sets spec.schedulerName.
func (p *PodWrapper) SchedulerName(name string) *PodWrapper { p.Spec.SchedulerName = name; return p }

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
