// This file is how cluster changes wake pods up: the ClusterEvents (a
// resource and an action), the queueing hints with which a plugin decides
// per pod, and the helpers that turn a node's or a pod's update into the
// actions it stands for.

package framework

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/attempt"
)

// EventResource is the kind of object a ClusterEvent is about.
type EventResource string

// The resources the scheduler watches.
const (
	// Pod is an assigned pod (one bound to a node) being added, updated or
	// deleted: it changes what is on a node.
	Pod EventResource = "Pod"
	// UnscheduledPod is the pending pod itself being updated (its labels,
	// requests, tolerations, scheduling gates, or the claims generated for
	// it); with GenericWorkload, also a pending pod being added
	// (UnscheduledPodAdd).
	UnscheduledPod EventResource = "UnscheduledPod"
	// Node is a node being added, updated or deleted.
	Node EventResource = "Node"
	// The storage objects the volume plugins read. Their events carry Add,
	// Update (every Update bit at once: no finer split) or Delete.
	PersistentVolume      EventResource = "PersistentVolume"
	PersistentVolumeClaim EventResource = "PersistentVolumeClaim"
	StorageClass          EventResource = "StorageClass"
	CSINode               EventResource = "CSINode"
	CSIDriver             EventResource = "CSIDriver"
	CSIStorageCapacity    EventResource = "CSIStorageCapacity"
	VolumeAttachment      EventResource = "VolumeAttachment"
	// The objects of dynamic resource allocation, named as kube-scheduler
	// names them (with their API group), so that event labels
	// ("resource.k8s.io/ResourceClaimAdd") match its metrics. Claims come
	// from the scheduler's assume cache, slices from the tracker that
	// applies DeviceTaintRules (a rule's change arrives as a slice Update).
	ResourceClaim EventResource = "resource.k8s.io/ResourceClaim"
	ResourceSlice EventResource = "resource.k8s.io/ResourceSlice"
	DeviceClass   EventResource = "resource.k8s.io/DeviceClass"
	// PodGroup is a PodGroup (GenericWorkload, chapter 19) being added,
	// updated or deleted, named with its API group as kube-scheduler names
	// it ("scheduling.k8s.io/PodGroupAdd" in its metrics).
	PodGroup EventResource = "scheduling.k8s.io/PodGroup"
	// WildCard matches every resource.
	WildCard EventResource = "*"
)

// ActionType is a bit set of what happened to the resource. Node updates are
// split by what changed, so a plugin can ask for exactly the changes that can
// help a pod it rejected.
type ActionType int64

// The action types. Update is the union of every Update* bit.
const (
	Add ActionType = 1 << iota
	Delete
	// UpdateNodeAllocatable: the node's allocatable resources changed.
	UpdateNodeAllocatable
	// UpdateNodeLabel: the node's labels changed.
	UpdateNodeLabel
	// UpdateNodeTaint: the node's taints changed.
	UpdateNodeTaint
	// UpdateNodeCondition: the node's conditions changed.
	UpdateNodeCondition
	// UpdateNodeAnnotation: the node's annotations changed.
	UpdateNodeAnnotation
	// UpdateNodeUnschedulable: spec.unschedulable changed (cordon/uncordon).
	UpdateNodeUnschedulable
	// UpdateNodeDeclaredFeature: status.declaredFeatures changed.
	UpdateNodeDeclaredFeature
	// UpdatePodLabel: a pod's labels changed.
	UpdatePodLabel
	// UpdatePodScaleDown: a pod's resource requests went down.
	UpdatePodScaleDown
	// UpdatePodToleration: a pod's tolerations changed.
	UpdatePodToleration
	// UpdatePodSchedulingGatesEliminated: a pod's last scheduling gate was removed.
	UpdatePodSchedulingGatesEliminated
	// UpdatePodGeneratedResourceClaim: the claims generated for a pod
	// (status.resourceClaimStatuses, status.extendedResourceClaimStatus)
	// changed, as when the resourceclaim controller names the claim it
	// created from a template.
	UpdatePodGeneratedResourceClaim
	// UpdatePodOther: any other change to a pod's spec or metadata.
	UpdatePodOther

	// All is every action.
	All ActionType = 1<<iota - 1
	// Update is every Update* action.
	Update = All &^ (Add | Delete)
)

var actionNames = []string{"Add", "Delete",
	"UpdateNodeAllocatable", "UpdateNodeLabel", "UpdateNodeTaint", "UpdateNodeCondition", "UpdateNodeAnnotation",
	"UpdateNodeUnschedulable", "UpdateNodeDeclaredFeature",
	"UpdatePodLabel", "UpdatePodScaleDown", "UpdatePodToleration", "UpdatePodSchedulingGatesEliminated",
	"UpdatePodGeneratedResourceClaim", "UpdatePodOther"}

