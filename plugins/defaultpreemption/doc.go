// Package defaultpreemption is kube-scheduler's DefaultPreemption: the
// PostFilter plugin that, when a pod fits nowhere, looks for a node where
// evicting lower-priority pods would make it fit, nominates the pod to that
// node and evicts the victims. With GenericWorkload it is also a
// PodGroupPostFilter plugin, which does the same for a whole pod group.
//
// The files follow a preemption from question to answer:
//
//   - default_preemption.go: the plugin, its PostFilter (Preempt, step by
//     step), who may preempt at all, and the PreEnqueue gate that holds a
//     preemptor (or a pod group) back while its victims are being evicted.
//   - victims.go: what may be evicted, as units: a pod alone, or, with
//     GenericWorkload, all of a PodGroup's scheduled pods when it is
//     disrupted as a whole; the priority each is judged by, and the order
//     of importance in which they are reprieved.
//   - candidates.go: the dry run. Which nodes could help, how many to try
//     from a random offset, the victims on one node (remove every
//     lower-priority unit, check the preemptor fits, then reprieve as many
//     as still fit, PDB-protected ones first), and the ordered criteria that
//     pick one node.
//   - podgroup_preemption.go: the whole group's preemption, over the whole
//     cluster at once: in a mutation session of the snapshot, remove every
//     lower-priority unit, run the group's algorithm once, reprieve as many
//     units as every placed member still allows, and nominate the members.
//   - pdb.go: which victims a PodDisruptionBudget protects.
//   - executor.go: the eviction, asynchronous as in kube-scheduler v1.37: the
//     preemptor is nominated at once and a goroutine clears lower-priority
//     nominations, marks each victim DisruptionTarget and deletes it, and
//     activates the preemptor when no victim's deletion event will (the
//     last victim was rejected in memory, or already gone). A pod group's
//     eviction is the same, worded for a podgroup and keyed by its UID.
//   - args.go: DefaultPreemptionArgs, defaulted and validated.
package defaultpreemption
