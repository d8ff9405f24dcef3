// Package defaultpreemption is kube-scheduler's DefaultPreemption: the
// PostFilter plugin that, when a pod fits nowhere, looks for a node where
// evicting lower-priority pods would make it fit, nominates the pod to that
// node and evicts the victims.
//
// The files follow a preemption from question to answer:
//
//   - default_preemption.go: the plugin, its PostFilter (Preempt, step by
//     step), who may preempt at all, and the PreEnqueue gate that holds a
//     preemptor back while its victims are being evicted.
//   - candidates.go: the dry run. Which nodes could help, how many to try
//     from a random offset, the victims on one node (remove every
//     lower-priority pod, check the preemptor fits, then reprieve as many as
//     still fit, PDB-protected ones first), and the ordered criteria that pick
//     one node.
//   - pdb.go: which victims a PodDisruptionBudget protects.
//   - executor.go: the eviction, asynchronous as in kube-scheduler v1.37: the
//     preemptor is nominated at once and a goroutine clears lower-priority
//     nominations, marks each victim DisruptionTarget and deletes it, and
//     activates the preemptor when no victim's deletion event will (the
//     last victim was rejected in memory, or already gone).
//   - args.go: DefaultPreemptionArgs, defaulted and validated.
package defaultpreemption
