// This file is InterPodAffinity's hard half: PreFilter counts, per topology
// domain, the pods that the incoming pod's required terms select and the
// existing pods whose required anti-affinity selects the incoming pod;
// Filter then answers per node from those counts alone; AddPod and RemovePod
// keep the counts right while preemption tries removing pods.

package interpodaffinity

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// preFilterStateKey is where PreFilter leaves its counts for Filter.
const preFilterStateKey framework.StateKey = "PreFilter" + Name

// Reasons Filter reports, word for word kube-scheduler's.
const (
	// ErrReasonExistingAntiAffinityRulesNotMatch: an existing pod's required
	// anti-affinity selects the incoming pod in this node's domain.
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
	// ErrReasonAffinityRulesNotMatch: the incoming pod's required affinity is
	// not satisfied in this node's domains.
	ErrReasonAffinityRulesNotMatch = "node(s) didn't match pod affinity rules"
	// ErrReasonAntiAffinityRulesNotMatch: the incoming pod's required
	// anti-affinity selects a pod in this node's domain.
	ErrReasonAntiAffinityRulesNotMatch = "node(s) didn't match pod anti-affinity rules"
	// ErrReasonNodeNotFound: the NodeInfo has no node (deleted while pods
	// still pointed at it).
	ErrReasonNodeNotFound = "node not found"
)

// topologyPair is one topology domain: a node label key and its value.
type topologyPair struct {
	key   string
	value string
}

// topologyCounts counts matches per topology domain. A pair is present only
// with a non-zero count, so an empty map means "no match anywhere".
type topologyCounts map[topologyPair]int64

// add adds delta to the domain that node belongs to for topologyKey; a node
// without that label belongs to no such domain and counts nowhere. A nil
// map is allocated on the first count: PreFilter keeps one map per node,
// and on most nodes nothing matches, so most of those stay nil.
func (m *topologyCounts) add(node *v1.Node, topologyKey string, delta int64) {
	value, ok := node.Labels[topologyKey]
	if !ok {
		return
	}
	if *m == nil {
		*m = topologyCounts{}
	}
	pair := topologyPair{key: topologyKey, value: value}
	(*m)[pair] += delta
	// RemovePod subtracts: drop a pair that is back to zero, so len(m)
	// still tells whether anything matches.
	if (*m)[pair] == 0 {
		delete(*m, pair)
	}
}

// merge adds every count of other.
func (m topologyCounts) merge(other topologyCounts) {
	for pair, n := range other {
		m[pair] += n
		if m[pair] == 0 {
			delete(m, pair)
		}
	}
}

// keys returns the distinct topology keys of the domains counted.
func (m topologyCounts) keys() []string {
	var out []string
	for pair := range m {
		if !slices.Contains(out, pair.key) {
			out = append(out, pair.key)
		}
	}
	return out
}

// clone returns a copy.
func (m topologyCounts) clone() topologyCounts {
	c := make(topologyCounts, len(m))
	c.merge(m)
	return c
}

// addExistingAntiAffinity counts, in existing's node's domains, each required
// anti-affinity term of existing that selects incoming (whose namespace has
// labels nsLabels).
func (m *topologyCounts) addExistingAntiAffinity(existing *framework.PodInfo, incoming *v1.Pod, nsLabels labels.Set,
	node *v1.Node, delta int64) {
	for i := range existing.RequiredAntiAffinityTerms {
		t := &existing.RequiredAntiAffinityTerms[i]
		if t.Matches(incoming, nsLabels) {
			m.add(node, t.TopologyKey, delta)
		}
	}
}

// addAffinity counts existing, in its node's domain for each term's key, if
// it matches all of the incoming pod's affinity terms.
func (m *topologyCounts) addAffinity(terms []framework.AffinityTerm, existing *v1.Pod, node *v1.Node, delta int64) {
	if !podMatchesAllTerms(terms, existing) {
		return
	}
	for i := range terms {
		m.add(node, terms[i].TopologyKey, delta)
	}
}

// addAntiAffinity counts existing, in its node's domain, once for each of the
// incoming pod's anti-affinity terms it matches.
func (m *topologyCounts) addAntiAffinity(terms []framework.AffinityTerm, existing *v1.Pod, node *v1.Node, delta int64) {
	for i := range terms {
		if terms[i].Matches(existing, nil) {
			m.add(node, terms[i].TopologyKey, delta)
		}
	}
}

