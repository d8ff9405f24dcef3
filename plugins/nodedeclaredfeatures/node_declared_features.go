// This file is the plugin: PreFilter asks the library what the pod needs,
// Filter checks each node's declared features against it.

package nodedeclaredfeatures

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	versionutil "k8s.io/apimachinery/pkg/util/version"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "NodeDeclaredFeatures"

// ErrReasonUnsatisfiedRequirements is the reason for a node that does not
// declare every feature the pod requires.
const ErrReasonUnsatisfiedRequirements = "node(s) didn't match Pod's required features"

// schedulerVersion is the Kubernetes version minisched mirrors. The library
// drops a feature from a pod's requirements once the scheduler's version is
// past the feature's MaxVersion (by then every supported kubelet has it), so
// the answer depends on it. kube-scheduler passes its own build version;
// minisched mirrors kube-scheduler v1.37.1 and says so here.
const schedulerVersion = "v1.37.1"

// preFilterStateKey is where PreFilter leaves the pod's requirements for Filter.
const preFilterStateKey framework.StateKey = "PreFilter" + Name

// preFilterState holds the features the pod requires, as a set over the
// library's registry of features.
type preFilterState struct {
	reqs ndf.FeatureSet
}

// Clone returns the state itself: it is never changed after PreFilter, and
// nothing about it depends on the pods of a node.
func (s *preFilterState) Clone() framework.StateData { return s }

// NodeDeclaredFeatures rejects nodes that do not declare every feature the
// pod requires.
type NodeDeclaredFeatures struct {
	// features is the library's registry of known features.
	features *ndf.Framework
	// version is schedulerVersion, parsed.
	version *versionutil.Version
}

var (
	_ framework.PreFilterPlugin   = &NodeDeclaredFeatures{}
	_ framework.FilterPlugin      = &NodeDeclaredFeatures{}
	_ framework.EnqueueExtensions = &NodeDeclaredFeatures{}
	_ framework.SignPlugin        = &NodeDeclaredFeatures{}
)

// New returns the plugin, using the library's default registry of features
// as kube-scheduler does. It takes no args; any pluginConfig is ignored, as
// kube-scheduler does for plugins without args.
func New(_ context.Context, _ *runtime.RawExtension, _ framework.Handle) (framework.Plugin, error) {
	ver, err := versionutil.Parse(schedulerVersion)
	if err != nil {
		return nil, fmt.Errorf("parsing scheduler version %q: %w", schedulerVersion, err)
	}
	return &NodeDeclaredFeatures{features: ndf.DefaultFramework, version: ver}, nil
}

// Name returns Name.
func (pl *NodeDeclaredFeatures) Name() string { return Name }

// requirements asks the library which declared features scheduling pod
// needs. Only the spec counts: a pending pod has no status worth reading.
func (pl *NodeDeclaredFeatures) requirements(pod *v1.Pod) (ndf.FeatureSet, error) {
	return pl.features.InferForPodScheduling(&ndf.PodInfo{Spec: &pod.Spec}, pl.version)
}

// SignPod signs the features the pod requires, as PreFilter infers them, in
// the set's string form (one '0' or '1' per feature of the library's
// registry): Filter reads nothing else of the pod.
func (pl *NodeDeclaredFeatures) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	reqs, err := pl.requirements(pod)
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	return []framework.SignFragment{{Key: framework.FeaturesSignerName, Value: reqs.String()}}, nil
}

// nodeFeatures turns a node's declared features into a set over the
// library's registry, as kube-scheduler's NodeInfo caches it. The API keeps
// the list sorted, which the mapping relies on; names the library does not
// know are dropped, since no pod can require them.
func (pl *NodeDeclaredFeatures) nodeFeatures(node *v1.Node) ndf.FeatureSet {
	return pl.features.TryMap(node.Status.DeclaredFeatures)
}

// PreFilter works out the pod's requirements once for all nodes, and
// returns Skip when there are none, so Filter is not called: most pods need
// no declared feature.
func (pl *NodeDeclaredFeatures) PreFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	_ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	reqs, err := pl.requirements(pod)
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	if reqs.IsEmpty() {
		return nil, framework.NewStatus(framework.Skip)
	}
	if logger := klog.FromContext(ctx).V(5); logger.Enabled() {
		names, _ := pl.features.Unmap(reqs)
		logger.Info("Pod requires declared node features", "pod", klog.KObj(pod), "features", names)
	}
	state.Write(preFilterStateKey, &preFilterState{reqs: reqs})
	return nil, nil
}

// PreFilterExtensions returns nil: the requirements come from the pod alone,
// so adding or removing other pods changes nothing.
func (pl *NodeDeclaredFeatures) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// Filter accepts the node if it declares every feature the pod requires.
// Evicting pods cannot add a feature to a node, so a rejection is
// UnschedulableAndUnresolvable. Like kube-scheduler, it only tests the
// subset and does not spend time listing which features are missing.
func (pl *NodeDeclaredFeatures) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod,
	nodeInfo *framework.NodeInfo) *framework.Status {
	s, err := getPreFilterState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	node := nodeInfo.Node()
	if node == nil {
		return framework.AsStatus(errors.New("node not found"))
	}
	ok, err := s.reqs.IsSubset(pl.nodeFeatures(node))
	if err != nil {
		return framework.AsStatus(err)
	}
	if !ok {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnsatisfiedRequirements)
	}
	return nil
}

// getPreFilterState reads what PreFilter wrote for this cycle.
func getPreFilterState(state *framework.CycleState) (*preFilterState, error) {
	data, err := state.Read(preFilterStateKey)
	if err != nil {
		return nil, fmt.Errorf("reading %q from cycle state: %w", preFilterStateKey, err)
	}
	s, ok := data.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%q in cycle state has type %T, want %T", preFilterStateKey, data, &preFilterState{})
	}
	return s, nil
}
