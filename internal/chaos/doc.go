// Package chaos drives a scheduler through a seeded random sequence of
// cluster changes (nodes come and go, are cordoned, labelled and tainted;
// pods of three priorities are created, updated, deleted, some preempting,
// some bound by another client first) and checks, from the apiserver's
// state, what no sequence may break: no node holds more than it has, no pod
// is bound twice or to a node already gone, every pending pod that fits
// somewhere is eventually bound and every other one says why not, and the
// scheduler's cache ends equal to its informers.
//
// A run is reproducible from its seed as far as the run itself goes: the
// same seed draws the same operations with the same arguments. What the
// scheduler does in between (which node wins a tie, whether it binds a pod
// before another client does, which victims a preemption picks) depends on
// timing and may differ from one run to the next, so an operation's outcome
// may too (a pod already preempted when the run deletes it, say).
package chaos
