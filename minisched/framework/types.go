// This file is the types plugins and the scheduler pass each other: a pod
// as the scheduler sees it (PodInfo, QueuedPodInfo), the scores of a node,
// the results of PreFilter and PostFilter, each node's status, and the
// Diagnosis and FitError of a failed attempt.

package framework

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// PodInfo is a pod plus what the scheduler derives from it once, so plugins do
// not recompute it per node.
type PodInfo struct {
	Pod *v1.Pod
	// Requests are the pod's effective requests: the larger of the sum of its
	// regular (and sidecar) containers and its largest init container, plus
	// overhead, as kubelet admits it (computed by k8s.io/component-helpers).
	Requests Resource
	// NonZeroRequests are Requests with cpu and memory defaulted for
	// containers that request none (100m and 200Mi, as kube-scheduler does),
	// used by scoring so that best-effort pods still spread.
	NonZeroRequests Resource
	// HasAffinity says the pod has pod affinity or anti-affinity of any kind,
	// and HasRequiredAntiAffinity that it has required anti-affinity; NodeInfo
	// keeps such pods in separate lists for InterPodAffinity.
	HasAffinity             bool
	HasRequiredAntiAffinity bool
	// PodAffinityTerms are the pod's (anti-)affinity terms, parsed once.
	PodAffinityTerms
}

// NewPodInfo computes a PodInfo for pod. The pod is not copied: callers hand
// in objects they will not mutate.
func NewPodInfo(pod *v1.Pod) *PodInfo {
	pi := &PodInfo{Pod: pod}
	pi.Requests, pi.NonZeroRequests = computePodResourceRequest(pod)
	if a := pod.Spec.Affinity; a != nil {
		pi.HasAffinity = a.PodAffinity != nil || a.PodAntiAffinity != nil
		pi.HasRequiredAntiAffinity = a.PodAntiAffinity != nil &&
			len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
		pi.PodAffinityTerms = ParsePodAffinityTerms(pod)
	}
	return pi
}

// WithPod returns a copy of pi for pod, which must differ from pi.Pod only
// where nothing pi derived from it lies: the pod the scheduler assumes on a
// node is a copy with spec.nodeName set, and its requests and terms are the
// ones already computed. The copy shares the terms' slices with pi: nothing
// rewrites a PodInfo's terms in place.
func (pi *PodInfo) WithPod(pod *v1.Pod) *PodInfo {
	c := *pi
	c.Pod = pod
	return &c
}

// Default requests used for NonZeroRequests, as in kube-scheduler.
const (
	DefaultMilliCPURequest int64 = 100               // 0.1 core
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024 // 200 MiB
)

// podResourcesOptions are kube-scheduler v1.37's: pod-level resources and
// in-place resize (including pod-level resize, beta and on) are honoured.
func podResourcesOptions() resourcehelper.PodResourcesOptions {
	return resourcehelper.PodResourcesOptions{
		UseStatusResources: true,
		InPlacePodLevelResourcesVerticalScalingEnabled: true,
	}
}

// PodRequests returns the pod's effective requests, as NodeInfo counts them:
// the larger of its running containers (with sidecars) and its largest init
// container, plus overhead. Use it where the requests are all that is needed
// (queueing hints, event handlers); NewPodInfo computes them too.
func PodRequests(pod *v1.Pod) Resource {
	var res Resource
	res.Add(resourcehelper.PodRequests(pod, podResourcesOptions()))
	return res
}

// computePodResourceRequest returns the pod's effective requests and the same
// with cpu/memory defaults for containers that request none, as
// kube-scheduler v1.37 computes them.
func computePodResourceRequest(pod *v1.Pod) (Resource, Resource) {
	opts := podResourcesOptions()
	reqs := resourcehelper.PodRequests(pod, opts)
	var res Resource
	res.Add(reqs)

	nonZero := reqs
	if missing := nonMissingContainerRequests(reqs, resourcehelper.IsPodLevelRequestsSet(pod)); len(missing) > 0 &&
		ContainersMayLackRequests(pod) {
		opts.NonMissingContainerRequests = missing
		nonZero = resourcehelper.PodRequests(pod, opts)
	}
	var nz Resource
	nz.MilliCPU = nonZero.Cpu().MilliValue()
	nz.Memory = nonZero.Memory().Value()
	return res, nz
}

