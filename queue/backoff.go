// This file is backoff: how long a pod waits after a failed attempt before it
// may be tried again, the two heaps that hold backing-off pods, and the flush
// that releases pods whose wait is over.
//
// It follows kube-scheduler 1.33+ (SchedulerPopFromBackoffQ, on by default):
//
//   - Expiries are truncated to one-second windows, and the flush runs on
//     whole seconds, so every pod of a window is released at once and a
//     window is ordered like activeQ.
//   - A pod some plugin rejected waits in the rejected heap, ordered by
//     expiry and then by QueueSort; when activeQ is empty, Pop takes its head
//     even before its backoff ends (an idle scheduler need not wait).
//   - A pod that failed with an error waits in the error heap, ordered by
//     expiry, and is never popped early: an error is often an apiserver
//     that needs the time.
//
// PreEnqueue runs when a pod enters backoffQ, not when it leaves.

package queue

import (
	"context"
	"math"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minisched/minisched/minisched/framework"
)

// backoffWindow is the width of a backoff ordering window, and the period of
// the backoff flush.
const backoffWindow = time.Second

// backoffQueue is backoffQ: entities (pods, pod groups) serving their
// backoff, in two heaps.
type backoffQueue struct {
	// rejected holds entities some plugin rejected, by expiry then
	// QueueSort; Pop may take its head when activeQ is empty.
	rejected *keyedHeap[framework.QueuedEntity]
	// errored holds entities that failed with an error, by expiry. A pod
	// group that failed lands here too: its own bookkeeping names no
	// rejecting plugin, so it is never popped early.
	errored *keyedHeap[framework.QueuedEntity]
}

func (p *PriorityQueue) newBackoffQueue(less framework.LessFunc) *backoffQueue {
	byExpiry := func(a, b framework.QueuedEntity) bool {
		return p.backoffExpiry(a).Before(p.backoffExpiry(b))
	}
	byExpiryThenQueueSort := func(a, b framework.QueuedEntity) bool {
		ea, eb := p.backoffExpiry(a), p.backoffExpiry(b)
		if !ea.Equal(eb) {
			return ea.Before(eb)
		}
		return less(a, b)
	}
	return &backoffQueue{
		rejected: newKeyedHeap(entityKey, byExpiryThenQueueSort),
		errored:  newKeyedHeap(entityKey, byExpiry),
	}
}

// add puts e in the heap its last failure calls for, and makes sure it is
// not in the other.
func (b *backoffQueue) add(e framework.QueuedEntity) {
	key := e.Key()
	if params := e.Params(); params.UnschedulablePlugins.Len() == 0 && params.PendingPlugins.Len() == 0 {
		b.rejected.Delete(key)
		b.errored.AddOrUpdate(e)
		return
	}
	b.errored.Delete(key)
	b.rejected.AddOrUpdate(e)
}

// get finds the entity with key in either heap.
func (b *backoffQueue) get(key string) (framework.QueuedEntity, bool) {
	if pInfo, ok := b.rejected.Get(key); ok {
		return pInfo, true
	}
	return b.errored.Get(key)
}

// fix restores the order after the entity with key changed in place.
func (b *backoffQueue) fix(key string) {
	b.rejected.Fix(key)
	b.errored.Fix(key)
}

// delete removes the entity with key and reports whether it was there.
func (b *backoffQueue) delete(key string) bool {
	return b.rejected.Delete(key) || b.errored.Delete(key)
}

func (b *backoffQueue) has(key string) bool { return b.rejected.Has(key) || b.errored.Has(key) }

func (b *backoffQueue) len() int { return b.rejected.Len() + b.errored.Len() }

func (b *backoffQueue) list() []framework.QueuedEntity {
	return append(b.rejected.List(), b.errored.List()...)
}

// backoffDuration is the backoff after count failures of an entity of size
// pods: the initial duration doubled per failure after the first, capped at
// the maximum. A pod group's cap is the maximum times the square root of
// its size, as kube-scheduler's: longer than a pod's, still bounded.
func (p *PriorityQueue) backoffDuration(count, size int) time.Duration {
	if count <= 0 {
		return 0
	}
	maxBackoff := p.podMaxBackoffDuration
	if size > 1 {
		maxBackoff = time.Duration(float64(maxBackoff) * math.Sqrt(float64(size)))
	}
	d := p.podInitialBackoffDuration
	for i := 1; i < count; i++ {
		if d > maxBackoff/2 {
			return maxBackoff // doubling would pass the cap (or overflow)
		}
		d *= 2
	}
	return min(d, maxBackoff)
}

// backoffCount is the number of failures an entity's backoff doubles with:
// its consecutive errors if the last attempt was an error, else its
// rejections.
func backoffCount(params *framework.QueueingParams) int {
	if params.ConsecutiveErrorsCount > 0 {
		return params.ConsecutiveErrorsCount
	}
	return params.UnschedulableCount
}

// backoffExpiry is when the entity's backoff ends: its timestamp plus its
// backoff, truncated to the window. An entity that never failed, or a
// queue with backoff disabled (max 0), has the zero time. The result is
// cached in the entity until it is stamped again after an attempt.
func (p *PriorityQueue) backoffExpiry(e framework.QueuedEntity) time.Time {
	params := e.Params()
	count := backoffCount(params)
	if p.podMaxBackoffDuration == 0 || count == 0 {
		return time.Time{}
	}
	if params.BackoffExpiration.IsZero() {
		expiry := params.Timestamp.Add(p.backoffDuration(count, e.Size()))
		params.BackoffExpiration = expiry.Truncate(backoffWindow)
	}
	return params.BackoffExpiration
}

// isBackingOff reports whether the entity must still wait: its expiry is
// not before the current window (an entity whose expiry falls in this
// window waits for the next flush, with the rest of its window).
func (p *PriorityQueue) isBackingOff(e framework.QueuedEntity) bool {
	return !p.backoffExpiry(e).Before(p.clock.Now().Truncate(backoffWindow))
}

// FlushBackoffQCompleted moves every entity whose backoff is over from backoffQ
// to activeQ. PreEnqueue already ran when they entered backoffQ. Run calls it
// on every whole second; tests with a fake clock call it directly.
func (p *PriorityQueue) FlushBackoffQCompleted(logger klog.Logger) {
	p.lock.Lock()
	defer p.lock.Unlock()
	activated := false
	for _, h := range []*keyedHeap[framework.QueuedEntity]{p.backoffQ.rejected, p.backoffQ.errored} {
		for {
			e, ok := h.Peek()
			if !ok || p.isBackingOff(e) {
				break // the heap is ordered by expiry: nobody behind is done either
			}
			h.Pop()
			p.pushToActiveQ(logger, e, "BackoffComplete")
			activated = true
		}
	}
	if activated {
		p.cond.Broadcast()
	}
}

// runBackoffFlush calls FlushBackoffQCompleted on every whole second of the
// queue's clock until ctx is done: the first timer waits for the next whole
// second, so that the flush and the windows line up.
func (p *PriorityQueue) runBackoffFlush(ctx context.Context, first clock.Timer, logger klog.Logger) {
	select {
	case <-ctx.Done():
		first.Stop()
		return
	case <-first.C():
	}
	ticker := p.clock.NewTicker(backoffWindow)
	defer ticker.Stop()
	for {
		p.FlushBackoffQCompleted(logger)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}
