// This file holds the keyed heap behind activeQ and backoffQ: a priority queue
// whose items can also be found, replaced and removed by key.

package queue

import "container/heap"

// keyedHeap is a min-heap under less (the item for which less is true against
// all others is on top) with an index from key to position, so that lookup is
// O(1) and update and delete are O(log n). It is not safe for concurrent use:
// the PriorityQueue's lock guards it.
type keyedHeap[T any] struct {
	data heapData[T]
}

// newKeyedHeap returns an empty heap ordered by less and indexed by keyOf.
func newKeyedHeap[T any](keyOf func(T) string, less func(a, b T) bool) *keyedHeap[T] {
	return &keyedHeap[T]{data: heapData[T]{
		index: map[string]int{},
		keyOf: keyOf,
		less:  less,
	}}
}

// AddOrUpdate inserts item, or replaces the item with the same key and moves
// it to its new place.
func (h *keyedHeap[T]) AddOrUpdate(item T) {
	key := h.data.keyOf(item)
	if i, ok := h.data.index[key]; ok {
		h.data.items[i] = item
		heap.Fix(&h.data, i)
		return
	}
	heap.Push(&h.data, item)
}

// Get returns the item with key, if present.
func (h *keyedHeap[T]) Get(key string) (T, bool) {
	if i, ok := h.data.index[key]; ok {
		return h.data.items[i], true
	}
	var zero T
	return zero, false
}

// Has reports whether an item with key is present.
func (h *keyedHeap[T]) Has(key string) bool {
	_, ok := h.data.index[key]
	return ok
}

// Fix restores the order after the item with key was changed in place. It is
// a no-op for an absent key.
func (h *keyedHeap[T]) Fix(key string) {
	if i, ok := h.data.index[key]; ok {
		heap.Fix(&h.data, i)
	}
}

// Delete removes the item with key and reports whether it was present.
func (h *keyedHeap[T]) Delete(key string) bool {
	i, ok := h.data.index[key]
	if !ok {
		return false
	}
	heap.Remove(&h.data, i)
	return true
}

// Peek returns the top item without removing it.
func (h *keyedHeap[T]) Peek() (T, bool) {
	if len(h.data.items) == 0 {
		var zero T
		return zero, false
	}
	return h.data.items[0], true
}

// Pop removes and returns the top item.
func (h *keyedHeap[T]) Pop() (T, bool) {
	if len(h.data.items) == 0 {
		var zero T
		return zero, false
	}
	return heap.Pop(&h.data).(T), true
}

// Len is the number of items.
func (h *keyedHeap[T]) Len() int { return len(h.data.items) }

// List returns the items in heap (not sorted) order.
func (h *keyedHeap[T]) List() []T {
	return append([]T(nil), h.data.items...)
}

// heapData implements heap.Interface and keeps the key index in step with
// every swap; keyedHeap is the only user.
type heapData[T any] struct {
	items []T
	index map[string]int
	keyOf func(T) string
	less  func(a, b T) bool
}

func (d *heapData[T]) Len() int           { return len(d.items) }
func (d *heapData[T]) Less(i, j int) bool { return d.less(d.items[i], d.items[j]) }

func (d *heapData[T]) Swap(i, j int) {
	d.items[i], d.items[j] = d.items[j], d.items[i]
	d.index[d.keyOf(d.items[i])] = i
	d.index[d.keyOf(d.items[j])] = j
}

func (d *heapData[T]) Push(x any) {
	item := x.(T)
	d.index[d.keyOf(item)] = len(d.items)
	d.items = append(d.items, item)
}

func (d *heapData[T]) Pop() any {
	last := len(d.items) - 1
	item := d.items[last]
	var zero T
	d.items[last] = zero // let the garbage collector have it
	d.items = d.items[:last]
	delete(d.index, d.keyOf(item))
	return item
}
