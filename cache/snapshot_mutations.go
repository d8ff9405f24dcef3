// This file is the snapshot's mutation session: what a PodGroupPostFilter
// plugin (DefaultPreemption's whole-group preemption) does to the snapshot
// to ask "would the group fit without these pods?". StartMutations backs
// the snapshot up and works on copies; RemovePod and AddPod take any pod
// off a node and put any pod on one, as the cache would; EndMutations puts
// the backup back, so that the snapshot is exactly what it was.

package cache

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

var _ framework.MutableSnapshotSharedLister = &Snapshot{}

// snapshotBackup is what a snapshot was when its mutation session started:
// the very maps, slices and objects it held, which the session never
// touches (it works on copies), so that putting them back restores the
// snapshot exactly, NodeInfo pointers included. UpdateSnapshot relies on
// that: it refreshes the NodeInfos it handed out in place.
type snapshotBackup struct {
	nodeInfoMap                                  map[string]*framework.NodeInfo
	nodeInfoList                                 []*framework.NodeInfo
	havePodsWithAffinityNodeInfoList             []*framework.NodeInfo
	havePodsWithAffinityScoringTermsNodeInfoList []*framework.NodeInfo
	havePodsWithRequiredAntiAffinityNodeInfoList []*framework.NodeInfo
	antiAffinityTerms                            termIndex
	usedPVCs                                     pvcCounts
	podGroupStates                               podGroupStates
	assumed                                      []snapshotAssumption
}

// StartMutations starts a mutation session, as kube-scheduler's
// Snapshot.StartMutations: it keeps what the snapshot holds aside and
// gives the snapshot copies of it to change (every NodeInfo, the lists in
// the same order, the term and claim counts, the pod-group states), so
// that EndMutations can restore the snapshot exactly. Copying every
// NodeInfo costs a walk of the nodes, once per PodGroupPostFilter.
//
// Pods assumed in the snapshot before the session (AssumePod) stay on
// their nodes in the copies, but cannot be forgotten during the session;
// EndMutations brings them back as they were, still assumed. Sessions do
// not nest: a second StartMutations before EndMutations is an error.
func (s *Snapshot) StartMutations() error {
	if s.backup != nil {
		return errors.New("cannot stack mutations")
	}
	s.backup = &snapshotBackup{
		nodeInfoMap:                      s.nodeInfoMap,
		nodeInfoList:                     s.nodeInfoList,
		havePodsWithAffinityNodeInfoList: s.havePodsWithAffinityNodeInfoList,
		havePodsWithAffinityScoringTermsNodeInfoList: s.havePodsWithAffinityScoringTermsNodeInfoList,
		havePodsWithRequiredAntiAffinityNodeInfoList: s.havePodsWithRequiredAntiAffinityNodeInfoList,
		antiAffinityTerms: s.antiAffinityTerms,
		usedPVCs:          s.usedPVCs,
		podGroupStates:    s.podGroupStates,
		assumed:           s.assumed,
	}
	copies := make(map[*framework.NodeInfo]*framework.NodeInfo, len(s.nodeInfoMap))
	s.nodeInfoMap = make(map[string]*framework.NodeInfo, len(copies))
	for name, ni := range s.backup.nodeInfoMap {
		c := ni.Snapshot()
		copies[ni] = c
		s.nodeInfoMap[name] = c
	}
	s.nodeInfoList = copiesOf(s.backup.nodeInfoList, copies)
	s.havePodsWithAffinityNodeInfoList = copiesOf(s.backup.havePodsWithAffinityNodeInfoList, copies)
	s.havePodsWithAffinityScoringTermsNodeInfoList = copiesOf(s.backup.havePodsWithAffinityScoringTermsNodeInfoList,
		copies)
	s.havePodsWithRequiredAntiAffinityNodeInfoList = copiesOf(s.backup.havePodsWithRequiredAntiAffinityNodeInfoList,
		copies)
	s.antiAffinityTerms = s.backup.antiAffinityTerms.clone()
	s.usedPVCs = maps.Clone(s.backup.usedPVCs)
	s.podGroupStates = make(podGroupStates, len(s.backup.podGroupStates))
	for key, st := range s.backup.podGroupStates {
		s.podGroupStates[key] = st.clone()
	}
	s.assumed = nil
	return nil
}