// ContainersMayLackRequests reports whether the defaults for a container
// without a cpu or memory request could change the pod's requests: false
// when every container, init containers included, requests both in its
// spec and the pod has no container statuses (whose resources the
// computation would read instead): then computing the requests with
// component-helpers' NonMissingContainerRequests gives what computing them
// without does, and the second computation can be left out.
func ContainersMayLackRequests(pod *v1.Pod) bool {
	if len(pod.Status.ContainerStatuses) > 0 || len(pod.Status.InitContainerStatuses) > 0 {
		return true
	}
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			reqs := list[i].Resources.Requests
			if _, ok := reqs[v1.ResourceCPU]; !ok {
				return true
			}
			if _, ok := reqs[v1.ResourceMemory]; !ok {
				return true
			}
		}
	}
	return false
}

// nonMissingContainerRequests are the defaults for containers without cpu or
// memory requests. With pod-level requests, only what the pod level leaves
// unset is defaulted.
func nonMissingContainerRequests(reqs v1.ResourceList, podLevelSet bool) v1.ResourceList {
	out := v1.ResourceList{}
	if _, ok := reqs[v1.ResourceCPU]; !podLevelSet || !ok {
		out[v1.ResourceCPU] = *resourceQuantityMilli(DefaultMilliCPURequest)
	}
	if _, ok := reqs[v1.ResourceMemory]; !podLevelSet || !ok {
		out[v1.ResourceMemory] = *resourceQuantity(DefaultMemoryRequest)
	}
	return out
}

// QueuedPodInfo is a pod as the scheduling queue holds it: the PodInfo plus
// the bookkeeping that drives ordering, backoff and requeueing
// (QueueingParams, entity.go). A pod in a pod group is held inside its
// group's QueuedPodGroupInfo, which is then the entity the queue orders.
type QueuedPodInfo struct {
	*PodInfo
	QueueingParams
	// PodSignature is the pod's signature for OpportunisticBatching, made
	// by its profile when the queue received or updated the pod (nil: the
	// pod is never batched). See SignPlugin.
	PodSignature PodSignature
}

// Key is the pod's UID: the queue and the cache key pods by UID, since a
// name can be reused by a new pod.
func (q *QueuedPodInfo) Key() string { return string(q.Pod.UID) }

// Priority is the pod's priority (0 if it has none).
func (q *QueuedPodInfo) Priority() int32 { return corev1helpers.PodPriority(q.Pod) }

// ForEachPod calls fn on the pod.
func (q *QueuedPodInfo) ForEachPod(fn func(*QueuedPodInfo) bool) { fn(q) }

// Size is 1.
func (q *QueuedPodInfo) Size() int { return 1 }

// DeepCopy copies the queue bookkeeping; the pod object itself is shared.
func (q *QueuedPodInfo) DeepCopy() *QueuedPodInfo {
	c := *q
	c.QueueingParams = q.QueueingParams.deepCopy()
	return &c
}

// NewQueuedPodInfo wraps pod for the queue with the given timestamp.
func NewQueuedPodInfo(pod *v1.Pod, now time.Time) *QueuedPodInfo {
	return &QueuedPodInfo{PodInfo: NewPodInfo(pod), QueueingParams: newQueueingParams(now)}
}

// PodKey returns "namespace/name", how messages and errors name a pod. The
// queue and the cache key pods by UID instead: a name can be reused by a new
// pod.
func PodKey(pod *v1.Pod) string {
	return pod.Namespace + "/" + pod.Name
}

// NodeScore is one node's score from one plugin, or the weighted total.
type NodeScore struct {
	Name  string
	Score int64
}

// NodeScoreList holds one plugin's scores for every node, in node order.
type NodeScoreList []NodeScore

// PluginScore is one plugin's (or extender's) weighted score for one node.
type PluginScore struct {
	Name  string
	Score int64
	// Raw is the score as the plugin gave it, before NormalizeScore and the
	// weight (an extender's: 0–10, before scaling and its weight). The
	// attempt record reads it, and OpportunisticBatching normalises stored
	// rankings again from it (kube-scheduler keeps plugins' raw scores in a
	// list of their own for that).
	Raw int64
}

// NodePluginScores is a node's scores from each plugin and their sum.
type NodePluginScores struct {
	Name       string
	Scores     []PluginScore
	TotalScore int64
	// Randomizer breaks ties between equal totals in SortedScoredNodes
	// (higher first). It is set only when an extender scored the node, as
	// kube-scheduler does; otherwise every node has 0.
	Randomizer int
}

// Score bounds, as in kube-scheduler. A Score plugin returns 0..MaxNodeScore
// after NormalizeScore; the framework checks it.
const (
	MinNodeScore  int64 = 0
	MaxNodeScore  int64 = 100
	MaxTotalScore int64 = 1<<63 - 1
)

