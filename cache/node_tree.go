// This file keeps the order in which the snapshot lists nodes: zones
// interleaved round-robin, so that a search that stops early (after
// percentageOfNodesToScore) still samples every zone.

package cache

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/node/topology"
	"k8s.io/klog/v2"
)

// nodeTree holds node names grouped by zone. Zones are kept in the order they
// were first seen (a zone that empties is dropped, and goes to the end if it
// comes back); nodes within a zone in the order they were added. Both orders
// are stable, so list() returns the same sequence until a node is added,
// removed or changes zone.
//
// nodeTree is not safe for concurrent use; the Cache's lock guards it.
type nodeTree struct {
	// zones lists the zone keys in the order they were first seen.
	zones []string
	// nodesByZone maps a zone key to its node names, in insertion order.
	nodesByZone map[string][]string
	// zoneOf maps a node name to its zone key; it is also the set of nodes.
	zoneOf map[string]string
}

// newNodeTree returns a tree holding nodes, added in the given order.
func newNodeTree(logger klog.Logger, nodes []*v1.Node) *nodeTree {
	t := &nodeTree{
		nodesByZone: map[string][]string{},
		zoneOf:      map[string]string{},
	}
	for _, n := range nodes {
		t.addNode(logger, n)
	}
	return t
}

// zoneKey is the zone a node is grouped under: its region and zone labels
// joined (kube-scheduler's key, which also honours the deprecated
// failure-domain.beta labels). Nodes without either label share the zone "".
func zoneKey(node *v1.Node) string { return topology.GetZoneKey(node) }

// numNodes is the number of nodes in the tree.
func (t *nodeTree) numNodes() int { return len(t.zoneOf) }

// addNode adds node at the end of its zone. It reports false, and changes
// nothing, if the node is already in the tree (use updateNode to move it).
func (t *nodeTree) addNode(logger klog.Logger, node *v1.Node) bool {
	if _, ok := t.zoneOf[node.Name]; ok {
		return false
	}
	zone := zoneKey(node)
	if _, ok := t.nodesByZone[zone]; !ok {
		t.zones = append(t.zones, zone)
	}
	t.nodesByZone[zone] = append(t.nodesByZone[zone], node.Name)
	t.zoneOf[node.Name] = zone
	logger.V(2).Info("Added node to the node tree", "node", klog.KObj(node), "zone", zone)
	return true
}

// removeNode removes the node called name; it is an error if it is not there.
func (t *nodeTree) removeNode(logger klog.Logger, name string) error {
	zone, ok := t.zoneOf[name]
	if !ok {
		return fmt.Errorf("node %q is not in the node tree", name)
	}
	delete(t.zoneOf, name)
	names := t.nodesByZone[zone]
	for i, n := range names {
		if n == name {
			// Shift rather than swap: the order of the others must not change.
			names = append(names[:i], names[i+1:]...)
			break
		}
	}
	if len(names) > 0 {
		t.nodesByZone[zone] = names
	} else {
		delete(t.nodesByZone, zone)
		for i, z := range t.zones {
			if z == zone {
				t.zones = append(t.zones[:i], t.zones[i+1:]...)
				break
			}
		}
	}
	logger.V(2).Info("Removed node from the node tree", "node", klog.KRef("", name), "zone", zone)
	return nil
}

// updateNode makes the tree reflect node: it adds a node it does not know,
// and moves a node whose zone labels changed to the end of its new zone. It
// reports whether the order changed.
func (t *nodeTree) updateNode(logger klog.Logger, node *v1.Node) bool {
	zone, ok := t.zoneOf[node.Name]
	if ok && zone == zoneKey(node) {
		return false
	}
	if ok {
		// Cannot fail: the node was just found.
		_ = t.removeNode(logger, node.Name)
	}
	return t.addNode(logger, node)
}

// list returns every node name, zones interleaved: the first node of each
// zone (in zone order), then the second of each zone that has one, and so on.
func (t *nodeTree) list() []string {
	out := make([]string, 0, t.numNodes())
	for i := 0; len(out) < t.numNodes(); i++ {
		for _, zone := range t.zones {
			if names := t.nodesByZone[zone]; i < len(names) {
				out = append(out, names[i])
			}
		}
	}
	return out
}
