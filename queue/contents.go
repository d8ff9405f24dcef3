// This file lets a live view look into the queue: a copy of what each
// sub-queue holds, taken under the lock and put in order outside it, so
// that looking costs the scheduler a copy of pointers and nothing more.

package queue

import (
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/minisched/minisched/minisched/framework"
)

// QueuedPod is one pod as Contents shows it.
type QueuedPod struct {
	Pod *v1.Pod
	// Attempts counts its scheduling attempts so far.
	Attempts int
	// Since is when it entered the queue or, after a failed attempt, was
	// put back: its backoff is measured from it.
	Since time.Time
	// BackoffExpiry is when its backoff ends (backoffQ only).
	BackoffExpiry time.Time
	// Plugins rejected it in its last attempt, or returned Pending, or gate
	// it (unschedulable pods only), sorted.
	Plugins []string
	// GatingPlugin is the PreEnqueue plugin that keeps it out of activeQ,
	// if any.
	GatingPlugin string
}

// Nomination is a pod nominated to a node.
type Nomination struct {
	Pod  *v1.Pod
	Node string
}

// Contents is what the queue holds at one moment.
type Contents struct {
	// Now is the queue clock's time when the copy was taken.
	Now time.Time
	// ActiveQ is in pop order (QueueSort's), BackoffQ earliest expiry
	// first, Unschedulable longest waiting first.
	ActiveQ, BackoffQ, Unschedulable []QueuedPod
	// InFlight are the pods popped and not yet Done, in no order: the
	// scheduler knows their phase (minisched.Scheduler.InFlight).
	InFlight []*v1.Pod
	// Nominated are the pods nominated to a node, by node then pod.
	Nominated []Nomination
}

// Contents copies what the queue holds. It holds the queue's lock for a
// copy of the entries, and sorts them after releasing it.
func (p *PriorityQueue) Contents() Contents {
	p.lock.Lock()
	c := Contents{Now: p.clock.Now()}
	// activeQ is sorted with QueueSort outside the lock, on copies of the
	// entries: the queue goes on changing the originals.
	active := make([]framework.QueuedEntity, 0, p.activeQ.Len())
	for _, e := range p.activeQ.List() {
		active = append(active, copyForSort(e))
	}
	for _, e := range p.backoffQ.list() {
		expiry := p.backoffExpiry(e)
		forEachQueued(e, func(q QueuedPod, _ *framework.QueuedPodInfo) {
			q.BackoffExpiry = expiry
			c.BackoffQ = append(c.BackoffQ, q)
		})
	}
	for _, e := range p.unschedulablePods.entities {
		forEachQueued(e, func(q QueuedPod, pInfo *framework.QueuedPodInfo) {
			q.Plugins = sets.List(pInfo.UnschedulablePlugins.Union(pInfo.PendingPlugins))
			q.GatingPlugin = pInfo.GatingPlugin
			c.Unschedulable = append(c.Unschedulable, q)
		})
	}
	for _, f := range p.inFlight.pods {
		c.InFlight = append(c.InFlight, f.pod)
	}
	p.lock.Unlock()

	sort.SliceStable(active, func(i, j int) bool { return p.less(active[i], active[j]) })
	for _, e := range active {
		forEachQueued(e, func(q QueuedPod, _ *framework.QueuedPodInfo) { c.ActiveQ = append(c.ActiveQ, q) })
	}
	sort.SliceStable(c.BackoffQ, func(i, j int) bool { return c.BackoffQ[i].BackoffExpiry.Before(c.BackoffQ[j].BackoffExpiry) })
	sort.SliceStable(c.Unschedulable, func(i, j int) bool {
		a, b := c.Unschedulable[i], c.Unschedulable[j]
		if !a.Since.Equal(b.Since) {
			return a.Since.Before(b.Since)
		}
		return a.Pod.UID < b.Pod.UID
	})
	c.Nominated = p.nominator.list()
	return c
}

// copyForSort copies what QueueSort and Contents read of an entity (its
// bookkeeping, a group's member list), so that the copy can be sorted and
// read outside the lock while the queue changes the original.
func copyForSort(e framework.QueuedEntity) framework.QueuedEntity {
	switch e := e.(type) {
	case *framework.QueuedPodInfo:
		cp := *e
		cp.UnschedulablePlugins, cp.PendingPlugins = nil, nil
		return &cp
	case *framework.QueuedPodGroupInfo:
		cp := *e
		cp.UnschedulablePlugins, cp.PendingPlugins = nil, nil
		cp.Members = make([]*framework.QueuedPodInfo, len(e.Members))
		for i, m := range e.Members {
			mc := *m
			mc.UnschedulablePlugins, mc.PendingPlugins = nil, nil
			cp.Members[i] = &mc
		}
		return &cp
	}
	return e
}

// forEachQueued calls fn with the QueuedPod of each pod of e (a group's
// members are listed one by one, each with its attempts and with the
// group's time), and the pod's entry.
func forEachQueued(e framework.QueuedEntity, fn func(QueuedPod, *framework.QueuedPodInfo)) {
	since := e.Params().Timestamp
	e.ForEachPod(func(pInfo *framework.QueuedPodInfo) bool {
		fn(QueuedPod{Pod: pInfo.Pod, Attempts: pInfo.Attempts, Since: since}, pInfo)
		return true
	})
}

// MovingEvents names the cluster events that may move pod out of the
// unschedulable pods: those its rejecting plugins registered or, when it is
// gated, those its gating plugin did. (The five-minute flush moves it too.)
func (p *PriorityQueue) MovingEvents(pod QueuedPod) []string {
	profile, ok := p.profiles[pod.Pod.Spec.SchedulerName]
	if !ok {
		return nil
	}
	plugins := pod.Plugins
	if pod.GatingPlugin != "" {
		plugins = []string{pod.GatingPlugin}
	}
	hints := profile.QueueingHints()
	var events []string
	for _, pl := range plugins {
		for _, h := range hints[pl] {
			if e := h.Event.String(); !slices.Contains(events, e) {
				events = append(events, e)
			}
		}
	}
	return events
}

// list returns every nomination, by node then in nomination order.
func (n *nominator) list() []Nomination {
	if n.nominated.Load() == 0 {
		return nil
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	nodes := make([]string, 0, len(n.byNode))
	for node := range n.byNode {
		nodes = append(nodes, node)
	}
	sort.Strings(nodes)
	var out []Nomination
	for _, node := range nodes {
		for _, pi := range n.byNode[node] {
			out = append(out, Nomination{Pod: pi.Pod, Node: node})
		}
	}
	return out
}
