// This file holds the Snapshot: the frozen view of the cache that one
// scheduling cycle reads, and the only way plugins see cluster state.

package cache

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// Snapshot is a copy of the cache's NodeInfos taken at the start of a
// scheduling cycle. The cache refreshes it incrementally (Cache.UpdateSnapshot
// copies only the NodeInfos that changed since the snapshot's generation), so
// the scheduler keeps one Snapshot and hands the same object to every cycle.
//
// Only nodes that exist are in a snapshot: a NodeInfo whose node was deleted
// while pods still pointed at it, or one holding pods assumed on a node the
// cache has not seen yet, is left out.
//
// A Snapshot is not safe for concurrent use: it is refreshed between cycles
// and only read during one.
type Snapshot struct {
	// nodeInfoMap maps a node name to its NodeInfo.
	nodeInfoMap map[string]*framework.NodeInfo
	// nodeInfoList holds the same NodeInfos in node-tree order (zones
	// interleaved).
	nodeInfoList []*framework.NodeInfo
	// havePodsWithAffinityNodeInfoList are the nodes with at least one pod
	// that has pod affinity or anti-affinity, in the same order.
	havePodsWithAffinityNodeInfoList []*framework.NodeInfo
	// havePodsWithAffinityScoringTermsNodeInfoList are the nodes with at
	// least one pod that has required affinity or preferred (anti-)affinity
	// terms (see hasAffinityScoringTerms), in the same order.
	havePodsWithAffinityScoringTermsNodeInfoList []*framework.NodeInfo
	// havePodsWithRequiredAntiAffinityNodeInfoList are the nodes with at
	// least one pod that has required pod anti-affinity, in the same order.
	havePodsWithRequiredAntiAffinityNodeInfoList []*framework.NodeInfo
	// antiAffinityTerms indexes the required anti-affinity terms of the pods
	// on the nodes of nodeInfoMap; whoever changes the map keeps it up to date.
	antiAffinityTerms termIndex
	// usedPVCs counts the pods naming each claim ("namespace/name") over the
	// nodes of nodeInfoMap: the sum of their PVCRefCounts, kept up to date
	// by whoever changes the map, like antiAffinityTerms.
	usedPVCs pvcCounts
	// generation is the cache generation the snapshot reflects: every
	// NodeInfo change up to it is included.
	generation int64
}

var (
	_ framework.SharedLister      = &Snapshot{}
	_ framework.NodeInfoLister    = &Snapshot{}
	_ framework.StorageInfoLister = &Snapshot{}
)

// NewEmptySnapshot returns a snapshot with no nodes, ready for
// Cache.UpdateSnapshot.
func NewEmptySnapshot() *Snapshot {
	return &Snapshot{nodeInfoMap: map[string]*framework.NodeInfo{}, antiAffinityTerms: termIndex{}, usedPVCs: pvcCounts{}}
}

// NewSnapshot builds a snapshot from scratch, without a cache: one NodeInfo
// per node holding the pods whose Spec.NodeName names it, with image states
// counted over nodes. Nodes are ordered as the cache would order them had they
// been added in the order given. Pods on nodes not in nodes are left out. It
// is meant for plugin tests; its generation is 0.
func NewSnapshot(pods []*v1.Pod, nodes []*v1.Node) *Snapshot {
	s := NewEmptySnapshot()
	images := map[string]*imageState{}
	for _, node := range nodes {
		for _, name := range imageNames(node) {
			st, ok := images[name.name]
			if !ok {
				st = &imageState{size: name.size, nodes: sets.New[string]()}
				images[name.name] = st
			}
			st.nodes.Insert(node.Name)
		}
	}
	for _, node := range nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(node)
		ni.ImageStates = imageSummaries(node, images)
		s.nodeInfoMap[node.Name] = ni
	}
	for _, pod := range pods {
		if ni, ok := s.nodeInfoMap[pod.Spec.NodeName]; ok {
			ni.AddPod(pod)
		}
	}
	for _, ni := range s.nodeInfoMap {
		s.antiAffinityTerms.addNode(ni, 1)
		s.usedPVCs.addNode(ni, 1)
	}
	tree := newNodeTree(klog.Background(), nodes)
	s.rebuildLists(tree.list())
	return s
}

// NodeInfos returns the snapshot itself as a NodeInfoLister.
func (s *Snapshot) NodeInfos() framework.NodeInfoLister { return s }

// StorageInfos returns the snapshot itself as a StorageInfoLister.
func (s *Snapshot) StorageInfos() framework.StorageInfoLister { return s }

// IsPVCUsedByPods implements StorageInfoLister.
func (s *Snapshot) IsPVCUsedByPods(key string) bool { return s.usedPVCs[key] > 0 }

// pvcCounts sums NodeInfo.PVCRefCounts over a snapshot's nodes.
type pvcCounts map[string]int

