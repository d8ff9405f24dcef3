// This file is the plugin itself: its name, the system default
// constraints, its args and how New builds it.

package podtopologyspread

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "PodTopologySpread"

// Reasons Filter reports, word for word as kube-scheduler does.
const (
	// ErrReasonConstraintsNotMatch: placing the pod on the node would make
	// the skew of a DoNotSchedule constraint exceed its maxSkew.
	ErrReasonConstraintsNotMatch = "node(s) didn't match pod topology spread constraints"
	// ErrReasonNodeLabelNotMatch: the node lacks the topology key of a
	// DoNotSchedule constraint.
	ErrReasonNodeLabelNotMatch = ErrReasonConstraintsNotMatch + " (missing required label)"
)

// systemDefaultConstraints are the constraints kube-scheduler applies with
// defaultingType System: spread softly over nodes (maxSkew 3) and zones
// (maxSkew 5). The order is kube-scheduler's.
var systemDefaultConstraints = []v1.TopologySpreadConstraint{
	{TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.ScheduleAnyway, MaxSkew: 3},
	{TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.ScheduleAnyway, MaxSkew: 5},
}

// PodTopologySpread filters and scores nodes by the pod's topology spread
// constraints, or by the default constraints for a pod without any.
//
// It behaves as kube-scheduler v1.37 with its default feature gates:
// nodeAffinityPolicy and nodeTaintsPolicy are honoured
// (NodeInclusionPolicyInPodTopologySpread, GA), matchLabelKeys are merged
// into the selector here as well as by the apiserver
// (MatchLabelKeysInPodTopologySpread, beta and on), and tolerations compare
// taints without the alpha Lt/Gt operators.
type PodTopologySpread struct {
	// defaultConstraints apply to pods that have none of their own.
	defaultConstraints []v1.TopologySpreadConstraint
	// systemDefaulted says defaultConstraints are kube-scheduler's system
	// defaults; scoring then tolerates nodes without a zone label.
	systemDefaulted bool
	// sharedLister is the cycle's snapshot; PreScore counts pods on every
	// node, not just the feasible ones.
	sharedLister framework.SharedLister
	// parallelizer spreads per-node counting over goroutines.
	parallelizer framework.Parallelizer
	// The listers below find the Services and controllers selecting a pod,
	// to deduce the selector of the default constraints. They are nil when
	// there are no default constraints.
	services         corelisters.ServiceLister
	replicationCtrls corelisters.ReplicationControllerLister
	replicaSets      appslisters.ReplicaSetLister
	statefulSets     appslisters.StatefulSetLister
}

var (
	_ framework.PreFilterPlugin     = &PodTopologySpread{}
	_ framework.PreFilterExtensions = &PodTopologySpread{}
	_ framework.FilterPlugin        = &PodTopologySpread{}
	_ framework.PreScorePlugin      = &PodTopologySpread{}
	_ framework.ScorePlugin         = &PodTopologySpread{}
	_ framework.ScoreExtensions     = &PodTopologySpread{}
	_ framework.EnqueueExtensions   = &PodTopologySpread{}
	_ framework.SignPlugin          = &PodTopologySpread{}
)

// New builds the plugin from its PodTopologySpreadArgs (see DecodeArgs). It
// needs the handle's snapshot and, when there are default constraints (always
// with System defaulting), its informer factory for the listers of Services,
// ReplicationControllers, ReplicaSets and StatefulSets.
func New(_ context.Context, rawArgs *runtime.RawExtension, h framework.Handle) (framework.Plugin, error) {
	if h == nil || h.SnapshotSharedLister() == nil {
		return nil, fmt.Errorf("SnapshotSharedlister is nil")
	}
	args, err := DecodeArgs(rawArgs)
	if err != nil {
		return nil, err
	}
	pl := &PodTopologySpread{
		defaultConstraints: args.DefaultConstraints,
		sharedLister:       h.SnapshotSharedLister(),
		parallelizer:       h.Parallelizer(),
	}
	if args.DefaultingType == configv1.SystemDefaulting {
		pl.defaultConstraints = systemDefaultConstraints
		pl.systemDefaulted = true
	}
	if len(pl.defaultConstraints) > 0 {
		factory := h.SharedInformerFactory()
		if factory == nil {
			return nil, fmt.Errorf("SharedInformerFactory is nil")
		}
		// Asking for the listers here registers their informers, so the
		// scheduler starts them with the others.
		pl.services = factory.Core().V1().Services().Lister()
		pl.replicationCtrls = factory.Core().V1().ReplicationControllers().Lister()
		pl.replicaSets = factory.Apps().V1().ReplicaSets().Lister()
		pl.statefulSets = factory.Apps().V1().StatefulSets().Lister()
	}
	return pl, nil
}

// Name returns Name.
func (pl *PodTopologySpread) Name() string { return Name }

// Reasons SignPod refuses a pod, kube-scheduler's words.
const (
	errReasonSignConstraints        = "pods with topology constraints are not signable"
	errReasonSignDefaultConstraints = "pods with default topology constraints are not signable"
)

// SignPod refuses (Unschedulable) a pod with topology spread constraints,
// its own or the profile's defaults: the skew on a node depends on where
// the pods the constraints select are, which changes with every pod placed.
// Only when the pod has none and the profile has no defaults (never with
// System defaulting) do Filter and Score pass every node alike, and SignPod
// returns no fragment.
func (pl *PodTopologySpread) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		return nil, framework.NewStatus(framework.Unschedulable, errReasonSignConstraints)
	}
	if len(pl.defaultConstraints) > 0 {
		return nil, framework.NewStatus(framework.Unschedulable, errReasonSignDefaultConstraints)
	}
	return nil, nil
}
