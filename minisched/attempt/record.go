// Package attempt is the record of one scheduling attempt: what the cycle
// saw and decided, node by node — each Filter plugin's and extender's
// verdict, each scorer's raw, normalised and weighted score, the chosen
// node, the nomination and the victims — with its outcome. The scheduler
// builds it once, at the end of a cycle, from what the cycle returned, and
// only when someone reads it: an observer (the scenarios), or the pod
// annotation Annotation, which `minisched explain` decodes.
//
// The package depends on nothing else in minisched, so that a reader of
// records (explain, a dashboard) need not compile the scheduler.
package attempt

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
)

// Annotation is the pod annotation under which the scheduler, when it
// records attempts, writes the record of the pod's last scheduling attempt
// (a Record, as JSON). It is the scheduler's own note: the framework's
// PodUpdateActions ignores it, so writing it is no event for the queue.
const Annotation = "minisched.io/last-attempt"

// PreemptionAnnotation holds the record of the pod's last attempt that
// preempted (nominated a node and chose victims). Later attempts do not
// replace it, so a pod that landed thanks to a preemption still tells why
// it went there. PodUpdateActions ignores it too.
const PreemptionAnnotation = "minisched.io/last-preemption"

// Version is the version of Record's encoding, its "v" field.
const Version = 1

// MaxBytes bounds an encoded record, well under the 256 KiB the apiserver
// allows all of an object's annotations together.
const MaxBytes = 64 << 10

// MaxMessageBytes bounds the message a record carries.
const MaxMessageBytes = 4 << 10

// PreFilterRejector is the RejectedBy of a node that PreFilter left out of
// the search (a PreFilterResult named other nodes).
const PreFilterRejector = "PreFilter"

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

// Record is what one scheduling attempt saw and decided, node by node, and
// how it ended. Its JSON (version Version) is the annotation Annotation.
type Record struct {
	Version int `json:"v"`
	// Time is when the attempt ended (Scheduled: when the bind returned);
	// Profile is the schedulerName of the profile that tried the pod.
	Time    time.Time `json:"time"`
	Profile string    `json:"profile"`
	// Attempt counts the pod's attempts so far, this one included.
	Attempt int    `json:"attempt"`
	Result  Result `json:"result"`
	// Node is the node the pod was bound to (Scheduled only); NominatedNode
	// the node preemption nominated the pod to, with Victims
	// (namespace/name) evicted there.
	Node          string   `json:"node,omitempty"`
	NominatedNode string   `json:"nominatedNode,omitempty"`
	Victims       []string `json:"victims,omitempty"`
	// Hint is the node OpportunisticBatching offered: the best node left
	// of the ranking an alike pod's cycle kept. Tried first, alone; when it
	// fits, no other node is filtered and none is scored.
	Hint string `json:"hint,omitempty"`
	// Message is the FailedScheduling message, or the Scheduled one.
	Message string `json:"message,omitempty"`
	// PreFilter, when set, rejected the pod before any node was examined:
	// the verdict holds for every node, and Nodes is empty.
	PreFilter *Verdict `json:"preFilter,omitempty"`
	// Filters are the Filter plugins in the order they run on a node;
	// Skipped those whose PreFilter said Skip (not run on any node).
	Filters []string `json:"filters,omitempty"`
	Skipped []string `json:"skipped,omitempty"`
	// Extenders are the filtering extenders interested in the pod, in the
	// order they run after the Filter plugins.
	Extenders []string `json:"extenders,omitempty"`
	// Scorers are the Score plugins and prioritizing extenders, in the
	// order of each node's Scores.
	Scorers []Scorer `json:"scorers,omitempty"`
	// NumNodes counts the cluster's nodes; NotEvaluated those the search
	// never reached (it stops once it found enough feasible nodes,
	// percentageOfNodesToScore, or at a nominated or hinted node that
	// fits) or did not keep. Nodes lists the others.
	NumNodes     int          `json:"numNodes"`
	NotEvaluated int          `json:"notEvaluated,omitempty"`
	Nodes        []NodeRecord `json:"nodes,omitempty"`
	// Omitted, when set, summarises the nodes left out to bound the size.
	Omitted *Omitted `json:"omitted,omitempty"`
	// Group is, for a member of a pod group, its group's attempt (the
	// members' records of one attempt share it).
	Group *GroupAttempt `json:"group,omitempty"`
}