// copiesOf returns list with each NodeInfo replaced by its copy.
func copiesOf(list []*framework.NodeInfo, copies map[*framework.NodeInfo]*framework.NodeInfo) []*framework.NodeInfo {
	out := make([]*framework.NodeInfo, len(list))
	for i, ni := range list {
		out[i] = copies[ni]
	}
	return out
}

// EndMutations ends the mutation session: the snapshot is again exactly
// what it was at StartMutations, whatever the session removed, added,
// assumed or forgot. It is an error if no session was started.
func (s *Snapshot) EndMutations() error {
	b := s.backup
	if b == nil {
		return errors.New("no mutation session started")
	}
	s.nodeInfoMap, s.nodeInfoList = b.nodeInfoMap, b.nodeInfoList
	s.havePodsWithAffinityNodeInfoList = b.havePodsWithAffinityNodeInfoList
	s.havePodsWithAffinityScoringTermsNodeInfoList = b.havePodsWithAffinityScoringTermsNodeInfoList
	s.havePodsWithRequiredAntiAffinityNodeInfoList = b.havePodsWithRequiredAntiAffinityNodeInfoList
	s.antiAffinityTerms, s.usedPVCs = b.antiAffinityTerms, b.usedPVCs
	s.podGroupStates, s.assumed = b.podGroupStates, b.assumed
	s.backup = nil
	return nil
}

// endForgottenMutations ends a session a PodGroupPostFilter left open.
// UpdateSnapshot calls it first: it refreshes the NodeInfos it handed out
// before the session, not the session's copies.
func (s *Snapshot) endForgottenMutations(logger klog.Logger) {
	if s.backup == nil {
		return
	}
	logger.Error(nil, "A mutation session of the snapshot was not ended; ending it")
	_ = s.EndMutations() // a session is open: it cannot fail
}

// checkMutable says why AddPod or RemovePod (what) cannot change the
// snapshot: outside a session, or while pods assumed in the session are
// still assumed (ForgetPod restores what AssumePod saw, so nothing may
// change beneath an assumed pod).
func (s *Snapshot) checkMutable(what string) error {
	if s.backup == nil {
		return fmt.Errorf("%s() called outside of mutation session", what)
	}
	if len(s.assumed) > 0 {
		return fmt.Errorf("%s() called while %d pods are assumed in the snapshot: forget them first", what,
			len(s.assumed))
	}
	return nil
}

// AddPod puts a pod on the node nodeName, in a mutation session, as the
// cache's AddPod would for a pod bound there: the node's NodeInfo holds it,
// the term and claim counts and the affinity lists count it, and, with pod
// groups, its group's state has it assigned. A pod whose spec.nodeName is
// not nodeName (a pending member put where the group would go) is placed
// as a copy naming the node, as the scheduler assumes pods. Unlike
// AssumePod, nothing needs undoing: EndMutations restores the snapshot.
//
// It changes nothing and returns an error outside a session, while pods
// assumed in the session are still assumed, if the node is not in the
// snapshot, or if the pod is on it already.
func (s *Snapshot) AddPod(podInfo *framework.PodInfo, nodeName string) error {
	if err := s.checkMutable("AddPod"); err != nil {
		return err
	}
	pod := podInfo.Pod
	ni, err := s.Get(nodeName)
	if err != nil {
		return fmt.Errorf("cannot add pod %s to the snapshot: %w", framework.PodKey(pod), err)
	}
	if slices.ContainsFunc(ni.Pods, func(p *framework.PodInfo) bool { return p.Pod.UID == pod.UID }) {
		return fmt.Errorf("pod %s is already on node %s in the snapshot", framework.PodKey(pod), nodeName)
	}
	if pod.Spec.NodeName != nodeName {
		placed := pod.DeepCopy()
		placed.Spec.NodeName = nodeName
		podInfo, pod = podInfo.WithPod(placed), placed
	}
	before := listMembership(ni)
	ni.AddPodInfo(podInfo)
	s.antiAffinityTerms.addPod(ni.Node(), podInfo, 1)
	s.usedPVCs.addPod(pod, 1)
	if after := listMembership(ni); after != before {
		s.addToAffinityLists(ni, before, after)
	}
	if key, ok := s.podGroupMemberKey(pod); ok {
		s.podGroupStates.ensure(key).setPod(pod)
	}
	return nil
}

