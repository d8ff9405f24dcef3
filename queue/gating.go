// This file is PreEnqueue gating: the check every pod passes on its way into
// activeQ, and what the queue records when a plugin says "not yet".

package queue

import (
	"context"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/minisched/metrics"
)

// unnamedGate stands in for the gating plugin when a profile returns a
// failing PreEnqueue status without naming the plugin, so that the pod still
// counts as gated.
const unnamedGate = "PreEnqueue"

// admit runs the PreEnqueue plugins of each of the entity's pods, and
// reports whether none gates it. A pod group is gated when any member is,
// and then carries that member's gate: every member must be let in before
// the group is.
func (p *PriorityQueue) admit(logger klog.Logger, e framework.QueuedEntity) bool {
	var gated *framework.QueuedPodInfo
	e.ForEachPod(func(pInfo *framework.QueuedPodInfo) bool {
		// Every member is asked, not only up to the first gated one: each
		// records its own gate.
		if !p.admitPod(logger, pInfo) {
			gated = pInfo
		}
		return true
	})
	params := e.Params()
	if gated == nil {
		params.GatingPlugin, params.GatingPluginEvents = "", nil
		return true
	}
	params.GatingPlugin, params.GatingPluginEvents = gated.GatingPlugin, gated.GatingPluginEvents
	return false
}

// admitPod runs the pod's PreEnqueue plugins. On success it clears any gate
// and returns true. Otherwise the pod is gated: the failing plugin becomes
// its GatingPlugin and joins its UnschedulablePlugins, so that only events
// that plugin registered (or a flush) re-check it.
func (p *PriorityQueue) admitPod(logger klog.Logger, pInfo *framework.QueuedPodInfo) bool {
	profile, ok := p.profiles[pInfo.Pod.Spec.SchedulerName]
	if !ok {
		return true // Add ignores such pods; nothing can gate a stray one
	}
	s := profile.RunPreEnqueuePlugins(klog.NewContext(context.Background(), logger), pInfo.Pod)
	if s.IsSuccess() {
		if pInfo.Gated() {
			logger.V(4).Info("Pod no longer gated", "pod", klog.KObj(pInfo.Pod), "plugin", pInfo.GatingPlugin)
		}
		pInfo.GatingPlugin = ""
		pInfo.GatingPluginEvents = nil
		return true
	}
	plugin := s.Plugin()
	if plugin == "" {
		plugin = unnamedGate
	}
	if s.Code() == framework.Error {
		// A broken PreEnqueue plugin must not let the pod through, nor lose it.
		logger.Error(s.AsError(), "PreEnqueue failed; pod stays gated", "pod", klog.KObj(pInfo.Pod), "plugin", plugin)
	} else {
		logger.V(4).Info("Pod gated by PreEnqueue plugin", "pod", klog.KObj(pInfo.Pod), "plugin", plugin,
			"reason", s.Message())
	}
	pInfo.GatingPlugin = plugin
	pInfo.GatingPluginEvents = nil
	for _, e := range profile.QueueingHints()[plugin] {
		pInfo.GatingPluginEvents = append(pInfo.GatingPluginEvents, e.Event)
	}
	if pInfo.UnschedulablePlugins == nil {
		pInfo.UnschedulablePlugins = sets.New[string]()
	}
	pInfo.UnschedulablePlugins.Insert(plugin)
	return false
}

// moveToActiveQ admits e and pushes it into activeQ, or parks it among the
// unschedulable pods if a PreEnqueue plugin gates it. The caller has
// already taken it out of wherever it was. It reports whether it entered
// activeQ; the caller broadcasts.
func (p *PriorityQueue) moveToActiveQ(logger klog.Logger, e framework.QueuedEntity, event string) bool {
	if !p.admit(logger, e) {
		p.addUnschedulable(e, event)
		return false
	}
	p.pushToActiveQ(logger, e, event)
	return true
}

// pushToActiveQ pushes an admitted entity into activeQ without running
// PreEnqueue: for entities leaving backoffQ, which ran it on the way in.
func (p *PriorityQueue) pushToActiveQ(logger klog.Logger, e framework.QueuedEntity, event string) {
	p.activeQ.AddOrUpdate(e)
	p.metrics.QueueIncoming(metrics.ActiveQ, event)
	logger.V(4).Info("Moved to activeQ", entityKV(e), entityRef(e), "event", event)
}

// moveToBackoffQ admits e and pushes it into backoffQ, or parks it among
// the unschedulable pods if a PreEnqueue plugin gates it. It reports
// whether it entered backoffQ, where an idle Pop may take it; the caller
// broadcasts.
func (p *PriorityQueue) moveToBackoffQ(logger klog.Logger, e framework.QueuedEntity, event string) bool {
	if !p.admit(logger, e) {
		p.addUnschedulable(e, event)
		return false
	}
	p.backoffQ.add(e)
	p.metrics.QueueIncoming(metrics.BackoffQ, event)
	logger.V(4).Info("Moved to backoffQ", entityKV(e), entityRef(e), "event", event,
		"backoffExpiration", p.backoffExpiry(e))
	return true
}

// entityKV is the log key an entity goes under: "pod" or "podGroup".
func entityKV(e framework.QueuedEntity) string {
	if _, ok := e.(*framework.QueuedPodGroupInfo); ok {
		return "podGroup"
	}
	return "pod"
}

// entityRef names an entity in logs: its pod, or its PodGroup.
func entityRef(e framework.QueuedEntity) klog.ObjectRef {
	switch e := e.(type) {
	case *framework.QueuedPodGroupInfo:
		return klog.KRef(e.Namespace, e.Name)
	case *framework.QueuedPodInfo:
		return klog.KObj(e.Pod)
	}
	return klog.ObjectRef{}
}
