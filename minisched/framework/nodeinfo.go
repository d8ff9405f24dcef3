// This file is NodeInfo, what the scheduler knows of one node: the node, the
// pods on it (assumed ones included) and the sums plugins read, with the
// host ports in use.

package framework

import (
	"fmt"
	"maps"
	"strings"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// generation is a process-wide counter. Every change to any NodeInfo takes a
// new value, so "changed since snapshot S" is simply Generation > S.
var generation atomic.Int64

func nextGeneration() int64 { return generation.Add(1) }

// ImageStateSummary describes one container image on a node.
type ImageStateSummary struct {
	// Size of the image in bytes.
	Size int64
	// NumNodes is how many nodes have the image (filled in by the cache).
	NumNodes int
}

// NodeInfo is everything the scheduler knows about one node: the Node object
// and the pods on it (bound or assumed), with running totals so Filter and
// Score never iterate pods to add up requests.
//
// Plugins receive NodeInfos from the snapshot and must treat them as read-only.
type NodeInfo struct {
	node *v1.Node

	// Pods on the node, bound or assumed.
	Pods []*PodInfo
	// PodsWithAffinity are the pods that carry pod affinity or anti-affinity.
	PodsWithAffinity []*PodInfo
	// PodsWithRequiredAntiAffinity are the pods with required anti-affinity.
	PodsWithRequiredAntiAffinity []*PodInfo
	// UsedPorts are the host ports taken by the pods.
	UsedPorts HostPortInfo
	// Requested is the sum of the pods' effective requests.
	Requested *Resource
	// NonZeroRequested is the same with cpu/memory defaults for containers
	// that request none; used by scoring.
	NonZeroRequested *Resource
	// Allocatable is the node's allocatable resources.
	Allocatable *Resource
	// ImageStates are the images on the node, by every name they carry.
	ImageStates map[string]*ImageStateSummary
	// PVCRefCounts counts, per "namespace/name" of a PersistentVolumeClaim,
	// the pods on the node whose spec.volumes name it directly (generic
	// ephemeral volumes are not counted, as upstream). VolumeRestrictions
	// reads the snapshot-wide sum to keep a ReadWriteOncePod claim to one pod.
	PVCRefCounts map[string]int
	// Generation changes whenever anything above changes.
	Generation int64
}

// NewNodeInfo returns a NodeInfo holding pods (and no node yet).
func NewNodeInfo(pods ...*v1.Pod) *NodeInfo {
	ni := &NodeInfo{
		Requested:        &Resource{},
		NonZeroRequested: &Resource{},
		Allocatable:      &Resource{},
		UsedPorts:        HostPortInfo{},
		ImageStates:      map[string]*ImageStateSummary{},
		PVCRefCounts:     map[string]int{},
		Generation:       nextGeneration(),
	}
	for _, p := range pods {
		ni.AddPod(p)
	}
	return ni
}

// Node returns the node object, or nil if the node was deleted while pods
// still pointed at it.
func (n *NodeInfo) Node() *v1.Node {
	if n == nil {
		return nil
	}
	return n.node
}

// SetNode sets the node object and its allocatable.
func (n *NodeInfo) SetNode(node *v1.Node) {
	n.node = node
	n.Allocatable = NewResource(node.Status.Allocatable)
	n.Generation = nextGeneration()
}

// RemoveNode forgets the node object but keeps the pods (a node deleted while
// pods still point at it).
func (n *NodeInfo) RemoveNode() {
	n.node = nil
	n.Generation = nextGeneration()
}

// AddPod accounts for pod on this node.
func (n *NodeInfo) AddPod(pod *v1.Pod) { n.AddPodInfo(NewPodInfo(pod)) }

// AddPodInfo accounts for an already-computed PodInfo.
func (n *NodeInfo) AddPodInfo(pi *PodInfo) {
	n.Pods = append(n.Pods, pi)
	if pi.HasAffinity {
		n.PodsWithAffinity = append(n.PodsWithAffinity, pi)
	}
	if pi.HasRequiredAntiAffinity {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, pi)
	}
	n.update(pi, +1)
}

// RemovePod removes the pod with pod's UID; it is an error if it is not here.
func (n *NodeInfo) RemovePod(pod *v1.Pod) error {
	n.PodsWithAffinity = removeFromList(n.PodsWithAffinity, pod.UID)
	n.PodsWithRequiredAntiAffinity = removeFromList(n.PodsWithRequiredAntiAffinity, pod.UID)
	for i, pi := range n.Pods {
		if pi.Pod.UID == pod.UID {
			n.Pods[i] = n.Pods[len(n.Pods)-1]
			n.Pods[len(n.Pods)-1] = nil
			n.Pods = n.Pods[:len(n.Pods)-1]
			n.update(pi, -1)
			return nil
		}
	}
	return fmt.Errorf("no pod %s/%s (uid %s) on node %s", pod.Namespace, pod.Name, pod.UID, n.nodeName())
}

func removeFromList(list []*PodInfo, uid types.UID) []*PodInfo {
	for i, pi := range list {
		if pi.Pod.UID == uid {
			list[i] = list[len(list)-1]
			list[len(list)-1] = nil
			return list[:len(list)-1]
		}
	}
	return list
}

