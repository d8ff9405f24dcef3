// Package framework is minisched's contract with its plugins: the
// extension-point interfaces every plugin implements (interface.go, read it
// first), the Status they answer with, the CycleState they share during one
// scheduling cycle, the PodInfo, QueuedPodInfo and NodeInfo types they read,
// the ClusterEvents and queueing hints that requeue pods, the plugin
// Registry, and the per-profile runtime (Framework, runtime.go) that runs
// each extension point's plugins in order. The runtime also keeps each
// profile's OpportunisticBatching state (batch.go): pods' signatures
// (SignPlugin, signers.go) and the ranking of the nodes a cycle did not
// take (SortedScoredNodes, sorted_nodes.go).
//
// Of the rest of minisched it imports only two leaves: minisched/metrics,
// which times extension points and plugin calls (WithMetrics) and which
// plugins record to (Handle.Metrics), and minisched/attempt, whose
// annotation keys PodUpdateActions ignores. It knows nothing of the queue,
// the cache or the scheduling loop, which build on it. The scheduler that
// uses it is package minisched (the loop, its event handlers and failure
// handling); package scheduler is the service that builds both from a
// configuration.
package framework
