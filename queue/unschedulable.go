// This file holds the unschedulable pods: those some plugins rejected, or a
// PreEnqueue plugin gates, waiting for an event that may help them, and the
// periodic flush that retries the ones that waited too long.

package queue

import (
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/minisched/metrics"
)

// unschedulablePods maps an entity's key (a pod's UID, a group's
// namespace/name) to its queue entry, which carries the plugins that
// rejected it (UnschedulablePlugins, PendingPlugins) or gate it
// (GatingPlugin). A pod group is here only while gated: a group that failed
// backs off instead.
type unschedulablePods struct {
	entities map[string]framework.QueuedEntity
}

func newUnschedulablePods() *unschedulablePods {
	return &unschedulablePods{entities: map[string]framework.QueuedEntity{}}
}

// add inserts or replaces the entity's entry.
func (u *unschedulablePods) add(e framework.QueuedEntity) {
	u.entities[e.Key()] = e
}

// get returns the entry with key, or nil.
func (u *unschedulablePods) get(key string) framework.QueuedEntity {
	return u.entities[key]
}

// delete removes the entry with key and reports whether it was there.
func (u *unschedulablePods) delete(key string) bool {
	_, ok := u.entities[key]
	delete(u.entities, key)
	return ok
}

func (u *unschedulablePods) len() int { return len(u.entities) }

// addUnschedulable parks a rejected or gated entity among the unschedulable
// pods, counting it as having come in because of event.
func (p *PriorityQueue) addUnschedulable(e framework.QueuedEntity, event string) {
	p.unschedulablePods.add(e)
	p.metrics.QueueIncoming(metrics.Unschedulable, event)
}

// PendingPodCounts reports the pods in activeQ, backoffQ, among the
// unschedulable pods, gated by PreEnqueue (before or after an attempt), and
// the members of pod groups waiting outside any entity (incomplete,
// pending), under the labels of scheduler_pending_pods. A pod group counts
// its members. Pods in flight are in none.
func (p *PriorityQueue) PendingPodCounts() map[string]int {
	p.lock.Lock()
	defer p.lock.Unlock()
	counts := map[string]int{metrics.ActiveQ: podsIn(p.activeQ.List()), metrics.BackoffQ: podsIn(p.backoffQ.list())}
	for _, e := range p.unschedulablePods.entities {
		counts[unschedulableLabel(e)] += e.Size()
	}
	for _, members := range p.podGroups.incomplete {
		counts[metrics.Incomplete] += len(members)
	}
	for _, members := range p.podGroups.pending {
		counts[metrics.Pending] += len(members)
	}
	return counts
}

// QueuedEntityCounts reports the entities in activeQ, backoffQ, among the
// unschedulable pods and gated, by type (a pod in no group, a pod group),
// under the labels of scheduler_queued_entities. Every queue is reported
// for pods, and for pod groups when the queue holds them (WithPodGroups).
func (p *PriorityQueue) QueuedEntityCounts() map[metrics.QueueEntity]int {
	p.lock.Lock()
	defer p.lock.Unlock()
	types := []string{metrics.PodEntity}
	if p.podGroups.enabled {
		types = append(types, metrics.PodGroupEntity)
	}
	counts := map[metrics.QueueEntity]int{}
	for _, queue := range []string{metrics.ActiveQ, metrics.BackoffQ, metrics.Unschedulable, metrics.Gated} {
		for _, t := range types {
			counts[metrics.QueueEntity{Queue: queue, Type: t}] = 0
		}
	}
	count := func(queue string, e framework.QueuedEntity) {
		t := metrics.PodEntity
		if _, ok := e.(*framework.QueuedPodGroupInfo); ok {
			t = metrics.PodGroupEntity
		}
		counts[metrics.QueueEntity{Queue: queue, Type: t}]++
	}
	for _, e := range p.activeQ.List() {
		count(metrics.ActiveQ, e)
	}
	for _, e := range p.backoffQ.list() {
		count(metrics.BackoffQ, e)
	}
	for _, e := range p.unschedulablePods.entities {
		count(unschedulableLabel(e), e)
	}
	return counts
}

// unschedulableLabel is the queue label of an entity among the
// unschedulable pods: gated if a PreEnqueue plugin keeps it there.
func unschedulableLabel(e framework.QueuedEntity) string {
	if e.Params().Gated() {
		return metrics.Gated
	}
	return metrics.Unschedulable
}

// UnschedulablePodsByPlugin counts the unschedulable pods (gated ones
// included) under each plugin that rejected, left pending or gates them,
// and each pod's profile: scheduler_unschedulable_pods.
func (p *PriorityQueue) UnschedulablePodsByPlugin() map[metrics.PluginProfile]int {
	p.lock.Lock()
	defer p.lock.Unlock()
	counts := map[metrics.PluginProfile]int{}
	for _, e := range p.unschedulablePods.entities {
		e.ForEachPod(func(pInfo *framework.QueuedPodInfo) bool {
			for plugin := range pInfo.UnschedulablePlugins.Union(pInfo.PendingPlugins) {
				counts[metrics.PluginProfile{Plugin: plugin, Profile: pInfo.Pod.Spec.SchedulerName}]++
			}
			return true
		})
	}
	return counts
}

// podsIn counts the pods of entities.
func podsIn(entities []framework.QueuedEntity) int {
	n := 0
	for _, e := range entities {
		n += e.Size()
	}
	return n
}

// list returns the entries in no particular order.
func (u *unschedulablePods) list() []framework.QueuedEntity {
	out := make([]framework.QueuedEntity, 0, len(u.entities))
	for _, e := range u.entities {
		out = append(out, e)
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
	var stale []framework.QueuedEntity
	for _, e := range p.unschedulablePods.entities {
		if now.Sub(e.Params().Timestamp) > podMaxInUnschedulablePodsDuration {
			stale = append(stale, e)
		}
	}
	if len(stale) > 0 {
		logger.V(4).Info("Retrying pods that stayed unschedulable too long", "count", len(stale),
			"after", podMaxInUnschedulablePodsDuration)
		p.movePods(logger, stale, framework.UnschedulableTimeout, nil, nil)
	}
}
