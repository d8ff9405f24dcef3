// The score arrays a cycle borrows from the framework's pools and gives
// back (chapter 15): a cycle whose per-plugin scores nobody reads afterwards
// computes only each node's total, in an array the next such cycle reuses
// (framework.ReleaseScores). kube-scheduler leaves them to the garbage
// collector; nothing the cycle decides depends on this. The loop decides at
// the cycle's start (newCycleState) and gives back at its end
// (scheduleOnePod, once the attempt's record is built).

package minisched

import "github.com/minisched/minisched/minisched/framework"

// scoreTotalsOnly reports whether the per-plugin scores of podInfo's cycle
// go unread: no attempt record will read them, and OpportunisticBatching
// will not rescore the ranking the cycle keeps (only a signed pod's is kept).
func (s *Scheduler) scoreTotalsOnly(podInfo *framework.QueuedPodInfo) bool {
	return !s.recording() && podInfo.PodSignature == nil
}

// releaseSeen lets go of what the cycle saw, once the record is built: a
// totals-only cycle's scores (and the heap selectHost built in their
// array) go back to the pool, and the rest to the garbage collector, so a
// pod waiting in its binding cycle does not hold them.
func releaseSeen(state *framework.CycleState, result *scheduleResult) {
	framework.ReleaseScores(state, result.seen.scores)
	result.seen = cycleSeen{}
}
