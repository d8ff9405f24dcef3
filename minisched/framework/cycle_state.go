// This file is CycleState, the scratch pad the plugins of one scheduling
// cycle share, and the copy-on-write list that keeps its entries.

package framework

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// ErrNotFound is returned by CycleState.Read for a key nobody wrote.
var ErrNotFound = errors.New("not found")

// StateKey names one entry of CycleState. By convention a plugin uses its own
// name, or "PreFilter" + name, so plugins never collide.
type StateKey string

// StateData is anything a plugin stores in CycleState. Clone must return a
// copy that can be changed without affecting the original; preemption clones
// the state to try "what if" on a node.
type StateData interface {
	Clone() StateData
}

// CycleState is the scratch pad of one scheduling cycle. A plugin writes what
// it computed once per pod (in PreFilter or PreScore) and reads it back per
// node (in Filter or Score). It is created fresh for each attempt and thrown
// away afterwards.
//
// Filter and Score run on many goroutines at once, so every method is safe for
// concurrent use. The entries are written a few times a cycle (PreFilter,
// PreScore) and read for every node by every plugin from every goroutine, so
// they are kept in a copy-on-write list: a read is one atomic load and a
// scan of a dozen keys, and the reading goroutines do not contend for a
// lock's counter.
type CycleState struct {
	storage stateEntries

	// SkipFilterPlugins and SkipScorePlugins hold the plugins whose PreFilter
	// or PreScore returned Skip: their Filter or Score is not called in this
	// cycle. Only the runtime writes them, before the parallel phase starts.
	SkipFilterPlugins sets.Set[string]
	SkipScorePlugins  sets.Set[string]
	// filterPlugins are the Filter plugins not in SkipFilterPlugins, in
	// their order, worked out by RunPreFilterPlugins when it sets
	// SkipFilterPlugins (filterPluginsSet then), so that Filter, run on every
	// node, does not look each plugin up in the set on each one.
	filterPlugins    []FilterPlugin
	filterPluginsSet bool
	// filterObservers are, in a cycle that records plugin timings, the
	// series of filterPlugins' successful calls (see successObservers).
	filterObservers []prometheus.Observer
	// SkipPreBindPlugins holds the PreBind plugins whose PreBindPreFlight
	// returned Skip.
	SkipPreBindPlugins sets.Set[string]
	// ScoreTotalsOnly tells RunScorePlugins that nobody will read each
	// node's per-plugin scores, only its total: the scheduler sets it when
	// no attempt record is built and OpportunisticBatching will not keep the
	// ranking (the pod has no signature), sparing an array of every node's
	// scores per cycle.
	ScoreTotalsOnly bool
	// podInfo is the PodInfo of the pod the cycle schedules, if the
	// scheduler recorded it (SetPodInfo).
	podInfo *PodInfo
	// RecordPluginMetrics says this cycle times each plugin call for
	// scheduler_plugin_execution_duration_seconds: set for a sample of
	// cycles (10%, as kube-scheduler), since timing every call of every
	// plugin on every node would cost more than it tells.
	RecordPluginMetrics bool
	// InPodGroupCycle says the pod is a member tried in its pod group's
	// cycle (chapter 19): it is assumed in the snapshot only, and its own
	// PostFilter does not run (the group's PodGroupPostFilter does). The
	// scheduler clears it before the member's binding cycle.
	InPodGroupCycle bool
	// podGroupState is, while InPodGroupCycle, the cycle state of the pod
	// group's cycle the member is tried in (SetPodGroupCycleState); nil
	// otherwise.
	podGroupState *CycleState
}

// NewCycleState returns an empty CycleState.
func NewCycleState() *CycleState {
	return &CycleState{}
}

// SetPodInfo records the PodInfo of the pod the cycle schedules, so that
// plugins read what it computed of the pod when it was queued (PodRequests)
// instead of computing it again on every cycle. The scheduler calls it
// before PreFilter.
func (c *CycleState) SetPodInfo(pi *PodInfo) {
	c.podInfo = pi
}

// PodRequests returns pod's effective requests, as PodRequests(pod)
// computes them, from the PodInfo SetPodInfo recorded when that PodInfo is
// pod's (the same object); ok is false otherwise, and the caller computes
// them. The Resource shares its ScalarResources with the PodInfo: read it,
// or Clone it to change it.
func (c *CycleState) PodRequests(pod *v1.Pod) (_ Resource, ok bool) {
	if c == nil || c.podInfo == nil || c.podInfo.Pod != pod {
		return Resource{}, false
	}
	return c.podInfo.Requests, true
}

