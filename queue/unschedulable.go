// This file holds the unschedulable pods: those some plugins rejected, or a
// PreEnqueue plugin gates, waiting for an event that may help them, and the
// periodic flush that retries the ones that waited too long.

package queue

import (
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/minisched/metrics"
)

// unschedulablePods is a map from pod UID to the pod's queue entry, which
// carries the plugins that rejected it (UnschedulablePlugins,
// PendingPlugins) or gate it (GatingPlugin).
type unschedulablePods struct {
	pods map[types.UID]*framework.QueuedPodInfo
}

func newUnschedulablePods() *unschedulablePods {
	return &unschedulablePods{pods: map[types.UID]*framework.QueuedPodInfo{}}
}

// add inserts or replaces the pod's entry.
func (u *unschedulablePods) add(pInfo *framework.QueuedPodInfo) {
	u.pods[pInfo.Pod.UID] = pInfo
}

// get returns the pod's entry, or nil.
func (u *unschedulablePods) get(uid types.UID) *framework.QueuedPodInfo {
	return u.pods[uid]
}

// delete removes the pod and reports whether it was there.
func (u *unschedulablePods) delete(uid types.UID) bool {
	_, ok := u.pods[uid]
	delete(u.pods, uid)
	return ok
}

func (u *unschedulablePods) len() int { return len(u.pods) }

// addUnschedulable parks a rejected or gated pod among the unschedulable
// pods, counting it as having come in because of event.
func (p *PriorityQueue) addUnschedulable(pInfo *framework.QueuedPodInfo, event string) {
	p.unschedulablePods.add(pInfo)
	p.metrics.QueueIncoming(metrics.Unschedulable, event)
}

// PendingPodCounts reports the pods in activeQ, backoffQ, among the
// unschedulable pods, and gated by PreEnqueue (before or after an attempt),
// under the labels of scheduler_pending_pods.
func (p *PriorityQueue) PendingPodCounts() map[string]int {
	p.lock.Lock()
	defer p.lock.Unlock()
	counts := map[string]int{metrics.ActiveQ: p.activeQ.Len(), metrics.BackoffQ: p.backoffQ.len()}
	for _, pInfo := range p.unschedulablePods.pods {
		if pInfo.Gated() {
			counts[metrics.Gated]++
		} else {
			counts[metrics.Unschedulable]++
		}
	}
	return counts
}

// UnschedulablePodsByPlugin counts the unschedulable pods (gated ones
// included) under each plugin that rejected, left pending or gates them,
// and each pod's profile: scheduler_unschedulable_pods.
func (p *PriorityQueue) UnschedulablePodsByPlugin() map[metrics.PluginProfile]int {
	p.lock.Lock()
	defer p.lock.Unlock()
	counts := map[metrics.PluginProfile]int{}
	for _, pInfo := range p.unschedulablePods.pods {
		for plugin := range pInfo.UnschedulablePlugins.Union(pInfo.PendingPlugins) {
			counts[metrics.PluginProfile{Plugin: plugin, Profile: pInfo.Pod.Spec.SchedulerName}]++
		}
	}
	return counts
}

// list returns the entries in no particular order.
func (u *unschedulablePods) list() []*framework.QueuedPodInfo {
	out := make([]*framework.QueuedPodInfo, 0, len(u.pods))
	for _, pInfo := range u.pods {
		out = append(out, pInfo)
	}
	return out
}

// FlushUnschedulablePodsLeftover retries every pod that has waited among the
// unschedulable pods longer than podMaxInUnschedulablePodsDuration (since its
// Timestamp), as if the wildcard event UnschedulableTimeout had happened: a
// safety net for plugins that registered too few events. Gated pods re-run
// PreEnqueue and stay if still gated. Run calls it every 30 seconds.
func (p *PriorityQueue) FlushUnschedulablePodsLeftover(logger klog.Logger) {
	p.lock.Lock()
	defer p.lock.Unlock()
	now := p.clock.Now()
	var stale []*framework.QueuedPodInfo
	for _, pInfo := range p.unschedulablePods.pods {
		if now.Sub(pInfo.Timestamp) > podMaxInUnschedulablePodsDuration {
			stale = append(stale, pInfo)
		}
	}
	if len(stale) > 0 {
		logger.V(4).Info("Retrying pods that stayed unschedulable too long", "count", len(stale),
			"after", podMaxInUnschedulablePodsDuration)
		p.movePods(logger, stale, framework.UnschedulableTimeout, nil, nil)
	}
}