// addNode adds (sign=1) or removes (sign=-1) a node's claim counts.
func (c pvcCounts) addNode(ni *framework.NodeInfo, sign int) {
	for key, n := range ni.PVCRefCounts {
		if v := c[key] + sign*n; v > 0 {
			c[key] = v
		} else {
			delete(c, key)
		}
	}
}

// NumNodes returns the number of nodes in the snapshot.
func (s *Snapshot) NumNodes() int { return len(s.nodeInfoList) }

// Generation returns the cache generation the snapshot reflects.
func (s *Snapshot) Generation() int64 { return s.generation }

// List returns every node, zones interleaved. The slice is shared: do not
// modify it.
func (s *Snapshot) List() ([]*framework.NodeInfo, error) { return s.nodeInfoList, nil }

// HavePodsWithAffinityList returns the nodes that have pods with pod
// affinity or anti-affinity, in List order.
func (s *Snapshot) HavePodsWithAffinityList() ([]*framework.NodeInfo, error) {
	return s.havePodsWithAffinityNodeInfoList, nil
}

// HavePodsWithAffinityScoringTermsList returns the nodes that have pods with
// required pod affinity or preferred pod (anti-)affinity, in List order.
func (s *Snapshot) HavePodsWithAffinityScoringTermsList() ([]*framework.NodeInfo, error) {
	return s.havePodsWithAffinityScoringTermsNodeInfoList, nil
}

// HavePodsWithRequiredAntiAffinityList returns the nodes that have pods with
// required pod anti-affinity, in List order.
func (s *Snapshot) HavePodsWithRequiredAntiAffinityList() ([]*framework.NodeInfo, error) {
	return s.havePodsWithRequiredAntiAffinityNodeInfoList, nil
}

// RequiredAntiAffinityTermCounts returns the distinct required anti-affinity
// terms of the pods on the snapshot's nodes, keyed by what they select, with
// their counts per domain. The map is the snapshot's own: read only.
func (s *Snapshot) RequiredAntiAffinityTermCounts() map[string]*framework.TermCounts {
	return s.antiAffinityTerms
}

// Get returns the NodeInfo of the node called nodeName, or an error if the
// snapshot has no such node.
func (s *Snapshot) Get(nodeName string) (*framework.NodeInfo, error) {
	if ni, ok := s.nodeInfoMap[nodeName]; ok && ni.Node() != nil {
		return ni, nil
	}
	return nil, fmt.Errorf("nodeinfo not found for node name %q", nodeName)
}

// rebuildLists refills the node list from the map in the order of names, and
// the affinity lists with it. Fresh slices are allocated, never reused: a
// plugin may still hold the previous cycle's lists.
func (s *Snapshot) rebuildLists(names []string) {
	s.nodeInfoList = make([]*framework.NodeInfo, 0, len(names))
	for _, name := range names {
		if ni, ok := s.nodeInfoMap[name]; ok {
			s.nodeInfoList = append(s.nodeInfoList, ni)
		}
	}
	s.rebuildAffinityLists()
}

// rebuildAffinityLists refills the three affinity lists from the node list.
func (s *Snapshot) rebuildAffinityLists() {
	s.havePodsWithAffinityNodeInfoList = make([]*framework.NodeInfo, 0, len(s.nodeInfoList))
	s.havePodsWithAffinityScoringTermsNodeInfoList = make([]*framework.NodeInfo, 0, len(s.nodeInfoList))
	s.havePodsWithRequiredAntiAffinityNodeInfoList = make([]*framework.NodeInfo, 0, len(s.nodeInfoList))
	for _, ni := range s.nodeInfoList {
		if len(ni.PodsWithAffinity) > 0 {
			s.havePodsWithAffinityNodeInfoList = append(s.havePodsWithAffinityNodeInfoList, ni)
		}
		if hasAffinityScoringTerms(ni) {
			s.havePodsWithAffinityScoringTermsNodeInfoList = append(s.havePodsWithAffinityScoringTermsNodeInfoList, ni)
		}
		if len(ni.PodsWithRequiredAntiAffinity) > 0 {
			s.havePodsWithRequiredAntiAffinityNodeInfoList = append(s.havePodsWithRequiredAntiAffinityNodeInfoList, ni)
		}
	}
}

// hasAffinityScoringTerms reports whether a pod on ni has required pod
// affinity or preferred pod (anti-)affinity terms.
func hasAffinityScoringTerms(ni *framework.NodeInfo) bool {
	for _, p := range ni.PodsWithAffinity {
		if len(p.RequiredAffinityTerms) > 0 || len(p.PreferredAffinityTerms) > 0 || len(p.PreferredAntiAffinityTerms) > 0 {
			return true
		}
	}
	return false
}