// SetPodGroupCycleState links the state of a member's try to its pod
// group's cycle state: what the plugins of every member's try share with
// each other and with the group's own extension points (DynamicResources
// records each member's claims there for its PodGroupPostFilter). The
// scheduler sets it with InPodGroupCycle, and unlinks it (nil) before the
// member's binding cycle, as kube-scheduler's SetPodGroupSchedulingCycle.
func (c *CycleState) SetPodGroupCycleState(groupState *CycleState) {
	c.podGroupState = groupState
}

// PodGroupCycleState returns the pod group's cycle state the member's try
// belongs to, or nil when the pod is not being tried in a pod-group cycle
// (it is in no group, GenericWorkload is off, or the member went on to its
// binding cycle). The group's state lives for one pod-group cycle; the
// members' tries run one after the other, so a plugin may change what it
// keeps there without a lock.
func (c *CycleState) PodGroupCycleState() *CycleState {
	if c == nil {
		return nil
	}
	return c.podGroupState
}

// Read returns the data stored under key, or ErrNotFound.
func (c *CycleState) Read(key StateKey) (StateData, error) {
	if v, ok := c.storage.load(key); ok {
		return v, nil
	}
	return nil, ErrNotFound
}

// Write stores data under key, replacing what was there.
func (c *CycleState) Write(key StateKey, data StateData) {
	c.storage.update(func(l []stateEntry) []stateEntry {
		for i := range l {
			if l[i].key == key {
				l[i].data = data
				return l
			}
		}
		return append(l, stateEntry{key, data})
	})
}

// Delete removes key.
func (c *CycleState) Delete(key StateKey) {
	c.storage.update(func(l []stateEntry) []stateEntry {
		return slices.DeleteFunc(l, func(e stateEntry) bool { return e.key == key })
	})
}

// Clone returns a deep copy: each entry is copied with its own Clone.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	out := NewCycleState()
	if l := c.storage.list.Load(); l != nil {
		copied := make([]stateEntry, len(*l))
		for i, e := range *l {
			copied[i] = stateEntry{e.key, e.data.Clone()}
		}
		out.storage.list.Store(&copied)
	}
	if c.SkipFilterPlugins != nil {
		out.SkipFilterPlugins = c.SkipFilterPlugins.Clone()
	}
	if c.SkipScorePlugins != nil {
		out.SkipScorePlugins = c.SkipScorePlugins.Clone()
	}
	out.filterPlugins, out.filterPluginsSet = c.filterPlugins, c.filterPluginsSet
	out.filterObservers = c.filterObservers
	if c.SkipPreBindPlugins != nil {
		out.SkipPreBindPlugins = c.SkipPreBindPlugins.Clone()
	}
	out.podInfo = c.podInfo
	out.RecordPluginMetrics = c.RecordPluginMetrics
	out.ScoreTotalsOnly = c.ScoreTotalsOnly
	out.InPodGroupCycle = c.InPodGroupCycle
	// The link, not a copy: a clone (preemption's what-if) belongs to the
	// same pod-group cycle.
	out.podGroupState = c.podGroupState
	return out
}

// stateEntry is one entry of CycleState.
type stateEntry struct {
	key  StateKey
	data StateData
}

// stateEntries are CycleState's entries: a list published copy-on-write
// (as internal/cowmap publishes a map), so that a read is an atomic load
// and a scan of a dozen keys, which compare by length first and then by
// pointer, the keys being constants. That costs less than hashing the key
// for a map lookup.
type stateEntries struct {
	mu   sync.Mutex // serialises writers
	list atomic.Pointer[[]stateEntry]
}

func (s *stateEntries) load(key StateKey) (StateData, bool) {
	if l := s.list.Load(); l != nil {
		for i := range *l {
			if (*l)[i].key == key {
				return (*l)[i].data, true
			}
		}
	}
	return nil, false
}

// update publishes change's result on a copy of the list.
func (s *stateEntries) update(change func([]stateEntry) []stateEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next []stateEntry
	if l := s.list.Load(); l != nil {
		next = slices.Clone(*l)
	}
	next = change(next)
	s.list.Store(&next)
}
