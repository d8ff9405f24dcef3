// This file runs the extension points that rank the feasible nodes:
// PreScore, Score on every node, each plugin's NormalizeScore, and the
// weights, which make each node's total; and the rescoring of one node that
// OpportunisticBatching asks for (RunRawScorePlugins, then NormalizeScores).
// The arrays the scoring borrows for one cycle come from pools.go.

package framework

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// RunPreScorePlugins runs PreScore plugins with the feasible nodes. Plugins
// returning Skip are recorded in state.SkipScorePlugins; any other
// non-success status is an Error.
func (f *Framework) RunPreScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodes []*NodeInfo) (status *Status) {
	defer f.observe(preScorePoint, time.Now(), &status)
	skip := sets.New[string]()
	for _, pl := range f.preScorePlugins {
		start := f.sampleStart(state)
		s := pl.PreScore(ctx, state, pod, nodes)
		f.recordPlugin(pl.Name(), preScorePoint, start, s)
		if s.IsSkip() {
			skip.Insert(pl.Name())
			continue
		}
		if !s.IsSuccess() {
			return pluginError("PreScore", pl, s)
		}
	}
	state.SkipScorePlugins = skip
	return nil
}

// RunScorePlugins scores every node with every Score plugin (nodes in
// parallel), normalises each plugin's scores once, checks they are within
// [MinNodeScore, MaxNodeScore], multiplies by the weights and sums. The
// result is in node order. Each node's Scores list every plugin's raw and
// weighted score, unless state.ScoreTotalsOnly is set: then Scores is nil
// and only TotalScore is kept, and the list's array may be one an earlier
// cycle gave back with ReleaseScores.
func (f *Framework) RunScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodes []*NodeInfo) (_ []NodePluginScores, status *Status) {
	defer f.observe(scorePoint, time.Now(), &status)
	active := f.activeScorePlugins(state)
	var result []NodePluginScores
	if state.ScoreTotalsOnly {
		result = pluginScoresPool.get(len(nodes))
	} else {
		result = make([]NodePluginScores, len(nodes))
	}
	for i, n := range nodes {
		result[i].Name = n.Node().Name
	}
	if len(active) == 0 {
		return result, nil
	}
	// raw[i*k+j] is plugin j's score of node i: plain integers, which the
	// garbage collector need not scan, in an array of an earlier cycle
	// (nothing keeps it once the totals are summed).
	k := len(active)
	raw := rawScoresPool.get(len(nodes) * k)
	defer rawScoresPool.put(raw)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var errOnce sync.Once
	var failed *Status
	observers := successObservers(f, state, active, scorePoint)
	f.parallelizer.Until(ctx, len(nodes), func(i int) {
		if s := f.runRawScorePlugins(ctx, state, pod, nodes[i], active, observers, raw[i*k:(i+1)*k]); s != nil {
			errOnce.Do(func() { failed = s })
			cancel()
		}
	})
	if failed != nil {
		return nil, failed
	}
	if s := f.normalizeAndWeigh(ctx, state, pod, active, raw, result, !state.ScoreTotalsOnly); s != nil {
		return nil, s
	}
	return result, nil
}

// RunRawScorePlugins scores one node with the Score plugins the cycle did
// not skip, without normalising or weighing: each PluginScore has its Name
// and Raw score only. OpportunisticBatching rescores the last chosen node
// with it, then NormalizeScores ranks it among the stored nodes.
func (f *Framework) RunRawScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodeInfo *NodeInfo) ([]PluginScore, *Status) {
	active := f.activeScorePlugins(state)
	raw := make([]int64, len(active))
	if s := f.runRawScorePlugins(ctx, state, pod, nodeInfo, active, nil, raw); s != nil {
		return nil, s
	}
	scores := make([]PluginScore, len(active))
	for j, pl := range active {
		scores[j] = PluginScore{Name: pl.Name(), Raw: raw[j]}
	}
	return scores, nil
}

// NormalizeScores recomputes, from the raw scores each node keeps, every
// node's normalised and weighted scores and its total, over exactly these
// nodes: a plugin's NormalizeScore sees the whole list at once. It rewrites
// the entries' Scores as new slices (never in place: the attempt record of
// the cycle that first scored them may still hold the old ones).
func (f *Framework) NormalizeScores(ctx context.Context, state *CycleState, pod *v1.Pod,
	scores []NodePluginScores) *Status {
	active := f.activeScorePlugins(state)
	k := len(active)
	raw := make([]int64, len(scores)*k)
	for i := range scores {
		for j, pl := range active {
			for _, ps := range scores[i].Scores {
				if ps.Name == pl.Name() {
					raw[i*k+j] = ps.Raw
				}
			}
		}
	}
	return f.normalizeAndWeigh(ctx, state, pod, active, raw, scores, true)
}

