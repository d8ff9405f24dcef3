// Package cache holds the nodes and pods as the scheduler believes them to
// be: pods it has assumed onto nodes but not yet seen bound, pods the
// informers confirmed, and per-node aggregates (framework.NodeInfo). Each
// scheduling cycle reads a Snapshot of it, refreshed incrementally.
//
// A pod moves through the cache like this (pods are keyed by UID):
//
//	    +------------- AddPod (bound by someone else) -------------+
//	    |                                                          v
//	Initial ---AssumePod---> Assumed ---AddPod (confirms)---> Added ---RemovePod---> Deleted
//	  ^ ^                     |   |                            |  ^
//	  | +-----ForgetPod-------+   |                            +--+
//	  |   (a later step failed)   |                          UpdatePod
//	  +---------Expire------------+
//	    (only if ttl > 0, after FinishBinding, once the deadline passed)
//
// The scheduler assumes a pod right after choosing its node, before Reserve;
// ForgetPod undoes that when Reserve, Permit or the binding fails, and the
// room is free again. Initial → Added directly is the path of pods bound by
// someone else (another scheduler, or our own pods seen again after a
// restart): the informer's Add is the first the cache hears of them. If the
// informer reports an assumed pod on another node than the one assumed,
// AddPod moves it there. RemovePod also accepts an assumed pod (Assumed →
// Deleted), in case a deletion is reported before the Add.
//
// Expiry is a safety net for a binding whose confirmation never arrives.
// kube-scheduler v1.37 builds its cache with durationToExpireAssumedPod = 0
// (see kubernetes/kubernetes#106361), so assumed pods never expire: they
// leave the Assumed state only through the informer's Add or through
// ForgetPod. minisched does the same (the scheduler passes ttl 0); a
// positive ttl is supported, and only tests use one.
//
// With pod groups (WithPodGroups, the GenericWorkload gate), the cache also
// keeps a state per pod group: its pods, each unscheduled, assumed or
// assigned, and its PodGroup object. The transitions above move a member
// between them (AssumePod: assumed; ForgetPod: unscheduled; AddPod:
// assigned; RemovePod: gone), and pods that are not bound join and leave
// through AddPodGroupMember and RemovePodGroupMember. A snapshot copies the
// states; a pod-group cycle places members in the snapshot only
// (Snapshot.AssumePod) and takes them back (Snapshot.ForgetPod). A pod
// group's preemption changes the snapshot within a mutation session
// (Snapshot.StartMutations ... EndMutations), which restores it exactly.
//
// The files: cache.go is the Cache (the transitions above, nodes, images,
// pod groups and UpdateSnapshot); snapshot.go the Snapshot a cycle reads,
// and its AssumePod and ForgetPod; snapshot_mutations.go its mutation
// session (AddPod, RemovePod); podgroupstate.go a pod group's state;
// node_tree.go the order the snapshot lists nodes in, zones interleaved;
// termcounts.go the snapshot's index of existing pods' required
// anti-affinity terms. The debugger package beside it compares the cache
// with the informers.
package cache