// String names the bits: "Add|UpdateNodeTaint", "All" or "Update".
func (a ActionType) String() string {
	switch a {
	case All:
		return "All"
	case Update:
		return "Update"
	}
	var parts []string
	for i, n := range actionNames {
		if a&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("ActionType(%d)", int64(a))
	}
	return strings.Join(parts, "|")
}

// ClusterEvent is something that happened in the cluster: a resource and an
// action. A plugin registers the events that may make a pod it rejected
// schedulable; the queue moves such pods when a matching event happens.
type ClusterEvent struct {
	Resource   EventResource
	ActionType ActionType
	// Label names the event in logs and metrics ("NodeAdd").
	Label string
}

// Match reports whether the incoming event e is covered by the registered
// event r (same resource or wildcard, and an overlapping action).
func (r ClusterEvent) Match(e ClusterEvent) bool {
	return (r.Resource == WildCard || r.Resource == e.Resource) && r.ActionType&e.ActionType != 0
}

// String is the event's label, or resource/action.
func (r ClusterEvent) String() string {
	if r.Label != "" {
		return r.Label
	}
	return fmt.Sprintf("%s/%s", r.Resource, r.ActionType)
}

// Frequently used events.
var (
	NodeAdd              = ClusterEvent{Resource: Node, ActionType: Add, Label: "NodeAdd"}
	NodeDelete           = ClusterEvent{Resource: Node, ActionType: Delete, Label: "NodeDelete"}
	AssignedPodAdd       = ClusterEvent{Resource: Pod, ActionType: Add, Label: "AssignedPodAdd"}
	AssignedPodDelete    = ClusterEvent{Resource: Pod, ActionType: Delete, Label: "AssignedPodDelete"}
	UnschedulableTimeout = ClusterEvent{Resource: WildCard, ActionType: All, Label: "UnschedulableTimeout"}
	// ForceActivate is recorded for a pod in flight that a plugin asked to
	// activate (Handle.Activate): when the pod comes back it is retried
	// after backoff, whatever rejected it.
	ForceActivate = ClusterEvent{Resource: WildCard, ActionType: All, Label: "ForceActivate"}
	// UnscheduledPodAdd is a pending pod being added. The queue sends it
	// only with GenericWorkload, as kube-scheduler does: a new member may
	// complete a gang whose other members GangScheduling holds back.
	UnscheduledPodAdd = ClusterEvent{Resource: UnscheduledPod, ActionType: Add, Label: "UnscheduledPodAdd"}
)

// QueueingHint is a plugin's verdict on whether an event may make a pod it
// rejected schedulable.
type QueueingHint int

const (
	// QueueSkip: this event cannot help the pod; leave it where it is.
	QueueSkip QueueingHint = iota
	// Queue: this event may help; retry the pod (after its backoff, or at
	// once when the plugin had answered Pending).
	Queue
)

// String names the hint.
func (h QueueingHint) String() string {
	if h == Queue {
		return "Queue"
	}
	return "QueueSkip"
}