// activeScorePlugins are the Score plugins PreScore did not skip.
func (f *Framework) activeScorePlugins(state *CycleState) []ScorePlugin {
	var active []ScorePlugin
	for _, pl := range f.scorePlugins {
		if !state.SkipScorePlugins.Has(pl.Name()) {
			active = append(active, pl)
		}
	}
	return active
}

// runRawScorePlugins has each plugin of active score one node, into
// out[j]; it returns the first failure. observers are successObservers of
// active, or nil.
func (f *Framework) runRawScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodeInfo *NodeInfo, active []ScorePlugin, observers []prometheus.Observer, out []int64) *Status {
	for j, pl := range active {
		start := f.sampleStart(state)
		score, s := pl.Score(ctx, state, pod, nodeInfo)
		f.recordCall(observers, j, pl.Name(), scorePoint, start, s)
		if !s.IsSuccess() {
			return pluginError("Score", pl, s)
		}
		out[j] = score
	}
	return nil
}

// normalizeAndWeigh turns the raw scores of active's plugins (raw[i*k+j],
// plugin j's score of scores[i]'s node, k plugins) into each node's total:
// each plugin's NormalizeScore over all nodes (plugins in parallel), the
// range check, the weight. Only plugins with ScoreExtensions get a list of
// their scores to normalise; the others' raw scores are their scores. With
// perPlugin set, each node's Scores is a new list of every plugin's raw and
// weighted score; otherwise it is left nil.
func (f *Framework) normalizeAndWeigh(ctx context.Context, state *CycleState, pod *v1.Pod,
	active []ScorePlugin, raw []int64, scores []NodePluginScores, perPlugin bool) *Status {
	k := len(active)
	normalized := make([]NodeScoreList, k)
	extended := 0
	for _, pl := range active {
		if pl.ScoreExtensions() != nil {
			extended++
		}
	}
	// The lists to normalise share one array of an earlier cycle: a
	// NormalizeScore rewrites its list in place and keeps nothing of it.
	lists := nodeScoresPool.get(extended * len(scores))
	defer nodeScoresPool.put(lists)
	for j, pl := range active {
		if pl.ScoreExtensions() == nil {
			continue
		}
		normalized[j], lists = lists[:len(scores):len(scores)], lists[len(scores):]
		for i := range scores {
			normalized[j][i] = NodeScore{Name: scores[i].Name, Score: raw[i*k+j]}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var errOnce sync.Once
	var failed *Status
	f.parallelizer.Until(ctx, k, func(j int) {
		if normalized[j] == nil {
			return
		}
		if s := active[j].ScoreExtensions().NormalizeScore(ctx, state, pod, normalized[j]); !s.IsSuccess() {
			errOnce.Do(func() { failed = pluginError("Normalize on Score", active[j], s) })
			cancel()
		}
	})
	if failed != nil {
		return failed
	}
	// One array holds every node's scores; each node's slice of it is capped
	// at its end, so that appending to it (an extender's score) copies it
	// out instead of overwriting the next node's.
	var all []PluginScore
	if perPlugin {
		all = make([]PluginScore, len(scores)*k)
	}
	for i := range scores {
		scores[i].TotalScore = 0
		scores[i].Scores = nil
		if perPlugin {
			scores[i].Scores = all[i*k : (i+1)*k : (i+1)*k]
		}
	}
	for j, pl := range active {
		w := f.scoreWeights[pl.Name()]
		for i := range scores {
			score := raw[i*k+j]
			if normalized[j] != nil {
				score = normalized[j][i].Score
			}
			if score > MaxNodeScore || score < MinNodeScore {
				err := fmt.Errorf("plugin %q returns an invalid score %v, it should in the range of [%v, %v] "+
					"after normalizing", pl.Name(), score, MinNodeScore, MaxNodeScore)
				return AsStatus(err).WithPlugin(pl.Name())
			}
			weighted := score * w
			scores[i].TotalScore += weighted
			if perPlugin {
				scores[i].Scores[j] = PluginScore{Name: pl.Name(), Raw: raw[i*k+j], Score: weighted}
			}
		}
	}
	return nil
}