// DefaultNormalizeScore rescales scores in place from [0, highest] to
// [0, maxPriority], in integer arithmetic, as kube-scheduler's helper does.
// With reverse, the highest raw score becomes 0 and a raw 0 becomes
// maxPriority (for plugins that count something bad, like untolerated
// taints). When every raw score is 0, scores stay 0, or all become
// maxPriority when reversed.
func DefaultNormalizeScore(maxPriority int64, reverse bool, scores NodeScoreList) {
	var highest int64
	for _, s := range scores {
		highest = max(highest, s.Score)
	}
	for i := range scores {
		switch {
		case highest == 0 && reverse:
			scores[i].Score = maxPriority
		case highest == 0:
		case reverse:
			scores[i].Score = maxPriority - maxPriority*scores[i].Score/highest
		default:
			scores[i].Score = maxPriority * scores[i].Score / highest
		}
	}
}

// PreFilterResult narrows the nodes that Filter will be run on. nil, or a
// result with nil NodeNames, means all nodes.
type PreFilterResult struct {
	NodeNames sets.Set[string]
}

// AllNodes reports whether the result does not narrow anything.
func (p *PreFilterResult) AllNodes() bool { return p == nil || p.NodeNames == nil }

// Merge intersects two results: a node must be allowed by both.
func (p *PreFilterResult) Merge(in *PreFilterResult) *PreFilterResult {
	if p.AllNodes() && in.AllNodes() {
		return nil
	}
	if p.AllNodes() {
		return &PreFilterResult{NodeNames: in.NodeNames.Clone()}
	}
	if in.AllNodes() {
		return &PreFilterResult{NodeNames: p.NodeNames.Clone()}
	}
	return &PreFilterResult{NodeNames: p.NodeNames.Intersection(in.NodeNames)}
}

// PostFilterResult is what a PostFilter (preemption) achieved: how the
// pod's nominated node changes.
type PostFilterResult struct {
	*NominatingInfo
	// Victims are the pods a preemption evicts on the nominated node. Only
	// the attempt record reads them; kube-scheduler's result has no such
	// field.
	Victims []*v1.Pod
}

// NewPostFilterResultWithNominatedNode is a result that sets the pod's
// nominated node to name ("" clears it).
func NewPostFilterResultWithNominatedNode(name string) *PostFilterResult {
	return &PostFilterResult{NominatingInfo: &NominatingInfo{NominatedNodeName: name, NominatingMode: ModeOverride}}
}

// NominatingMode says what to do with a pod's nominated node.
type NominatingMode int

const (
	// ModeNoop keeps the nomination the pod's status already has.
	ModeNoop NominatingMode = iota
	// ModeOverride replaces it with NominatingInfo.NominatedNodeName (""
	// clears it).
	ModeOverride
)

// NominatingInfo is a change to a pod's nominated node: the node a
// preemption made room on, or "" to forget an earlier one.
type NominatingInfo struct {
	NominatedNodeName string
	NominatingMode    NominatingMode
}

// Mode is the info's mode; a nil info means ModeNoop.
func (n *NominatingInfo) Mode() NominatingMode {
	if n == nil {
		return ModeNoop
	}
	return n.NominatingMode
}

// NodeToStatus records why Filter rejected each node. Nodes never evaluated
// explicitly (those a PreFilterResult excluded, or all of them when PreFilter
// failed) share the AbsentNodesStatus.
type NodeToStatus struct {
	explicit map[string]*Status
	absent   *Status
}

// NewNodeToStatus returns an empty map whose absent nodes are
// UnschedulableAndUnresolvable with no reason, as in kube-scheduler.
func NewNodeToStatus() *NodeToStatus {
	return &NodeToStatus{explicit: map[string]*Status{}, absent: NewStatus(UnschedulableAndUnresolvable)}
}

// Get returns the node's status: its own, or the absent-nodes status.
func (m *NodeToStatus) Get(nodeName string) *Status {
	if s, ok := m.explicit[nodeName]; ok {
		return s
	}
	return m.absent
}

// Set records a node's status.
func (m *NodeToStatus) Set(nodeName string, s *Status) { m.explicit[nodeName] = s }

// Len counts the nodes with their own status.
func (m *NodeToStatus) Len() int { return len(m.explicit) }

// AbsentNodesStatus is the status of every node without its own.
func (m *NodeToStatus) AbsentNodesStatus() *Status { return m.absent }

// SetAbsentNodesStatus sets the status of every node without its own.
func (m *NodeToStatus) SetAbsentNodesStatus(s *Status) { m.absent = s }

