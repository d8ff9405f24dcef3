package minisched

import (
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
}

// Rejection says which plugin ruled a node out, and why.
type Rejection struct {
	Node, Plugin, Reason string
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
