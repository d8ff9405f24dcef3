// This file holds the snapshot's index of the required anti-affinity terms
// of existing pods, which InterPodAffinity's PreFilter reads instead of
// visiting every pod that has such terms.

package cache

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/minisched/minisched/minisched/framework"
)

// termIndex maps a term's key (see termKey) to the term and its counts per
// domain, over the NodeInfos added to it.
type termIndex map[string]*framework.TermCounts

// addNode adds (delta 1) or takes away (delta -1) the required anti-affinity
// terms of the pods on ni, each in the domain ni's node is in for the term's
// topology key. Taking away a NodeInfo must see the same node and pods that
// adding it saw: the snapshot takes a NodeInfo away before overwriting it.
func (x termIndex) addNode(ni *framework.NodeInfo, delta int64) {
	node := ni.Node()
	if node == nil {
		return
	}
	for _, p := range ni.PodsWithRequiredAntiAffinity {
		x.addPod(node, p, delta)
	}
}

// addPod adds (delta 1) or takes away (delta -1) the required anti-affinity
// terms of one pod on node (Snapshot.AssumePod and ForgetPod do so). A term
// first counted gets p's term as its representative, and keeps it until
// its counts drop to nothing.
func (x termIndex) addPod(node *v1.Node, p *framework.PodInfo, delta int64) {
	for i := range p.RequiredAntiAffinityTerms {
		t := &p.RequiredAntiAffinityTerms[i]
		value, ok := node.Labels[t.TopologyKey]
		if !ok {
			continue
		}
		key := termKey(t)
		tc := x[key]
		if tc == nil {
			if delta < 0 {
				panic("cache: taking away a term the snapshot's index never counted: " + key)
			}
			tc = &framework.TermCounts{Term: t, Counts: map[string]int64{}}
			x[key] = tc
		}
		tc.Counts[value] += delta
		if tc.Counts[value] == 0 {
			delete(tc.Counts, value)
			if len(tc.Counts) == 0 {
				delete(x, key)
			}
		}
	}
}

// termKey identifies what a term selects: its topology key, namespaces,
// namespace selector and label selector. Equal keys mean terms that Match the
// same pods. Selectors print their requirements sorted; an empty selector
// (everything) prints as "" like labels.Nothing does, so it is marked apart.
func termKey(t *framework.AffinityTerm) string {
	var b strings.Builder
	b.WriteString(t.TopologyKey)
	b.WriteByte(0)
	for i, ns := range sets.List(t.Namespaces) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(ns)
	}
	b.WriteByte(0)
	writeSelector(&b, t.NamespaceSelector)
	b.WriteByte(0)
	writeSelector(&b, t.Selector)
	return b.String()
}

// writeSelector writes sel, telling nil, everything and nothing apart.
func writeSelector(b *strings.Builder, sel labels.Selector) {
	switch {
	case sel == nil:
		b.WriteString("<nil>")
	case sel.Empty():
		b.WriteString("<everything>")
	default:
		b.WriteString(sel.String())
	}
}