// Verdict is a rejection: by which plugin (or extender), and why.
type Verdict struct {
	Plugin string `json:"plugin"`
	Reason string `json:"reason"`
}

// Scorer is a Score plugin or an extender's Prioritize, with its weight.
type Scorer struct {
	Name     string `json:"name"`
	Weight   int64  `json:"weight"`
	Extender bool   `json:"extender,omitempty"`
}

// NodeRecord is one node's outcome. A node with RejectedBy failed that
// Filter plugin (the plugins before it in Filters passed, the ones after it
// did not run), extender or PreFilterRejector, for Reason; Unresolvable
// means preemption cannot help there. A node without passed every filter;
// Scores, if the pod was scored, holds [raw, normalised, weighted] per
// Scorer, and Total their weighted sum.
type NodeRecord struct {
	Name         string     `json:"name"`
	RejectedBy   string     `json:"rejectedBy,omitempty"`
	Reason       string     `json:"reason,omitempty"`
	Unresolvable bool       `json:"unresolvable,omitempty"`
	Scores       [][3]int64 `json:"scores,omitempty"`
	Total        int64      `json:"total,omitempty"`
}

// Passed reports whether the node passed every filter.
func (n *NodeRecord) Passed() bool { return n.RejectedBy == "" }

// Omitted summarises the nodes a record leaves out: how many, and how many
// of them each reason rejected ("" counts the feasible ones).
type Omitted struct {
	Nodes   int            `json:"nodes"`
	Reasons map[string]int `json:"reasons,omitempty"`
}

// Decode parses an annotation's value. A version this minisched does
// not know is an error that says so.
func Decode(value string) (*Record, error) {
	var probe struct {
		Version int `json:"v"`
	}
	if err := json.Unmarshal([]byte(value), &probe); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", Annotation, err)
	}
	if probe.Version != Version {
		return nil, fmt.Errorf("%s has version %d; this minisched reads version %d only (a newer or older minisched wrote it)",
			Annotation, probe.Version, Version)
	}
	var r Record
	if err := json.Unmarshal([]byte(value), &r); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", Annotation, err)
	}
	return &r, nil
}

// Encode returns the record's JSON in at most limit bytes. When it does not
// fit, it keeps the most telling nodes (Node and NominatedNode, the best
// scored, then one per rejection reason, then the rest) and summarises
// the others in Omitted. A pod group's record that does not fit even
// without nodes keeps the first members of its group that fit, and counts
// the others in OmittedMembers. A record that cannot fit even then is an
// error.
func (r *Record) Encode(limit int) ([]byte, error) {
	data, err := json.Marshal(r)
	if err != nil || len(data) <= limit {
		return data, err
	}
	nodes := r.nodesByImportance()
	// Find how many nodes fit, by bisection: at most log2(nodes) encodings.
	trimmed := *r
	fits := func(n int) ([]byte, bool) {
		trimmed.Nodes = nodes[:n]
		trimmed.Omitted = summarise(nodes[n:])
		data, err := json.Marshal(&trimmed)
		return data, err == nil && len(data) <= limit
	}
	best, ok := fits(0)
	if !ok && r.Group != nil {
		return trimmed.encodeFewerMembers(limit)
	}
	if !ok {
		return nil, fmt.Errorf("the record does not fit in %d bytes even without nodes", limit)
	}
	_, best = largestFitting(len(nodes), best, fits)
	return best, nil
}

