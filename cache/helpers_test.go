// This file holds what the cache tests share: a flat, comparable summary of
// NodeInfos, pod-group states and snapshots, and the go-cmp options to diff
// them.

package cache

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/minisched/minisched/minisched/framework"
)

// nodeSummary is what a test compares of one NodeInfo.
type nodeSummary struct {
	Name                         string
	Pods                         []types.UID
	PodsWithAffinity             []types.UID
	PodsWithRequiredAntiAffinity []types.UID
	Requested                    framework.Resource
	NonZeroRequested             framework.Resource
	Allocatable                  framework.Resource
	UsedPorts                    framework.HostPortInfo
	ImageStates                  map[string]framework.ImageStateSummary
	PVCRefCounts                 map[string]int
}

// snapshotSummary is what a test compares of a snapshot: its nodes in List
// order and the names in the two affinity lists.
type snapshotSummary struct {
	Nodes                            []nodeSummary
	HavePodsWithAffinity             []string
	HavePodsWithRequiredAntiAffinity []string
	// AntiAffinityTermCounts is RequiredAntiAffinityTermCounts without the
	// representative terms: term key → domain → count.
	AntiAffinityTermCounts map[string]map[string]int64
	// UsedPVCs are the claims IsPVCUsedByPods reports in use, and
	// PVCCounts how many pods' volumes name each.
	UsedPVCs  []string
	PVCCounts map[string]int
	// PodGroups are the pod-group states, by key.
	PodGroups map[string]groupSummary
}

// groupSummary is what a test compares of a pod group's state: its pods
// (see objectLabel), split as the state splits them, and its PodGroup.
type groupSummary struct {
	// PodGroup labels the PodGroup object, "" without one.
	PodGroup    string
	Unscheduled []string
	// Assumed maps an assumed pod to the node it was assumed on.
	Assumed  map[string]string
	Assigned []string
}

// objectLabel names an object in a summary: its name, and
// "@<resourceVersion>" if it has one, so that a replaced object shows.
func objectLabel(obj metav1.Object) string {
	if rv := obj.GetResourceVersion(); rv != "" {
		return obj.GetName() + "@" + rv
	}
	return obj.GetName()
}

// summarizePodGroupState flattens a pod group's state as a plugin reads it
// (framework.PodGroupState), after checking that its counts agree with its
// lists.
func summarizePodGroupState(t *testing.T, st framework.PodGroupState) groupSummary {
	t.Helper()
	g := groupSummary{Unscheduled: []string{}, Assumed: map[string]string{}, Assigned: []string{}}
	if pg := st.PodGroup(); pg != nil {
		g.PodGroup = objectLabel(pg)
	}
	for name, pod := range st.UnscheduledPods() {
		if name != pod.Name {
			t.Errorf("UnscheduledPods has pod %s under the name %q", pod.Name, name)
		}
		g.Unscheduled = append(g.Unscheduled, objectLabel(pod))
	}
	assumed := st.AssumedPods()
	scheduled := st.ScheduledPods()
	for _, pod := range scheduled {
		if assumed.Has(pod.UID) {
			g.Assumed[objectLabel(pod)] = pod.Spec.NodeName
		} else {
			g.Assigned = append(g.Assigned, objectLabel(pod))
		}
	}
	slices.Sort(g.Unscheduled)
	slices.Sort(g.Assigned)
	if st.ScheduledPodsCount() != len(scheduled) || assumed.Len() != len(g.Assumed) ||
		st.AllPodsCount() != len(g.Unscheduled)+len(scheduled) {
		t.Errorf("pod group counts: %d scheduled, %d in all; lists: %d unscheduled, %d scheduled of which %d assumed (AssumedPods %d)",
			st.ScheduledPodsCount(), st.AllPodsCount(), len(g.Unscheduled), len(scheduled), len(g.Assumed), assumed.Len())
	}
	return g
}

