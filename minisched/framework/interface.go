// This file is the scheduling framework's contract: one interface per
// extension point, in the order a pod meets them.
//
//	queue:      PreEnqueue → QueueSort (and Sign, for OpportunisticBatching)
//	scheduling: PreFilter → Filter → (PostFilter) → PreScore → Score → NormalizeScore → Reserve → Permit
//	binding:    (WaitOnPermit) → PreBind → Bind → PostBind
//	on failure after Reserve: Unreserve, in reverse order
//
// Gang scheduling (chapter 19, kube-scheduler's GenericWorkload gate) adds
// a cycle for a whole pod group, and four extension points of its own,
// whose interfaces stand here between Score's and Reserve's:
//
//	pod group:  (PlacementGenerate) → per member: PreFilter … Score, PlacementFeasible
//	            → (PlacementScore) → (PodGroupPostFilter) → per member: Reserve → Permit
//
// PlacementGenerate proposes the placements (sets of nodes) to try;
// PlacementFeasible, after each member is placed in the snapshot, says
// whether the group can still reach its minCount; PlacementScore ranks the
// feasible placements; PodGroupPostFilter, when the group fits nowhere,
// makes room for the whole group, as PostFilter does for one pod.
//
// HTTP extenders (extender.go) are not plugins: the scheduler consults them
// after Filter, beside Score, instead of Bind, and preemption after its
// dry run.
//
// A plugin implements any subset. What a plugin may read during a cycle:
//
//   - nodes and the pods on them only through the NodeInfos and the snapshot
//     lister it is handed (Handle.SnapshotSharedLister), never from the
//     cache, an informer or the apiserver: the snapshot is what the cycle
//     decides on, with the assumed pods counted;
//   - other objects (namespaces for a namespaceSelector, the services and
//     replica sets that own a pod, for default spreading) from listers of
//     Handle.SharedInformerFactory, asked for when the plugin is built;
//     InterPodAffinity and PodTopologySpread do so, as upstream;
//   - nothing from the apiserver: a Bind or PreBind plugin writes to it, it
//     never reads cluster state from it.
//
// A plugin never mutates the objects it is given, nor those of a lister.

package framework

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/metrics"
)

// Plugin is what every plugin is: something with a unique name.
type Plugin interface {
	Name() string
}

// PreEnqueuePlugin is called when a pod is added to or updated in the queue,
// before it may enter activeQ.
//
// Success lets the pod in. Any other code (typically UnschedulableAndUnresolvable)
// gates it: the pod waits among the unschedulable pods, no FailedScheduling
// event is written, and it is re-checked when an event the plugin registered
// (EnqueueExtensions) occurs. PreEnqueue must be cheap: it runs in event
// handlers.
type PreEnqueuePlugin interface {
	Plugin
	PreEnqueue(ctx context.Context, pod *v1.Pod) *Status
}

// SignPlugin lets OpportunisticBatching (KEP-5598, batch.go) tell when two
// pods are alike enough to share one ranking of the nodes. The queue asks
// every PreFilter, Filter, PreScore and Score plugin of the profile to sign a
// pod when the pod is added or updated; the fragments (one per key: plugins
// that read the same part of the pod give the same key) together with
// spec.schedulerName make the pod's signature. Two pods with equal signatures
// must get the same Filter verdict and the same score from the plugin on
// every node, in the same cluster state: a fragment holds everything of the
// pod the plugin reads.
//
// A profile in which one such plugin does not implement SignPlugin, or with
// extenders, signs no pod. SignPod must be cheap: it runs in event handlers.
//
// Codes: Success (the fragments, possibly none); Unschedulable (the plugin
// refuses: what it decides for this pod depends on more than the pod and the
// node, on where other pods go, so the pod is never batched); Error (the
// same, and the error is logged).
type SignPlugin interface {
	Plugin
	SignPod(ctx context.Context, pod *v1.Pod) ([]SignFragment, *Status)
}

// LessFunc orders two queue entities: true if a should be scheduled before
// b. An entity is a pod or, with GenericWorkload, a pod group (entity.go).
type LessFunc func(a, b QueuedEntity) bool

// QueueSortPlugin orders activeQ. Exactly one is enabled, and all profiles
// must use the same one, since they share one queue. It orders pods and
// pod groups alike: a group stands in the queue as one entity, with its
// PodGroup's priority.
type QueueSortPlugin interface {
	Plugin
	Less(a, b QueuedEntity) bool
}

