// This file tests the key of the snapshot's anti-affinity term index: terms
// share a key exactly when they select the same pods in the same topology.

package cache

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// antiAffinityTermOf parses a pod in namespace ns with one required
// anti-affinity term and returns that term.
func antiAffinityTermOf(t *testing.T, ns string, term v1.PodAffinityTerm) *framework.AffinityTerm {
	t.Helper()
	pod := makePod("p").Namespace(ns).PodAntiAffinity(&v1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term},
	}).Obj()
	terms := framework.ParsePodAffinityTerms(pod)
	if terms.AffinityParseError != nil || len(terms.RequiredAntiAffinityTerms) != 1 {
		t.Fatalf("parsing %v: %v", term, terms.AffinityParseError)
	}
	return &terms.RequiredAntiAffinityTerms[0]
}

// TestTermKey checks that terms share a key exactly when they select the
// same pods in the same topology: the snapshot's index adds up the counts of
// terms with one key and matches only one of them.
func TestTermKey(t *testing.T) {
	app := func(values ...string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: values}}}
	}
	hostname := func(sel *metav1.LabelSelector) v1.PodAffinityTerm {
		return v1.PodAffinityTerm{LabelSelector: sel, TopologyKey: v1.LabelHostname}
	}
	withNamespaces := func(term v1.PodAffinityTerm, ns ...string) v1.PodAffinityTerm {
		term.Namespaces = ns
		return term
	}
	withNamespaceSelector := func(term v1.PodAffinityTerm, sel *metav1.LabelSelector) v1.PodAffinityTerm {
		term.NamespaceSelector = sel
		return term
	}
	tests := []struct {
		name         string
		nsA, nsB     string
		termA, termB v1.PodAffinityTerm
		wantSame     bool
	}{
		{name: "the same term in the same namespace", nsA: "a", nsB: "a",
			termA: hostname(app("db")), termB: hostname(app("db")), wantSame: true},
		{name: "values listed in another order", nsA: "a", nsB: "a",
			termA: hostname(app("db", "web")), termB: hostname(app("web", "db")), wantSame: true},
		{name: "the pod's own namespace differs", nsA: "a", nsB: "b",
			termA: hostname(app("db")), termB: hostname(app("db"))},
		{name: "listed namespaces equal the pods' own", nsA: "a", nsB: "b",
			termA: withNamespaces(hostname(app("db")), "x", "y"), termB: withNamespaces(hostname(app("db")), "y", "x"),
			wantSame: true},
		{name: "another topology key", nsA: "a", nsB: "a",
			termA: hostname(app("db")),
			termB: v1.PodAffinityTerm{LabelSelector: app("db"), TopologyKey: v1.LabelTopologyZone}},
		{name: "another selector", nsA: "a", nsB: "a",
			termA: hostname(app("db")), termB: hostname(app("web"))},
		{name: "no selector (nothing) against an empty one (everything)", nsA: "a", nsB: "a",
			termA: hostname(nil), termB: hostname(&metav1.LabelSelector{})},
		{name: "no namespace selector against an empty one (every namespace)", nsA: "a", nsB: "a",
			termA: withNamespaces(hostname(app("db")), "a"),
			termB: withNamespaceSelector(withNamespaces(hostname(app("db")), "a"), &metav1.LabelSelector{})},
		{name: "other namespace selectors", nsA: "a", nsB: "a",
			termA: withNamespaceSelector(hostname(app("db")), &metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}),
			termB: withNamespaceSelector(hostname(app("db")), &metav1.LabelSelector{MatchLabels: map[string]string{"team": "y"}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := termKey(antiAffinityTermOf(t, tt.nsA, tt.termA)), termKey(antiAffinityTermOf(t, tt.nsB, tt.termB))
			if got := a == b; got != tt.wantSame {
				t.Errorf("keys %q and %q: same = %v, want %v", a, b, got, tt.wantSame)
			}
		})
	}
}
