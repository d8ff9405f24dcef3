// This file is backoff: how long a pod waits after a failed attempt before it
// may be tried again, and the flush that releases pods whose wait is over.
//
// minisched keeps the classic behaviour, on purpose: the backoff is exactly
// initial × 2^(attempts−1) capped at the maximum, measured from the moment
// the pod was put back, and a backing-off pod waits in backoffQ even when
// activeQ is empty. (kube-scheduler 1.33+ pops from backoffQ when activeQ is
// empty and aligns expiries to one-second windows; both hide backoff, which
// minisched wants to show.)

package queue

import (
	"time"

	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// backoffDuration is the pod's backoff after Attempts attempts: the initial
// duration doubled per attempt after the first, capped at the maximum. A pod
// never attempted has none.
func (p *PriorityQueue) backoffDuration(pInfo *framework.QueuedPodInfo) time.Duration {
	if pInfo.Attempts <= 0 {
		return 0
	}
	d := p.podInitialBackoffDuration
	for i := 1; i < pInfo.Attempts; i++ {
		if d > p.podMaxBackoffDuration/2 {
			return p.podMaxBackoffDuration // doubling would pass the cap (or overflow)
		}
		d *= 2
	}
	return min(d, p.podMaxBackoffDuration)
}

// backoffExpiry is when the pod's backoff ends.
func (p *PriorityQueue) backoffExpiry(pInfo *framework.QueuedPodInfo) time.Time {
	return pInfo.Timestamp.Add(p.backoffDuration(pInfo))
}

// isPodBackingOff reports whether the pod must still wait. A gated pod never
// does: it waits for its gate, and PreEnqueue decides when it may go.
func (p *PriorityQueue) isPodBackingOff(pInfo *framework.QueuedPodInfo) bool {
	if pInfo.Gated() || pInfo.Attempts <= 0 {
		return false
	}
	return p.backoffExpiry(pInfo).After(p.clock.Now())
}

// backoffLess orders backoffQ: earliest expiry on top.
func (p *PriorityQueue) backoffLess(a, b *framework.QueuedPodInfo) bool {
	return p.backoffExpiry(a).Before(p.backoffExpiry(b))
}

// FlushBackoffQCompleted moves every pod whose backoff is over from backoffQ
// to activeQ (through PreEnqueue). Run calls it every second; tests with a
// fake clock call it directly.
func (p *PriorityQueue) FlushBackoffQCompleted(logger klog.Logger) {
	p.lock.Lock()
	defer p.lock.Unlock()
	activated := false
	for {
		pInfo, ok := p.backoffQ.Peek()
		if !ok || p.isPodBackingOff(pInfo) {
			break // the heap is ordered by expiry: nobody behind is done either
		}
		p.backoffQ.Pop()
		if p.moveToActiveQ(logger, pInfo, "BackoffComplete") {
			activated = true
		}
	}
	if activated {
		p.cond.Broadcast()
	}
}
