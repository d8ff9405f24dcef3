package framework

import (
	"errors"
	"sync"

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
// concurrent use.
type CycleState struct {
	mu      sync.RWMutex
	storage map[StateKey]StateData

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
	// SkipPreBindPlugins holds the PreBind plugins whose PreBindPreFlight
	// returned Skip.
	SkipPreBindPlugins sets.Set[string]
	// RecordPluginMetrics says this cycle times each plugin call for
	// scheduler_plugin_execution_duration_seconds: set for a sample of
	// cycles (10%, as kube-scheduler), since timing every call of every
	// plugin on every node would cost more than it tells.
	RecordPluginMetrics bool
}

// NewCycleState returns an empty CycleState.
func NewCycleState() *CycleState {
	return &CycleState{storage: map[StateKey]StateData{}}
}

// Read returns the data stored under key, or ErrNotFound.
func (c *CycleState) Read(key StateKey) (StateData, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if v, ok := c.storage[key]; ok {
		return v, nil
	}
	return nil, ErrNotFound
}

// Write stores data under key, replacing what was there.
func (c *CycleState) Write(key StateKey, data StateData) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.storage[key] = data
}

// Delete removes key.
func (c *CycleState) Delete(key StateKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.storage, key)
}

// Clone returns a deep copy: each entry is copied with its own Clone.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := NewCycleState()
	for k, v := range c.storage {
		out.storage[k] = v.Clone()
	}
	if c.SkipFilterPlugins != nil {
		out.SkipFilterPlugins = c.SkipFilterPlugins.Clone()
	}
	if c.SkipScorePlugins != nil {
		out.SkipScorePlugins = c.SkipScorePlugins.Clone()
	}
	out.filterPlugins, out.filterPluginsSet = c.filterPlugins, c.filterPluginsSet
	if c.SkipPreBindPlugins != nil {
		out.SkipPreBindPlugins = c.SkipPreBindPlugins.Clone()
	}
	out.RecordPluginMetrics = c.RecordPluginMetrics
	return out
}
