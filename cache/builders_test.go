// This file holds the pod and node builders the cache tests use, in the
// style of kube-scheduler's st.MakePod()/st.MakeNode().

package cache

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podWrapper builds a pod step by step.
type podWrapper struct{ v1.Pod }

// makePod starts a pod in namespace "default" with one container.
func makePod() *podWrapper {
	return &podWrapper{v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c"}}},
	}}
}

// Obj returns the built pod (a copy, so the wrapper can be reused).
func (p *podWrapper) Obj() *v1.Pod { return p.Pod.DeepCopy() }

// Name sets the name and, unless already set, a UID derived from it.
func (p *podWrapper) Name(name string) *podWrapper {
	p.Pod.Name = name
	if p.Pod.UID == "" {
		p.Pod.UID = types.UID("uid-" + name)
	}
	return p
}

// UID sets the UID.
func (p *podWrapper) UID(uid string) *podWrapper {
	p.Pod.UID = types.UID(uid)
	return p
}

// Node sets Spec.NodeName.
func (p *podWrapper) Node(name string) *podWrapper {
	p.Spec.NodeName = name
	return p
}

// Req sets the container's requests, e.g. {"cpu": "500m", "memory": "1Gi"}.
func (p *podWrapper) Req(reqs map[v1.ResourceName]string) *podWrapper {
	rl := v1.ResourceList{}
	for name, q := range reqs {
		rl[name] = resource.MustParse(q)
	}
	p.Spec.Containers[0].Resources.Requests = rl
	return p
}

// HostPort makes the container use a TCP host port.
func (p *podWrapper) HostPort(port int32) *podWrapper {
	p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports,
		v1.ContainerPort{HostPort: port, ContainerPort: port, Protocol: v1.ProtocolTCP})
	return p
}

// PodAffinity gives the pod a required pod affinity to pods labelled app=key.
func (p *podWrapper) PodAffinity(key string) *podWrapper {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	p.Spec.Affinity.PodAffinity = &v1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{affinityTerm(key)},
	}
	return p
}

// PodAntiAffinity gives the pod a required pod anti-affinity to pods
// labelled app=key.
func (p *podWrapper) PodAntiAffinity(key string) *podWrapper {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{affinityTerm(key)},
	}
	return p
}

func affinityTerm(key string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": key}},
		TopologyKey:   v1.LabelHostname,
	}
}

// nodeWrapper builds a node step by step.
type nodeWrapper struct{ v1.Node }

// makeNode starts a node with no labels and nothing allocatable.
func makeNode() *nodeWrapper {
	return &nodeWrapper{v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}}}}
}

// Obj returns the built node (a copy).
func (n *nodeWrapper) Obj() *v1.Node { return n.Node.DeepCopy() }

// Name sets the name.
func (n *nodeWrapper) Name(name string) *nodeWrapper {
	n.Node.Name = name
	n.Node.UID = types.UID("uid-" + name)
	return n
}

// Zone sets the topology region and zone labels.
func (n *nodeWrapper) Zone(region, zone string) *nodeWrapper {
	n.Labels[v1.LabelTopologyRegion] = region
	n.Labels[v1.LabelTopologyZone] = zone
	return n
}

// Allocatable sets capacity and allocatable, e.g. {"cpu": "4", "pods": "110"}.
func (n *nodeWrapper) Allocatable(res map[v1.ResourceName]string) *nodeWrapper {
	rl := v1.ResourceList{}
	for name, q := range res {
		rl[name] = resource.MustParse(q)
	}
	n.Status.Capacity = rl
	n.Status.Allocatable = rl.DeepCopy()
	return n
}

// Image adds an image with the given size and names.
func (n *nodeWrapper) Image(size int64, names ...string) *nodeWrapper {
	n.Status.Images = append(n.Status.Images, v1.ContainerImage{Names: names, SizeBytes: size})
	return n
}
