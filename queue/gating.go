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

// admit runs the pod's PreEnqueue plugins. On success it clears any gate and
// returns true. Otherwise the pod is gated: the failing plugin becomes its
// GatingPlugin and joins its UnschedulablePlugins, so that only events that
// plugin registered (or a flush) re-check it.
func (p *PriorityQueue) admit(logger klog.Logger, pInfo *framework.QueuedPodInfo) bool {
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

// moveToActiveQ admits pInfo and pushes it into activeQ, or parks it among
// the unschedulable pods if a PreEnqueue plugin gates it. The caller has
// already taken the pod out of wherever it was. It reports whether the pod
// entered activeQ; the caller broadcasts.
func (p *PriorityQueue) moveToActiveQ(logger klog.Logger, pInfo *framework.QueuedPodInfo, event string) bool {
	if !p.admit(logger, pInfo) {
		p.addUnschedulable(pInfo, event)
		return false
	}
	p.pushToActiveQ(logger, pInfo, event)
	return true
}

// pushToActiveQ pushes an admitted pod into activeQ without running
// PreEnqueue: for pods leaving backoffQ, which ran it on the way in.
func (p *PriorityQueue) pushToActiveQ(logger klog.Logger, pInfo *framework.QueuedPodInfo, event string) {
	p.activeQ.AddOrUpdate(pInfo)
	p.metrics.QueueIncoming(metrics.ActiveQ, event)
	logger.V(4).Info("Pod moved to activeQ", "pod", klog.KObj(pInfo.Pod), "event", event)
}

// moveToBackoffQ admits pInfo and pushes it into backoffQ, or parks it among
// the unschedulable pods if a PreEnqueue plugin gates it. It reports whether
// the pod entered backoffQ, where an idle Pop may take it; the caller
// broadcasts.
func (p *PriorityQueue) moveToBackoffQ(logger klog.Logger, pInfo *framework.QueuedPodInfo, event string) bool {
	if !p.admit(logger, pInfo) {
		p.addUnschedulable(pInfo, event)
		return false
	}
	p.backoffQ.add(pInfo)
	p.metrics.QueueIncoming(metrics.BackoffQ, event)
	logger.V(4).Info("Pod moved to backoffQ", "pod", klog.KObj(pInfo.Pod), "event", event,
		"backoffExpiration", p.backoffExpiry(pInfo))
	return true
}
