// This file is the plugin itself: its name, its args and how New builds it,
// and the term-matching helpers both halves share.

package interpodaffinity

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "InterPodAffinity"

// InterPodAffinity filters and scores nodes by inter-pod affinity and
// anti-affinity, its own pod's and that of the pods already placed.
type InterPodAffinity struct {
	// hardPodAffinityWeight is what an existing pod's required affinity term
	// that selects the incoming pod adds to the score of its domain (0 turns
	// that off).
	hardPodAffinityWeight int32
	// ignorePreferredTermsOfExistingPods skips scoring altogether for pods
	// without preferred terms of their own, so existing pods' preferences
	// are then not honoured.
	ignorePreferredTermsOfExistingPods bool
	// sharedLister is the cycle's snapshot.
	sharedLister framework.SharedLister
	// nsLister reads namespaces, for namespaceSelector and for the labels
	// of the incoming pod's namespace.
	nsLister listersv1.NamespaceLister
	// parallelizer spreads the per-node work of PreFilter and PreScore.
	parallelizer framework.Parallelizer
}

var (
	_ framework.PreFilterPlugin     = &InterPodAffinity{}
	_ framework.PreFilterExtensions = &InterPodAffinity{}
	_ framework.FilterPlugin        = &InterPodAffinity{}
	_ framework.PreScorePlugin      = &InterPodAffinity{}
	_ framework.ScorePlugin         = &InterPodAffinity{}
	_ framework.ScoreExtensions     = &InterPodAffinity{}
	_ framework.EnqueueExtensions   = &InterPodAffinity{}
	_ framework.SignPlugin          = &InterPodAffinity{}
)

// New builds the plugin from its InterPodAffinityArgs (see DecodeArgs). It
// needs the handle's snapshot and informer factory: the namespace lister is
// asked for here, so the informer is started with the others.
func New(_ context.Context, rawArgs *runtime.RawExtension, h framework.Handle) (framework.Plugin, error) {
	if h == nil || h.SnapshotSharedLister() == nil {
		return nil, fmt.Errorf("SnapshotSharedLister is nil")
	}
	if h.SharedInformerFactory() == nil {
		return nil, fmt.Errorf("SharedInformerFactory is nil")
	}
	args, err := DecodeArgs(rawArgs)
	if err != nil {
		return nil, err
	}
	return &InterPodAffinity{
		hardPodAffinityWeight:              *args.HardPodAffinityWeight,
		ignorePreferredTermsOfExistingPods: args.IgnorePreferredTermsOfExistingPods,
		sharedLister:                       h.SnapshotSharedLister(),
		nsLister:                           h.SharedInformerFactory().Core().V1().Namespaces().Lister(),
		parallelizer:                       h.Parallelizer(),
	}, nil
}

// Name returns Name.
func (pl *InterPodAffinity) Name() string { return Name }

// errReasonSign is why SignPod refuses a pod, kube-scheduler's words.
const errReasonSign = "pods with InterPodAffinity are not signable"

// SignPod refuses (Unschedulable) a pod with pod affinity or anti-affinity:
// whether a node suits it depends on where the pods its terms select are,
// which changes with every pod placed. Another pod is signed by its labels,
// which existing pods' terms select it by. With
// ignorePreferredTermsOfExistingPods, kube-scheduler signs it with no
// fragment, since scoring then skips a pod without terms of its own, though
// Filter still matches existing pods' required anti-affinity against the
// pod's labels. Like kube-scheduler's, the fragment leaves out the pod's
// namespace, which existing pods' terms select it by too.
func (pl *InterPodAffinity) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	if a := pod.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
		return nil, framework.NewStatus(framework.Unschedulable, errReasonSign)
	}
	if pl.ignorePreferredTermsOfExistingPods {
		return nil, nil
	}
	return []framework.SignFragment{{Key: framework.LabelsSignerName, Value: pod.Labels}}, nil
}

// mergeTermNamespaces resolves the namespaceSelector of one of the incoming
// pod's terms into its Namespaces and then sets the selector to Nothing, so
// that matching the term against an existing pod needs only that pod's
// namespace name, never its namespace's labels. An empty selector ({},
// every namespace) is kept as it is: it matches whatever labels it is given.
// at must belong to a PodInfo the caller owns.
func (pl *InterPodAffinity) mergeTermNamespaces(at *framework.AffinityTerm) error {
	if at.NamespaceSelector.Empty() {
		return nil
	}
	namespaces, err := pl.nsLister.List(at.NamespaceSelector)
	if err != nil {
		return err
	}
	for _, ns := range namespaces {
		at.Namespaces.Insert(ns.Name)
	}
	at.NamespaceSelector = labels.Nothing()
	return nil
}

// namespaceLabels returns a copy of the labels of namespace ns, which
// existing pods' namespaceSelectors are matched against. A namespace the
// lister does not know has no labels.
func (pl *InterPodAffinity) namespaceLabels(logger klog.Logger, ns string) labels.Set {
	namespace, err := pl.nsLister.Get(ns)
	if err != nil {
		logger.V(4).Info("Could not get the pod's namespace; assuming it has no labels", "namespace", ns, "err", err)
		return nil
	}
	return labels.Merge(namespace.Labels, nil)
}

// podMatchesAllTerms reports whether pod matches every one of terms, and
// there is at least one: the affinity question, since one existing pod must
// satisfy all of the incoming pod's affinity terms at once.
//
// No namespace labels are consulted. In a scheduling cycle the terms are the
// incoming pod's, whose namespaceSelectors were merged into their namespaces
// (or are empty, matching every namespace); in queueing hints they are left
// unresolved, as kube-scheduler leaves them.
func podMatchesAllTerms(terms []framework.AffinityTerm, pod *v1.Pod) bool {
	if len(terms) == 0 {
		return false
	}
	for i := range terms {
		if !terms[i].Matches(pod, nil) {
			return false
		}
	}
	return true
}

// podMatchesAnyTerm reports whether pod matches at least one of terms: the
// anti-affinity question.
func podMatchesAnyTerm(terms []framework.AffinityTerm, pod *v1.Pod) bool {
	for i := range terms {
		if terms[i].Matches(pod, nil) {
			return true
		}
	}
	return false
}
