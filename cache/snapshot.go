// This file holds the Snapshot: the frozen view of the cache that one
// scheduling cycle reads, and the only way plugins see cluster state; and
// AssumePod and ForgetPod, with which a pod-group cycle places the group's
// pods in the snapshot only.

package cache

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
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
// With pod groups (a cache built WithPodGroups), a snapshot also holds a
// copy of each group's state, and a pod-group cycle changes the snapshot:
// it places each member with AssumePod, so that the next member's plugins
// see it, and takes them all back with ForgetPod, last placed first, when
// the cycle ends. The cache is not touched until the cycle decided.
//
// A PodGroupPostFilter plugin may change the snapshot further, within a
// mutation session (StartMutations, AddPod, RemovePod, EndMutations in
// snapshot_mutations.go): it takes victims off their nodes and asks the
// group's algorithm again; EndMutations restores the snapshot exactly.
//
// A Snapshot is not safe for concurrent use: it is refreshed between cycles
// and only read during one (AssumePod and ForgetPod run between the tries
// of one pod-group cycle, never during one; a mutation session runs between
// the pod-group cycle's algorithm and its submission).
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

	// podGroupStates are copies of the cache's pod-group states, by
	// framework.PodGroupKey; empty unless the cache tracks pod groups.
	podGroupStates podGroupStates
	// trackPodGroups is the cache's WithPodGroups, which AssumePod follows
	// to keep a member's group state as the cache's AssumePod would.
	trackPodGroups bool
	// assumed are the pods AssumePod placed in this snapshot only, in the
	// order placed, each with what it changed; ForgetPod takes them back
	// from the end.
	assumed []snapshotAssumption
	// backup is what the snapshot held when its mutation session started
	// (StartMutations), nil outside one (snapshot_mutations.go).
	backup *snapshotBackup
	// placement restricts the scheduler's search while a pod-group cycle
	// tries a topology domain (snapshot_placement.go); nil: none.
	placement *placementNodes
}

var (
	_ framework.SharedLister      = &Snapshot{}
	_ framework.NodeInfoLister    = &Snapshot{}
	_ framework.StorageInfoLister = &Snapshot{}
	_ framework.PodGroupManager   = &Snapshot{}
)

// NewEmptySnapshot returns a snapshot with no nodes, ready for
// Cache.UpdateSnapshot.
func NewEmptySnapshot() *Snapshot {
	return &Snapshot{nodeInfoMap: map[string]*framework.NodeInfo{}, antiAffinityTerms: termIndex{}, usedPVCs: pvcCounts{},
		podGroupStates: podGroupStates{}}
}

// NewSnapshot builds a snapshot from scratch, without a cache: one NodeInfo
// per node holding the pods whose Spec.NodeName names it, with image states
// counted over nodes. Nodes are ordered as the cache would order them had they
// been added in the order given. Pods on nodes not in nodes are left out. It
// knows no pod group. It is meant for plugin tests; its generation is 0.
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
		c.add(key, sign*n)
	}
}

// addPod adds (sign=1) or removes (sign=-1) one pod's claims, counted as
// NodeInfo.PVCRefCounts counts them: once per volume naming a claim.
func (c pvcCounts) addPod(pod *v1.Pod, sign int) {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			c.add(framework.PVCKey(pod.Namespace, v.PersistentVolumeClaim.ClaimName), sign)
		}
	}
}