// RemovePod takes the pod with pod's UID off the node nodeName, in a
// mutation session, as the cache's RemovePod would: the node's NodeInfo,
// the term and claim counts and the affinity lists no longer count it,
// and, with pod groups, its group's state forgets it (and is dropped if
// nothing is left of it). The pod may be any pod on the node: bound, or
// put there by AddPod. EndMutations restores the snapshot.
//
// It changes nothing and returns an error outside a session, while pods
// assumed in the session are still assumed, if the node is not in the
// snapshot, or if the pod is not on it.
func (s *Snapshot) RemovePod(logger klog.Logger, pod *v1.Pod, nodeName string) error {
	if err := s.checkMutable("RemovePod"); err != nil {
		return err
	}
	ni, err := s.Get(nodeName)
	if err != nil {
		return fmt.Errorf("cannot remove pod %s from the snapshot: %w", framework.PodKey(pod), err)
	}
	i := slices.IndexFunc(ni.Pods, func(p *framework.PodInfo) bool { return p.Pod.UID == pod.UID })
	if i < 0 {
		return fmt.Errorf("pod %s is not on node %s in the snapshot", framework.PodKey(pod), nodeName)
	}
	// The PodInfo the node holds is what the counts counted.
	pi := ni.Pods[i]
	before := listMembership(ni)
	if err := ni.RemovePod(pi.Pod); err != nil {
		return err
	}
	s.antiAffinityTerms.addPod(ni.Node(), pi, -1)
	s.usedPVCs.addPod(pi.Pod, -1)
	if after := listMembership(ni); after != before {
		s.removeFromAffinityLists(ni, before, after)
	}
	if key, ok := s.podGroupMemberKey(pi.Pod); ok {
		if st := s.podGroupStates[key]; st != nil {
			st.deletePod(pi.Pod.UID)
			s.podGroupStates.dropIfEmpty(key)
		}
	}
	logger.V(5).Info("Removed pod from the snapshot", "pod", klog.KObj(pod), "node", klog.KRef("", nodeName))
	return nil
}

// removeFromAffinityLists takes ni, which belonged in the lists of before
// and now belongs in those of after, out of the lists it left, keeping the
// others' order (in fresh slices: a plugin may hold the old ones).
// Removing a pod only ever makes a node leave lists.
func (s *Snapshot) removeFromAffinityLists(ni *framework.NodeInfo, before, after membership) {
	without := func(list []*framework.NodeInfo) []*framework.NodeInfo {
		return slices.DeleteFunc(slices.Clone(list), func(n *framework.NodeInfo) bool { return n == ni })
	}
	if before.affinity && !after.affinity {
		s.havePodsWithAffinityNodeInfoList = without(s.havePodsWithAffinityNodeInfoList)
	}
	if before.scoringTerms && !after.scoringTerms {
		s.havePodsWithAffinityScoringTermsNodeInfoList = without(s.havePodsWithAffinityScoringTermsNodeInfoList)
	}
	if before.requiredAntiAffinity && !after.requiredAntiAffinity {
		s.havePodsWithRequiredAntiAffinityNodeInfoList = without(s.havePodsWithRequiredAntiAffinityNodeInfoList)
	}
}

// clone returns a copy of x whose counts are its own; the representative
// terms are shared (nobody modifies them).
func (x termIndex) clone() termIndex {
	out := make(termIndex, len(x))
	for key, tc := range x {
		out[key] = &framework.TermCounts{Term: tc.Term, Counts: maps.Clone(tc.Counts)}
	}
	return out
}
