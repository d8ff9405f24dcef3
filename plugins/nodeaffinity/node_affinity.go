// This file is NodeAffinity's filtering half: New, PreFilter (which may
// narrow the candidates to nodes named by metadata.name) and Filter.

package nodeaffinity

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

const (
	// Name is the plugin's name in the registry and in configurations.
	Name = "NodeAffinity"

	// preFilterStateKey is where PreFilter leaves the parsed required
	// selector for Filter.
	preFilterStateKey framework.StateKey = "PreFilter" + Name
)

// Reasons this plugin reports, word for word kube-scheduler's.
const (
	// ErrReasonPod is the reason for a node that the pod's nodeSelector or
	// required node affinity does not match.
	ErrReasonPod = "node(s) didn't match Pod's node affinity/selector"
	// ErrReasonEnforced is the reason for a node that the profile's
	// addedAffinity does not match.
	ErrReasonEnforced = "node(s) didn't match scheduler-enforced node affinity"
	// ErrReasonConflict is PreFilter's reason when every required term pins
	// node names and no term can name any node (its metadata.name
	// requirements do not intersect).
	ErrReasonConflict = "pod affinity terms conflict"
	// ErrReasonNodeNotFound is the reason when the NodeInfo has no node
	// (it was deleted while pods still pointed at it).
	ErrReasonNodeNotFound = "node not found"
)

// NodeAffinity filters and scores nodes by the pod's node selector and node
// affinity, plus the affinity the profile adds to every pod.
type NodeAffinity struct {
	// addedNodeSelector is addedAffinity's required selector, checked for
	// every pod before the pod's own; nil when none is configured.
	addedNodeSelector *nodeaffinity.NodeSelector
	// addedPrefSchedTerms are addedAffinity's preferred terms, scored for
	// every pod on top of the pod's own; nil when none are configured.
	addedPrefSchedTerms *nodeaffinity.PreferredSchedulingTerms
}

var (
	_ framework.PreFilterPlugin   = &NodeAffinity{}
	_ framework.FilterPlugin      = &NodeAffinity{}
	_ framework.EnqueueExtensions = &NodeAffinity{}
	_ framework.SignPlugin        = &NodeAffinity{}
)

// New builds the plugin from its NodeAffinityArgs (see DecodeArgs).
func New(_ context.Context, rawArgs *runtime.RawExtension, _ framework.Handle) (framework.Plugin, error) {
	args, err := DecodeArgs(rawArgs)
	if err != nil {
		return nil, err
	}
	pl := &NodeAffinity{}
	if added := args.AddedAffinity; added != nil {
		if ns := added.RequiredDuringSchedulingIgnoredDuringExecution; ns != nil {
			if pl.addedNodeSelector, err = nodeaffinity.NewNodeSelector(ns); err != nil {
				return nil, fmt.Errorf("parsing addedAffinity.requiredDuringSchedulingIgnoredDuringExecution: %w", err)
			}
		}
		if terms := added.PreferredDuringSchedulingIgnoredDuringExecution; len(terms) != 0 {
			if pl.addedPrefSchedTerms, err = nodeaffinity.NewPreferredSchedulingTerms(terms); err != nil {
				return nil, fmt.Errorf("parsing addedAffinity.preferredDuringSchedulingIgnoredDuringExecution: %w", err)
			}
		}
	}
	return pl, nil
}

// Name returns Name.
func (pl *NodeAffinity) Name() string { return Name }

// SignPod signs the pod's node affinity, canonicalised (NodeAffinitySigner),
// and its nodeSelector: Filter and Score read nothing else of the pod. The
// profile's addedAffinity is the same for every pod, so it is no part of
// the signature.
func (pl *NodeAffinity) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	affinity, err := framework.NodeAffinitySigner(pod)
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	return []framework.SignFragment{
		{Key: framework.NodeAffinitySignerName, Value: affinity},
		{Key: framework.NodeSelectorSignerName, Value: pod.Spec.NodeSelector},
	}, nil
}

// preFilterState is the pod's nodeSelector and required node affinity,
// parsed once per cycle.
type preFilterState struct {
	required nodeaffinity.RequiredNodeAffinity
}

// Clone returns the state itself: it depends on the pod alone and is never
// changed after PreFilter.
func (s *preFilterState) Clone() framework.StateData { return s }

// requiredTerms returns the pod's required node selector terms, and whether
// the pod has a required node affinity at all.
func requiredTerms(pod *v1.Pod) ([]v1.NodeSelectorTerm, bool) {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil, false
	}
	return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms, true
}

