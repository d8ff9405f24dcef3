// This file holds what the cache tests share: a flat, comparable summary of
// NodeInfos and snapshots, and the go-cmp options to diff them.

package cache

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

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
	// UsedPVCs are the claims IsPVCUsedByPods reports in use.
	UsedPVCs []string
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
	// pods name.
	used := map[string]bool{}
	for _, ni := range list {
		for _, p := range ni.Pods {
			for _, v := range p.Pod.Spec.Volumes {
				if v.PersistentVolumeClaim != nil {
					used[framework.PVCKey(p.Pod.Namespace, v.PersistentVolumeClaim.ClaimName)] = true
				}
			}
		}
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