// PreFilterExtensions let preemption ask "what if this pod were added to /
// removed from the node" without recomputing PreFilter: AddPod and RemovePod
// update the plugin's own CycleState data incrementally. They return Success
// or Error.
type PreFilterExtensions interface {
	AddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podInfoToAdd *PodInfo,
		nodeInfo *NodeInfo) *Status
	RemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podInfoToRemove *PodInfo,
		nodeInfo *NodeInfo) *Status
}

// PreFilterPlugin is called once per scheduling cycle, before Filter, with
// all nodes of the snapshot. It computes per-pod data into CycleState and may
// narrow the candidate nodes with a PreFilterResult (results of several
// plugins are intersected).
//
// Codes: Success; Skip (this plugin's Filter is not called for this pod);
// Unschedulable or UnschedulableAndUnresolvable (the pod fits nowhere: Filter
// is not run, every node gets this status, FailedScheduling states the
// message once, and PostFilter still runs); Error (the cycle fails).
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) (*PreFilterResult, *Status)
	// PreFilterExtensions returns nil if the plugin keeps no state that
	// depends on the pods of a node.
	PreFilterExtensions() PreFilterExtensions
}

// FilterPlugin decides whether the pod can run on one node. It is called for
// many nodes in parallel, with the NodeInfo from the cycle's snapshot; it must
// use that NodeInfo and CycleState only.
//
// Codes: Success (the node fits); Unschedulable (it may fit after preemption
// or a cluster change); UnschedulableAndUnresolvable (preemption on this node
// cannot help); Error (the whole cycle fails). Reasons are what
// FailedScheduling reports, counted per node: a node is reported by its first
// failing plugin, since filtering stops there.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status
}

// PostFilterPlugin is called only when no node passed Filter, with every
// node's status. It may make room (preemption evicts victims and nominates a
// node).
//
// Codes: Success (the pod may fit on result.NominatedNodeName next time; the
// pod is still requeued as unschedulable); Unschedulable (could not help: the
// next plugin is asked); UnschedulableAndUnresolvable (could not help, and no
// later plugin is asked); Error (nor is one after an error). The message of
// the status that ends the run (or, when every plugin returned
// Unschedulable, all their reasons) is appended to FailedScheduling.
type PostFilterPlugin interface {
	Plugin
	PostFilter(ctx context.Context, state *CycleState, pod *v1.Pod,
		filteredNodeStatusMap *NodeToStatus) (*PostFilterResult, *Status)
}

// PreScorePlugin is called once per cycle with the nodes that passed Filter,
// before Score, to precompute what Score needs.
//
// Codes: Success; Skip (this plugin's Score is not called for this pod);
// Error (the cycle fails).
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) *Status
}

// ScoreExtensions turn raw scores into the range [MinNodeScore, MaxNodeScore].
type ScoreExtensions interface {
	// NormalizeScore is called once per plugin after all nodes were scored,
	// and may rewrite scores in place; it must not keep scores, whose array
	// serves a later cycle. Success or Error.
	NormalizeScore(ctx context.Context, state *CycleState, pod *v1.Pod, scores NodeScoreList) *Status
}

// ScorePlugin ranks one feasible node. It is called for many nodes in
// parallel. After NormalizeScore each score must be within [0, 100]; the
// framework multiplies it by the plugin's weight and sums over plugins. The
// node with the highest total wins (see SortedScoredNodes for ties).
//
// Codes: Success or Error (the cycle fails).
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) (int64, *Status)
	// ScoreExtensions returns nil if scores need no normalisation.
	ScoreExtensions() ScoreExtensions
}

// The pod-group extension points (chapter 19, GenericWorkload). A pod
// group's cycle tries each member through PreFilter … Score as in a pod's
// cycle, but places it in the snapshot only; these extension points judge
// the group as a whole. Their runners live in run_podgroup.go.

// PlacementGeneratePlugin proposes the placements a pod group's cycle tries:
// sets of nodes, each of which must hold the whole group. With none
// enabled, the cycle tries one placement with every node of the parent
// placement. TopologyPlacementGenerator (TopologyAwareWorkloadScheduling)
// makes one per value of the PodGroup's topology key.
//
// Codes: Success (the placements; none makes the group unschedulable);
// Error (the cycle fails).
type PlacementGeneratePlugin interface {
	Plugin
	GeneratePlacements(ctx context.Context, state *CycleState, podGroup *PodGroupInfo,
		parent *Placement) ([]*Placement, *Status)
}

