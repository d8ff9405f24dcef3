// This file is what the framework knows about pods other than the one in the
// cycle: the nominator and the activator the queue provides, and
// PodsToActivate, where a plugin asks for other pods to be woken up. Filter
// with the nominated pods counted is in run_filter.go, beside Filter.

package framework

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// PodNominator tells which pods are nominated to a node: pods a preemption
// made room for, or whose status.nominatedNodeName says so. The scheduling
// queue is the nominator.
type PodNominator interface {
	// NominatedPodsForNode returns the pods nominated to the node. The
	// PodInfos are shared: do not modify them.
	NominatedPodsForNode(nodeName string) []*PodInfo
}

// PodActivator moves pods back to activeQ. The scheduling queue is the
// activator.
type PodActivator interface {
	// Activate moves the named pods from backoffQ or the unschedulable pods
	// to activeQ; a pod in flight is retried after backoff when it comes
	// back, whatever rejected it.
	Activate(logger klog.Logger, pods map[string]*v1.Pod)
}

// SetPodNominator sets where NominatedPodsForNode looks. The scheduler sets
// the queue once both exist (the queue needs the profiles first).
func (f *Framework) SetPodNominator(n PodNominator) { f.nominator = n }

// SetPodActivator sets what Activate calls; the scheduler sets the queue.
func (f *Framework) SetPodActivator(a PodActivator) { f.activator = a }

// NominatedPodsForNode returns the pods nominated to the node, none without
// a nominator.
func (f *Framework) NominatedPodsForNode(nodeName string) []*PodInfo {
	if f.nominator == nil {
		return nil
	}
	return f.nominator.NominatedPodsForNode(nodeName)
}

// Activate moves the pods to activeQ, if an activator is set.
func (f *Framework) Activate(logger klog.Logger, pods map[string]*v1.Pod) {
	if f.activator != nil {
		f.activator.Activate(logger, pods)
	}
}

// PodsToActivateKey is the CycleState key of PodsToActivate. The scheduler
// writes an empty PodsToActivate at the start of every cycle.
const PodsToActivateKey StateKey = "kubernetes.io/pods-to-activate"

// PodsToActivate is where a plugin puts pods it wants moved to activeQ (say,
// the rest of a group whose first member was just placed). The scheduler
// activates them after a successful scheduling cycle and again after a
// successful binding cycle. Map is keyed by namespace/name; lock it with the
// embedded mutex.
type PodsToActivate struct {
	sync.Mutex
	Map map[string]*v1.Pod
}

// NewPodsToActivate returns an empty PodsToActivate.
func NewPodsToActivate() *PodsToActivate {
	return &PodsToActivate{Map: map[string]*v1.Pod{}}
}

// Clone shares the PodsToActivate: a cloned CycleState (preemption's dry
// run) must not lose what plugins asked for.
func (p *PodsToActivate) Clone() StateData { return p }
