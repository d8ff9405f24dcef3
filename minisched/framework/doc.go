// Package framework is minisched's contract with its plugins: the
// extension-point interfaces every plugin implements (interface.go, read it
// first), the Status they answer with, the CycleState they share during one
// scheduling cycle, the PodInfo, QueuedPodInfo and NodeInfo types they read,
// the ClusterEvents and queueing hints that requeue pods, the plugin
// Registry, and the per-profile runtime (Framework, runtime.go) that runs
// each extension point's plugins in order.
//
// It depends on none of the rest of minisched: the queue, the cache and the
// plugins import only this package. The scheduler that uses it is package
// minisched (the loop, its event handlers and failure handling); package
// scheduler is the service that builds both from a configuration.
package framework
