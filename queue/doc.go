// Package queue is the scheduling queue: it holds every pending pod of our
// profiles until the scheduler pops it, and decides where a pod goes after a
// failed attempt and when a cluster event may have made it schedulable.
//
// A pending pod is, at any time, in exactly one of three sub-queues or in
// flight:
//
//	Add ─▶ PreEnqueue ─ok─▶ activeQ ──Pop──▶ in flight ──Done──▶ (bound, or already put back)
//	           │ gated       ▲  ▲ backoff          │ AddUnschedulablePodIfNotPresent:
//	           │             │  │ expired          ├─ error, or an event during the attempt helps
//	           │             │  └──── backoffQ ◀───┤
//	           ▼             │          ▲          └─ nothing helped ─▶ unschedulablePods
//	   unschedulablePods ────┴──────────┘
//	       on an event one of its rejecting plugins registered, or the 5-minute flush
//
// The parts:
//
//   - activeQ is a heap ordered by the profiles' QueueSort; Pop blocks on it.
//   - backoffQ is two heaps ordered by backoff expiry, truncated to
//     one-second windows: pods plugins rejected (then by QueueSort), and
//     pods that failed with an error. FlushBackoffQCompleted (on every whole
//     second) moves the pods of finished windows to activeQ; when activeQ
//     is empty, Pop takes the first rejected pod at once (backoff.go).
//   - The nominator remembers which node each pod was nominated to, by
//     preemption or by its status.nominatedNodeName (nominator.go).
//   - unschedulablePods is a map of pods that some plugins rejected (or a
//     PreEnqueue plugin gates). Only an event one of those plugins registered,
//     judged by the plugin's QueueingHint, or a plugin's Activate moves such
//     a pod out (both in requeue.go); FlushUnschedulablePodsLeftover (every
//     30s) retries pods that waited longer than five minutes anyway.
//   - A popped pod is in flight until its attempt ends: Done, or putting it
//     back with AddUnschedulablePodIfNotPresent. Events that arrive
//     meanwhile are remembered for it, so that a pod rejected because
//     of the very state an event just changed is not parked as unschedulable.
//
// With the GenericWorkload gate (WithPodGroups), the sub-queues hold
// entities: a pod, or the members of one PodGroup together, ordered by the
// PodGroup's priority, backed off and gated as a whole (framework.
// QueuedEntity). A group takes this path:
//
//	member Add ─▶ its PodGroup seen? ──no──▶ incomplete ──PodGroup Add──┐
//	                   │ yes                                            │
//	                   ▼                                                ▼
//	      the group's entity: a member joins it where it is, or a new one
//	                   │ PreEnqueue, for every member
//	                   ├─ a member gated ─▶ unschedulablePods (gated only)
//	                   ▼ ok                        │ the gate lifts
//	                activeQ ◀──────────────────────┘
//	                   │ Pop: the whole group, one pod-group cycle
//	                   ▼
//	               in flight ── members added or put back meanwhile ─▶ pending
//	                   │ AddAttemptedPodGroupIfNeeded: the pending members, one entity again
//	                   ├─ some placed, some left ─▶ activeQ at once
//	                   └─ rejected, or an error ─▶ backoffQ ──expired──▶ activeQ
//
// A failed group is never parked among the unschedulable pods: only a
// member's gate puts it there. Deleting the PodGroup sends every member
// not in flight back to incomplete. podgroups.go routes each member.
//
// The steps a failed pod takes are listed once, on
// AddUnschedulablePodIfNotPresent (requeue.go); when an attempt ends, on Done.
//
// Everything but the nominator (which has its own lock, taken after the
// queue's) is guarded by one mutex; Pop waits on a condition variable tied
// to it. Plugins' PreEnqueue and QueueingHint functions run under that lock,
// which is why both must be cheap.
//
// Contents (contents.go) copies what the sub-queues hold for the live view,
// holding the lock only for the copy.
package queue
