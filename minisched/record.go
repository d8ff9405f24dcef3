// This file is the record of an attempt: per node, each Filter plugin's and
// extender's verdict and each scorer's raw, normalised and weighted score,
// then the chosen node, the nomination and the victims. It is built only
// when the scheduler records attempts (an observer, or annotations on), and
// encoded, bounded in size, as the pod's framework.LastAttemptAnnotation,
// which `minisched explain` reads.

package minisched

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// RecordVersion is the version of AttemptRecord's encoding, its "v" field.
const RecordVersion = 1

// MaxRecordBytes bounds an encoded record, well under the 256 KiB the
// apiserver allows all of an object's annotations together.
const MaxRecordBytes = 64 << 10

// maxMessageBytes bounds the message a record carries.
const maxMessageBytes = 4 << 10

// PreFilterRejector is the RejectedBy of a node that PreFilter left out of
// the search (a PreFilterResult named other nodes).
const PreFilterRejector = "PreFilter"

// AttemptRecord is what one scheduling attempt decided, node by node. Its
// JSON (version RecordVersion) is the annotation framework.LastAttemptAnnotation.
type AttemptRecord struct {
	Version int       `json:"v"`
	Time    time.Time `json:"time"`
	Profile string    `json:"profile"`
	// Attempt counts the pod's attempts so far, this one included.
	Attempt int    `json:"attempt"`
	Result  Result `json:"result"`
	// Node is the selected node; NominatedNode the node preemption
	// nominated the pod to, with Victims (namespace/name) evicted there.
	Node          string   `json:"node,omitempty"`
	NominatedNode string   `json:"nominatedNode,omitempty"`
	Victims       []string `json:"victims,omitempty"`
	// Message is the FailedScheduling (or Scheduled) message.
	Message string `json:"message,omitempty"`
	// PreFilter, when set, rejected the pod before any node was examined:
	// the verdict holds for every node, and Nodes is empty.
	PreFilter *Verdict `json:"preFilter,omitempty"`
	// Filters are the Filter plugins in the order they run on a node;
	// Skipped those whose PreFilter said Skip (not run on any node).
	Filters []string `json:"filters,omitempty"`
	Skipped []string `json:"skipped,omitempty"`
	// Extenders are the filtering extenders that ran, in order, after the
	// Filter plugins.
	Extenders []string `json:"extenders,omitempty"`
	// Scorers are the Score plugins and prioritizing extenders, in the
	// order of each node's Scores.
	Scorers []Scorer `json:"scorers,omitempty"`
	// NumNodes counts the cluster's nodes; NotEvaluated those the search
	// never reached (it stops once it found enough feasible nodes,
	// percentageOfNodesToScore) or did not keep. Nodes lists the others.
	NumNodes     int          `json:"numNodes"`
	NotEvaluated int          `json:"notEvaluated,omitempty"`
	Nodes        []NodeRecord `json:"nodes,omitempty"`
	// Omitted, when set, summarises the nodes left out to bound the size.
	Omitted *Omitted `json:"omitted,omitempty"`
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

// DecodeRecord parses an annotation's value. A version this minisched does
// not know is an error that says so.
func DecodeRecord(value string) (*AttemptRecord, error) {
	var probe struct {
		Version int `json:"v"`
	}
	if err := json.Unmarshal([]byte(value), &probe); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", framework.LastAttemptAnnotation, err)
	}
	if probe.Version != RecordVersion {
		return nil, fmt.Errorf("%s has version %d; this minisched reads version %d only (a newer or older minisched wrote it)",
			framework.LastAttemptAnnotation, probe.Version, RecordVersion)
	}
	var r AttemptRecord
	if err := json.Unmarshal([]byte(value), &r); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", framework.LastAttemptAnnotation, err)
	}
	return &r, nil
}

// Encode returns the record's JSON in at most limit bytes. When it does not
// fit, it keeps the most telling nodes (the selected and nominated ones, the
// best scored, then one per rejection reason, then the rest) and summarises
// the others in Omitted. A record that cannot fit even without nodes is an
// error.
func (r *AttemptRecord) Encode(limit int) ([]byte, error) {
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
	if !ok {
		return nil, fmt.Errorf("the record does not fit in %d bytes even without nodes", limit)
	}
	lo, hi := 0, len(nodes)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if data, ok := fits(mid); ok {
			lo, best = mid, data
		} else {
			hi = mid - 1
		}
	}
	return best, nil
}

