// This file lets a live view look into the queue: a copy of what each
// sub-queue holds (a pod group as one entity, with its members) and of the
// pod-group members waiting outside any, taken under the lock and put in
// order outside it, so that looking costs the scheduler a copy of pointers
// and nothing more.

package queue

import (
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/minisched/minisched/minisched/framework"
)

// QueuedPod is one pod as Contents shows it: a pod queued alone, or a
// member of a pod group.
type QueuedPod struct {
	Pod *v1.Pod
	// Attempts counts its scheduling attempts so far.
	Attempts int
	// Since is when it (or its group) entered the queue or, after a failed
	// attempt, was put back: its backoff is measured from it.
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

// QueuedPodGroup is a pod group as Contents shows it (chapter 19): one
// entity of a sub-queue, or members waiting outside any entity.
type QueuedPodGroup struct {
	Namespace, Name string
	// PodGroup is the API object as the queue knows it; nil for members
	// waiting for it to be seen.
	PodGroup *schedulingv1beta1.PodGroup
	// Attempts counts the entity's attempts; Since, BackoffExpiry (backoffQ
	// only) and GatingPlugin (the PreEnqueue plugin that gates one of its
	// members, and so the group) are the entity's, as a pod's are. Members
	// waiting outside an entity have none of them.
	Attempts      int
	Since         time.Time
	BackoffExpiry time.Time
	GatingPlugin  string
	// Members are its pods: an entity's in the order a cycle tries them,
	// waiting ones in the order they came.
	Members []QueuedPod
}

// QueuedEntity is one entry of activeQ, backoffQ or the unschedulable
// pods: a pod (Pod), or a pod group queued as one (Group). The other is
// nil.
type QueuedEntity struct {
	Pod   *QueuedPod
	Group *QueuedPodGroup
}

// since is when the entity entered the queue or was put back.
func (e QueuedEntity) since() time.Time {
	if e.Group != nil {
		return e.Group.Since
	}
	return e.Pod.Since
}

// backoffExpiry is when the entity's backoff ends (backoffQ only).
func (e QueuedEntity) backoffExpiry() time.Time {
	if e.Group != nil {
		return e.Group.BackoffExpiry
	}
	return e.Pod.BackoffExpiry
}

// key tells entities apart where their times are equal: a pod's UID, a
// group's key (which no UID equals).
func (e QueuedEntity) key() string {
	if e.Group != nil {
		return framework.PodGroupKey(e.Group.Namespace, e.Group.Name)
	}
	return string(e.Pod.Pod.UID)
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
	ActiveQ, BackoffQ, Unschedulable []QueuedEntity
	// IncompletePodGroups are members whose PodGroup the queue has not seen
	// (IncompletePodGroupPods), PendingPodGroups members that arrived, or
	// came back, while their group was being scheduled
	// (PendingPodGroupPods); both one QueuedPodGroup per group, by key.
	IncompletePodGroups, PendingPodGroups []QueuedPodGroup
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
		entity := entityOf(e, func(q *QueuedPod, _ *framework.QueuedPodInfo) { q.BackoffExpiry = expiry })
		if entity.Group != nil {
			entity.Group.BackoffExpiry = expiry
		}
		c.BackoffQ = append(c.BackoffQ, entity)
	}
	for _, e := range p.unschedulablePods.entities {
		c.Unschedulable = append(c.Unschedulable, entityOf(e, func(q *QueuedPod, pInfo *framework.QueuedPodInfo) {
			q.Plugins = sets.List(pInfo.UnschedulablePlugins.Union(pInfo.PendingPlugins))
			q.GatingPlugin = pInfo.GatingPlugin
		}))
	}
	c.IncompletePodGroups = p.podGroups.waiting(p.podGroups.incomplete)
	c.PendingPodGroups = p.podGroups.waiting(p.podGroups.pending)
	for _, f := range p.inFlight.pods {
		c.InFlight = append(c.InFlight, f.pod)
	}
	p.lock.Unlock()

	sort.SliceStable(active, func(i, j int) bool { return p.less(active[i], active[j]) })
	for _, e := range active {
		c.ActiveQ = append(c.ActiveQ, entityOf(e, nil))
	}
	sort.SliceStable(c.BackoffQ, func(i, j int) bool { return c.BackoffQ[i].backoffExpiry().Before(c.BackoffQ[j].backoffExpiry()) })
	sort.SliceStable(c.Unschedulable, func(i, j int) bool {
		a, b := c.Unschedulable[i], c.Unschedulable[j]
		if !a.since().Equal(b.since()) {
			return a.since().Before(b.since())
		}
		return a.key() < b.key()
	})
	for _, groups := range [][]QueuedPodGroup{c.IncompletePodGroups, c.PendingPodGroups} {
		sort.Slice(groups, func(i, j int) bool {
			return framework.PodGroupKey(groups[i].Namespace, groups[i].Name) <
				framework.PodGroupKey(groups[j].Namespace, groups[j].Name)
		})
	}
	c.Nominated = p.nominator.list()
	return c
}

