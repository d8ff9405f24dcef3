// This file is the snapshot's placement: the set of nodes a pod-group
// cycle with TopologyAwareWorkloadScheduling restricts the scheduler's
// search to while it tries the group in one topology domain.

package cache

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// placementNodes is the placement a snapshot was told to assume, with the
// names of its nodes for a quick lookup.
type placementNodes struct {
	placement *framework.Placement
	names     sets.Set[string]
}

// A placement restricts what the scheduler searches, not what plugins see.
// While one is assumed:
//
//   - NumNodesInPlacement, ListNodesInPlacement and GetNodeInPlacement
//     answer for the placement's nodes only: the scheduler filters and
//     scores those, and a member that fits none of them reports "0/N nodes
//     are available" with N the placement's size;
//   - List, Get, NumNodes and the rest of NodeInfoLister still answer for
//     every node: a plugin's PreFilter counts over the whole cluster (a
//     spread constraint's domains, the pods an affinity term matches), as
//     in kube-scheduler, whose snapshot makes the same split.
//
// AssumePod and ForgetPod work as without a placement; a placement holds
// the snapshot's own NodeInfos, so the members placed in it are seen
// through both views. The pod-group cycle assumes one placement at a time,
// tries the group in it, forgets the members it placed, and restores the
// placement it found (GetPlacement: none, without nesting) before the
// next; UpdateSnapshot forgets a placement left behind, as it does pods.

// GetPlacement returns the placement assumed in the snapshot, or nil if
// the scheduler may search every node.
func (s *Snapshot) GetPlacement() *framework.Placement {
	if s.placement == nil {
		return nil
	}
	return s.placement.placement
}

// AssumePlacement restricts the scheduler's search to the placement's
// nodes, replacing any placement assumed before; nil lifts the restriction.
// A placement of every node is no restriction, and is not kept. Its nodes
// must be the snapshot's own NodeInfos (a PlacementGenerate plugin divides
// the ones ListNodesInPlacement gave it): a node the snapshot does not
// have, or a copy of one, is an error, and leaves no placement assumed.
// Not safe for concurrent use: call it between members' tries, never
// during one.
func (s *Snapshot) AssumePlacement(placement *framework.Placement) error {
	s.ForgetPlacement()
	if placement == nil || len(placement.Nodes) == len(s.nodeInfoList) {
		return nil
	}
	names := sets.New[string]()
	for _, ni := range placement.Nodes {
		name := ni.Node().Name
		own, ok := s.nodeInfoMap[name]
		if !ok {
			return fmt.Errorf("node %s in placement is not present in snapshot", name)
		}
		if own != ni {
			return fmt.Errorf("node %s in placement is not the same instance as in the snapshot", name)
		}
		names.Insert(name)
	}
	s.placement = &placementNodes{placement: placement, names: names}
	return nil
}

// ForgetPlacement lifts the restriction AssumePlacement made.
func (s *Snapshot) ForgetPlacement() { s.placement = nil }

// NumNodesInPlacement is the number of nodes the scheduler may search: the
// placement's, or every node's without one.
func (s *Snapshot) NumNodesInPlacement() int {
	if s.placement == nil {
		return len(s.nodeInfoList)
	}
	return len(s.placement.placement.Nodes)
}

// ListNodesInPlacement returns the nodes the scheduler may search: the
// placement's, in the order its generator gave them, or List without one.
// The slice is shared: do not modify it.
func (s *Snapshot) ListNodesInPlacement() ([]*framework.NodeInfo, error) {
	if s.placement == nil {
		return s.List()
	}
	return s.placement.placement.Nodes, nil
}

// GetNodeInPlacement is Get for a node of the placement; a node outside it
// is an error, as one the snapshot does not have.
func (s *Snapshot) GetNodeInPlacement(nodeName string) (*framework.NodeInfo, error) {
	if s.placement == nil || s.placement.names.Has(nodeName) {
		return s.Get(nodeName)
	}
	return nil, fmt.Errorf("node %q not found in placement", nodeName)
}

// forgetPlacement lifts a placement a pod-group cycle left assumed.
// UpdateSnapshot calls it: the nodes it holds may be replaced.
func (s *Snapshot) forgetPlacement(logger klog.Logger) {
	if s.placement != nil {
		logger.Error(nil, "A placement assumed in the snapshot was not forgotten; forgetting it",
			"placement", s.placement.placement.Name)
		s.ForgetPlacement()
	}
}