// summarizePodGroups flattens pod-group states, after checking that each
// splits its pods into exactly its three sets and is not empty.
func summarizePodGroups(t *testing.T, states podGroupStates) map[string]groupSummary {
	t.Helper()
	out := map[string]groupSummary{}
	for key, st := range states {
		seen := sets.New[types.UID]()
		for _, uids := range [][]types.UID{sets.List(st.unscheduled), slices.Collect(maps.Keys(st.assumed)),
			sets.List(st.assigned)} {
			for _, uid := range uids {
				if seen.Has(uid) {
					t.Errorf("pod group %s: pod %s is in two of unscheduled, assumed and assigned", key, uid)
				}
				seen.Insert(uid)
			}
		}
		if !seen.Equal(sets.KeySet(st.pods)) {
			t.Errorf("pod group %s: unscheduled, assumed and assigned hold %v, the pods are %v",
				key, sets.List(seen), sets.List(sets.KeySet(st.pods)))
		}
		if st.empty() {
			t.Errorf("pod group %s: an empty state was kept", key)
		}
		out[key] = summarizePodGroupState(t, st)
	}
	return out
}

// cmpOpts treat nil and empty maps and slices alike.
var cmpOpts = []cmp.Option{cmpopts.EquateEmpty()}

// diffSnapshots returns "" if two summaries are equal, else their diff
// (-want +got). Summaries are canonical (see summarizeNodeInfo), so the
// cheap reflect.DeepEqual decides, and go-cmp only explains a mismatch:
// the random test compares thousands of snapshots.
func diffSnapshots(want, got snapshotSummary) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return cmp.Diff(want, got, cmpOpts...)
}

// uids returns the sorted UIDs of pods.
func uids(pods []*framework.PodInfo) []types.UID {
	out := make([]types.UID, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Pod.UID)
	}
	slices.Sort(out)
	return out
}

// normResource drops extended resources that are zero: subtracting a pod
// leaves its extended resources at 0 where a NodeInfo built from scratch has
// no entry, and the two mean the same.
func normResource(r *framework.Resource) framework.Resource {
	out := *r
	out.ScalarResources = nil
	for name, q := range r.ScalarResources {
		if q != 0 {
			if out.ScalarResources == nil {
				out.ScalarResources = map[v1.ResourceName]int64{}
			}
			out.ScalarResources[name] = q
		}
	}
	return out
}

// summarizeNodeInfo flattens a NodeInfo for comparison. The result is
// canonical (empty UsedPorts are nil, pod lists and ImageStates never are),
// so equal NodeInfos give reflect.DeepEqual summaries.
func summarizeNodeInfo(ni *framework.NodeInfo) nodeSummary {
	s := nodeSummary{
		Pods:                         uids(ni.Pods),
		PodsWithAffinity:             uids(ni.PodsWithAffinity),
		PodsWithRequiredAntiAffinity: uids(ni.PodsWithRequiredAntiAffinity),
		Requested:                    normResource(ni.Requested),
		NonZeroRequested:             normResource(ni.NonZeroRequested),
		Allocatable:                  normResource(ni.Allocatable),
		UsedPorts:                    ni.UsedPorts,
		ImageStates:                  map[string]framework.ImageStateSummary{},
		PVCRefCounts:                 map[string]int{},
	}
	if len(s.UsedPorts) == 0 {
		s.UsedPorts = nil
	}
	if n := ni.Node(); n != nil {
		s.Name = n.Name
	}
	for name, st := range ni.ImageStates {
		s.ImageStates[name] = *st
	}
	for key, n := range ni.PVCRefCounts {
		s.PVCRefCounts[key] = n
	}
	return s
}

