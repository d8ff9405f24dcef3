// This file remembers recent bindings and turns them into a node's hot
// value: crane-scheduler's answer to "the load of a node only rises minutes
// after pods land on it, so do not send every pod of a burst there".

package annotator

import (
	"container/heap"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/minisched/minisched/plugins/dynamic"
)

// Binding is one pod bound to a node, and when.
type Binding struct {
	// Node is where the pod went.
	Node string
	// Namespace and Pod name the pod.
	Namespace, Pod string
	// Time is when the scheduler reported it.
	Time time.Time
}

// bindingHeap is a min-heap by Time: the oldest binding is at the root, so
// evicting and garbage-collecting the oldest are cheap.
type bindingHeap []Binding

func (h bindingHeap) Len() int           { return len(h) }
func (h bindingHeap) Less(i, j int) bool { return h[i].Time.Before(h[j].Time) }
func (h bindingHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *bindingHeap) Push(x any)        { *h = append(*h, x.(Binding)) }
func (h *bindingHeap) Pop() any {
	old := *h
	b := old[len(old)-1]
	*h = old[:len(old)-1]
	return b
}

// BindingRecords holds the most recent bindings, at most size of them (the
// oldest goes first). It is safe for concurrent use.
type BindingRecords struct {
	// size caps the number of bindings kept.
	size int
	// mu guards bindings.
	mu       sync.Mutex
	bindings bindingHeap
}

// NewBindingRecords returns empty records keeping at most size bindings.
func NewBindingRecords(size int) *BindingRecords {
	return &BindingRecords{size: size}
}

// Add records a binding, dropping the oldest one if the records are full.
func (r *BindingRecords) Add(b Binding) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.size <= 0 {
		return
	}
	if r.bindings.Len() >= r.size {
		heap.Pop(&r.bindings)
	}
	heap.Push(&r.bindings, b)
}

// Count is how many bindings to node happened after since.
func (r *BindingRecords) Count(node string, since time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, b := range r.bindings {
		if b.Node == node && b.Time.After(since) {
			n++
		}
	}
	return n
}

// Len is the number of bindings held.
func (r *BindingRecords) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bindings.Len()
}

// ForgetBefore drops the bindings at or before cutoff: no hot-value time
// range reaches back that far.
func (r *BindingRecords) ForgetBefore(cutoff time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.bindings.Len() > 0 && !r.bindings[0].Time.After(cutoff) {
		heap.Pop(&r.bindings)
	}
}

// HotValue is Σ over the policy's hotValue entries of
// ⌊bindings to node within timeRange / count⌋, at time now. With crane's
// default policy (5m/5 and 1m/2), a node that got 2 pods in the last
// minute has hot value 1, and Dynamic takes 10 points off its score.
func HotValue(policies []dynamic.HotValuePolicy, records *BindingRecords, node string, now time.Time) int {
	value := 0
	for _, p := range policies {
		value += records.Count(node, now.Add(-p.TimeRange.Duration)) / p.Count
	}
	return value
}

// maxTimeRange is the longest hotValue time range: older bindings can go.
func maxTimeRange(policies []dynamic.HotValuePolicy) time.Duration {
	var longest time.Duration
	for _, p := range policies {
		longest = max(longest, p.TimeRange.Duration)
	}
	return longest
}

// Scheduled events, as the scheduler writes them.
const (
	scheduledReason = "Scheduled"
	scheduledFormat = "Successfully assigned %s to %s"
)

// BindingFromEvent reads a binding from a Scheduled event, whose message is
// "Successfully assigned <namespace>/<pod> to <node>". ok is false for any
// other event. The time is the event's eventTime when it has no count
// (events.k8s.io events), else its lastTimestamp, as crane-scheduler reads
// it; whichever is missing falls back to the other, then to the event's
// creation.
func BindingFromEvent(ev *v1.Event) (Binding, bool, error) {
	if ev.Type != v1.EventTypeNormal || ev.Reason != scheduledReason {
		return Binding{}, false, nil
	}
	var key, node string
	if _, err := fmt.Sscanf(ev.Message, scheduledFormat, &key, &node); err != nil {
		return Binding{}, false, fmt.Errorf("event %s/%s (Scheduled): message %q is not %q: %w",
			ev.Namespace, ev.Name, ev.Message, scheduledFormat, err)
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil || strings.Contains(name, "/") {
		return Binding{}, false, fmt.Errorf("event %s/%s (Scheduled): %q is not <namespace>/<pod>", ev.Namespace, ev.Name, key)
	}
	candidates := []time.Time{ev.LastTimestamp.Time, ev.EventTime.Time, ev.CreationTimestamp.Time}
	if ev.Count == 0 {
		candidates[0], candidates[1] = candidates[1], candidates[0]
	}
	var at time.Time
	for _, t := range candidates {
		if !t.IsZero() {
			at = t
			break
		}
	}
	return Binding{Node: node, Namespace: ns, Pod: name, Time: at}, true, nil
}