// add adds n to the count of key, dropping a count that reaches zero.
func (c pvcCounts) add(key string, n int) {
	if v := c[key] + n; v > 0 {
		c[key] = v
	} else {
		delete(c, key)
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

// PodGroups implements framework.SharedLister: the PodGroup objects as the
// cache had them at UpdateSnapshot.
func (s *Snapshot) PodGroups() framework.PodGroupLister { return snapshotPodGroupLister{s} }

// PodGroupStates implements framework.SharedLister: each group's pods as the
// cache had them at UpdateSnapshot, with the members this cycle placed so
// far (AssumePod) assumed. The states are the snapshot's own, not copies:
// read them, and do not keep them past the cycle.
func (s *Snapshot) PodGroupStates() framework.PodGroupStateLister {
	return snapshotPodGroupStateLister{s}
}

// snapshotPodGroupLister is Snapshot.PodGroups.
type snapshotPodGroupLister struct{ s *Snapshot }

// Get implements framework.PodGroupLister.
func (l snapshotPodGroupLister) Get(namespace, name string) (*schedulingv1beta1.PodGroup, error) {
	return l.s.podGroupStates.podGroup(namespace, name)
}

// snapshotPodGroupStateLister is Snapshot.PodGroupStates.
type snapshotPodGroupStateLister struct{ s *Snapshot }

// Get implements framework.PodGroupStateLister.
func (l snapshotPodGroupStateLister) Get(namespace, name string) (framework.PodGroupState, error) {
	st, err := l.s.podGroupStates.state(namespace, name)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// snapshotAssumption is one pod AssumePod placed, with what ForgetPod needs
// to undo it exactly.
type snapshotAssumption struct {
	podInfo *framework.PodInfo
	// nodeInfo is the snapshot's NodeInfo the pod was added to, and
	// generation its Generation, which AssumePod and ForgetPod keep.
	nodeInfo   *framework.NodeInfo
	generation int64
	// lists are the three affinity lists as they were, if AssumePod replaced
	// them (the node started having pods with affinity); nil otherwise.
	lists *affinityLists
	// groupKey is the key of the member's group state AssumePod changed
	// ("" if none); groupHadPod says whether that state had the pod before
	// (unscheduled), and groupGeneration is the state's generation, kept
	// as the NodeInfo's is.
	groupKey        string
	groupHadPod     bool
	groupGeneration int64
}

// affinityLists are a snapshot's three lists of the nodes with pods that
// have (some kind of) pod affinity.
type affinityLists struct {
	affinity, scoringTerms, requiredAntiAffinity []*framework.NodeInfo
}

// AssumePod places a pod in the snapshot only, on pod.Spec.NodeName, as
// the cache's AssumePod would have placed it: the pod-group cycle does so
// with each member it found a node for, so that the next member's plugins
// count it. AssumePod keeps everything the snapshot indexes consistent:
//
//  1. the node's NodeInfo holds the pod (its requests, ports, claims and
//     affinity terms); its Generation stays that of the cache's NodeInfo it
//     copies, which did not change (UpdateSnapshot goes by the cache's
//     generations, so this is for readers of the NodeInfo, as upstream);
//  2. the required anti-affinity term counts count the pod's terms;
//  3. the claims the pod names are in use (IsPVCUsedByPods);
//  4. the three affinity lists hold the node if it now qualifies, still in
//     List order (in fresh slices: a plugin may hold the old ones);
//  5. with pod groups, the member is assumed in its group's state, whose
//     generation is kept: UpdateSnapshot compares it with the cache's
//     state's to decide whether to copy that again.
//
// It changes nothing and returns an error if the node is not in the
// snapshot, the pod is already on it, or the pod's group counts it assumed
// or assigned already. Undo it with ForgetPod, in reverse order; the next
// UpdateSnapshot undoes whatever is left, and complains.
func (s *Snapshot) AssumePod(podInfo *framework.PodInfo) error {
	pod := podInfo.Pod
	if _, err := podUID(pod); err != nil {
		return err
	}
	ni, err := s.Get(pod.Spec.NodeName)
	if err != nil {
		return fmt.Errorf("cannot assume pod %s in the snapshot: %w", framework.PodKey(pod), err)
	}
	if slices.ContainsFunc(ni.Pods, func(p *framework.PodInfo) bool { return p.Pod.UID == pod.UID }) {
		return fmt.Errorf("pod %s is already on node %s in the snapshot", framework.PodKey(pod), pod.Spec.NodeName)
	}
	groupKey, inGroup := s.podGroupMemberKey(pod)
	if st := s.podGroupStates[groupKey]; inGroup && st != nil {
		if _, assumed := st.assumed[pod.UID]; assumed || st.assigned.Has(pod.UID) {
			return fmt.Errorf("pod %s is already scheduled in pod group %s", framework.PodKey(pod), groupKey)
		}
	}

	// The NodeInfo is the snapshot's own, so it is changed in place: the
	// cache hands UpdateSnapshot a fresh copy of each NodeInfo that changed
	// (cloneNodeInfo), whose slices, maps and sums nothing else holds, and
	// an existing NodeInfo is overwritten with such a copy. Only PodInfos
	// and API objects are shared, and those nobody modifies. Were a
	// NodeInfo ever shared with the cache or another snapshot, it would
	// have to be cloned here first.
	a := snapshotAssumption{podInfo: podInfo, nodeInfo: ni, generation: ni.Generation}
	before := listMembership(ni)
	ni.AddPodInfo(podInfo) // 1
	ni.Generation = a.generation
	s.antiAffinityTerms.addPod(ni.Node(), podInfo, 1) // 2
	s.usedPVCs.addPod(pod, 1)                         // 3
	if after := listMembership(ni); after != before { // 4
		a.lists = &affinityLists{s.havePodsWithAffinityNodeInfoList, s.havePodsWithAffinityScoringTermsNodeInfoList,
			s.havePodsWithRequiredAntiAffinityNodeInfoList}
		s.addToAffinityLists(ni, before, after)
	}
	if inGroup { // 5
		st := s.podGroupStates.ensure(groupKey)
		a.groupKey, a.groupHadPod, a.groupGeneration = groupKey, st.has(pod.UID), st.generation
		st.assumePod(pod)
		st.generation = a.groupGeneration
	}
	s.assumed = append(s.assumed, a)
	return nil
}

// ForgetPod takes back the pod the last AssumePod placed, restoring the
// snapshot exactly as it was before (the same NodeInfo contents and
// generation, term counts, claim counts, affinity lists and group state).
// Pods are forgotten in the reverse order of AssumePod: each placement
// was made on top of the ones before it. It changes nothing and returns an
// error if pod is not the last pod assumed.
func (s *Snapshot) ForgetPod(logger klog.Logger, pod *v1.Pod) error {
	n := len(s.assumed)
	if n == 0 || s.assumed[n-1].podInfo.Pod.UID != pod.UID {
		if slices.ContainsFunc(s.assumed, func(a snapshotAssumption) bool { return a.podInfo.Pod.UID == pod.UID }) {
			return fmt.Errorf("pod %s is not the last pod assumed in the snapshot: forget pods in the reverse order they were assumed",
				framework.PodKey(pod))
		}
		return fmt.Errorf("pod %s was not assumed in the snapshot", framework.PodKey(pod))
	}
	a := s.assumed[n-1]
	ni := a.nodeInfo
	// The pod is the last one added to the NodeInfo (later ones were
	// forgotten first), so removing it restores the pod lists' order too.
	if err := ni.RemovePod(a.podInfo.Pod); err != nil {
		return err
	}
	ni.Generation = a.generation
	s.antiAffinityTerms.addPod(ni.Node(), a.podInfo, -1)
	s.usedPVCs.addPod(a.podInfo.Pod, -1)
	if a.lists != nil {
		s.havePodsWithAffinityNodeInfoList = a.lists.affinity
		s.havePodsWithAffinityScoringTermsNodeInfoList = a.lists.scoringTerms
		s.havePodsWithRequiredAntiAffinityNodeInfoList = a.lists.requiredAntiAffinity
	}
	if a.groupKey != "" {
		st := s.podGroupStates[a.groupKey]
		if a.groupHadPod {
			st.forgetPod(pod.UID)
		} else {
			st.deletePod(pod.UID)
		}
		st.generation = a.groupGeneration
		s.podGroupStates.dropIfEmpty(a.groupKey)
	}
	s.assumed[n-1] = snapshotAssumption{}
	s.assumed = s.assumed[:n-1]
	logger.V(5).Info("Forgot pod assumed in the snapshot", "pod", klog.KObj(pod), "node", klog.KObj(ni.Node()))
	return nil
}

// forgetAllAssumedPods forgets the pods a pod-group cycle left assumed in
// s, last first. UpdateSnapshot calls it before refreshing s, which relies
// on s's NodeInfos matching the cache's at their generation.
func (s *Snapshot) forgetAllAssumedPods(logger klog.Logger) {
	if len(s.assumed) > 0 {
		logger.Error(nil, "Pods assumed in the snapshot were not forgotten; forgetting them", "pods", len(s.assumed))
	}
	for len(s.assumed) > 0 {
		pod := s.assumed[len(s.assumed)-1].podInfo.Pod
		if err := s.ForgetPod(logger, pod); err != nil {
			// Only a NodeInfo changed behind the snapshot's back gets here.
			logger.Error(err, "Forgetting a pod assumed in the snapshot failed", "pod", klog.KObj(pod))
			s.assumed = s.assumed[:len(s.assumed)-1]
		}
	}
}

// podGroupMemberKey returns the key of pod's group, and false if the
// snapshot's cache does not track pod groups or pod names none.
func (s *Snapshot) podGroupMemberKey(pod *v1.Pod) (string, bool) {
	if !s.trackPodGroups {
		return "", false
	}
	return podGroupKeyOf(pod)
}

// membership says which of the three affinity lists a NodeInfo belongs in.
type membership struct{ affinity, scoringTerms, requiredAntiAffinity bool }

// listMembership returns the lists ni belongs in (see rebuildAffinityLists).
func listMembership(ni *framework.NodeInfo) membership {
	return membership{len(ni.PodsWithAffinity) > 0, hasAffinityScoringTerms(ni), len(ni.PodsWithRequiredAntiAffinity) > 0}
}

// addToAffinityLists puts ni, which now belongs in the lists of after and
// belonged in those of before, in the lists it joined. Adding a pod only
// ever makes a node join lists.
func (s *Snapshot) addToAffinityLists(ni *framework.NodeInfo, before, after membership) {
	if after.affinity && !before.affinity {
		s.havePodsWithAffinityNodeInfoList = withNode(s.havePodsWithAffinityNodeInfoList, s.nodeInfoList, ni)
	}
	if after.scoringTerms && !before.scoringTerms {
		s.havePodsWithAffinityScoringTermsNodeInfoList = withNode(s.havePodsWithAffinityScoringTermsNodeInfoList,
			s.nodeInfoList, ni)
	}
	if after.requiredAntiAffinity && !before.requiredAntiAffinity {
		s.havePodsWithRequiredAntiAffinityNodeInfoList = withNode(s.havePodsWithRequiredAntiAffinityNodeInfoList,
			s.nodeInfoList, ni)
	}
}

// withNode returns a new slice holding list, which lists some of all's
// NodeInfos in all's order, and ni at its place in that order. list is left
// as it is. It costs a walk of all up to ni.
func withNode(list, all []*framework.NodeInfo, ni *framework.NodeInfo) []*framework.NodeInfo {
	i := 0 // how many of list's NodeInfos come before ni in all
	for _, n := range all {
		if n == ni {
			break
		}
		if i < len(list) && list[i] == n {
			i++
		}
	}
	out := make([]*framework.NodeInfo, 0, len(list)+1)
	out = append(out, list[:i]...)
	out = append(out, ni)
	return append(out, list[i:]...)
}
