// This file is what the framework knows about nominated pods and about
// other pods a plugin may wake up: the nominator and activator the queue
// provides, Filter with the nominated pods added, the PreFilterExtensions
// runners preemption uses, and PodsToActivate.

package framework

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
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

// RunPreFilterExtensionAddPod tells every PreFilter plugin with extensions,
// except those that skipped this pod, that podInfoToAdd now runs on
// nodeInfo, so they can update their CycleState. Any failure is an Error.
func (f *Framework) RunPreFilterExtensionAddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod,
	podInfoToAdd *PodInfo, nodeInfo *NodeInfo) *Status {
	for _, pl := range f.preFilterPlugins {
		ext := pl.PreFilterExtensions()
		if ext == nil || state.SkipFilterPlugins.Has(pl.Name()) {
			continue
		}
		if s := ext.AddPod(ctx, state, podToSchedule, podInfoToAdd, nodeInfo); !s.IsSuccess() {
			return pluginError("PreFilterExtension AddPod", pl, s)
		}
	}
	return nil
}

// RunPreFilterExtensionRemovePod is RunPreFilterExtensionAddPod for a pod
// that no longer runs on nodeInfo.
func (f *Framework) RunPreFilterExtensionRemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod,
	podInfoToRemove *PodInfo, nodeInfo *NodeInfo) *Status {
	for _, pl := range f.preFilterPlugins {
		ext := pl.PreFilterExtensions()
		if ext == nil || state.SkipFilterPlugins.Has(pl.Name()) {
			continue
		}
		if s := ext.RemovePod(ctx, state, podToSchedule, podInfoToRemove, nodeInfo); !s.IsSuccess() {
			return pluginError("PreFilterExtension RemovePod", pl, s)
		}
	}
	return nil
}

// RunFilterPluginsWithNominatedPods runs Filter on a node as if the pods
// nominated to it with at least the pod's priority were already there, so
// the room a preemption made is kept for its preemptor: a pod must yield to
// them, not take their place (lower-priority nominees it may displace).
//
// If such pods exist and the pod passes with them, Filter runs a second time
// without them: the nominees may end up elsewhere, and some filters (pod
// affinity) pass only with them. Requiring both passes is the conservative
// choice, as in kube-scheduler. The first pass works on copies of state and
// nodeInfo.
func (f *Framework) RunFilterPluginsWithNominatedPods(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodeInfo *NodeInfo) *Status {
	added, stateWith, nodeInfoWith, err := f.addGENominatedPods(ctx, state, pod, nodeInfo)
	if err != nil {
		return AsStatus(err)
	}
	status := f.RunFilterPlugins(ctx, stateWith, pod, nodeInfoWith)
	if !added || !status.IsSuccess() {
		return status
	}
	return f.RunFilterPlugins(ctx, state, pod, nodeInfo)
}

// addGENominatedPods returns copies of state and nodeInfo with the pods
// nominated to the node whose priority is greater than or equal to the pod's
// added, and whether there were any. Without any, it returns the originals.
func (f *Framework) addGENominatedPods(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodeInfo *NodeInfo) (bool, *CycleState, *NodeInfo, error) {
	if nodeInfo.Node() == nil {
		return false, state, nodeInfo, nil
	}
	nominated := f.NominatedPodsForNode(nodeInfo.Node().Name)
	if len(nominated) == 0 {
		return false, state, nodeInfo, nil
	}
	priority := corev1helpers.PodPriority(pod)
	var stateOut *CycleState
	var nodeInfoOut *NodeInfo
	for _, pi := range nominated {
		if pi.Pod.UID == pod.UID || corev1helpers.PodPriority(pi.Pod) < priority {
			continue
		}
		if stateOut == nil {
			stateOut, nodeInfoOut = state.Clone(), nodeInfo.Snapshot()
		}
		nodeInfoOut.AddPodInfo(pi)
		if s := f.RunPreFilterExtensionAddPod(ctx, stateOut, pod, pi, nodeInfoOut); !s.IsSuccess() {
			return false, state, nodeInfo, s.AsError()
		}
	}
	if stateOut == nil {
		return false, state, nodeInfo, nil
	}
	return true, stateOut, nodeInfoOut, nil
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
