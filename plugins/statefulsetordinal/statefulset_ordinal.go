// Package statefulsetordinal places pod <name>-N of a StatefulSet on the
// node whose ordinal label says N: "pod-0 on node-0". Teams running Kafka
// brokers under Strimzi wrote such a scheduler because neither affinity nor
// taints can say "the pod with this index, on the node with this index".
//
// The plugin shows four extension points working together: PreEnqueue keeps
// pods it cannot place out of activeQ, PreFilter works out the pod's ordinal
// once and refuses an ambiguous cluster, Filter compares one node, and
// EventsToRegister wakes the pod when a node gets its ordinal.
package statefulsetordinal

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "StatefulSetOrdinal"

// Reasons and messages this plugin reports. The Filter reasons are short, so
// FailedScheduling can count them per node.
const (
	ErrReasonDifferentOrdinal = "node(s) had a different ordinal"
	ErrReasonNoOrdinalLabel   = "node(s) had no ordinal label"
	msgNotStatefulSet         = "pod is not owned by a StatefulSet"
	msgNoOrdinal              = "pod has no ordinal: no " + appsv1.PodIndexLabel + " label and no -N name suffix"
)

const stateKey framework.StateKey = Name

// ordinalState is what PreFilter works out for Filter.
type ordinalState struct{ ordinal string }

// Clone returns the state itself: it is never modified after PreFilter.
func (s *ordinalState) Clone() framework.StateData { return s }

// StatefulSetOrdinal is the plugin.
type StatefulSetOrdinal struct {
	podLabels []string
	nodeLabel string
}

var (
	_ framework.PreEnqueuePlugin  = &StatefulSetOrdinal{}
	_ framework.PreFilterPlugin   = &StatefulSetOrdinal{}
	_ framework.FilterPlugin      = &StatefulSetOrdinal{}
	_ framework.EnqueueExtensions = &StatefulSetOrdinal{}
)

// New returns the plugin with its args; both are required.
func New(_ context.Context, raw *runtime.RawExtension, _ framework.Handle) (framework.Plugin, error) {
	args, err := DecodeArgs(raw)
	if err != nil {
		return nil, fmt.Errorf("%s args: %w", Name, err)
	}
	return &StatefulSetOrdinal{podLabels: args.PodLabels, nodeLabel: args.NodeOrdinalLabel}, nil
}

// Name returns Name.
func (pl *StatefulSetOrdinal) Name() string { return Name }

// PreEnqueue keeps a pod that no StatefulSet controls out of activeQ: no
// node could ever be right for it, and trying would only fill the events
// with FailedScheduling. The queue checks a held pod again only on the
// events this plugin registers (node events, the pod's label changes) and
// at its periodic flush of unschedulable pods.
func (pl *StatefulSetOrdinal) PreEnqueue(ctx context.Context, pod *v1.Pod) *framework.Status {
	if ownedByStatefulSet(pod) {
		return nil
	}
	klog.FromContext(ctx).V(2).Info("Pod held back from the queue", "pod", klog.KObj(pod), "plugin", Name,
		"reason", msgNotStatefulSet)
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, msgNotStatefulSet)
}

func ownedByStatefulSet(pod *v1.Pod) bool {
	owner := metav1.GetControllerOf(pod)
	return owner != nil && owner.Kind == "StatefulSet" && strings.HasPrefix(owner.APIVersion, appsv1.GroupName+"/")
}

// PreFilter checks the pod carries one of podLabels and works out its
// ordinal. Two or more nodes with that ordinal make the pod
// UnschedulableAndUnresolvable, naming them: placing it on either would let
// it move between them from one restart to the next.
func (pl *StatefulSetOrdinal) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod,
	nodes []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	if !slices.ContainsFunc(pl.podLabels, func(k string) bool { _, ok := pod.Labels[k]; return ok }) {
		return nil, framework.NewStatus(framework.Unschedulable,
			fmt.Sprintf("pod has none of the labels %v", pl.podLabels))
	}
	ordinal, ok := podOrdinal(pod)
	if !ok {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, msgNoOrdinal)
	}
	var same []string
	for _, ni := range nodes {
		if n := ni.Node(); n != nil && n.Labels[pl.nodeLabel] == ordinal {
			same = append(same, n.Name)
		}
	}
	if len(same) > 1 {
		slices.Sort(same)
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable,
			fmt.Sprintf("nodes %v all have %s=%s", same, pl.nodeLabel, ordinal))
	}
	state.Write(stateKey, &ordinalState{ordinal: ordinal})
	return nil, nil
}

// podOrdinal is the pod's index: the apps.kubernetes.io/pod-index label that
// the StatefulSet controller sets, else the -N suffix of its name.
func podOrdinal(pod *v1.Pod) (string, bool) {
	s, ok := pod.Labels[appsv1.PodIndexLabel]
	if !ok {
		i := strings.LastIndexByte(pod.Name, '-')
		if i < 0 {
			return "", false
		}
		s = pod.Name[i+1:]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return "", false
	}
	return strconv.Itoa(n), true
}

// PreFilterExtensions returns nil: other pods do not change the verdict.
func (pl *StatefulSetOrdinal) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// Filter lets the pod onto the node whose ordinal label equals its own.
// Preemption cannot change a label, so rejections are unresolvable.
func (pl *StatefulSetOrdinal) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod,
	nodeInfo *framework.NodeInfo) *framework.Status {
	data, err := state.Read(stateKey)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("reading %q from cycle state: %w", stateKey, err))
	}
	want := data.(*ordinalState).ordinal
	node := nodeInfo.Node()
	if node == nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, "node not found")
	}
	got, ok := node.Labels[pl.nodeLabel]
	switch {
	case !ok:
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNoOrdinalLabel)
	case got != want:
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonDifferentOrdinal)
	}
	return nil
}

// EventsToRegister lists the node events that can change this plugin's
// verdict: a node added or relabelled (it may get the pod's ordinal, or lose
// a duplicate one), a node deleted (a duplicate may go), and the pod's own
// labels changing (it may gain one of podLabels).
func (pl *StatefulSetOrdinal) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{
			Event:          framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel | framework.Delete},
			QueueingHintFn: pl.isSchedulableAfterNodeChange,
		},
		{Event: framework.ClusterEvent{Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodLabel}},
	}, nil
}

// isSchedulableAfterNodeChange queues the pod only when a node gained or
// lost the pod's ordinal; other label changes cannot help it.
func (pl *StatefulSetOrdinal) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod,
	oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := framework.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	ordinal, ok := podOrdinal(pod)
	if !ok {
		return framework.QueueSkip, nil
	}
	has := func(n *v1.Node) bool { return n != nil && n.Labels[pl.nodeLabel] == ordinal }
	if has(oldNode) == has(newNode) {
		logger.V(5).Info("Node event did not change which nodes have the pod's ordinal", "pod", klog.KObj(pod))
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}