// PlacementFeasiblePlugin says whether the group can still meet its
// constraints, before any member is tried and after each one: the cycle
// stops trying members once it cannot. Only GangScheduling implements it,
// and the framework runs it whenever it is in the profile (it is not
// configured per extension point).
//
// Codes: Success (the constraints are met; the group may be bound even if
// later members fail); Wait (not met yet, may be with more members: a
// cycle that ends here fails the group); Unschedulable (cannot be met:
// the cycle stops trying members); Error (the cycle fails). The reason is
// what the group's message starts with: "minCount (3) cannot be satisfied:
// 1 scheduled, 1 remaining".
type PlacementFeasiblePlugin interface {
	Plugin
	PlacementFeasible(ctx context.Context, state *CycleState, podGroup *PodGroupInfo,
		progress PlacementProgress) *Status
}

// PlacementScorePlugin ranks the placements on which the whole group was
// placed; the one with the highest weighted total wins (ties at random).
// It is called only when more than one placement is feasible.
//
// Codes: Success or Error (the cycle fails).
type PlacementScorePlugin interface {
	Plugin
	ScorePlacement(ctx context.Context, state *CycleState, podGroup *PodGroupInfo,
		assignments *PodGroupAssignments) (int64, *Status)
	// PlacementScoreExtensions returns nil if scores need no normalisation.
	PlacementScoreExtensions() PlacementScoreExtensions
}

// PlacementScoreExtensions turn a PlacementScore plugin's raw scores into
// [MinNodeScore, MaxNodeScore], in place. Success or Error.
type PlacementScoreExtensions interface {
	NormalizePlacementScore(ctx context.Context, state *CycleState, podGroup *PodGroupInfo,
		scores []PlacementScore) *Status
}

// PodGroupPostFilterPlugin is called when a pod group's cycle found it
// unschedulable (not when it failed with an error), to make room for the
// whole group, as PostFilter does for one pod. schedule re-runs the
// group's placement on the snapshot as it stands: a plugin removes
// victims from the snapshot and asks again.
//
// Codes: Success (room is being made: the members get the nominated nodes
// of the result and the group is retried; no later plugin is asked);
// Unschedulable (could not help: the next plugin is asked, and the reasons
// of all are appended to the group's message); UnschedulableAndUnresolvable
// (could not help, and no later plugin is asked); Error.
type PodGroupPostFilterPlugin interface {
	Plugin
	PodGroupPostFilter(ctx context.Context, state *CycleState, podGroup *PodGroupInfo,
		schedule PodGroupSchedulingFunc) (*PodGroupPostFilterResult, *Status)
}

// ReservePlugin is told that the pod was assumed on nodeName, so it can
// reserve what it manages (volumes, devices) before binding finishes.
//
// Reserve codes: Success, or anything else to fail the cycle, in which case
// Unreserve is called on every Reserve plugin, in reverse order.
// Unreserve is also called when a later step (Permit, PreBind, Bind) fails.
// Unreserve must be idempotent and must not fail.
type ReservePlugin interface {
	Plugin
	Reserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
	Unreserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string)
}

// PermitPlugin is the last say before binding.
//
// Codes: Success (approve); Wait with a timeout (the pod waits in the binding
// cycle until every waiting plugin allows it, any plugin rejects it, or the
// timeout passes, which rejects it); Unschedulable or
// UnschedulableAndUnresolvable (reject: Unreserve and requeue); Error.
// Allow and Reject come from other goroutines through Handle.GetWaitingPod.
type PermitPlugin interface {
	Plugin
	Permit(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) (*Status, time.Duration)
}

// PreBindPlugin runs in the binding cycle before Bind (to attach volumes,
// say).
//
// PreBindPreFlight is asked first, at the start of the binding cycle, and
// must be cheap and do nothing: Success (PreBind has work to do for this
// pod), Skip (nothing to do: PreBind is not called), or Error (abort).
// When some plugin will work, the scheduler first tells the world where the
// pod is going by setting status.nominatedNodeName.
//
// PreBind returns Success, or anything else to abort binding: Unreserve,
// forget the assumed pod, requeue.
type PreBindPlugin interface {
	Plugin
	PreBindPreFlight(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
	PreBind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
}

// BindPlugin writes the decision to the apiserver. Bind plugins are tried in
// order until one does not return Skip.
//
// Codes: Success (bound); Skip (not mine, try the next); anything else fails
// binding: Unreserve, forget the assumed pod, requeue.
type BindPlugin interface {
	Plugin
	Bind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
}

// PostBindPlugin is informed after a successful bind (for cleanup or
// bookkeeping). It cannot fail.
type PostBindPlugin interface {
	Plugin
	PostBind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string)
}