// preFilterState is what PreFilter computes for Filter.
type preFilterState struct {
	// existingAntiAffinityCounts counts, per domain, the required
	// anti-affinity terms of existing pods that select the incoming pod.
	existingAntiAffinityCounts topologyCounts
	// existingAntiAffinityKeys are the distinct topology keys of the domains
	// in existingAntiAffinityCounts (usually one or two), so that Filter
	// looks up those instead of every label of the node. Replaced, never
	// modified, when the counts change.
	existingAntiAffinityKeys []string
	// affinityCounts counts, per domain of each of the incoming pod's
	// required affinity terms, the existing pods matching all those terms.
	affinityCounts topologyCounts
	// antiAffinityCounts counts, per domain, the existing pods matched by
	// the incoming pod's required anti-affinity terms.
	antiAffinityCounts topologyCounts
	// podInfo is the incoming pod with its terms' namespaceSelectors merged
	// into their namespaces.
	podInfo *framework.PodInfo
	// namespaceLabels are the labels of the incoming pod's namespace.
	namespaceLabels labels.Set
}

// Clone copies the counts; the pod and labels are never changed, so they are
// shared.
func (s *preFilterState) Clone() framework.StateData {
	if s == nil {
		return nil
	}
	return &preFilterState{
		existingAntiAffinityCounts: s.existingAntiAffinityCounts.clone(),
		existingAntiAffinityKeys:   s.existingAntiAffinityKeys,
		affinityCounts:             s.affinityCounts.clone(),
		antiAffinityCounts:         s.antiAffinityCounts.clone(),
		podInfo:                    s.podInfo,
		namespaceLabels:            s.namespaceLabels,
	}
}

// updateWithPod adds (delta 1) or removes (delta -1) what pi, on node,
// contributes to every count.
func (s *preFilterState) updateWithPod(pi *framework.PodInfo, node *v1.Node, delta int64) {
	s.existingAntiAffinityCounts.addExistingAntiAffinity(pi, s.podInfo.Pod, s.namespaceLabels, node, delta)
	s.existingAntiAffinityKeys = s.existingAntiAffinityCounts.keys()
	s.affinityCounts.addAffinity(s.podInfo.RequiredAffinityTerms, pi.Pod, node, delta)
	s.antiAffinityCounts.addAntiAffinity(s.podInfo.RequiredAntiAffinityTerms, pi.Pod, node, delta)
}

// PreFilter counts, over the whole snapshot, which domains hold pods the
// incoming pod's required affinity and anti-affinity select, and which
// domains hold pods whose required anti-affinity selects the incoming pod.
//
// It returns Skip when the pod has no required terms and no existing pod's
// required anti-affinity selects it: Filter would pass every node. A pod
// whose terms do not parse is UnschedulableAndUnresolvable.
func (pl *InterPodAffinity) PreFilter(ctx context.Context, cycleState *framework.CycleState, pod *v1.Pod,
	nodes []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	logger := klog.FromContext(ctx)
	// A fresh PodInfo with only the terms (not the requests NewPodInfo
	// computes too): its terms are ours to rewrite below.
	podInfo := &framework.PodInfo{Pod: pod, PodAffinityTerms: framework.ParsePodAffinityTerms(pod)}
	if podInfo.AffinityParseError != nil {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable,
			fmt.Sprintf("parsing pod: %+v", affinityParseError(pod)))
	}
	for i := range podInfo.RequiredAffinityTerms {
		if err := pl.mergeTermNamespaces(&podInfo.RequiredAffinityTerms[i]); err != nil {
			return nil, framework.AsStatus(err)
		}
	}
	for i := range podInfo.RequiredAntiAffinityTerms {
		if err := pl.mergeTermNamespaces(&podInfo.RequiredAntiAffinityTerms[i]); err != nil {
			return nil, framework.AsStatus(err)
		}
	}
	s := &preFilterState{podInfo: podInfo, namespaceLabels: pl.namespaceLabels(logger, pod.Namespace)}

	s.existingAntiAffinityCounts = existingAntiAffinityCounts(pl.sharedLister.NodeInfos(), pod, s.namespaceLabels)
	s.existingAntiAffinityKeys = s.existingAntiAffinityCounts.keys()
	s.affinityCounts, s.antiAffinityCounts = pl.incomingTermCounts(ctx, podInfo, nodes)

	if len(s.existingAntiAffinityCounts) == 0 && len(podInfo.RequiredAffinityTerms) == 0 &&
		len(podInfo.RequiredAntiAffinityTerms) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	if logger := logger.V(5); logger.Enabled() {
		logger.Info("Counted inter-pod affinity matches", "pod", klog.KObj(pod),
			"existingAntiAffinityDomains", len(s.existingAntiAffinityCounts),
			"affinityDomains", len(s.affinityCounts), "antiAffinityDomains", len(s.antiAffinityCounts))
	}
	cycleState.Write(preFilterStateKey, s)
	return nil, nil
}