// copyForSort copies what QueueSort and Contents read of an entity (its
// bookkeeping, a group's PodGroup and member list), so that the copy can
// be sorted and read outside the lock while the queue changes the
// original.
func copyForSort(e framework.QueuedEntity) framework.QueuedEntity {
	switch e := e.(type) {
	case *framework.QueuedPodInfo:
		cp := *e
		cp.UnschedulablePlugins, cp.PendingPlugins = nil, nil
		return &cp
	case *framework.QueuedPodGroupInfo:
		cp := *e
		info := *e.PodGroupInfo
		info.UnscheduledPods = nil
		cp.PodGroupInfo = &info
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

// entityOf is e as Contents shows it: a pod, or a group with each of its
// members, each pod with its attempts and the entity's time, and what fill
// (if not nil) adds from the pod's entry.
func entityOf(e framework.QueuedEntity, fill func(*QueuedPod, *framework.QueuedPodInfo)) QueuedEntity {
	params := e.Params()
	queued := func(pInfo *framework.QueuedPodInfo) QueuedPod {
		q := QueuedPod{Pod: pInfo.Pod, Attempts: pInfo.Attempts, Since: params.Timestamp}
		if fill != nil {
			fill(&q, pInfo)
		}
		return q
	}
	group, ok := e.(*framework.QueuedPodGroupInfo)
	if !ok {
		q := queued(e.(*framework.QueuedPodInfo))
		return QueuedEntity{Pod: &q}
	}
	g := &QueuedPodGroup{Namespace: group.Namespace, Name: group.Name, PodGroup: group.PodGroup,
		Attempts: params.Attempts, Since: params.Timestamp, GatingPlugin: params.GatingPlugin}
	for _, m := range group.Members {
		g.Members = append(g.Members, queued(m))
	}
	return QueuedEntity{Group: g}
}

// waiting lists the members waiting outside an entity in lists (incomplete
// or pending), one QueuedPodGroup per group, with its PodGroup if the queue
// has seen it. The caller holds the queue's lock.
func (g *podGroups) waiting(lists map[string][]*framework.QueuedPodInfo) []QueuedPodGroup {
	var out []QueuedPodGroup
	for key, members := range lists {
		namespace, name, _ := strings.Cut(key, "/")
		group := QueuedPodGroup{Namespace: namespace, Name: name, PodGroup: g.objects[key]}
		for _, m := range members {
			group.Members = append(group.Members, QueuedPod{Pod: m.Pod, Attempts: m.Attempts, Since: m.Timestamp})
		}
		out = append(out, group)
	}
	return out
}

// MovingEvents returns the cluster events that may move pod out of the
// unschedulable pods: those its rejecting plugins registered or, when it is
// gated, those its gating plugin did. (The five-minute flush moves it too.)
func (p *PriorityQueue) MovingEvents(pod QueuedPod) []framework.ClusterEvent {
	plugins := pod.Plugins
	if pod.GatingPlugin != "" {
		plugins = []string{pod.GatingPlugin}
	}
	return p.movingEvents(pod.Pod.Spec.SchedulerName, plugins)
}

// GroupMovingEvents returns the cluster events that may move a pod group
// out of the unschedulable pods, where only a member's gate puts it: those
// its gating plugin registered.
func (p *PriorityQueue) GroupMovingEvents(group QueuedPodGroup) []framework.ClusterEvent {
	if group.GatingPlugin == "" || len(group.Members) == 0 {
		return nil
	}
	return p.movingEvents(group.Members[0].Pod.Spec.SchedulerName, []string{group.GatingPlugin})
}

// movingEvents returns the events plugins registered in the profile of
// schedulerName, each once (by its String).
func (p *PriorityQueue) movingEvents(schedulerName string, plugins []string) []framework.ClusterEvent {
	profile, ok := p.profiles[schedulerName]
	if !ok {
		return nil
	}
	hints := profile.QueueingHints()
	var events []framework.ClusterEvent
	var seen []string
	for _, pl := range plugins {
		for _, h := range hints[pl] {
			if e := h.Event.String(); !slices.Contains(seen, e) {
				seen = append(seen, e)
				events = append(events, h.Event)
			}
		}
	}
	return events
}

// Nominations returns every nomination, by node then in nomination order:
// what Contents' Nominated holds, without copying the rest of the queue
// (the live view's cluster map reads it as often as the page refreshes).
func (p *PriorityQueue) Nominations() []Nomination { return p.nominator.list() }

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