// encodeFewerMembers encodes a record already without nodes with as many
// of its group's members as fit in limit bytes.
func (r *Record) encodeFewerMembers(limit int) ([]byte, error) {
	members := r.Group.Members
	group := *r.Group
	trimmed := *r
	trimmed.Group = &group
	fits := func(n int) ([]byte, bool) {
		group.Members, group.OmittedMembers = members[:n], r.Group.OmittedMembers+len(members)-n
		data, err := json.Marshal(&trimmed)
		return data, err == nil && len(data) <= limit
	}
	best, ok := fits(0)
	if !ok {
		return nil, fmt.Errorf("the record does not fit in %d bytes even without nodes and its group's members", limit)
	}
	_, best = largestFitting(len(members), best, fits)
	return best, nil
}

// largestFitting finds, by bisection (at most log2(n) encodings), the
// largest count up to n that fits, given that 0 does (its encoding is
// best), and returns it with its encoding.
func largestFitting(n int, best []byte, fits func(int) ([]byte, bool)) (int, []byte) {
	lo, hi := 0, n
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if data, ok := fits(mid); ok {
			lo, best = mid, data
		} else {
			hi = mid - 1
		}
	}
	return lo, best
}

// nodesByImportance orders the nodes for truncation (see Encode).
func (r *Record) nodesByImportance() []NodeRecord {
	rank := func(n *NodeRecord) int {
		switch {
		case n.Name == r.Node || n.Name == r.NominatedNode:
			return 0
		case n.Passed():
			return 1
		default:
			return 2
		}
	}
	nodes := slices.Clone(r.Nodes)
	sort.SliceStable(nodes, func(i, j int) bool {
		ri, rj := rank(&nodes[i]), rank(&nodes[j])
		if ri != rj {
			return ri < rj
		}
		return nodes[i].Total > nodes[j].Total
	})
	// Among the rejected nodes, one of each reason first.
	first := slices.IndexFunc(nodes, func(n NodeRecord) bool { return rank(&n) == 2 })
	if first < 0 {
		return nodes
	}
	seen := sets.New[string]()
	var examples, rest []NodeRecord
	for _, n := range nodes[first:] {
		if seen.Has(n.Reason) {
			rest = append(rest, n)
			continue
		}
		seen.Insert(n.Reason)
		examples = append(examples, n)
	}
	return append(append(nodes[:first], examples...), rest...)
}

// summarise counts omitted nodes by reason.
func summarise(nodes []NodeRecord) *Omitted {
	if len(nodes) == 0 {
		return nil
	}
	o := &Omitted{Nodes: len(nodes), Reasons: map[string]int{}}
	for _, n := range nodes {
		o.Reasons[n.Reason]++
	}
	return o
}

// SortedNodes returns the nodes in the order explain shows them: Node, the
// other feasible nodes by total score (ties by name), then the rejected
// nodes by name.
func (r *Record) SortedNodes() []NodeRecord {
	rank := func(n NodeRecord) int {
		switch {
		case n.Name == r.Node:
			return 0
		case n.Passed():
			return 1
		}
		return 2
	}
	nodes := slices.Clone(r.Nodes)
	slices.SortStableFunc(nodes, func(a, b NodeRecord) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(b.Total, a.Total), cmp.Compare(a.Name, b.Name))
	})
	return nodes
}

// TopScores returns the n best-scored nodes, best first (ties by name);
// none if the pod was not scored.
func (r *Record) TopScores(n int) []NodeRecord {
	var scored []NodeRecord
	for _, node := range r.Nodes {
		if node.Scores != nil {
			scored = append(scored, node)
		}
	}
	slices.SortStableFunc(scored, func(a, b NodeRecord) int {
		return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.Name, b.Name))
	})
	return scored[:min(n, len(scored))]
}

// Weighted returns the weighted score scorer gave node, and whether it
// scored it.
func (r *Record) Weighted(node NodeRecord, scorer string) (int64, bool) {
	i := slices.IndexFunc(r.Scorers, func(s Scorer) bool { return s.Name == scorer })
	if i < 0 || i >= len(node.Scores) {
		return 0, false
	}
	return node.Scores[i][2], true
}

// Rejections returns the nodes a filter rejected, by name.
func (r *Record) Rejections() []NodeRecord {
	var out []NodeRecord
	for _, n := range r.Nodes {
		if !n.Passed() {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b NodeRecord) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
