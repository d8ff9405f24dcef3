// This file is the nominator: which pods are nominated to which node. A
// nomination comes from a preemption (the node where victims are being
// evicted for the pod) or from a pod's status.nominatedNodeName; Filter
// counts a node's nominees of at least the pod's priority as if they ran
// there, so the room a preemption made is kept for its preemptor.

package queue

import (
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// nominator maps nodes to their nominated pods and back. It has its own
// lock, so that Filter, which asks for every node from many goroutines, does
// not contend for the queue's. It is taken alone or while holding the
// queue's lock, never the other way round (lock order: queue, then
// nominator).
type nominator struct {
	mu sync.RWMutex
	// podLister, if set, lets add refuse pods that are gone or bound.
	podLister corelisters.PodLister
	// byNode holds each node's nominated pods, newest object of each.
	byNode map[string][]*framework.PodInfo
	// nodeOf is the node each nominated pod is nominated to.
	nodeOf map[types.UID]string
	// nominated is len(nodeOf), kept under mu and read without it: Filter
	// asks for every node's nominees, and while nobody is nominated (the
	// common case) it need not take the lock for that, from every
	// goroutine at once.
	nominated atomic.Int64
}

func newNominator(podLister corelisters.PodLister) *nominator {
	return &nominator{
		podLister: podLister,
		byNode:    map[string][]*framework.PodInfo{},
		nodeOf:    map[types.UID]string{},
	}
}

// add nominates pi's pod to a node, replacing any earlier nomination: the
// node info names with ModeOverride ("" just clears), or with ModeNoop (or
// nil info) the pod's status.nominatedNodeName. A pod that no longer exists
// or is already bound is not nominated.
func (n *nominator) add(logger klog.Logger, pi *framework.PodInfo, info *framework.NominatingInfo) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.addLocked(logger, pi, info)
}

func (n *nominator) addLocked(logger klog.Logger, pi *framework.PodInfo, info *framework.NominatingInfo) {
	pod := pi.Pod
	n.deleteLocked(pod.UID)
	node := pod.Status.NominatedNodeName
	if info.Mode() == framework.ModeOverride {
		node = info.NominatedNodeName
	}
	if node == "" {
		return
	}
	if n.podLister != nil {
		current, err := n.podLister.Pods(pod.Namespace).Get(pod.Name)
		if err != nil || current.UID != pod.UID {
			logger.V(4).Info("Pod no longer exists; not nominating it", "pod", klog.KObj(pod), "node", node)
			return
		}
		if current.Spec.NodeName != "" {
			logger.V(4).Info("Pod is already bound; not nominating it", "pod", klog.KObj(pod),
				"boundTo", current.Spec.NodeName)
			return
		}
	}
	n.nodeOf[pod.UID] = node
	n.nominated.Store(int64(len(n.nodeOf)))
	n.byNode[node] = append(n.byNode[node], pi)
	logger.V(4).Info("Pod nominated to node", "pod", klog.KObj(pod), "node", node)
}

// update replaces oldPod's entry with newPod's. A nomination made in memory
// (by preemption) survives an update that says nothing about it: the status
// patch that writes nominatedNodeName may not have arrived yet.
func (n *nominator) update(logger klog.Logger, oldPod *v1.Pod, newPodInfo *framework.PodInfo) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var info *framework.NominatingInfo
	if oldPod.Status.NominatedNodeName == "" && newPodInfo.Pod.Status.NominatedNodeName == "" {
		if node, ok := n.nodeOf[oldPod.UID]; ok {
			info = &framework.NominatingInfo{NominatedNodeName: node, NominatingMode: framework.ModeOverride}
		}
	}
	n.deleteLocked(oldPod.UID)
	n.addLocked(logger, newPodInfo, info)
}

// delete forgets the pod's nomination, if any.
func (n *nominator) delete(uid types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deleteLocked(uid)
}

func (n *nominator) deleteLocked(uid types.UID) {
	node, ok := n.nodeOf[uid]
	if !ok {
		return
	}
	pods := n.byNode[node]
	for i, pi := range pods {
		if pi.Pod.UID == uid {
			n.byNode[node] = append(pods[:i:i], pods[i+1:]...)
			break
		}
	}
	if len(n.byNode[node]) == 0 {
		delete(n.byNode, node)
	}
	delete(n.nodeOf, uid)
	n.nominated.Store(int64(len(n.nodeOf)))
}

// NominatedPodsForNode returns the pods nominated to the node, in the order
// they were nominated. It implements framework.PodNominator.
func (p *PriorityQueue) NominatedPodsForNode(nodeName string) []*framework.PodInfo {
	if p.nominator.nominated.Load() == 0 {
		return nil
	}
	p.nominator.mu.RLock()
	defer p.nominator.mu.RUnlock()
	return append([]*framework.PodInfo(nil), p.nominator.byNode[nodeName]...)
}

// AddNominatedPod records a nomination decided by the scheduler (see
// nominator.add for info). The failure handler calls it with what
// preemption decided, before patching the pod's status, so the next cycle
// already counts the pod on its node.
func (p *PriorityQueue) AddNominatedPod(logger klog.Logger, pi *framework.PodInfo, info *framework.NominatingInfo) {
	p.nominator.add(logger, pi, info)
}

// DeleteNominatedPodIfExists forgets the pod's nomination: the scheduler
// calls it when it assumes the pod, which then counts on its node anyway.
func (p *PriorityQueue) DeleteNominatedPodIfExists(pod *v1.Pod) {
	p.nominator.delete(pod.UID)
}

var _ framework.PodNominator = (*PriorityQueue)(nil)
