// This file runs the extension points that decide where a pod can go:
// PreFilter, with the PreFilterExtensions that preemption asks "what if"
// through; Filter on one node, and Filter with the pods nominated to the
// node counted; and PostFilter, when no node fits. The search over the
// nodes, which calls Filter node by node in parallel, is the scheduler's
// (package minisched).

package framework

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// RunPreFilterPlugins runs PreFilter plugins in order and intersects their
// results. It returns the merged result, a non-success status if a plugin
// rejected the pod (or the results left no node), and the plugins that
// narrowed the node set, with the rejecting plugin if there is one (they
// count as rejectors of the excluded nodes). Plugins that return Skip are
// recorded in state.SkipFilterPlugins.
func (f *Framework) RunPreFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodes []*NodeInfo) (_ *PreFilterResult, status *Status, _ sets.Set[string]) {
	defer f.observe(preFilterPoint, time.Now(), &status)
	var result *PreFilterResult
	var narrowing []string
	skip := sets.New[string]()
	for _, pl := range f.preFilterPlugins {
		start := f.sampleStart(state)
		r, s := pl.PreFilter(ctx, state, pod, nodes)
		f.recordPlugin(pl.Name(), preFilterPoint, start, s)
		if s.IsSkip() {
			skip.Insert(pl.Name())
			continue
		}
		if !s.IsSuccess() {
			s.WithPlugin(pl.Name())
			if s.IsRejected() {
				return nil, s, sets.New(append(narrowing, pl.Name())...)
			}
			return nil, pluginError("PreFilter", pl, s), nil
		}
		if !r.AllNodes() {
			narrowing = append(narrowing, pl.Name())
		}
		result = result.Merge(r)
		if !result.AllNodes() && len(result.NodeNames) == 0 {
			msg := fmt.Sprintf("node(s) didn't satisfy plugin(s) %v simultaneously", narrowing)
			if len(narrowing) == 1 {
				msg = fmt.Sprintf("node(s) didn't satisfy plugin %v", narrowing[0])
			}
			return result, NewStatus(UnschedulableAndUnresolvable, msg), sets.New(narrowing...)
		}
	}
	state.SkipFilterPlugins = skip
	state.filterPlugins, state.filterPluginsSet = f.activeFilterPlugins(skip), true
	state.filterObservers = successObservers(f, state, state.filterPlugins, filterPoint)
	return result, nil, sets.New(narrowing...)
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

// RunFilterPlugins runs Filter plugins on one node, in order, and stops at the
// first that does not return Success: that plugin's status (with its name)
// is the node's verdict. A code other than the rejection codes becomes Error.
func (f *Framework) RunFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status {
	plugins, observers := state.filterPlugins, state.filterObservers
	if !state.filterPluginsSet { // no PreFilter ran on this state
		plugins, observers = f.activeFilterPlugins(state.SkipFilterPlugins), nil
	}
	for i, pl := range plugins {
		start := f.sampleStart(state)
		s := pl.Filter(ctx, state, pod, nodeInfo)
		f.recordCall(observers, i, pl.Name(), filterPoint, start, s)
		if s.IsSuccess() {
			continue
		}
		if !s.IsRejected() {
			s = AsStatus(fmt.Errorf("running %q filter plugin: %w", pl.Name(), s.AsError()))
		}
		return s.WithPlugin(pl.Name())
	}
	return nil
}

// activeFilterPlugins are the Filter plugins not in skip, in order.
func (f *Framework) activeFilterPlugins(skip sets.Set[string]) []FilterPlugin {
	var plugins []FilterPlugin
	for _, pl := range f.filterPlugins {
		if !skip.Has(pl.Name()) {
			plugins = append(plugins, pl)
		}
	}
	return plugins
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

// RunPostFilterPlugins runs PostFilter plugins in order while they return
// Unschedulable (or Pending). Success and UnschedulableAndUnresolvable return
// at once, with the plugin's result; any other code returns at once as an
// Error, with no result. If no plugin stops the run, the status is
// Unschedulable with all their reasons, naming the first plugin.
//
// The result returned with that status is the last one that asks for a
// change of the nominated node (preemption clears it when no node could
// help); nil keeps the nomination as it is.
func (f *Framework) RunPostFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod,
	m *NodeToStatus) (_ *PostFilterResult, status *Status) {
	defer f.observe(postFilterPoint, time.Now(), &status)
	var result *PostFilterResult
	var reasons []string
	rejector := ""
	for _, pl := range f.postFilterPlugins {
		start := f.sampleStart(state)
		r, s := pl.PostFilter(ctx, state, pod, m)
		f.recordPlugin(pl.Name(), postFilterPoint, start, s)
		switch {
		case s.IsSuccess():
			return r, s
		case s.Code() == UnschedulableAndUnresolvable:
			return r, s.WithPlugin(pl.Name())
		case !s.IsRejected():
			return nil, AsStatus(s.AsError()).WithPlugin(pl.Name())
		}
		if r != nil && r.Mode() != ModeNoop {
			result = r
		}
		reasons = append(reasons, s.Reasons()...)
		if rejector == "" {
			rejector = pl.Name()
		}
	}
	return result, NewStatus(Unschedulable, reasons...).WithPlugin(rejector)
}
