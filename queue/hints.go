// This file decides, with the rejecting plugins' QueueingHints, whether an
// event may have made an unschedulable pod schedulable, and so where the pod
// should go.

package queue

import (
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// queueingStrategy is where an event sends a pod, in increasing urgency.
type queueingStrategy int

const (
	// queueSkip: the event cannot help; the pod stays unschedulable.
	queueSkip queueingStrategy = iota
	// queueAfterBackoff: retry the pod, but let it serve its backoff first.
	queueAfterBackoff
	// queueImmediately: retry the pod now. Used when a plugin that returned
	// Pending says the awaited thing happened: the pod was not at fault, so
	// it owes no backoff.
	queueImmediately
)

// String names the strategy in logs.
func (s queueingStrategy) String() string {
	switch s {
	case queueAfterBackoff:
		return "QueueAfterBackoff"
	case queueImmediately:
		return "QueueImmediately"
	}
	return "QueueSkip"
}

// isPodWorthRequeuing asks the plugins that rejected pInfo whether event
// (with its objects) may make it schedulable.
//
//   - A pod no plugin rejected failed for another reason (an error): retry it
//     after backoff whatever the event.
//   - A wildcard event (the leftover flush, a forced activation) retries
//     every pod after backoff.
//   - Otherwise each rejecting plugin's registrations that match the event
//     are asked, through their QueueingHintFn (none means Queue, an error
//     counts as Queue). Queue from a Pending plugin means queueImmediately;
//     Queue from an unschedulable plugin means queueAfterBackoff. If nobody
//     says Queue, the pod stays (queueSkip).
func (p *PriorityQueue) isPodWorthRequeuing(logger klog.Logger, pInfo *framework.QueuedPodInfo,
	event framework.ClusterEvent, oldObj, newObj interface{}) queueingStrategy {
	if pInfo.UnschedulablePlugins.Len() == 0 && pInfo.PendingPlugins.Len() == 0 {
		return queueAfterBackoff
	}
	if event.Resource == framework.WildCard && event.ActionType == framework.All {
		return queueAfterBackoff
	}
	profile, ok := p.profiles[pInfo.Pod.Spec.SchedulerName]
	if !ok {
		return queueAfterBackoff
	}
	hints := profile.QueueingHints()
	// Pending plugins first: one Queue from them settles it.
	for plugin := range pInfo.PendingPlugins {
		if p.pluginSaysQueue(logger, hints[plugin], plugin, pInfo, event, oldObj, newObj) {
			return queueImmediately
		}
	}
	for plugin := range pInfo.UnschedulablePlugins {
		if pInfo.PendingPlugins.Has(plugin) {
			continue // asked above
		}
		if p.pluginSaysQueue(logger, hints[plugin], plugin, pInfo, event, oldObj, newObj) {
			return queueAfterBackoff
		}
	}
	return queueSkip
}

// pluginSaysQueue reports whether any of one plugin's registrations matching
// event answers Queue for the pod.
func (p *PriorityQueue) pluginSaysQueue(logger klog.Logger, registered []framework.ClusterEventWithHint,
	plugin string, pInfo *framework.QueuedPodInfo, event framework.ClusterEvent, oldObj, newObj interface{}) bool {
	for _, reg := range registered {
		if !reg.Event.Match(event) {
			continue
		}
		if reg.QueueingHintFn == nil {
			logger.V(5).Info("Event matches a registration without hint; requeuing", "pod", klog.KObj(pInfo.Pod),
				"plugin", plugin, "event", event)
			return true
		}
		hint, err := reg.QueueingHintFn(logger, pInfo.Pod, oldObj, newObj)
		if err != nil {
			// A buggy hint costs a retry, never a stuck pod.
			logger.Error(err, "QueueingHintFn failed; requeuing the pod", "pod", klog.KObj(pInfo.Pod),
				"plugin", plugin, "event", event)
			return true
		}
		logger.V(5).Info("QueueingHintFn answered", "pod", klog.KObj(pInfo.Pod), "plugin", plugin,
			"event", event, "hint", hint)
		if hint == framework.Queue {
			return true
		}
	}
	return false
}

// strategyAfterAttempt decides where a pod that just failed goes: after
// backoff if no plugin rejected it (it hit an error); otherwise the most
// urgent strategy any event seen during its attempt calls for, which is
// queueSkip if none helps.
func (p *PriorityQueue) strategyAfterAttempt(logger klog.Logger, pInfo *framework.QueuedPodInfo,
	events []inFlightEvent) queueingStrategy {
	if pInfo.UnschedulablePlugins.Len() == 0 && pInfo.PendingPlugins.Len() == 0 {
		return queueAfterBackoff
	}
	best := queueSkip
	for _, e := range events {
		best = max(best, p.isPodWorthRequeuing(logger, pInfo, e.event, e.oldObj, e.newObj))
		if best == queueImmediately {
			break
		}
	}
	return best
}