// existingAntiAffinityCounts counts, per domain, the required anti-affinity
// terms of existing pods that select incoming. Upstream visits every pod with
// such terms (on the nodes of HavePodsWithRequiredAntiAffinityList); the
// snapshot keeps those terms grouped by what they select, with their counts
// per domain, so each distinct term is matched once: in a cluster where many
// pods share a few terms (replicas of a Deployment do), the cost no longer
// grows with the number of nodes.
func existingAntiAffinityCounts(lister framework.NodeInfoLister, incoming *v1.Pod, nsLabels labels.Set) topologyCounts {
	result := topologyCounts{}
	for _, tc := range lister.RequiredAntiAffinityTermCounts() {
		if !tc.Term.Matches(incoming, nsLabels) {
			continue
		}
		for value, n := range tc.Counts {
			result[topologyPair{key: tc.Term.TopologyKey, value: value}] += n
		}
	}
	return result
}

// incomingTermCounts counts, over every pod on nodes, the matches of the
// incoming pod's required affinity and anti-affinity terms.
func (pl *InterPodAffinity) incomingTermCounts(ctx context.Context, podInfo *framework.PodInfo,
	nodes []*framework.NodeInfo) (affinity, antiAffinity topologyCounts) {
	affinity, antiAffinity = topologyCounts{}, topologyCounts{}
	if len(podInfo.RequiredAffinityTerms) == 0 && len(podInfo.RequiredAntiAffinityTerms) == 0 {
		return affinity, antiAffinity
	}
	perNodeAffinity := make([]topologyCounts, len(nodes))
	perNodeAnti := make([]topologyCounts, len(nodes))
	pl.parallelizer.Until(ctx, len(nodes), func(i int) {
		node := nodes[i].Node()
		if node == nil {
			return
		}
		var aff, anti topologyCounts // allocated by the first match
		for _, existing := range nodes[i].Pods {
			aff.addAffinity(podInfo.RequiredAffinityTerms, existing.Pod, node, 1)
			anti.addAntiAffinity(podInfo.RequiredAntiAffinityTerms, existing.Pod, node, 1)
		}
		perNodeAffinity[i], perNodeAnti[i] = aff, anti
	})
	for i := range nodes {
		affinity.merge(perNodeAffinity[i])
		antiAffinity.merge(perNodeAnti[i])
	}
	return affinity, antiAffinity
}

// PreFilterExtensions returns the plugin itself: its counts depend on the
// pods of every node.
func (pl *InterPodAffinity) PreFilterExtensions() framework.PreFilterExtensions { return pl }

// AddPod counts podInfoToAdd, on nodeInfo, as if it were there.
func (pl *InterPodAffinity) AddPod(_ context.Context, cycleState *framework.CycleState, _ *v1.Pod,
	podInfoToAdd *framework.PodInfo, nodeInfo *framework.NodeInfo) *framework.Status {
	s, err := getPreFilterState(cycleState)
	if err != nil {
		return framework.AsStatus(err)
	}
	if node := nodeInfo.Node(); node != nil {
		s.updateWithPod(podInfoToAdd, node, 1)
	}
	return nil
}

// RemovePod stops counting podInfoToRemove, on nodeInfo, as if it were gone.
func (pl *InterPodAffinity) RemovePod(_ context.Context, cycleState *framework.CycleState, _ *v1.Pod,
	podInfoToRemove *framework.PodInfo, nodeInfo *framework.NodeInfo) *framework.Status {
	s, err := getPreFilterState(cycleState)
	if err != nil {
		return framework.AsStatus(err)
	}
	if node := nodeInfo.Node(); node != nil {
		s.updateWithPod(podInfoToRemove, node, -1)
	}
	return nil
}

func getPreFilterState(cycleState *framework.CycleState) (*preFilterState, error) {
	c, err := cycleState.Read(preFilterStateKey)
	if err != nil {
		return nil, fmt.Errorf("error reading %q from cycleState: %w", preFilterStateKey, err)
	}
	s, ok := c.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%+v convert to interpodaffinity.preFilterState error", c)
	}
	return s, nil
}

// Filter checks, in kube-scheduler's order, that
//  1. the incoming pod's required affinity is satisfied in the node's
//     domains (else UnschedulableAndUnresolvable: evicting pods never
//     brings a matching pod);
//  2. no pod in the node's domains is selected by its required
//     anti-affinity (else Unschedulable: preemption may remove that pod);
//  3. no existing pod's required anti-affinity selects it in the node's
//     domains (else Unschedulable).
func (pl *InterPodAffinity) Filter(ctx context.Context, cycleState *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) *framework.Status {
	s, err := getPreFilterState(cycleState)
	if err != nil {
		return framework.AsStatus(err)
	}
	node := nodeInfo.Node()
	if node == nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeNotFound)
	}
	var code framework.Code
	var reason string
	switch {
	case !satisfiesPodAffinity(s, node):
		code, reason = framework.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch
	case !satisfiesPodAntiAffinity(s, node):
		code, reason = framework.Unschedulable, ErrReasonAntiAffinityRulesNotMatch
	case !satisfiesExistingPodsAntiAffinity(s, node):
		code, reason = framework.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch
	default:
		return nil
	}
	if logger := klog.FromContext(ctx).V(5); logger.Enabled() {
		logger.Info("Node fails inter-pod affinity", "pod", klog.KObj(pod), "node", klog.KObj(node), "reason", reason)
	}
	return framework.NewStatus(code, reason)
}

