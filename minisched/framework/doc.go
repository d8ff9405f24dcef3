// Package framework is minisched's contract with its plugins and the
// per-profile runtime that runs them. Read its files in this order:
//
//  1. interface.go: the extension points, one interface each, in the order
//     a pod meets them, and what a plugin may read. Read it first.
//  2. status.go: Status, the code and reasons every extension point answers
//     with, and what the framework, the loop and the queue do with each code.
//  3. cycle_state.go: CycleState, what the plugins of one cycle share.
//  4. types.go, nodeinfo.go, resource.go, affinity.go, dra.go: what plugins
//     read (PodInfo, QueuedPodInfo, NodeInfo, Resource, the parsed affinity
//     terms, the DRA state) and what they answer with (scores, the results
//     of PreFilter and PostFilter, each node's status, FitError). Beside
//     them, entity.go is what the queue holds (a pod or a pod group, and
//     their bookkeeping) and podgroup.go what a pod group is (PodGroupInfo,
//     the order its members are tried in, PodGroupState, placements).
//  5. framework.go: a profile built from its configuration. Framework holds
//     each extension point's plugins in order; NewFramework expands
//     multiPoint and collects the score weights and the queueing hints.
//  6. handle.go: what the profile hands its plugins (Handle).
//  7. The runners, in the order a pod meets them: run_queue.go (PreEnqueue,
//     QueueSort), run_filter.go (PreFilter, Filter, Filter with the
//     nominated pods, PostFilter), run_score.go (PreScore, Score, normalising
//     and weighing), run_bind.go (Reserve, Permit, and the binding cycle's
//     PreBind, Bind and PostBind). Beside them, waiting_pods.go holds the pods
//     Permit keeps waiting, and parallelize.go the worker pool Filter and
//     Score run on. run_podgroup.go runs the pod-group extension points
//     (PlacementGenerate, PlacementFeasible, PlacementScore,
//     PodGroupPostFilter; chapter 19).
//  8. nominated_pods.go: the other pods a cycle deals with: the nominator
//     and the activator the queue provides, and PodsToActivate.
//  9. events.go: the ClusterEvents and queueing hints that requeue pods.
//  10. batch.go, signers.go, sorted_nodes.go: each profile's
//     OpportunisticBatching state (batch.go), pods' signatures (SignPlugin,
//     signers.go) and the ranking of the nodes a cycle did not take
//     (SortedScoredNodes, sorted_nodes.go).
//  11. metrics.go: how the runners time extension points and, in sampled
//     cycles, plugin calls.
//  12. pools.go: the arrays the scoring of one cycle borrows from the last.
//  13. registry.go: the plugin Registry, and how a plugin decodes its args.
//  14. extender.go: the contract of HTTP extenders, which are not plugins.
//  15. step.go: step mode's hook (Stepper), told before each extension
//     point of a cycle, and the steps of an attempt in order.
//
// Of the rest of minisched it imports only three leaves: minisched/features,
// the feature gates (WithFeatureGates); minisched/metrics,
// which times extension points and plugin calls (WithMetrics) and which
// plugins record to (Handle.Metrics), and minisched/attempt, whose
// annotation keys PodUpdateActions ignores. It knows nothing of the queue,
// the cache or the scheduling loop, which build on it. The scheduler that
// uses it is package minisched (the loop, its event handlers and failure
// handling); package scheduler is the service that builds both from a
// configuration.
package framework
