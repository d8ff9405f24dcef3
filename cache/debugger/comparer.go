// This file is the comparer: what differs between the scheduler's cache and
// the informers it is built from, as a CacheComparison.

package debugger

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
)

// PodPlacement is one pod in a CacheComparison: where the cache has it and
// where the informer has it ("" for nowhere: pending, or not known).
type PodPlacement struct {
	// Key is the pod's namespace/name, UID what the cache keys it by.
	Key string
	UID types.UID
	// CacheNode is the node the cache counts the pod on.
	CacheNode string
	// InformerNode is the pod's spec.nodeName in the informer.
	InformerNode string
}

// String names the pod and both its places, for CacheComparison.String.
func (p PodPlacement) String() string {
	return fmt.Sprintf("%s (uid %s, cache: %q, informer: %q)", p.Key, p.UID, p.CacheNode, p.InformerNode)
}

// RequestedMismatch is a node whose NodeInfo in the cache sums requests
// other than the pods the informer has on it (and the pods assumed on it)
// request.
type RequestedMismatch struct {
	Node string
	// Cache is the NodeInfo's Requested; Informer the sum recomputed from
	// the pods.
	Cache, Informer framework.Resource
}

// String names the node and both sums, for CacheComparison.String.
func (m RequestedMismatch) String() string {
	return fmt.Sprintf("%s (cache: %s, informer: %s)", m.Node, formatResource(&m.Cache), formatResource(&m.Informer))
}

// CacheComparison is what differs between the scheduler's cache and the
// informers' view of the cluster, which the cache is built from. Right
// after an informer event the two may differ until the event handler has
// run; a difference that lasts is a bug.
type CacheComparison struct {
	// MissingNodes are in the informer and not in the cache; ExtraNodes in
	// the cache and not in the informer.
	MissingNodes, ExtraNodes []string
	// MissingPods are bound to a node in the informer and absent from the
	// cache.
	MissingPods []PodPlacement
	// ExtraPods are added (not assumed) in the cache and absent from the
	// informer.
	ExtraPods []PodPlacement
	// MisplacedPods are added in the cache on one node, and in the informer
	// on another node or on none.
	MisplacedPods []PodPlacement
	// RequestedMismatches are the nodes whose requested resources in the
	// cache differ from the sum of the requests of their pods.
	RequestedMismatches []RequestedMismatch
	// AssumedPods are not differences: a pod the scheduler placed is
	// counted on its node before the informer reports the binding. An
	// assumed pod that stays assumed long after its binding is suspect.
	AssumedPods []PodPlacement
}

// IsEmpty reports whether the cache agrees with the informers (assumed pods
// aside).
func (c *CacheComparison) IsEmpty() bool {
	return len(c.MissingNodes)+len(c.ExtraNodes)+len(c.MissingPods)+len(c.ExtraPods)+
		len(c.MisplacedPods)+len(c.RequestedMismatches) == 0
}

// String lists the differences, and the assumed pods, for logs and test
// failures.
func (c *CacheComparison) String() string {
	var parts []string
	add := func(what string, items []string) {
		if len(items) > 0 {
			parts = append(parts, fmt.Sprintf("%s: %s", what, strings.Join(items, ", ")))
		}
	}
	add("nodes missing from the cache", c.MissingNodes)
	add("nodes only in the cache", c.ExtraNodes)
	add("pods missing from the cache", stringsOf(c.MissingPods))
	add("pods only in the cache", stringsOf(c.ExtraPods))
	add("pods on another node in the cache", stringsOf(c.MisplacedPods))
	add("requested resources that differ", stringsOf(c.RequestedMismatches))
	if c.IsEmpty() {
		parts = append([]string{"the cache matches the informers"}, parts...)
	}
	add("assumed pods", stringsOf(c.AssumedPods))
	return strings.Join(parts, "; ")
}

// stringsOf renders each item with its String method.
func stringsOf[T fmt.Stringer](items []T) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.String()
	}
	return out
}

// CacheComparer compares the scheduler's cache with the scheduler's
// informers, through their listers. New builds it.
type CacheComparer struct {
	// nodeLister and podLister read the informers that feed the cache: the
	// scheduler's own, so that a difference means the cache missed an event,
	// not that another informer is ahead or behind.
	nodeLister corelisters.NodeLister
	podLister  corelisters.PodLister
	cache      *cache.Cache
}

// Compare compares the cache with what the informers hold.
func (c *CacheComparer) Compare() (*CacheComparison, error) {
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing nodes from the informer: %w", err)
	}
	pods, err := c.podLister.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing pods from the informer: %w", err)
	}
	return compare(nodes, pods, c.cache.Dump()), nil
}

// logComparison logs Compare's result: at Info if the cache matches, as an
// error if it does not.
func (c *CacheComparer) logComparison(logger klog.Logger) {
	diff, err := c.Compare()
	switch {
	case err != nil:
		logger.Error(err, "Comparing the cache with the informers failed")
	case diff.IsEmpty():
		logger.Info("Cache comparer found no differences", "assumedPods", len(diff.AssumedPods))
	default:
		logger.Error(nil, "Cache mismatch", "differences", diff.String())
	}
}

