// This file is the dumper: the cache's nodes and the queue's pending pods,
// written to the log by name and count, never as whole objects.

package debugger

import (
	"slices"

	"k8s.io/klog/v2"

	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/queue"
)

// CacheDumper writes what the scheduler's cache and queue hold to the log.
// New builds it.
type CacheDumper struct {
	cache    *cache.Cache
	podQueue *queue.PriorityQueue
}

// DumpAll logs, at Info, every NodeInfo in the cache (its node's name,
// whether the node was deleted, its pod counts, requested and allocatable)
// and the pending pods of each sub-queue, by name. It never logs whole
// objects.
func (d *CacheDumper) DumpAll(logger klog.Logger) {
	d.dumpNodes(logger)
	d.dumpSchedulingQueue(logger)
}

// dumpNodes logs the cache's NodeInfos, one entry per node, sorted by name.
func (d *CacheDumper) dumpNodes(logger klog.Logger) {
	dump := d.cache.Dump()
	names := make([]string, 0, len(dump.Nodes))
	for name := range dump.Nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	logger.Info("Dump of cached NodeInfo", "nodes", len(names), "assumedPods", dump.AssumedPods.Len())
	for _, name := range names {
		ni := dump.Nodes[name]
		assumed := 0
		for _, pi := range ni.Pods {
			if dump.AssumedPods.Has(pi.Pod.UID) {
				assumed++
			}
		}
		logger.Info("Cached node", "node", klog.KRef("", name), "deleted", ni.Node() == nil,
			"pods", len(ni.Pods), "assumedPods", assumed, "nominatedPods", len(d.podQueue.NominatedPodsForNode(name)),
			"requested", formatResource(ni.Requested), "allocatable", formatResource(ni.Allocatable))
	}
}

// dumpSchedulingQueue logs the queue's summary and its pending pods'
// keys, grouped by sub-queue.
func (d *CacheDumper) dumpSchedulingQueue(logger klog.Logger) {
	// PendingPods and Locate are two looks at the queue: a pod that moved in
	// between is listed where Locate found it.
	pods, summary := d.podQueue.PendingPods()
	byQueue := map[queue.Location][]string{}
	for _, p := range pods {
		loc := d.podQueue.Locate(p.UID)
		byQueue[loc] = append(byQueue[loc], framework.PodKey(p))
	}
	for _, keys := range byQueue {
		slices.Sort(keys)
	}
	kvs := []any{"summary", summary}
	for _, loc := range []queue.Location{queue.ActiveQ, queue.BackoffQ, queue.UnschedulablePods,
		queue.PendingPodGroupPods, queue.IncompletePodGroupPods, queue.InFlight, queue.NotQueued} {
		if keys := byQueue[loc]; len(keys) > 0 {
			name := string(loc)
			if loc == queue.NotQueued {
				name = "leftSinceListed"
			}
			kvs = append(kvs, name, keys)
		}
	}
	logger.Info("Dump of scheduling queue", kvs...)
}
