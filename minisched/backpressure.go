// Back-pressure on binding: how many Bind calls may be in flight, and how
// the loop waits for room before it pops the next pod (chapter 15). It is
// not part of kube-scheduler's loop, and no decision depends on it: the loop
// calls it at two points, scheduleOne before it pops and bind around the
// Bind call.

package minisched

import "context"

// maxConcurrentBinds bounds the Bind calls in flight; scheduleOne does not
// pop the next pod while that many are. Every request to the apiserver
// travels on one HTTP/2 connection, which carries at most 100 streams at
// once (the apiserver's default), and a dozen of them are watches. A request
// beyond the limit makes the client dial another TLS connection, and when
// hundreds of bindings pile up it dials many: the handshakes then cost the
// scheduler and the apiserver (on the same machine, often) more CPU than the
// bindings, and the pods only wait longer. kube-scheduler has no such bound;
// it binds as fast as it schedules. Decisions do not change: the next pod
// still sees every earlier one, assumed or bound.
//
// 64 came from `make bench` (docs/performance.md): 8 and 16 starved the
// apiserver of concurrent writes at 500 nodes (throughput fell below
// kube-scheduler's); 32 held the batching workloads at 2000 nodes, where
// deciding costs little and binding sets the pace, to 1.1 to 1.2 times
// kube-scheduler, and 64 raised them to 1.3 to 1.4. The price: at 5000
// nodes the attempt p99 doubles (to kube-scheduler's), as pods wait longer
// behind more bindings.
const maxConcurrentBinds = 64

// waitForBindSlot is back-pressure: while maxConcurrentBinds Bind calls are
// in flight the apiserver is the bottleneck, and a pod scheduled now would
// only wait for a slot with its node already chosen. It waits in the queue
// instead. It returns false if ctx ended first.
func (s *Scheduler) waitForBindSlot(ctx context.Context) bool {
	select {
	case s.bindSlots <- struct{}{}:
		<-s.bindSlots
		return true
	case <-ctx.Done():
		return false
	}
}

// takeBindSlot takes a slot for one Bind call, waiting while every slot is
// taken; release gives it back. It fails with ctx's cause if ctx ends first.
func (s *Scheduler) takeBindSlot(ctx context.Context) (release func(), err error) {
	select {
	case s.bindSlots <- struct{}{}:
		return func() { <-s.bindSlots }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}