// PreFilter parses the pod's nodeSelector and required node affinity for
// Filter. It returns Skip when there is nothing to check: no required node
// affinity, no nodeSelector (a nil one: an empty map still counts, as in
// kube-scheduler) and no addedAffinity selector.
//
// When every required term pins node names (a matchFields metadata.name In
// requirement), only those nodes can match, and the result narrows Filter to
// them: within a term the name sets are intersected (requirements are ANDed),
// across terms united (terms are ORed). If that leaves no name at all, the
// pod fits nowhere and PreFilter says so at once, UnschedulableAndUnresolvable
// with ErrReasonConflict.
func (pl *NodeAffinity) PreFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	_ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	terms, hasRequired := requiredTerms(pod)
	if !hasRequired && pl.addedNodeSelector == nil && pod.Spec.NodeSelector == nil {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterStateKey, &preFilterState{required: nodeaffinity.GetRequiredNodeAffinity(pod)})

	nodeNames := pinnedNodeNames(terms)
	if nodeNames == nil {
		return nil, nil
	}
	logger := klog.FromContext(ctx)
	if len(nodeNames) == 0 {
		logger.V(4).Info("Pod's required node affinity names no node it could match", "pod", klog.KObj(pod))
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonConflict)
	}
	logger.V(4).Info("Pod's required node affinity pins node names", "pod", klog.KObj(pod), "nodes", sets.List(nodeNames))
	return &framework.PreFilterResult{NodeNames: nodeNames}, nil
}

// pinnedNodeNames returns the only node names the required terms can match,
// or nil when some term (or the absence of terms) leaves every node possible.
// All values of a metadata.name In requirement are taken, even though such a
// requirement parses only with exactly one value: Filter then rejects every
// node for the parse error, as in kube-scheduler.
func pinnedNodeNames(terms []v1.NodeSelectorTerm) sets.Set[string] {
	if len(terms) == 0 {
		return nil
	}
	union := sets.New[string]()
	for _, t := range terms {
		var inTerm sets.Set[string]
		for _, r := range t.MatchFields {
			if r.Key != metav1.ObjectNameField || r.Operator != v1.NodeSelectorOpIn {
				continue
			}
			if inTerm == nil {
				inTerm = sets.New(r.Values...)
			} else {
				inTerm = inTerm.Intersection(sets.New(r.Values...))
			}
		}
		if inTerm == nil {
			// This term may match a node of any name, and terms are ORed.
			return nil
		}
		union = union.Union(inTerm)
	}
	return union
}

// PreFilterExtensions returns nil: the state depends on the pod alone, not on
// the pods of a node.
func (pl *NodeAffinity) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// requiredAffinity returns the selector PreFilter parsed, or parses the pod
// afresh when PreFilter did not run (it is not enabled in the profile), as
// kube-scheduler does.
func requiredAffinity(state *framework.CycleState, pod *v1.Pod) nodeaffinity.RequiredNodeAffinity {
	if c, err := state.Read(preFilterStateKey); err == nil {
		if s, ok := c.(*preFilterState); ok {
			return s.required
		}
	}
	return nodeaffinity.GetRequiredNodeAffinity(pod)
}

// Filter rejects a node that the profile's addedAffinity does not match
// (ErrReasonEnforced, checked first), or that the pod's nodeSelector and
// required node affinity do not match (ErrReasonPod). A term that does not
// parse matches no node. Evicting pods changes neither, so the code is
// UnschedulableAndUnresolvable.
func (pl *NodeAffinity) Filter(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if node == nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeNotFound)
	}
	if pl.addedNodeSelector != nil && !pl.addedNodeSelector.Match(node) {
		if logger := klog.FromContext(ctx).V(5); logger.Enabled() {
			logger.Info("Node does not match the scheduler-enforced node affinity",
				"pod", klog.KObj(pod), "node", klog.KObj(node))
		}
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonEnforced)
	}
	// A parse error means no term matched; kube-scheduler reports it as a
	// plain mismatch, for backwards compatibility.
	if match, _ := requiredAffinity(state, pod).Match(node); !match {
		if logger := klog.FromContext(ctx).V(5); logger.Enabled() {
			logger.Info("Node does not match the pod's node affinity/selector", "pod", klog.KObj(pod), "node", klog.KObj(node))
		}
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPod)
	}
	return nil
}
