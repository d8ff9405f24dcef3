// Package cowmap is a map for many readers and few writers, as the
// scheduling cycle has them: the plugin timings' metric series and
// VolumeBinding's converted capacity selectors are written a few times and
// read on every node from every goroutine (CycleState keeps a list the same
// way, its dozen keys being cheaper to scan than to hash). The map is never
// changed once published; a write publishes a changed copy (writers take a
// lock among themselves), so a read is one atomic load and a map lookup,
// with no lock whose counter the reading goroutines would all write.
package cowmap

import (
	"maps"
	"sync"
	"sync/atomic"
)

// Map is a copy-on-write map. The zero value is empty and ready to use. A
// write copies the whole map: keep it for maps read far more often than
// written.
type Map[K comparable, V any] struct {
	mu sync.Mutex // serialises writers
	m  atomic.Pointer[map[K]V]
}

// Load returns the value stored under key, and whether there is one.
func (c *Map[K, V]) Load(key K) (V, bool) {
	if m := c.m.Load(); m != nil {
		v, ok := (*m)[key]
		return v, ok
	}
	var zero V
	return zero, false
}

// Store stores value under key, replacing what was there.
func (c *Map[K, V]) Store(key K, value V) {
	c.Update(func(m map[K]V) { m[key] = value })
}

// Delete removes key.
func (c *Map[K, V]) Delete(key K) {
	c.Update(func(m map[K]V) { delete(m, key) })
}

// Range calls f for each entry of the map as it is when Range starts, until
// f returns false.
func (c *Map[K, V]) Range(f func(K, V) bool) {
	if m := c.m.Load(); m != nil {
		for k, v := range *m {
			if !f(k, v) {
				return
			}
		}
	}
}

// Len is the number of entries.
func (c *Map[K, V]) Len() int {
	if m := c.m.Load(); m != nil {
		return len(*m)
	}
	return 0
}

// Update publishes a copy of the entries with change applied: several
// writes for the price of one copy. change must not keep the map.
func (c *Map[K, V]) Update(change func(map[K]V)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := map[K]V{}
	if m := c.m.Load(); m != nil {
		next = maps.Clone(*m)
	}
	change(next)
	c.m.Store(&next)
}