// satisfiesPodAffinity reports whether, for every required affinity term of
// the incoming pod, the node has the term's topology label and its domain
// holds a pod matching all terms.
//
// The exception is the first pod of a group with affinity to itself: when no
// pod anywhere matches the terms and the pod matches them itself, any node
// with all the topology labels will do, or such pods could never start.
func satisfiesPodAffinity(s *preFilterState, node *v1.Node) bool {
	terms := s.podInfo.RequiredAffinityTerms
	if len(terms) == 0 {
		return true
	}
	podsExist := true
	for i := range terms {
		value, ok := node.Labels[terms[i].TopologyKey]
		if !ok {
			// Every topology label is needed, even for the self-match case.
			return false
		}
		if s.affinityCounts[topologyPair{key: terms[i].TopologyKey, value: value}] <= 0 {
			podsExist = false
		}
	}
	if podsExist {
		return true
	}
	return len(s.affinityCounts) == 0 && podMatchesAllTerms(terms, s.podInfo.Pod)
}

// satisfiesPodAntiAffinity reports whether no required anti-affinity term of
// the incoming pod matches a pod in the node's domain for that term.
func satisfiesPodAntiAffinity(s *preFilterState, node *v1.Node) bool {
	if len(s.antiAffinityCounts) == 0 {
		return true
	}
	for _, t := range s.podInfo.RequiredAntiAffinityTerms {
		value, ok := node.Labels[t.TopologyKey]
		if ok && s.antiAffinityCounts[topologyPair{key: t.TopologyKey, value: value}] > 0 {
			return false
		}
	}
	return true
}

// satisfiesExistingPodsAntiAffinity reports whether none of the node's
// domains, whatever their key, holds an existing pod whose required
// anti-affinity (with that key) selects the incoming pod.
func satisfiesExistingPodsAntiAffinity(s *preFilterState, node *v1.Node) bool {
	if len(s.existingAntiAffinityCounts) == 0 {
		return true
	}
	for _, key := range s.existingAntiAffinityKeys {
		value, ok := node.Labels[key]
		if ok && s.existingAntiAffinityCounts[topologyPair{key: key, value: value}] > 0 {
			return false
		}
	}
	return true
}

// affinityParseError explains why pod's terms do not parse in
// kube-scheduler's words: per kind of term, the first selector that fails,
// aggregated. framework.PodInfo keeps the fact, this keeps the message.
func affinityParseError(pod *v1.Pod) error {
	var required, requiredAnti []v1.PodAffinityTerm
	var preferred, preferredAnti []v1.WeightedPodAffinityTerm
	if a := pod.Spec.Affinity; a != nil {
		if pa := a.PodAffinity; pa != nil {
			required = pa.RequiredDuringSchedulingIgnoredDuringExecution
			preferred = pa.PreferredDuringSchedulingIgnoredDuringExecution
		}
		if paa := a.PodAntiAffinity; paa != nil {
			requiredAnti = paa.RequiredDuringSchedulingIgnoredDuringExecution
			preferredAnti = paa.PreferredDuringSchedulingIgnoredDuringExecution
		}
	}
	firstError := func(terms []v1.PodAffinityTerm) error {
		for i := range terms {
			if _, err := metav1.LabelSelectorAsSelector(terms[i].LabelSelector); err != nil {
				return err
			}
			if _, err := metav1.LabelSelectorAsSelector(terms[i].NamespaceSelector); err != nil {
				return err
			}
		}
		return nil
	}
	unweighted := func(terms []v1.WeightedPodAffinityTerm) []v1.PodAffinityTerm {
		out := make([]v1.PodAffinityTerm, len(terms))
		for i := range terms {
			out[i] = terms[i].PodAffinityTerm
		}
		return out
	}
	var errs []error
	for _, kind := range []struct {
		name  string
		terms []v1.PodAffinityTerm
	}{
		{"requiredAffinityTerms", required},
		{"requiredAntiAffinityTerms", requiredAnti},
		{"preferredAffinityTerms", unweighted(preferred)},
		{"preferredAntiAffinityTerms", unweighted(preferredAnti)},
	} {
		if err := firstError(kind.terms); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", kind.name, err))
		}
	}
	return utilerrors.NewAggregate(errs)
}