// compare compares a cache dump with the informers' nodes and pods.
func compare(nodes []*v1.Node, pods []*v1.Pod, dump *cache.Dump) *CacheComparison {
	c := &CacheComparison{}

	informerNodes := map[string]bool{}
	for _, n := range nodes {
		informerNodes[n.Name] = true
		if dump.Nodes[n.Name].Node() == nil {
			c.MissingNodes = append(c.MissingNodes, n.Name)
		}
	}
	for name, ni := range dump.Nodes {
		if ni.Node() != nil && !informerNodes[name] {
			c.ExtraNodes = append(c.ExtraNodes, name)
		}
	}

	// The informer's pods by UID, and the pods the cache should count on
	// each node: those the informer has bound there...
	informerPods := make(map[types.UID]*v1.Pod, len(pods))
	want := map[string]map[types.UID]*v1.Pod{}
	expect := func(node string, p *v1.Pod) {
		if want[node] == nil {
			want[node] = map[types.UID]*v1.Pod{}
		}
		want[node][p.UID] = p
	}
	for _, p := range pods {
		informerPods[p.UID] = p
		if p.Spec.NodeName != "" {
			expect(p.Spec.NodeName, p)
		}
	}
	// ...and those assumed there that the informer does not have bound yet.
	cached := map[types.UID]bool{}
	for name, ni := range dump.Nodes {
		for _, pi := range ni.Pods {
			p := pi.Pod
			cached[p.UID] = true
			placement := PodPlacement{Key: framework.PodKey(p), UID: p.UID, CacheNode: name}
			ip, inInformer := informerPods[p.UID]
			if inInformer {
				placement.InformerNode = ip.Spec.NodeName
			}
			switch {
			case dump.AssumedPods.Has(p.UID):
				c.AssumedPods = append(c.AssumedPods, placement)
				if placement.InformerNode == "" {
					expect(name, p)
				}
			case !inInformer:
				c.ExtraPods = append(c.ExtraPods, placement)
			case placement.InformerNode != name:
				c.MisplacedPods = append(c.MisplacedPods, placement)
			}
		}
	}
	for _, p := range pods {
		if p.Spec.NodeName != "" && !cached[p.UID] {
			c.MissingPods = append(c.MissingPods,
				PodPlacement{Key: framework.PodKey(p), UID: p.UID, InformerNode: p.Spec.NodeName})
		}
	}

	// Requested resources, recomputed from the pods as NodeInfo computes
	// them, on every node either side knows of.
	names := map[string]bool{}
	for name := range dump.Nodes {
		names[name] = true
	}
	for name := range want {
		names[name] = true
	}
	for name := range names {
		got := framework.Resource{}
		if ni, ok := dump.Nodes[name]; ok {
			got = *ni.Requested.Clone()
		}
		sum := framework.Resource{}
		for _, p := range want[name] {
			req := framework.PodRequests(p)
			sum.AddResource(&req, 1)
		}
		if !sameRequests(&got, &sum) {
			c.RequestedMismatches = append(c.RequestedMismatches, RequestedMismatch{Node: name, Cache: got, Informer: sum})
		}
	}

	slices.Sort(c.MissingNodes)
	slices.Sort(c.ExtraNodes)
	for _, list := range [][]PodPlacement{c.MissingPods, c.ExtraPods, c.MisplacedPods, c.AssumedPods} {
		slices.SortFunc(list, func(a, b PodPlacement) int { return strings.Compare(a.Key, b.Key) })
	}
	slices.SortFunc(c.RequestedMismatches, func(a, b RequestedMismatch) int { return strings.Compare(a.Node, b.Node) })
	return c
}

// sameRequests compares two sums of requests. An extended resource summed
// to zero (its pods left) counts as absent.
func sameRequests(a, b *framework.Resource) bool {
	if a.MilliCPU != b.MilliCPU || a.Memory != b.Memory || a.EphemeralStorage != b.EphemeralStorage ||
		a.AllowedPodNumber != b.AllowedPodNumber {
		return false
	}
	for name, q := range a.ScalarResources {
		if b.ScalarResources[name] != q {
			return false
		}
	}
	for name, q := range b.ScalarResources {
		if a.ScalarResources[name] != q {
			return false
		}
	}
	return true
}

// formatResource renders a Resource compactly: cpu in millicores, the rest
// in bytes or units, extended resources by name.
func formatResource(r *framework.Resource) string {
	s := fmt.Sprintf("cpu=%dm memory=%d ephemeral-storage=%d", r.MilliCPU, r.Memory, r.EphemeralStorage)
	if r.AllowedPodNumber != 0 {
		s += fmt.Sprintf(" pods=%d", r.AllowedPodNumber)
	}
	names := make([]string, 0, len(r.ScalarResources))
	for name := range r.ScalarResources {
		names = append(names, string(name))
	}
	slices.Sort(names)
	for _, name := range names {
		s += fmt.Sprintf(" %s=%d", name, r.ScalarResources[v1.ResourceName(name)])
	}
	return s
}
