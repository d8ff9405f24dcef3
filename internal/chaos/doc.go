// Package chaos drives a scheduler through a seeded random sequence of
// cluster changes and faults, and checks, from the apiserver's state, what
// no sequence may break.
//
// The changes: nodes come and go, are cordoned, labelled and tainted; pods
// of three priorities are created, updated, deleted, some preempting, some
// bound by another client first; pod groups (gangs and basic) come with
// their members, change minCount, lose members and go; claims of three
// StorageClasses (the example provisioner's, static node-local volumes,
// Immediate) and ReadWriteOncePod claims are used and deleted, and so are
// volumes; pods claim devices from a template or share a claim while the
// example DRA driver's slices and the DeviceClass change. The faults: the
// scheduler killed at a drawn point of a cycle and the next one started at
// once, the apiserver restarted, the scheduler's writes answered 409 or
// 500 for a while.
//
// What must hold: no node holds more than it has; no pod is bound twice or
// to a node already gone; no device, volume or ReadWriteOncePod claim is
// had twice; once settled, every pending pod that fits somewhere is bound
// and every other one says why not (or is held as unschedulable after its
// status write was lost), no claim is left allocated, reserved or selected
// for a node for nothing and no gang has fewer than minCount members
// bound, except where kube-scheduler v1.37.1 leaves them so (leftAllocated,
// gangExcuses), and the scheduler's cache equals its informers.
//
// A run is reproducible from its seed as far as the run itself goes: the
// same seed draws the same operations with the same arguments. What the
// scheduler does in between (which node wins a tie, whether it binds a pod
// before another client does, which victims a preemption picks) depends on
// timing and may differ from one run to the next, so an operation's outcome
// may too (a pod already preempted when the run deletes it, say).
package chaos