// EnqueueExtensions is implemented by plugins that can reject pods (PreEnqueue,
// PreFilter, Filter, Reserve, Permit). EventsToRegister lists the cluster
// events that may make a pod this plugin rejected schedulable, each with an
// optional hint that decides per pod. A rejecting plugin that does not
// implement it is treated as interested in every event.
//
// Register too little and pods stay stuck until the five-minute flush; too
// much and the scheduler retries pods in vain.
type EnqueueExtensions interface {
	Plugin
	EventsToRegister(ctx context.Context) ([]ClusterEventWithHint, error)
}

// NodeInfoLister reads NodeInfos from the cycle's snapshot.
type NodeInfoLister interface {
	// List returns every node, in the snapshot's stable order.
	List() ([]*NodeInfo, error)
	// HavePodsWithAffinityList returns the nodes that have pods with affinity.
	HavePodsWithAffinityList() ([]*NodeInfo, error)
	// HavePodsWithAffinityScoringTermsList returns the nodes that have pods
	// with required affinity or preferred (anti-)affinity: the terms by which
	// existing pods score an incoming one. Pods whose only terms are required
	// anti-affinity (one replica per node, the common case) only filter.
	HavePodsWithAffinityScoringTermsList() ([]*NodeInfo, error)
	// HavePodsWithRequiredAntiAffinityList returns the nodes that have pods
	// with required anti-affinity.
	HavePodsWithRequiredAntiAffinityList() ([]*NodeInfo, error)
	// RequiredAntiAffinityTermCounts returns the required anti-affinity terms
	// of the pods on the nodes, one entry per distinct term (two terms are
	// the same when they select the same pods with the same topology key),
	// each with how many pods' terms it stands for in each domain. It lets a
	// plugin match each distinct term once instead of each pod's. The map
	// and its entries belong to the snapshot: read them, never modify them.
	RequiredAntiAffinityTermCounts() map[string]*TermCounts
	// Get returns one node's NodeInfo, or an error if it is not in the snapshot.
	Get(nodeName string) (*NodeInfo, error)
}

// StorageInfoLister answers what the snapshot knows about volumes in use.
type StorageInfoLister interface {
	// IsPVCUsedByPods reports whether any pod on a node (bound or assumed)
	// names the claim key ("namespace/name", see PVCKey) in its
	// spec.volumes.
	IsPVCUsedByPods(key string) bool
}

// SharedLister is the snapshot as plugins see it: the nodes with their pods,
// the claims in use and, with GenericWorkload, the pod groups. During a
// pod-group cycle it counts the members placed so far as assumed: on their
// nodes, and in their group's state.
type SharedLister interface {
	NodeInfos() NodeInfoLister
	StorageInfos() StorageInfoLister
	// PodGroups reads the PodGroup objects as the cycle started with them.
	// Without GenericWorkload there are none, and Get reports an error.
	PodGroups() PodGroupLister
	// PodGroupStates reads each pod group's pods, as the cycle sees them.
	// Without GenericWorkload there are none, and Get reports an error.
	PodGroupStates() PodGroupStateLister
}

// MutableSnapshotSharedLister is the snapshot as a PodGroupPostFilter
// plugin may change it, to ask whether its group would fit without some
// pods: within a session, it removes pods from nodes and adds them back,
// and asks the group's algorithm again (PodGroupSchedulingFunc), which
// reads the snapshot so changed.
//
// Contract: only a PodGroupPostFilter plugin uses it, from its own
// goroutine, and calls EndMutations before it returns (defer it after a
// successful StartMutations). Sessions do not nest. AddPod and RemovePod
// are refused outside a session, and while the session has pods assumed
// (the group's algorithm undoes its placements before it returns). What
// the session changed is gone at EndMutations: nothing to undo by hand.
type MutableSnapshotSharedLister interface {
	SharedLister
	// StartMutations starts a session: the snapshot is backed up and
	// changes from here on apply to copies.
	StartMutations() error
	// EndMutations ends the session: the snapshot is again exactly as it
	// was at StartMutations.
	EndMutations() error
	// AddPod puts pod on the node nodeName (a copy naming the node, if the
	// pod names another or none), as if bound there.
	AddPod(podInfo *PodInfo, nodeName string) error
	// RemovePod takes the pod with pod's UID off the node nodeName.
	RemovePod(logger klog.Logger, pod *v1.Pod, nodeName string) error
}

