// This file is what preemption may evict, as units: a pod alone, or, with
// GenericWorkload, every scheduled pod of a PodGroup whose
// spec.disruptionMode is all, which go together or not at all. It finds
// the units on nodes, gives each the priority it is judged by, and orders
// them by importance, as kube-scheduler's preemption.Victim.

package defaultpreemption

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/minisched/minisched/minisched/framework"
)

// The kinds of victim units and of preemptors, spelt as kube-scheduler's
// entity key types: a kind ranks a victim (a pod group's outranks a
// pod's), and words the eviction ("Preempted by podgroup ...").
const (
	kindPod      = "pod"
	kindPodGroup = "podgroup"
)

// victim is one unit of eviction: its pods are evicted together, or all
// reprieved.
type victim struct {
	// pods are the unit's pods: one, or a PodGroup's scheduled pods, by
	// name.
	pods []*framework.PodInfo
	// priority is what the unit is judged by: a pod's own, or, for a pod
	// of a PodGroup the snapshot knows, the PodGroup's.
	priority int32
	// kind is kindPodGroup for a PodGroup's pods taken together, and also
	// for a lone pod that is a PodGroup's member (kube-scheduler ranks and
	// counts those as pod-group disruptions too); kindPod otherwise.
	kind string
	// earliestStart is the earliest start of its pods; a pod that has not
	// started (no kubelet set status.startTime) counts as starting when
	// the unit was made, so units made earlier count as older.
	earliestStart time.Time
	// nodes are the NodeInfos of the nodes its pods are on, by name.
	nodes map[string]*framework.NodeInfo
}

// isGroup reports whether the unit counts as a pod-group disruption.
func (v *victim) isGroup() bool { return v.kind == kindPodGroup }

// newVictim makes a unit of pods (at least one). Start times are read
// now, in order: see earliestStart.
func newVictim(pods []*framework.PodInfo, priority int32, kind string) *victim {
	v := &victim{pods: pods, priority: priority, kind: kind, nodes: map[string]*framework.NodeInfo{}}
	for i, pi := range pods {
		if t := podStartTime(pi.Pod); i == 0 || t.Before(v.earliestStart) {
			v.earliestStart = t
		}
	}
	return v
}

// moreImportantVictim is kube-scheduler's MoreImportantVictim, the order
// in which victims are reprieved (the most important first): higher
// priority; then a pod group's unit before a pod's; then the unit with
// more pods; then the one that started earlier.
func moreImportantVictim(a, b *victim) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if ra, rb := victimRank(a), victimRank(b); ra != rb {
		return ra > rb
	}
	if len(a.pods) != len(b.pods) {
		return len(a.pods) > len(b.pods)
	}
	return a.earliestStart.Before(b.earliestStart)
}

// victimRank ranks a unit by its kind: a pod group's above a pod's.
func victimRank(v *victim) int {
	if v.kind == kindPodGroup {
		return 2
	}
	return 1
}

// moreImportantLonePod orders single-pod units by moreImportantPod, as
// minisched did before pod groups: the order of per-pod preemption
// without GenericWorkload, kept as it was.
func moreImportantLonePod(a, b *victim) bool { return moreImportantPod(a.pods[0].Pod, b.pods[0].Pod) }

// victimsOn returns the victim units with a pod on nodes, each once, in
// the order their first pod is found. Without GenericWorkload every pod
// is a unit of its own, of its own priority. With it, a PodGroup's
// member is judged by the PodGroup's priority, and the members of a
// PodGroup whose disruptionMode is all make one unit of all the group's
// scheduled pods, wherever they are (kube-scheduler's
// getCrossNodesVictims). It is an error if such a pod is on a node the
// snapshot does not have.
func (pl *DefaultPreemption) victimsOn(nodes []*framework.NodeInfo) ([]*victim, error) {
	seen := sets.New[string]()
	var out []*victim
	for _, ni := range nodes {
		for _, pi := range ni.Pods {
			v, key := pl.victimOf(pi)
			if seen.Has(key) {
				continue
			}
			seen.Insert(key)
			if err := pl.locate(v, ni); err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// victimOf returns the unit pi belongs to and a key naming the unit.
func (pl *DefaultPreemption) victimOf(pi *framework.PodInfo) (*victim, string) {
	pod := pi.Pod
	podKey := kindPod + "/" + framework.PodKey(pod)
	name, inGroup := framework.PodGroupName(pod)
	if pl.podGroups == nil || !inGroup {
		return newVictim([]*framework.PodInfo{pi}, corev1helpers.PodPriority(pod), kindPod), podKey
	}
	snapshot := pl.fh.SnapshotSharedLister()
	pg, err := snapshot.PodGroups().Get(pod.Namespace, name)
	if err != nil {
		return newVictim([]*framework.PodInfo{pi}, corev1helpers.PodPriority(pod), kindPodGroup), podKey
	}
	priority := framework.PodGroupPriority(pg)
	if disruptsAll(pg) {
		if st, err := snapshot.PodGroupStates().Get(pod.Namespace, name); err == nil && st.ScheduledPodsCount() > 0 {
			scheduled := st.ScheduledPods()
			slices.SortFunc(scheduled, func(a, b *v1.Pod) int { return cmp.Compare(a.Name, b.Name) })
			pods := make([]*framework.PodInfo, len(scheduled))
			for i, p := range scheduled {
				pods[i] = framework.NewPodInfo(p)
			}
			return newVictim(pods, priority, kindPodGroup), kindPodGroup + "/" + framework.PodGroupKey(pod.Namespace, name)
		}
	}
	return newVictim([]*framework.PodInfo{pi}, priority, kindPodGroup), podKey
}

// disruptsAll reports whether the PodGroup's pods are disrupted together
// (spec.disruptionMode.all).
func disruptsAll(pg *schedulingv1beta1.PodGroup) bool {
	return pg.Spec.DisruptionMode != nil && pg.Spec.DisruptionMode.All != nil
}

// locate fills v.nodes: the unit was found on ni; a pod group's pods may
// be on other nodes too, which the snapshot gives.
func (pl *DefaultPreemption) locate(v *victim, ni *framework.NodeInfo) error {
	found := ni.Node().Name
	v.nodes[found] = ni
	for _, pi := range v.pods {
		name := pi.Pod.Spec.NodeName
		if name == found || v.nodes[name] != nil {
			continue
		}
		other, err := pl.fh.SnapshotSharedLister().NodeInfos().Get(name)
		if err != nil {
			return fmt.Errorf("failed to get node info for node %q from snapshot: %w", name, err)
		}
		v.nodes[name] = other
	}
	return nil
}

// victimPriority is the priority pod is judged by as a victim: its
// PodGroup's, with GenericWorkload, for a member of a PodGroup the
// snapshot knows; its own otherwise.
func (pl *DefaultPreemption) victimPriority(pod *v1.Pod) int32 {
	if name, ok := framework.PodGroupName(pod); ok && pl.podGroups != nil {
		if pg, err := pl.fh.SnapshotSharedLister().PodGroups().Get(pod.Namespace, name); err == nil {
			return framework.PodGroupPriority(pg)
		}
	}
	return corev1helpers.PodPriority(pod)
}
