// This file is what the runtime and plugins note about a cycle for its
// record, when the scheduler records attempts: the Score plugins' raw scores
// and preemption's victims. The scheduler builds the rest of the record
// itself (minisched/record.go).

package framework

import (
	"maps"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// LastAttemptAnnotation is the pod annotation under which minisched, when
// it records attempts, writes the record of the pod's last scheduling
// attempt (minisched.AttemptRecord, as JSON). It is the scheduler's own
// note: PodUpdateActions ignores it, so writing it is no event for the
// queue.
const LastAttemptAnnotation = "minisched.io/last-attempt"

// LastPreemptionAnnotation holds the record of the pod's last attempt that
// preempted (nominated a node and chose victims). Later attempts do not
// replace it, so a pod that landed thanks to a preemption still tells why
// it went there. PodUpdateActions ignores it too.
const LastPreemptionAnnotation = "minisched.io/last-preemption"

// CycleRecord collects what only the runtime and the plugins see of a
// cycle. It lives in the CycleState of a recorded cycle only: in the others
// RecordOf returns nil, and nothing is collected.
type CycleRecord struct {
	mu sync.Mutex
	// rawScores holds, per Score plugin, each node's score before
	// NormalizeScore.
	rawScores map[string]map[string]int64
	// victimsNode and victims are the node preemption chose and the pods
	// (namespace/name) it evicts there.
	victimsNode string
	victims     []string
}

// cycleRecordKey is where a recorded cycle's CycleRecord is kept.
const cycleRecordKey StateKey = "minisched.io/CycleRecord"

// StartRecording marks state's cycle as recorded and returns its record.
func StartRecording(state *CycleState) *CycleRecord {
	r := &CycleRecord{rawScores: map[string]map[string]int64{}}
	state.Write(cycleRecordKey, r)
	return r
}

// RecordOf returns the record of state's cycle, or nil if the cycle is not
// recorded.
func RecordOf(state *CycleState) *CycleRecord {
	if state == nil {
		return nil
	}
	d, err := state.Read(cycleRecordKey)
	if err != nil {
		return nil
	}
	return d.(*CycleRecord)
}

// Clone returns the record itself: a what-if copy of the state (preemption's
// dry run) belongs to the same cycle.
func (r *CycleRecord) Clone() StateData { return r }

// recordRawScores keeps the scores of plugins before they are normalised.
func (r *CycleRecord) recordRawScores(plugins []ScorePlugin, perPlugin []NodeScoreList) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for j, pl := range plugins {
		byNode := make(map[string]int64, len(perPlugin[j]))
		for _, ns := range perPlugin[j] {
			byNode[ns.Name] = ns.Score
		}
		r.rawScores[pl.Name()] = byNode
	}
}

// RawScores returns, per Score plugin, each node's score before
// NormalizeScore.
func (r *CycleRecord) RawScores() map[string]map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.rawScores)
}

// RecordVictims notes, in a recorded cycle, the node a preemption chose and
// the victims it evicts there; in other cycles it does nothing.
func RecordVictims(state *CycleState, node string, victims []*v1.Pod) {
	r := RecordOf(state)
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.victimsNode, r.victims = node, nil
	for _, v := range victims {
		r.victims = append(r.victims, PodKey(v))
	}
}

// Victims returns the node preemption chose and its victims
// (namespace/name), if it chose one in this cycle.
func (r *CycleRecord) Victims() (node string, victims []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.victimsNode, r.victims
}

// withoutAttemptRecords returns annotations without LastAttemptAnnotation
// and LastPreemptionAnnotation (annotations itself when it has neither).
func withoutAttemptRecords(annotations map[string]string) map[string]string {
	_, attempt := annotations[LastAttemptAnnotation]
	_, preemption := annotations[LastPreemptionAnnotation]
	if !attempt && !preemption {
		return annotations
	}
	out := maps.Clone(annotations)
	delete(out, LastAttemptAnnotation)
	delete(out, LastPreemptionAnnotation)
	return out
}