// WaitingPod is a pod that a Permit plugin asked to wait.
type WaitingPod interface {
	// GetPod returns the waiting pod.
	GetPod() *v1.Pod
	// GetPendingPlugins returns the plugins that have not yet allowed it.
	GetPendingPlugins() []string
	// Allow records that plugin allows the pod; when the last pending plugin
	// allows it, binding proceeds.
	Allow(pluginName string)
	// Reject rejects the pod: binding is aborted and the pod requeued.
	Reject(pluginName, msg string)
	// Preempt aborts the wait with an Error (the pod was chosen as a
	// preemption victim): it is forgotten and requeued instead of being
	// deleted through the apiserver. It reports false if the wait had
	// already ended.
	Preempt(pluginName, msg string) bool
}

// Handle is what a plugin factory receives: read access to the cycle's
// snapshot, a client for the apiserver, an event recorder, and the waiting pods.
type Handle interface {
	// SnapshotSharedLister is the snapshot of the current cycle. It is the
	// same object every cycle, refreshed before PreFilter.
	SnapshotSharedLister() SharedLister
	// MutableSnapshotSharedLister is the same snapshot, for a
	// PodGroupPostFilter plugin to change within a session (see
	// MutableSnapshotSharedLister); nil if the profile's snapshot cannot
	// be changed (a test's own SharedLister).
	MutableSnapshotSharedLister() MutableSnapshotSharedLister
	// ClientSet talks to the apiserver, for writing (Bind and the like),
	// not for reading cluster state during a cycle.
	ClientSet() kubernetes.Interface
	// EventRecorder records events as this profile's scheduler.
	EventRecorder() events.EventRecorder
	// SharedInformerFactory gives listers for what plugins need beyond the
	// snapshot (namespaces, services, replica sets...). Ask for listers in
	// the factory function: informers requested later are not started.
	SharedInformerFactory() informers.SharedInformerFactory
	// PodGroupManager is what the scheduler knows of pod groups, live (the
	// cache's): the PodGroups and each group's pods. nil without
	// GenericWorkload. A cycle decides on the snapshot's copy instead
	// (SnapshotSharedLister).
	PodGroupManager() PodGroupManager
	// SharedDRAManager gives the claims, slices and classes of dynamic
	// resource allocation, shared by every profile (nil when the
	// scheduler was built without it).
	SharedDRAManager() SharedDRAManager
	// GetWaitingPod returns the waiting pod with uid, or nil.
	GetWaitingPod(uid types.UID) WaitingPod
	// IterateOverWaitingPods calls fn on every waiting pod.
	IterateOverWaitingPods(fn func(WaitingPod))
	// RejectWaitingPod rejects the waiting pod with uid, if there is one,
	// and reports whether there was.
	RejectWaitingPod(uid types.UID) bool
	// Parallelizer runs work over nodes with the configured parallelism.
	Parallelizer() Parallelizer
	// Extenders are the configured HTTP extenders, ignorable ones last
	// (preemption asks them to trim its candidates).
	Extenders() []Extender
	// Metrics records what plugins report to Prometheus (preemption's
	// attempts and victims); nil records nothing, and its methods still
	// work.
	Metrics() *metrics.Metrics
	// FeatureGates are the scheduler's feature gates, for a plugin's
	// factory to read when the plugin behaves differently under a gate, as
	// kube-scheduler hands its plugins their features.
	FeatureGates() features.Gates

	// NominatedPodsForNode returns the pods nominated to a node (see
	// PodNominator).
	NominatedPodsForNode(nodeName string) []*PodInfo
	// Activate moves pods to activeQ (see PodActivator).
	Activate(logger klog.Logger, pods map[string]*v1.Pod)
	// RunFilterPluginsWithNominatedPods runs Filter on a node with the
	// nominated pods of at least the pod's priority counted on it: what
	// preemption asks of a node after removing victims.
	RunFilterPluginsWithNominatedPods(ctx context.Context, state *CycleState, pod *v1.Pod,
		nodeInfo *NodeInfo) *Status
	// RunPreFilterExtensionAddPod and RunPreFilterExtensionRemovePod update
	// the PreFilter plugins' CycleState for a pod added to or removed from
	// a node; preemption uses them on cloned states.
	RunPreFilterExtensionAddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod,
		podInfoToAdd *PodInfo, nodeInfo *NodeInfo) *Status
	RunPreFilterExtensionRemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod,
		podInfoToRemove *PodInfo, nodeInfo *NodeInfo) *Status
	// RunReservePluginsReserve and RunReservePluginsUnreserve run the
	// Reserve plugins: pod-group preemption reserves each member it places
	// while it checks whether a victim can stay, and unreserves it after.
	RunReservePluginsReserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
	RunReservePluginsUnreserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string)
}
