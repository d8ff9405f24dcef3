// This file is pod (anti-)affinity terms as plugins read them: parsed once
// per pod (PodInfo keeps them), matched against other pods, and counted per
// topology domain for the snapshot.

package framework

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
)

// AffinityTerm is a pod (anti-)affinity term, parsed once per pod: which
// namespaces it looks in, which pods it selects, and the topology key that
// defines "the same place".
type AffinityTerm struct {
	// Namespaces are the listed namespaces; when the term lists none and has
	// no namespace selector, the pod's own namespace.
	Namespaces sets.Set[string]
	// Selector selects the pods the term is about.
	Selector labels.Selector
	// TopologyKey is the node label whose value defines a topology domain.
	TopologyKey string
	// NamespaceSelector selects more namespaces by their labels (Nothing when
	// the term has none; Everything for an empty selector).
	NamespaceSelector labels.Selector
}

// Matches reports whether pod, living in a namespace labelled nsLabels, is
// selected by the term.
func (at *AffinityTerm) Matches(pod *v1.Pod, nsLabels labels.Set) bool {
	if at.Namespaces.Has(pod.Namespace) || at.NamespaceSelector.Matches(nsLabels) {
		return at.Selector.Matches(labels.Set(pod.Labels))
	}
	return false
}

// TermCounts is one distinct pod-affinity term of the pods on a set of nodes
// and where they are: Counts maps a value of Term.TopologyKey (a domain) to
// how many of the pods' terms equal to Term are on nodes in that domain.
// Terms on nodes without the label are not counted.
type TermCounts struct {
	// Term is one of the equal terms, standing for all of them.
	Term *AffinityTerm
	// Counts holds only domains with a non-zero count.
	Counts map[string]int64
}

// WeightedAffinityTerm is a preferred term with its weight.
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// newAffinityTerm parses one v1 term for pod.
func newAffinityTerm(pod *v1.Pod, term *v1.PodAffinityTerm) (AffinityTerm, error) {
	selector, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return AffinityTerm{}, fmt.Errorf("labelSelector: %w", err)
	}
	nsSelector, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
	if err != nil {
		return AffinityTerm{}, fmt.Errorf("namespaceSelector: %w", err)
	}
	namespaces := sets.New(term.Namespaces...)
	if len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
		namespaces.Insert(pod.Namespace)
	}
	return AffinityTerm{
		Namespaces:        namespaces,
		Selector:          selector,
		TopologyKey:       term.TopologyKey,
		NamespaceSelector: nsSelector,
	}, nil
}

// PodAffinityTerms are a pod's parsed pod-affinity and anti-affinity terms.
type PodAffinityTerms struct {
	RequiredAffinityTerms      []AffinityTerm
	RequiredAntiAffinityTerms  []AffinityTerm
	PreferredAffinityTerms     []WeightedAffinityTerm
	PreferredAntiAffinityTerms []WeightedAffinityTerm
	// AffinityParseError is set when a term's selector does not parse; the
	// terms are then all left empty.
	AffinityParseError error
}

// ParsePodAffinityTerms parses the pod's (anti-)affinity terms. NewPodInfo
// calls it; queueing hints, which need only the terms and run under the
// queue's lock, call it directly.
func ParsePodAffinityTerms(pod *v1.Pod) PodAffinityTerms {
	var out PodAffinityTerms
	a := pod.Spec.Affinity
	if a == nil {
		return out
	}
	var errs []error
	required := func(terms []v1.PodAffinityTerm, what string) []AffinityTerm {
		var res []AffinityTerm
		for i := range terms {
			t, err := newAffinityTerm(pod, &terms[i])
			if err != nil {
				errs = append(errs, fmt.Errorf("%s[%d]: %w", what, i, err))
				continue
			}
			res = append(res, t)
		}
		return res
	}
	preferred := func(terms []v1.WeightedPodAffinityTerm, what string) []WeightedAffinityTerm {
		var res []WeightedAffinityTerm
		for i := range terms {
			t, err := newAffinityTerm(pod, &terms[i].PodAffinityTerm)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s[%d]: %w", what, i, err))
				continue
			}
			res = append(res, WeightedAffinityTerm{AffinityTerm: t, Weight: terms[i].Weight})
		}
		return res
	}
	if pa := a.PodAffinity; pa != nil {
		out.RequiredAffinityTerms = required(pa.RequiredDuringSchedulingIgnoredDuringExecution, "podAffinity.required")
		out.PreferredAffinityTerms = preferred(pa.PreferredDuringSchedulingIgnoredDuringExecution, "podAffinity.preferred")
	}
	if paa := a.PodAntiAffinity; paa != nil {
		out.RequiredAntiAffinityTerms = required(paa.RequiredDuringSchedulingIgnoredDuringExecution,
			"podAntiAffinity.required")
		out.PreferredAntiAffinityTerms = preferred(paa.PreferredDuringSchedulingIgnoredDuringExecution,
			"podAntiAffinity.preferred")
	}
	if len(errs) > 0 {
		return PodAffinityTerms{AffinityParseError: errors.Join(errs...)}
	}
	return out
}