// QueueingHintFn decides, for one pod and one event, whether to retry the pod.
// oldObj and newObj are the event's objects (nil where they do not apply:
// oldObj for adds, newObj for deletes). An error is treated as Queue, so a
// buggy hint costs a retry, never a stuck pod.
type QueueingHintFn func(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (QueueingHint, error)

// ClusterEventWithHint is one registration of EnqueueExtensions: an event
// and, optionally, a hint that filters it per pod. A nil hint means Queue.
type ClusterEventWithHint struct {
	Event          ClusterEvent
	QueueingHintFn QueueingHintFn
}

// NodeUpdateEvents lists what changed between two versions of a node, one
// ClusterEvent per kind of change. It returns nothing when no field the
// scheduler cares about changed (a heartbeat, say).
func NodeUpdateEvents(oldNode, newNode *v1.Node) []ClusterEvent {
	var events []ClusterEvent
	add := func(a ActionType, label string) {
		events = append(events, ClusterEvent{Resource: Node, ActionType: a, Label: label})
	}
	if !equality.Semantic.DeepEqual(oldNode.Status.Allocatable, newNode.Status.Allocatable) {
		add(UpdateNodeAllocatable, "NodeAllocatableChange")
	}
	if !equality.Semantic.DeepEqual(oldNode.Labels, newNode.Labels) {
		add(UpdateNodeLabel, "NodeLabelChange")
	}
	if !equality.Semantic.DeepEqual(oldNode.Spec.Taints, newNode.Spec.Taints) {
		add(UpdateNodeTaint, "NodeTaintChange")
	}
	if oldNode.Spec.Unschedulable != newNode.Spec.Unschedulable {
		add(UpdateNodeUnschedulable, "NodeSpecUnschedulableChange")
	}
	if !nodeConditionsEqual(oldNode.Status.Conditions, newNode.Status.Conditions) {
		add(UpdateNodeCondition, "NodeConditionChange")
	}
	if !equality.Semantic.DeepEqual(oldNode.Annotations, newNode.Annotations) {
		add(UpdateNodeAnnotation, "NodeAnnotationChange")
	}
	if !slices.Equal(oldNode.Status.DeclaredFeatures, newNode.Status.DeclaredFeatures) {
		add(UpdateNodeDeclaredFeature, "NodeDeclaredFeatureChange")
	}
	return events
}

// nodeConditionsEqual compares condition types and statuses only: heartbeat
// timestamps change every few seconds and must not trigger requeues.
func nodeConditionsEqual(a, b []v1.NodeCondition) bool {
	if len(a) != len(b) {
		return false
	}
	m := make(map[v1.NodeConditionType]v1.ConditionStatus, len(a))
	for _, c := range a {
		m[c.Type] = c.Status
	}
	for _, c := range b {
		if s, ok := m[c.Type]; !ok || s != c.Status {
			return false
		}
	}
	return true
}

// PodUpdateActions lists what changed between two versions of a pod as
// action bits: labels, requests going down, tolerations, scheduling gates
// removed, the claims generated for it, or anything else in the spec or
// metadata. Other status updates yield 0, and so do the scheduler's own
// attempt records (attempt.Annotation and attempt.PreemptionAnnotation).
func PodUpdateActions(oldPod, newPod *v1.Pod) ActionType {
	var a ActionType
	if !equality.Semantic.DeepEqual(oldPod.Labels, newPod.Labels) {
		a |= UpdatePodLabel
	}
	if !equality.Semantic.DeepEqual(oldPod.Spec.Tolerations, newPod.Spec.Tolerations) {
		a |= UpdatePodToleration
	}
	if len(oldPod.Spec.SchedulingGates) > 0 && len(newPod.Spec.SchedulingGates) == 0 {
		a |= UpdatePodSchedulingGatesEliminated
	}
	// The one status change that counts: the claims a pod was waiting for
	// (DynamicResources' PreEnqueue) now have names.
	if !resourceclaim.PodStatusEqual(oldPod.Status.ResourceClaimStatuses, newPod.Status.ResourceClaimStatuses) ||
		!resourceclaim.PodExtendedStatusEqual(oldPod.Status.ExtendedResourceClaimStatus, newPod.Status.ExtendedResourceClaimStatus) {
		a |= UpdatePodGeneratedResourceClaim
	}
	oldReq, newReq := PodRequests(oldPod), PodRequests(newPod)
	if scaledDown(&oldReq, &newReq) {
		a |= UpdatePodScaleDown
	}
	if a == 0 && (!equality.Semantic.DeepEqual(oldPod.Spec, newPod.Spec) ||
		!equality.Semantic.DeepEqual(withoutAttemptRecords(oldPod.Annotations), withoutAttemptRecords(newPod.Annotations))) {
		a |= UpdatePodOther
	}
	return a
}

// withoutAttemptRecords returns annotations without attempt.Annotation and
// attempt.PreemptionAnnotation (annotations itself when it has neither).
func withoutAttemptRecords(annotations map[string]string) map[string]string {
	_, last := annotations[attempt.Annotation]
	_, preemption := annotations[attempt.PreemptionAnnotation]
	if !last && !preemption {
		return annotations
	}
	out := maps.Clone(annotations)
	delete(out, attempt.Annotation)
	delete(out, attempt.PreemptionAnnotation)
	return out
}

func scaledDown(o, n *Resource) bool {
	if n.MilliCPU < o.MilliCPU || n.Memory < o.Memory || n.EphemeralStorage < o.EphemeralStorage {
		return true
	}
	for k, v := range o.ScalarResources {
		if n.ScalarResources[k] < v {
			return true
		}
	}
	return false
}

// As unpacks an event's objects for a QueueingHintFn: it returns them as T,
// with the zero T for a nil object (oldObj of an add, newObj of a delete),
// and an error naming the type for anything else.
func As[T any](oldObj, newObj interface{}) (T, T, error) {
	var oldT, newT T
	if newObj != nil {
		var ok bool
		if newT, ok = newObj.(T); !ok {
			return oldT, newT, fmt.Errorf("want new object of type %T, got %T", newT, newObj)
		}
	}
	if oldObj != nil {
		var ok bool
		if oldT, ok = oldObj.(T); !ok {
			return oldT, newT, fmt.Errorf("want old object of type %T, got %T", oldT, oldObj)
		}
	}
	return oldT, newT, nil
}