// update adds (sign=+1) or subtracts (sign=-1) a pod's requests, ports and
// claims.
func (n *NodeInfo) update(pi *PodInfo, sign int64) {
	n.Requested.AddResource(&pi.Requests, sign)
	n.NonZeroRequested.MilliCPU += sign * pi.NonZeroRequests.MilliCPU
	n.NonZeroRequested.Memory += sign * pi.NonZeroRequests.Memory
	for _, p := range HostPorts(pi.Pod) {
		if sign > 0 {
			n.UsedPorts.Add(p.HostIP, string(p.Protocol), p.HostPort)
		} else {
			n.UsedPorts.Remove(p.HostIP, string(p.Protocol), p.HostPort)
		}
	}
	n.updatePVCRefCounts(pi.Pod, int(sign))
	n.Generation = nextGeneration()
}

// updatePVCRefCounts adds sign to the count of every claim the pod names in
// spec.volumes[].persistentVolumeClaim, dropping counts that reach zero.
func (n *NodeInfo) updatePVCRefCounts(pod *v1.Pod, sign int) {
	if n.PVCRefCounts == nil {
		n.PVCRefCounts = map[string]int{}
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		key := PVCKey(pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		if c := n.PVCRefCounts[key] + sign; c > 0 {
			n.PVCRefCounts[key] = c
		} else {
			delete(n.PVCRefCounts, key)
		}
	}
}

// PVCKey is the key of PVCRefCounts and StorageInfoLister: "namespace/name".
func PVCKey(namespace, name string) string { return namespace + "/" + name }

// HostPorts lists the host ports a pod takes: those of its sidecars
// (restartable init containers, which run alongside) and of its regular
// containers. Ordinary init containers have finished before the pod runs.
func HostPorts(pod *v1.Pod) []v1.ContainerPort {
	var out []v1.ContainerPort
	add := func(c *v1.Container) {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				out = append(out, p)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return out
}

func (n *NodeInfo) nodeName() string {
	if n.node == nil {
		return "<deleted>"
	}
	return n.node.Name
}

// Snapshot returns a copy that the cache can keep changing without affecting
// the copy: the slices, totals and maps are copied, the PodInfos and API
// objects shared.
func (n *NodeInfo) Snapshot() *NodeInfo {
	c := &NodeInfo{
		node:             n.node,
		Requested:        n.Requested.Clone(),
		NonZeroRequested: n.NonZeroRequested.Clone(),
		Allocatable:      n.Allocatable.Clone(),
		UsedPorts:        n.UsedPorts.Clone(),
		ImageStates:      make(map[string]*ImageStateSummary, len(n.ImageStates)),
		PVCRefCounts:     maps.Clone(n.PVCRefCounts),
		Generation:       n.Generation,
	}
	c.Pods = append([]*PodInfo(nil), n.Pods...)
	c.PodsWithAffinity = append([]*PodInfo(nil), n.PodsWithAffinity...)
	c.PodsWithRequiredAntiAffinity = append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...)
	for k, v := range n.ImageStates {
		s := *v
		c.ImageStates[k] = &s
	}
	return c
}

// String is a short summary for logs.
func (n *NodeInfo) String() string {
	return fmt.Sprintf("NodeInfo{node: %s, pods: %d, requested: %+v, allocatable: %+v}",
		n.nodeName(), len(n.Pods), *n.Requested, *n.Allocatable)
}

// DefaultBindAllHostIP is the host IP that conflicts with every other IP.
const DefaultBindAllHostIP = "0.0.0.0"

// ProtocolPort is a protocol and port pair.
type ProtocolPort struct {
	Protocol string
	Port     int32
}

// HostPortInfo records host ports in use: host IP → protocol/port set.
type HostPortInfo map[string]sets.Set[ProtocolPort]

// sanitize applies kube-scheduler's defaults: an empty IP is 0.0.0.0 and an
// empty protocol is TCP.
func sanitize(ip, protocol string) (string, string) {
	if ip == "" {
		ip = DefaultBindAllHostIP
	}
	if protocol == "" {
		protocol = string(v1.ProtocolTCP)
	}
	return ip, strings.ToUpper(protocol)
}

// Add records ip/protocol/port as used.
func (h HostPortInfo) Add(ip, protocol string, port int32) {
	ip, protocol = sanitize(ip, protocol)
	if h[ip] == nil {
		h[ip] = sets.New[ProtocolPort]()
	}
	h[ip].Insert(ProtocolPort{Protocol: protocol, Port: port})
}

// Remove frees ip/protocol/port.
func (h HostPortInfo) Remove(ip, protocol string, port int32) {
	ip, protocol = sanitize(ip, protocol)
	if m, ok := h[ip]; ok {
		m.Delete(ProtocolPort{Protocol: protocol, Port: port})
		if len(m) == 0 {
			delete(h, ip)
		}
	}
}

// CheckConflict reports whether ip/protocol/port clashes with a used port:
// 0.0.0.0 clashes with the same protocol/port on any IP, and any IP clashes
// with 0.0.0.0.
func (h HostPortInfo) CheckConflict(ip, protocol string, port int32) bool {
	if port <= 0 {
		return false
	}
	ip, protocol = sanitize(ip, protocol)
	pp := ProtocolPort{Protocol: protocol, Port: port}
	if ip == DefaultBindAllHostIP {
		for _, m := range h {
			if m.Has(pp) {
				return true
			}
		}
		return false
	}
	for _, key := range []string{ip, DefaultBindAllHostIP} {
		if h[key].Has(pp) {
			return true
		}
	}
	return false
}

// Clone returns a deep copy.
func (h HostPortInfo) Clone() HostPortInfo {
	out := make(HostPortInfo, len(h))
	for ip, m := range h {
		out[ip] = m.Clone()
	}
	return out
}