// NodesForStatusCode returns the nodes of lister whose status has code:
// those with their own status of that code, and every other node if the
// absent-nodes status has it. Preemption looks for victims only on nodes
// rejected as Unschedulable (not UnschedulableAndUnresolvable).
func (m *NodeToStatus) NodesForStatusCode(lister NodeInfoLister, code Code) ([]*NodeInfo, error) {
	var out []*NodeInfo
	if m.absent.Code() == code {
		all, err := lister.List()
		if err != nil {
			return nil, err
		}
		for _, ni := range all {
			if m.Get(ni.Node().Name).Code() == code {
				out = append(out, ni)
			}
		}
		return out, nil
	}
	for name, s := range m.explicit {
		if s.Code() != code {
			continue
		}
		if ni, err := lister.Get(name); err == nil { // a node gone from the snapshot is no candidate
			out = append(out, ni)
		}
	}
	return out, nil
}

// ForEachExplicitNode calls fn for every node with its own status.
func (m *NodeToStatus) ForEachExplicitNode(fn func(nodeName string, s *Status)) {
	for n, s := range m.explicit {
		fn(n, s)
	}
}

// Diagnosis explains a failed scheduling attempt: which nodes were rejected
// for what, and which plugins did the rejecting.
type Diagnosis struct {
	NodeToStatus *NodeToStatus
	// UnschedulablePlugins rejected the pod on at least one node (or in
	// PreFilter). The queue uses them to decide which events matter.
	UnschedulablePlugins sets.Set[string]
	// PendingPlugins returned Pending.
	PendingPlugins sets.Set[string]
	// PreFilterMsg is the message of a PreFilter rejection (a plugin's, or
	// that their results left no node); when set, every node failed for the
	// same reason and the message stands alone.
	PreFilterMsg string
	// PostFilterMsg is what PostFilter said when it could not help.
	PostFilterMsg string
}

// NewDiagnosis returns an empty Diagnosis.
func NewDiagnosis() Diagnosis {
	return Diagnosis{
		NodeToStatus:         NewNodeToStatus(),
		UnschedulablePlugins: sets.New[string](),
		PendingPlugins:       sets.New[string](),
	}
}

// AddPluginStatus records that status (with its plugin) rejected the pod.
func (d *Diagnosis) AddPluginStatus(s *Status) {
	if s.Plugin() == "" {
		return
	}
	if s.IsRejected() {
		d.UnschedulablePlugins.Insert(s.Plugin())
	}
	if s.Code() == Pending {
		d.PendingPlugins.Insert(s.Plugin())
	}
}

// FitError says that no node fits the pod. Its message is kube-scheduler's:
// "0/N nodes are available: <count> <reason>, ...", reasons counted over nodes
// and sorted, then the PostFilter message.
type FitError struct {
	Pod         *v1.Pod
	NumAllNodes int
	Diagnosis   Diagnosis
}

// NoNodeAvailableMsg is the start of every FitError message.
const NoNodeAvailableMsg = "0/%v nodes are available"

// Error renders the message exactly as kube-scheduler does.
func (f *FitError) Error() string {
	msg := fmt.Sprintf(NoNodeAvailableMsg+":", f.NumAllNodes)
	if f.Diagnosis.PreFilterMsg != "" {
		// A PreFilter rejection applies to every node: say it once.
		msg += fmt.Sprintf(" %v.", f.Diagnosis.PreFilterMsg)
	} else if hist := reasonHistogram(f.Diagnosis.NodeToStatus, f.NumAllNodes); len(hist) > 0 {
		msg += fmt.Sprintf(" %v.", joinSorted(hist))
	}
	// PostFilter's message is appended as it is: it brings its own period
	// when it has one ("preemption: found a potential placement ..." has none).
	if f.Diagnosis.PostFilterMsg != "" {
		msg += fmt.Sprintf(" %v", f.Diagnosis.PostFilterMsg)
	}
	return msg
}

// reasonHistogram counts each reason over all nodes: "3 Insufficient cpu".
// Nodes without their own status count with the absent-nodes reasons.
func reasonHistogram(m *NodeToStatus, numAllNodes int) []string {
	counts := map[string]int{}
	m.ForEachExplicitNode(func(_ string, s *Status) {
		for _, r := range s.Reasons() {
			counts[r]++
		}
	})
	if m.Len() < numAllNodes {
		for _, r := range m.AbsentNodesStatus().Reasons() {
			counts[r] += numAllNodes - m.Len()
		}
	}
	out := make([]string, 0, len(counts))
	for r, n := range counts {
		out = append(out, fmt.Sprintf("%v %v", n, r))
	}
	return out
}

func joinSorted(items []string) string {
	return joinStrings(sets.List(sets.New(items...)), ", ")
}

func joinStrings(items []string, sep string) string { return strings.Join(items, sep) }
