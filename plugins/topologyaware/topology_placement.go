// Package topologyaware is kube-scheduler's TopologyPlacementGenerator
// (chapter 19, the TopologyAwareWorkloadScheduling gate): the
// PlacementGenerate plugin that proposes, for a PodGroup whose
// spec.schedulingConstraints names a topology key, one placement per value
// of that key, so that the pod-group cycle tries to fit the whole group
// within one rack, one zone, one block.
//
// A group without constraints gets the parent placement back: every node
// the cycle may use. A group some of whose pods are already placed (bound,
// or assumed waiting on Permit) gets only their domain: a group is never
// split across two.
package topologyaware

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "TopologyPlacementGenerator"

// TopologyPlacement proposes a placement per topology domain. It keeps no
// state: it reads the group's placed pods and their nodes from the
// snapshot.
type TopologyPlacement struct {
	// snapshotLister is the snapshot the current cycle decides on.
	snapshotLister framework.SharedLister
}

var _ framework.PlacementGeneratePlugin = &TopologyPlacement{}

// New returns the plugin. It takes no args; any pluginConfig is ignored, as
// for the other plugins without args.
func New(_ context.Context, _ *runtime.RawExtension, fh framework.Handle) (framework.Plugin, error) {
	return &TopologyPlacement{snapshotLister: fh.SnapshotSharedLister()}, nil
}

// Name returns Name.
func (pl *TopologyPlacement) Name() string { return Name }

// GeneratePlacements divides the parent placement's nodes by the value of
// the PodGroup's topology key:
//
//  1. without a topology constraint, the parent placement is the only one;
//  2. if pods of the group are placed already, all in one domain, only
//     that domain is proposed; placed pods on a node without the key, or in
//     two domains, are an Error (the group could not be kept in one);
//  3. a node without the key belongs to no placement; a domain is a
//     placement named after its value, with its nodes in the parent's
//     order.
//
// The placements come sorted by name. kube-scheduler returns them in a
// map's order, which changes from run to run; the order matters only to
// which placement's status a group that fits none reports ("first
// placement status"), so minisched picks the order a reader can predict.
// No node with the key gives no placement, which the framework turns into
// "no feasible placements found".
func (pl *TopologyPlacement) GeneratePlacements(_ context.Context, _ *framework.CycleState,
	podGroup *framework.PodGroupInfo, parent *framework.Placement) ([]*framework.Placement, *framework.Status) {
	// 1.
	key, ok := topologyKey(podGroup)
	if !ok {
		return []*framework.Placement{parent}, nil
	}
	// 2.
	state, err := pl.snapshotLister.PodGroupStates().Get(podGroup.Namespace, podGroup.Name)
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	// required is the placed pods' domain; nil if none is placed (a
	// domain may be the empty value).
	var required *string
	if scheduled := state.ScheduledPods(); len(scheduled) > 0 {
		domain, err := pl.scheduledPodsDomain(key, scheduled)
		if err != nil {
			return nil, framework.AsStatus(fmt.Errorf("cannot determine domain for already scheduled pods: %w", err))
		}
		required = &domain
	}
	// 3.
	byDomain := map[string]*framework.Placement{}
	for _, ni := range parent.Nodes {
		domain, ok := ni.Node().Labels[key]
		if !ok || required != nil && domain != *required {
			continue
		}
		p := byDomain[domain]
		if p == nil {
			p = &framework.Placement{Name: domain}
			byDomain[domain] = p
		}
		p.Nodes = append(p.Nodes, ni)
	}
	placements := make([]*framework.Placement, 0, len(byDomain))
	for _, p := range byDomain {
		placements = append(placements, p)
	}
	slices.SortFunc(placements, func(a, b *framework.Placement) int { return cmp.Compare(a.Name, b.Name) })
	return placements, nil
}

// scheduledPodsDomain returns the domain of key the group's placed pods
// are in, or an error if one is on a node without the key, or they are in
// two domains. The texts are kube-scheduler's.
func (pl *TopologyPlacement) scheduledPodsDomain(key string, pods []*v1.Pod) (string, error) {
	found := ""
	for _, pod := range pods {
		ni, err := pl.snapshotLister.NodeInfos().Get(pod.Spec.NodeName)
		if err != nil {
			return "", fmt.Errorf("getting node for pod %v: %w", klog.KObj(pod), err)
		}
		domain, ok := ni.Node().Labels[key]
		if !ok {
			return "", fmt.Errorf("no topology domain found for pod %v", klog.KObj(pod))
		}
		// As kube-scheduler, an empty value is not told apart from none
		// found yet.
		if found != "" && found != domain {
			return "", fmt.Errorf("more than 1 domain found for pod group: %v, %v", found, domain)
		}
		found = domain
	}
	return found, nil
}

// topologyKey is the PodGroup's topology key, if its scheduling
// constraints name one (the API allows one at most).
func topologyKey(podGroup *framework.PodGroupInfo) (string, bool) {
	if pg := podGroup.PodGroup; pg != nil {
		if c := pg.Spec.SchedulingConstraints; c != nil && len(c.Topology) > 0 {
			return c.Topology[0].Key, true
		}
	}
	return "", false
}
