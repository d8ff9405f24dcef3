// This file is what the scheduling queue holds and the scheduler pops: an
// entity, which is one pod (QueuedPodInfo) or, with the GenericWorkload
// gate, a whole pod group (QueuedPodGroupInfo, podgroup.go), and the
// bookkeeping both carry (QueueingParams).

package framework

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
)

// QueuedEntity is one thing the queue orders, backs off and parks: a pod, or
// a pod group whose members are scheduled together in one pod-group cycle.
// QueueSort compares entities (a group by its PodGroup's priority), and
// backoff, gating and requeueing act on an entity as a whole.
type QueuedEntity interface {
	// Key identifies the entity in the queue: a pod's UID, or the
	// group's PodGroupKey.
	Key() string
	// Priority is the pod's priority, or the PodGroup's spec.priority.
	Priority() int32
	// Params is the entity's queue bookkeeping.
	Params() *QueueingParams
	// ForEachPod calls fn on each pod of the entity (a group's in the
	// order its cycle tries them) until fn returns false.
	ForEachPod(fn func(*QueuedPodInfo) bool)
	// Size is how many pods the entity holds.
	Size() int
}

var (
	_ QueuedEntity = (*QueuedPodInfo)(nil)
	_ QueuedEntity = (*QueuedPodGroupInfo)(nil)
)

// QueueingParams is the queue's bookkeeping of one entity: when it was
// queued, how its attempts went, and what must happen before it is tried
// again. A pod in a group keeps its own, but the group's decide its
// backoff and its gate.
type QueueingParams struct {
	// Timestamp is when the entity was added to the queue or, after a
	// failed attempt, when it was put back. Backoff is measured from it.
	Timestamp time.Time
	// InitialAttemptTimestamp is when the entity was first added; nil
	// until then. It survives updates and requeues.
	InitialAttemptTimestamp *time.Time
	// Attempts counts scheduling attempts: Pop increments it.
	Attempts int
	// UnschedulableCount counts the attempts that plugins rejected;
	// ConsecutiveErrorsCount the attempts in a row that failed with an
	// error (a rejection resets it). Backoff doubles with the second if
	// the last attempt was an error, else with the first, so an error
	// streak does not lengthen a later unschedulable backoff.
	UnschedulableCount     int
	ConsecutiveErrorsCount int
	// BackoffExpiration caches when the entity's backoff ends (the queue
	// computes it lazily and zeroes it when the entity is put back).
	BackoffExpiration time.Time
	// UnschedulablePlugins are the plugins that rejected the pod in its last
	// attempt (PreFilter or Filter ones, ExtenderName for the extenders, or
	// the Reserve or Permit one), and the PreEnqueue plugin that gates it.
	// Only events registered by these plugins move the pod out of the
	// unschedulable pods. A group's stay empty: a failed group backs off.
	UnschedulablePlugins sets.Set[string]
	// PendingPlugins are the plugins that returned Pending in the last attempt.
	PendingPlugins sets.Set[string]
	// GatingPlugin is the PreEnqueue plugin that keeps the entity out of
	// activeQ, or "" when it is not gated. A group is gated when any of its
	// members is.
	GatingPlugin string
	// GatingPluginEvents are the events that may lift the gate (those the
	// gating plugin registered).
	GatingPluginEvents []ClusterEvent
}

// newQueueingParams is the bookkeeping of an entity queued at now.
func newQueueingParams(now time.Time) QueueingParams {
	return QueueingParams{Timestamp: now, UnschedulablePlugins: sets.New[string](), PendingPlugins: sets.New[string]()}
}

// Params returns q itself: an entity's bookkeeping, reached through the
// QueuedEntity interface.
func (q *QueueingParams) Params() *QueueingParams { return q }

// Gated reports whether a PreEnqueue plugin keeps the entity out of activeQ.
func (q *QueueingParams) Gated() bool { return q.GatingPlugin != "" }

// ClearRejectorPlugins forgets why the previous attempt failed: the
// rejecting, pending and gating plugins. The failure handler calls it before
// recording the new attempt's verdict, so a pod that once was rejected (or
// gated) and now failed with an error goes to backoff instead of waiting for
// an event for plugins that no longer matter.
func (q *QueueingParams) ClearRejectorPlugins() {
	q.UnschedulablePlugins = sets.New[string]()
	q.PendingPlugins = sets.New[string]()
	q.GatingPlugin = ""
	q.GatingPluginEvents = nil
}

// deepCopy copies the bookkeeping, sets and slices included.
func (q QueueingParams) deepCopy() QueueingParams {
	q.UnschedulablePlugins = q.UnschedulablePlugins.Clone()
	q.PendingPlugins = q.PendingPlugins.Clone()
	q.GatingPluginEvents = slices.Clone(q.GatingPluginEvents)
	return q
}
