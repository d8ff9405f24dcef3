// This file is the observer: what a watcher of the scheduler (the scenarios,
// a trace) is told about each attempt, and the narration built for it only
// when one is set.

package minisched

import (
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/minisched/minisched/minisched/framework"
)

// Result is the outcome of one scheduling attempt.
type Result string

// The outcomes of an attempt.
const (
	// Scheduled: the pod was bound to Node.
	Scheduled Result = "Scheduled"
	// Unschedulable: no node fits (or a plugin rejected the pod); it waits
	// for a cluster event.
	Unschedulable Result = "Unschedulable"
	// SchedulerError: something went wrong; the pod is retried after backoff.
	SchedulerError Result = "SchedulerError"
)

// Attempt describes one scheduling attempt, for tracing and for the
// scenarios' narration.
type Attempt struct {
	Namespace, Name string
	UID             types.UID
	Profile         string
	Result          Result
	// Node is where the pod went (Scheduled only).
	Node string
	// NominatedNode is the node preemption nominated the pod to while its
	// victims go away (Unschedulable only; empty without a nomination).
	NominatedNode string
	// Message is the FailedScheduling message, or the Scheduled one.
	Message string
	// Attempts counts this pod's attempts so far, this one included.
	Attempts int
	// Time is when the attempt ended (for Scheduled: when the bind returned).
	Time time.Time
	// TopScores lists the best-scored nodes with their per-plugin scores,
	// when the pod was scored.
	TopScores []NodeScores
	// Rejections lists the nodes Filter ruled out, sorted by node, with the
	// plugin that did and why. (A PreFilter rejection applies to every node
	// at once and is reported in Message only.)
	Rejections []Rejection
	// Record is the attempt node by node (see AttemptRecord); nil when the
	// scheduler does not record attempts, or when the failed pod was gone
	// or bound by someone else before it could be requeued.
	Record *AttemptRecord
}

// Rejection says which plugin ruled a node out, and why.
type Rejection struct {
	Node, Plugin, Reason string
}

// numberOfHighestScoredNodesToReport is how many top nodes an Attempt
// carries.
const numberOfHighestScoredNodesToReport = 3

// explanation is what the observer is told about a decision beyond its
// outcome: the best-scored nodes and the nodes Filter rejected.
type explanation struct {
	topScores  []NodeScores
	rejections []Rejection
}

// explain builds the explanation of a decision from the scores (nil when the
// pod was not scored) and the Filter diagnosis. It runs only when an observer
// is set: without one, the cycle does not pay for narration nobody reads.
func (s *Scheduler) explain(scores []framework.NodePluginScores, d *framework.Diagnosis) explanation {
	if s.observer == nil {
		return explanation{}
	}
	return explanation{topScores: topScores(scores), rejections: rejections(d)}
}

// topScores lists the best few nodes with their per-plugin scores.
func topScores(scores []framework.NodePluginScores) []NodeScores {
	if len(scores) == 0 {
		return nil
	}
	sorted := slices.Clone(scores)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].TotalScore > sorted[j].TotalScore })
	top := make([]NodeScores, 0, numberOfHighestScoredNodesToReport)
	for _, ns := range sorted[:min(len(sorted), numberOfHighestScoredNodesToReport)] {
		per := make(map[string]int64, len(ns.Scores))
		for _, ps := range ns.Scores {
			per[ps.Name] = ps.Score
		}
		top = append(top, NodeScores{Node: ns.Name, Total: ns.TotalScore, Plugin: per})
	}
	return top
}

// rejections lists the explicitly rejected nodes of a diagnosis.
func rejections(d *framework.Diagnosis) []Rejection {
	var out []Rejection
	d.NodeToStatus.ForEachExplicitNode(func(node string, s *framework.Status) {
		out = append(out, Rejection{Node: node, Plugin: s.Plugin(), Reason: s.Message()})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// NodeScores is one node's weighted score per plugin and in total.
type NodeScores struct {
	Node   string
	Total  int64
	Plugin map[string]int64
}

// Observer is told about every attempt. It is called from the scheduling
// and binding goroutines and must return quickly.
type Observer func(Attempt)

func (s *Scheduler) observe(a Attempt) {
	if s.observer != nil {
		s.observer(a)
	}
}
