// This file is the score pools: slicePool, and the three pools from which
// the scoring of one cycle borrows the arrays the cycle before gave back.
// RunScorePlugins and normalizeAndWeigh give back their own; the scheduler
// gives back the node list of a totals-only cycle with ReleaseScores.

package framework

import "sync"

// slicePool lends slices of T that a cycle needs while it lasts, as long
// as the cycle before needed them, which would otherwise be left to the
// garbage collector once per pod.
type slicePool[T any] struct{ pool sync.Pool }

// get returns a slice of n zero values.
func (sp *slicePool[T]) get(n int) []T {
	if s, _ := sp.pool.Get().(*[]T); s != nil && cap(*s) >= n {
		return (*s)[:n] // put zeroed it
	}
	return make([]T, n)
}

// put takes back s, which nothing may use any more: its whole array is
// zeroed, so that the next get starts from zero values and the pool keeps
// nothing alive.
func (sp *slicePool[T]) put(s []T) {
	s = s[:cap(s)]
	clear(s)
	sp.pool.Put(&s)
}

// The pools of the scoring phase: each node's raw scores, the lists
// handed to NormalizeScore, and the node lists of totals-only cycles
// (RunScorePlugins with ScoreTotalsOnly) the scheduler gives back with
// ReleaseScores.
var (
	rawScoresPool    slicePool[int64]
	nodeScoresPool   slicePool[NodeScore]
	pluginScoresPool slicePool[NodePluginScores]
)

// ReleaseScores gives back the list RunScorePlugins returned for a cycle
// with state.ScoreTotalsOnly, once nothing reads it or a list made from it
// (SortedScoredNodes's heap is built in its array): the next such cycle
// reuses the array. Lists of other cycles are left alone.
func ReleaseScores(state *CycleState, scores []NodePluginScores) {
	if !state.ScoreTotalsOnly || cap(scores) == 0 {
		return
	}
	pluginScoresPool.put(scores)
}