// summarizeSnapshot flattens a snapshot for comparison, after checking that
// its map and lists agree with each other.
func summarizeSnapshot(t *testing.T, s *Snapshot) snapshotSummary {
	t.Helper()
	list, _ := s.List()
	if len(list) != len(s.nodeInfoMap) || len(list) != s.NumNodes() {
		t.Errorf("snapshot lists %d nodes, maps %d, NumNodes says %d", len(list), len(s.nodeInfoMap), s.NumNodes())
	}
	var out snapshotSummary
	for _, ni := range list {
		name := ni.Node().Name
		if got, err := s.Get(name); err != nil || got != ni {
			t.Errorf("Get(%q) = %p, %v; want the listed NodeInfo %p", name, got, err, ni)
		}
		out.Nodes = append(out.Nodes, summarizeNodeInfo(ni))
	}
	// The affinity lists must hold exactly the listed nodes that qualify, in
	// List order and as the same objects.
	var wantAff, wantScoring, wantAnti []*framework.NodeInfo
	for _, ni := range list {
		if len(ni.PodsWithAffinity) > 0 {
			wantAff = append(wantAff, ni)
		}
		for _, p := range ni.PodsWithAffinity {
			if len(p.RequiredAffinityTerms)+len(p.PreferredAffinityTerms)+len(p.PreferredAntiAffinityTerms) > 0 {
				wantScoring = append(wantScoring, ni)
				break
			}
		}
		if len(ni.PodsWithRequiredAntiAffinity) > 0 {
			wantAnti = append(wantAnti, ni)
		}
	}
	aff, _ := s.HavePodsWithAffinityList()
	scoring, _ := s.HavePodsWithAffinityScoringTermsList()
	if !slices.Equal(wantScoring, scoring) {
		t.Errorf("HavePodsWithAffinityScoringTermsList = %v, want %v", names(scoring), names(wantScoring))
	}
	anti, _ := s.HavePodsWithRequiredAntiAffinityList()
	if !slices.Equal(wantAff, aff) {
		t.Errorf("HavePodsWithAffinityList = %v, want %v", names(aff), names(wantAff))
	}
	if !slices.Equal(wantAnti, anti) {
		t.Errorf("HavePodsWithRequiredAntiAffinityList = %v, want %v", names(anti), names(wantAnti))
	}
	out.HavePodsWithAffinity = names(aff)
	out.HavePodsWithRequiredAntiAffinity = names(anti)

	// The term index must count exactly the listed nodes' terms, each
	// represented by an equal term.
	wantTerms := map[string]map[string]int64{}
	for _, ni := range list {
		for _, p := range ni.PodsWithRequiredAntiAffinity {
			for i := range p.RequiredAntiAffinityTerms {
				term := &p.RequiredAntiAffinityTerms[i]
				value, ok := ni.Node().Labels[term.TopologyKey]
				if !ok {
					continue
				}
				key := termKey(term)
				if wantTerms[key] == nil {
					wantTerms[key] = map[string]int64{}
				}
				wantTerms[key][value]++
			}
		}
	}
	out.AntiAffinityTermCounts = map[string]map[string]int64{}
	for key, tc := range s.RequiredAntiAffinityTermCounts() {
		if termKey(tc.Term) != key {
			t.Errorf("term index: the term under %q has key %q", key, termKey(tc.Term))
		}
		out.AntiAffinityTermCounts[key] = tc.Counts
	}
	if !reflect.DeepEqual(wantTerms, out.AntiAffinityTermCounts) {
		t.Errorf("RequiredAntiAffinityTermCounts = %v, want %v", out.AntiAffinityTermCounts, wantTerms)
	}

	// IsPVCUsedByPods must say yes exactly for the claims the listed nodes'
	// pods name, and the snapshot's counts must count those pods' volumes.
	counts := map[string]int{}
	for _, ni := range list {
		for _, p := range ni.Pods {
			for _, v := range p.Pod.Spec.Volumes {
				if v.PersistentVolumeClaim != nil {
					counts[framework.PVCKey(p.Pod.Namespace, v.PersistentVolumeClaim.ClaimName)]++
				}
			}
		}
	}
	if !maps.Equal(counts, s.usedPVCs) {
		t.Errorf("claim counts = %v, want %v", s.usedPVCs, counts)
	}
	used := map[string]bool{}
	for key := range counts {
		used[key] = true
	}
	for key := range s.usedPVCs {
		used[key] = used[key] || false
	}
	for _, key := range slices.Sorted(maps.Keys(used)) {
		if got := s.StorageInfos().IsPVCUsedByPods(key); got != used[key] {
			t.Errorf("IsPVCUsedByPods(%q) = %v, want %v", key, got, used[key])
		}
		if used[key] {
			out.UsedPVCs = append(out.UsedPVCs, key)
		}
	}
	out.PVCCounts = counts
	out.PodGroups = summarizePodGroups(t, s.podGroupStates)
	return out
}

// names returns the node names of nis.
func names(nis []*framework.NodeInfo) []string {
	out := make([]string, 0, len(nis))
	for _, ni := range nis {
		out = append(out, ni.Node().Name)
	}
	return out
}