// nodesByImportance orders the nodes for truncation (see Encode).
func (r *AttemptRecord) nodesByImportance() []NodeRecord {
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

// attemptRecorder gathers a recorded cycle's record as the cycle goes. It
// lives in the cycle's CycleState (recorderOf); every method does nothing on
// a nil recorder, so the steps of the cycle call them unconditionally.
type attemptRecorder struct {
	cycle *framework.CycleRecord
	// allNodes are the snapshot's nodes; feasible the nodes that passed
	// every filter; statuses the rejected ones' verdicts.
	allNodes []string
	feasible []string
	// numNodes counts the snapshot's nodes, noted at PreFilter: a cycle
	// that fails before Filter still says how many there were.
	numNodes  int
	statuses  *framework.NodeToStatus
	preFilter *framework.Status
	skipped   []string
	// extenderRejections holds, per node, the extender that rejected it;
	// extenders the filtering extenders that ran.
	extenderRejections map[string]string
	extenders          []string
	// scores are the weighted scores per node; extenderScores each
	// extender's raw scores and weight.
	scores         []framework.NodePluginScores
	extenderScores map[string]extenderScores
}

// extenderScores is one extender's raw scores and weight.
type extenderScores struct {
	weight int64
	raw    map[string]int64
}

// attemptRecorderKey is where a recorded cycle keeps its attemptRecorder.
const attemptRecorderKey framework.StateKey = "minisched.io/attemptRecorder"

// Clone returns the recorder itself: what-if copies of the state belong to
// the same cycle.
func (r *attemptRecorder) Clone() framework.StateData { return r }

// startRecording makes state's cycle a recorded one.
func startRecording(state *framework.CycleState) {
	state.Write(attemptRecorderKey, &attemptRecorder{
		cycle:              framework.StartRecording(state),
		extenderRejections: map[string]string{},
		extenderScores:     map[string]extenderScores{},
	})
}

// recorderOf returns the recorder of state's cycle, nil if it is not
// recorded.
func recorderOf(state *framework.CycleState) *attemptRecorder {
	if state == nil {
		return nil
	}
	d, err := state.Read(attemptRecorderKey)
	if err != nil {
		return nil
	}
	return d.(*attemptRecorder)
}

// recording reports whether attempts are recorded: for an observer, or for
// annotations.
func (s *Scheduler) recording() bool { return s.observer != nil || s.records != nil }

// preFiltered notes PreFilter's outcome: a rejection of every node, or the
// plugins that asked to skip their Filter; and how many nodes there are.
func (r *attemptRecorder) preFiltered(sts *framework.Status, skip sets.Set[string], numNodes int) {
	if r == nil {
		return
	}
	r.numNodes = numNodes
	if sts.IsRejected() {
		r.preFilter = sts
	}
	r.skipped = sets.List(skip)
}

// filtered notes which nodes passed every filter, and the diagnosis of the
// others.
func (r *attemptRecorder) filtered(nodes framework.NodeInfoLister, feasible []*framework.NodeInfo,
	d *framework.Diagnosis) {
	if r == nil {
		return
	}
	all, err := nodes.List()
	if err != nil {
		return
	}
	r.allNodes = make([]string, len(all))
	for i, n := range all {
		r.allNodes[i] = n.Node().Name
	}
	r.feasible = make([]string, len(feasible))
	for i, n := range feasible {
		r.feasible[i] = n.Node().Name
	}
	r.statuses = d.NodeToStatus
}

// extenderFiltered notes which nodes an extender's Filter rejected.
func (r *attemptRecorder) extenderFiltered(ext framework.Extender, failed, unresolvable extenderv1.FailedNodesMap) {
	if r == nil || !ext.IsFilter() {
		return
	}
	name := ext.Name()
	if !slices.Contains(r.extenders, name) {
		r.extenders = append(r.extenders, name)
	}
	for node := range failed {
		r.extenderRejections[node] = name
	}
	for node := range unresolvable {
		r.extenderRejections[node] = name
	}
}

// scored notes the feasible nodes' weighted scores.
func (r *attemptRecorder) scored(scores []framework.NodePluginScores) {
	if r != nil {
		r.scores = scores
	}
}

// extenderPrioritized notes an extender's raw scores and weight.
func (r *attemptRecorder) extenderPrioritized(ext framework.Extender, weight int64,
	list extenderv1.HostPriorityList) {
	if r == nil || !ext.IsPrioritizer() {
		return
	}
	raw := make(map[string]int64, len(list))
	for _, hp := range list {
		raw[hp.Host] = hp.Score
	}
	r.extenderScores[ext.Name()] = extenderScores{weight: weight, raw: raw}
}

// record builds the AttemptRecord of the attempt a (its outcome is set) for
// a pod of profile fwk.
func (r *attemptRecorder) record(fwk *framework.Framework, a *Attempt) *AttemptRecord {
	if r == nil {
		return nil
	}
	rec := &AttemptRecord{
		Version: RecordVersion, Time: a.Time, Profile: a.Profile, Attempt: a.Attempts, Result: a.Result,
		Node: a.Node, NominatedNode: a.NominatedNode, Message: truncate(a.Message, maxMessageBytes), NumNodes: r.numNodes,
		Filters: fwk.FilterPluginNames(), Skipped: r.skipped, Extenders: r.extenders,
	}
	if node, victims := r.cycle.Victims(); node != "" && node == a.NominatedNode {
		rec.Victims = victims
	}
	if r.preFilter != nil {
		rec.PreFilter = &Verdict{Plugin: r.preFilter.Plugin(), Reason: r.preFilter.Message()}
		return rec
	}
	if r.statuses == nil {
		return rec // the cycle failed before Filter
	}
	scores := r.nodeScores(fwk, rec)
	feasible := sets.New(r.feasible...)
	rejected := map[string]*framework.Status{}
	r.statuses.ForEachExplicitNode(func(node string, s *framework.Status) { rejected[node] = s })
	// The other nodes share the absent-nodes status: a PreFilterResult
	// left them out if it says why; else the search did not reach them.
	absent := r.statuses.AbsentNodesStatus()
	for _, name := range r.allNodes {
		n := NodeRecord{Name: name}
		sts, ok := rejected[name]
		if !ok && absent.Message() != "" {
			sts = absent
		}
		switch {
		case feasible.Has(name):
			if s, ok := scores[name]; ok {
				n.Scores, n.Total = s.Scores, s.Total
			}
		case sts == nil:
			rec.NotEvaluated++
			continue
		default:
			n.RejectedBy, n.Reason = sts.Plugin(), sts.Message()
			n.Unresolvable = sts.Code() == framework.UnschedulableAndUnresolvable
			if ext, ok := r.extenderRejections[name]; ok && n.RejectedBy == "" {
				n.RejectedBy = ext
			} else if n.RejectedBy == "" {
				n.RejectedBy = PreFilterRejector
			}
		}
		rec.Nodes = append(rec.Nodes, n)
	}
	return rec
}

// nodeScores sets rec.Scorers and returns each scored node's scores.
func (r *attemptRecorder) nodeScores(fwk *framework.Framework, rec *AttemptRecord) map[string]NodeRecord {
	if len(r.scores) == 0 {
		return nil
	}
	raw := r.cycle.RawScores()
	// The scorers, in the order of the first node's scores: Score plugins
	// first, then extenders (which answer in any order).
	index := map[string]int{}
	for _, ns := range r.scores {
		for _, ps := range ns.Scores {
			if _, ok := index[ps.Name]; ok {
				continue
			}
			// An extender without a prioritize verb answers zeros: leave
			// it out.
			ext, isExt := r.extenderScores[ps.Name]
			switch {
			case isExt:
				rec.Scorers = append(rec.Scorers, Scorer{Name: ps.Name, Weight: ext.weight, Extender: true})
			case fwk.ScoreWeight(ps.Name) > 0:
				rec.Scorers = append(rec.Scorers, Scorer{Name: ps.Name, Weight: fwk.ScoreWeight(ps.Name)})
			default:
				continue
			}
			index[ps.Name] = len(rec.Scorers) - 1
		}
	}
	out := make(map[string]NodeRecord, len(r.scores))
	for _, ns := range r.scores {
		n := NodeRecord{Name: ns.Name, Total: ns.TotalScore, Scores: make([][3]int64, len(rec.Scorers))}
		for _, ps := range ns.Scores {
			i, ok := index[ps.Name]
			if !ok {
				continue
			}
			sc := rec.Scorers[i]
			switch {
			case sc.Extender:
				// An extender scores 0–10; scaled to the plugins' 0–100.
				r := r.extenderScores[ps.Name].raw[ns.Name]
				n.Scores[i] = [3]int64{r, r * (framework.MaxNodeScore / extenderv1.MaxExtenderPriority), ps.Score}
			default:
				n.Scores[i] = [3]int64{raw[ps.Name][ns.Name], ps.Score / max(sc.Weight, 1), ps.Score}
			}
		}
		out[ns.Name] = n
	}
	return out
}

// SortedNodes returns the nodes in the order explain shows them: the
// selected node, the other feasible nodes by total score, then the rejected
// nodes by name.
func (r *AttemptRecord) SortedNodes() []NodeRecord {
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
