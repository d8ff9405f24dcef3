// This file is DefaultPreemption's preemption for a whole pod group
// (PodGroupPostFilter, the GenericWorkload gate), as kube-scheduler's
// PodGroupEvaluator: when a group's cycle found it unschedulable, take
// every pod of lower priority out of the snapshot, run the group's
// algorithm once, put back as many of those pods as still let every
// placed member pass Filter, and evict the rest. The domain is the whole
// cluster, and each member is nominated where it was placed.

package defaultpreemption

import (
	"context"
	"errors"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// Messages of a pod group's preemption, as kube-scheduler words them.
// PodGroupPostFilter prefixes each with "pod group preemption: ".
const (
	msgPodGroupNoVictims      = "No preemption victims found for incoming preemptor"
	msgPodGroupOngoing        = "ongoing preemption on nominated nodes"
	msgPodGroupFoundPlacement = "found a placement for podgroup, preempting %d victims"
)

// podGroupDomain is the "node" a pod group's preemption names in the
// victims' events: its domain is the whole cluster.
const podGroupDomain = "cluster"

// PodGroupPostFilter makes room for a pod group its cycle found
// unschedulable. It runs within a mutation session of the snapshot
// (MutableSnapshotSharedLister), which it ends before it returns, whatever
// happens: the snapshot is then as the cycle left it. On Success the
// members are nominated where the group's algorithm placed them and the
// victims are being evicted; the group is held back (PreEnqueue) until
// they are gone. Every message is prefixed "pod group preemption: ", which
// is how it appears in the group's message.
func (pl *DefaultPreemption) PodGroupPostFilter(ctx context.Context, _ *framework.CycleState,
	podGroup *framework.PodGroupInfo, schedule framework.PodGroupSchedulingFunc) (
	result *framework.PodGroupPostFilterResult, status *framework.Status) {
	defer func() { pl.fh.Metrics().WorkloadPreemptionAttempt(status.Code().String()) }()
	snapshot := pl.fh.MutableSnapshotSharedLister()
	if snapshot == nil {
		return nil, framework.AsStatus(errors.New("pod group preemption: the snapshot cannot be mutated"))
	}
	if err := snapshot.StartMutations(); err != nil {
		return nil, framework.AsStatus(fmt.Errorf("pod group preemption: failed to start mutations: %w", err))
	}
	defer func() {
		if err := snapshot.EndMutations(); err != nil {
			status = framework.AsStatus(fmt.Errorf("pod group preemption: failed to end mutations: %w", err))
		}
	}()
	result, status = pl.preemptPodGroup(ctx, snapshot, podGroup, schedule)
	if msg := status.Message(); msg != "" {
		return result, framework.NewStatus(status.Code(), "pod group preemption: "+msg)
	}
	return result, status
}

// preemptPodGroup is kube-scheduler's PodGroupEvaluator.Preempt:
//
//  1. The domain: every node, and the victim units on them (victimsOn).
//  2. May the group preempt at all? Not if a member says Never.
//  3. Is its earlier preemption still going on? If a member is nominated
//     to a node where a lower-priority victim is still terminating, keep
//     the nominations and wait.
//  4. The victims (selectPodGroupVictims): those whose room the placement
//     needs.
//  5. Evict them in the background; nominate each placed member.
func (pl *DefaultPreemption) preemptPodGroup(ctx context.Context, snapshot framework.MutableSnapshotSharedLister,
	podGroup *framework.PodGroupInfo, schedule framework.PodGroupSchedulingFunc) (*framework.PodGroupPostFilterResult,
	*framework.Status) {
	logger := klog.FromContext(ctx)
	// 1. The domain.
	nodes, err := snapshot.NodeInfos().List()
	if err != nil {
		return nil, framework.AsStatus(fmt.Errorf("failed to create domain: %w", err))
	}
	units, err := pl.victimsOn(nodes)
	if err != nil {
		return nil, framework.AsStatus(fmt.Errorf("failed to create domain: %w", err))
	}
	members := podGroup.UnscheduledPods
	priority := framework.PodGroupPriority(podGroup.PodGroup)

	// 2. Eligibility.
	if preemptsNever(members) {
		logger.V(5).Info("Preemptor is not eligible for preemption", "reason", msgPreemptNever)
		return nil, framework.NewStatus(framework.Unschedulable, msgPreemptNever)
	}

	// 3. An earlier preemption still going on.
	if pl.podGroupPreemptionOngoing(snapshot, members, priority) {
		return &framework.PodGroupPostFilterResult{NominatingInfos: currentNominations(members)},
			framework.NewStatus(framework.Success, msgPodGroupOngoing)
	}

	// 4. The victims.
	pdbs, err := pl.podDisruptionBudgets()
	if err != nil {
		return nil, framework.AsStatus(fmt.Errorf("failed to get pod disruption budgets: %w", err))
	}
	sel, status := pl.selectPodGroupVictims(ctx, snapshot, priority, units, pdbs, schedule)
	if !status.IsSuccess() {
		return nil, status
	}

	// 5. Evict, in the background; nominate now.
	pl.fh.Metrics().WorkloadPreemptionVictims(len(sel.victims))
	pl.fh.Metrics().PreemptionWorkloadDisruptions(kindPodGroup, sel.groupDisruptions)
	logger.V(2).Info("Preempting for the pod group", "victims", klog.KObjSlice(sel.victims))
	pl.executor.preemptAsync(ctx, &candidate{name: podGroupDomain, victims: sel.victims,
		numPDBViolations: sel.numPDBViolations}, podGroupPreemptor(podGroup.PodGroup, members))
	return &framework.PodGroupPostFilterResult{NominatingInfos: sel.nominations},
		framework.NewStatus(framework.Success, fmt.Sprintf(msgPodGroupFoundPlacement, len(sel.victims)))
}

// preemptsNever reports whether the group may not preempt: a member's
// preemptionPolicy is Never. (kube-scheduler reads the PodGroup's own
// policy only with PodGroupPreemptionPolicy, which is off in v1.37;
// validation made every member's policy the same.)
func preemptsNever(members []*v1.Pod) bool {
	for _, m := range members {
		if p := m.Spec.PreemptionPolicy; p != nil && *p == v1.PreemptNever {
			return true
		}
	}
	return false
}

// podGroupPreemptionOngoing reports whether a node some member is
// nominated to has a pod of lower priority than the group's (judged by
// victimPriority) being deleted by a preemption.
func (pl *DefaultPreemption) podGroupPreemptionOngoing(snapshot framework.SharedLister, members []*v1.Pod,
	priority int32) bool {
	nominated := sets.New[string]()
	for _, m := range members {
		if m.Status.NominatedNodeName != "" {
			nominated.Insert(m.Status.NominatedNodeName)
		}
	}
	for name := range nominated {
		ni, err := snapshot.NodeInfos().Get(name)
		if err != nil {
			continue
		}
		for _, pi := range ni.Pods {
			if pl.victimPriority(pi.Pod) < priority && terminatingByPreemption(pi.Pod) {
				return true
			}
		}
	}
	return false
}

// currentNominations keeps each member's nominated node as it is (an empty
// one included, which clears nothing that is not there).
func currentNominations(members []*v1.Pod) map[types.NamespacedName]*framework.NominatingInfo {
	out := make(map[types.NamespacedName]*framework.NominatingInfo, len(members))
	for _, m := range members {
		out[types.NamespacedName{Namespace: m.Namespace, Name: m.Name}] = &framework.NominatingInfo{
			NominatedNodeName: m.Status.NominatedNodeName, NominatingMode: framework.ModeOverride}
	}
	return out
}

// podGroupVictims is what selectPodGroupVictims chose.
type podGroupVictims struct {
	// victims are the pods to evict, unit by unit, most important first.
	victims []*v1.Pod
	// numPDBViolations counts the victims whose eviction violates a
	// PodDisruptionBudget; groupDisruptions the units that count as pod
	// groups' (victim.isGroup).
	numPDBViolations int
	groupDisruptions int
	// nominations are where the placed members go, by namespace and name.
	nominations map[types.NamespacedName]*framework.NominatingInfo
}

// selectPodGroupVictims is kube-scheduler's selectVictimsOnDomain, on the
// snapshot of a mutation session:
//
//  1. Every unit of lower priority than the group's is a potential victim;
//     with none, preemption cannot help (UnschedulableAndUnresolvable).
//  2. Take them all out of the snapshot and run the group's algorithm once
//     (schedule). If the group still fails, preemption cannot help: its
//     status says why.
//  3. Reprieve: put the units back one by one, most important first, those
//     whose eviction would violate a PodDisruptionBudget before the others
//     (reprieve). A unit stays if every placed member still passes Filter;
//     otherwise it is a victim.
func (pl *DefaultPreemption) selectPodGroupVictims(ctx context.Context, snapshot framework.MutableSnapshotSharedLister,
	priority int32, units []*victim, pdbs []*policyv1.PodDisruptionBudget,
	schedule framework.PodGroupSchedulingFunc) (*podGroupVictims, *framework.Status) {
	logger := klog.FromContext(ctx)
	// 1. The potential victims.
	var potential []*victim
	for _, v := range units {
		if v.priority < priority {
			potential = append(potential, v)
		}
	}
	if len(potential) == 0 {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, msgPodGroupNoVictims)
	}

	// 2. Without them all, does the group fit? The algorithm starts from
	// fresh cycle states, so none needs telling of the removal.
	for _, v := range potential {
		for _, pi := range v.pods {
			if err := snapshot.RemovePod(logger, pi.Pod, pi.Pod.Spec.NodeName); err != nil {
				return nil, framework.AsStatus(err)
			}
		}
	}
	assignments, status := schedule(ctx)
	if !status.IsSuccess() {
		return nil, status
	}
	var placed []framework.ProposedAssignment
	for _, a := range assignments.ProposedAssignments {
		if a.NodeName != "" {
			placed = append(placed, a)
		}
	}

	// 3. Reprieve as many as possible, most important first.
	sort.SliceStable(potential, func(i, j int) bool { return moreImportantVictim(potential[i], potential[j]) })
	violating, nonViolating := filterVictimsWithPDBViolation(potential, pdbs)
	sel := &podGroupVictims{nominations: map[types.NamespacedName]*framework.NominatingInfo{}}
	var evicted []*victim
	for _, vv := range violating {
		fits, err := pl.reprieve(ctx, snapshot, vv.victim, placed)
		if err != nil {
			return nil, framework.AsStatus(err)
		}
		if !fits {
			evicted = append(evicted, vv.victim)
			sel.numPDBViolations += vv.pods
		}
	}
	for _, v := range nonViolating {
		fits, err := pl.reprieve(ctx, snapshot, v, placed)
		if err != nil {
			return nil, framework.AsStatus(err)
		}
		if !fits {
			evicted = append(evicted, v)
		}
	}

	sort.SliceStable(evicted, func(i, j int) bool { return moreImportantVictim(evicted[i], evicted[j]) })
	for _, v := range evicted {
		if v.isGroup() {
			sel.groupDisruptions++
		}
	}
	sel.victims = victimPods(evicted)
	for _, a := range placed {
		pod := a.PodInfo.Pod
		sel.nominations[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = &framework.NominatingInfo{
			NominatedNodeName: a.NodeName, NominatingMode: framework.ModeOverride}
	}
	return sel, nil
}

// reprieve puts unit v back into the snapshot and into every placed
// member's PreFilter state, then checks the members in the order the
// algorithm placed them: each must pass Filter (with the nominated pods)
// on its node, where the members before it are put and reserved as the
// algorithm had them. The members' cycle states are the algorithm's: the
// Nth was made with the N-1 before it placed and knows nothing of those
// after it. The members are taken off again before it returns. If one
// fails, v is taken out again and is a victim (false).
func (pl *DefaultPreemption) reprieve(ctx context.Context, snapshot framework.MutableSnapshotSharedLister, v *victim,
	placed []framework.ProposedAssignment) (fits bool, err error) {
	logger := klog.FromContext(ctx)
	if err := pl.putVictimBack(ctx, snapshot, v, placed); err != nil {
		return false, err
	}
	var undo []func() error
	defer func() {
		for i := len(undo) - 1; i >= 0; i-- {
			err = errors.Join(err, undo[i]())
		}
	}()
	for _, a := range placed {
		pod := a.PodInfo.Pod
		ni, err := snapshot.NodeInfos().Get(a.NodeName)
		if err != nil {
			return false, err
		}
		if !pl.fh.RunFilterPluginsWithNominatedPods(ctx, a.State, pod, ni).IsSuccess() {
			logger.V(6).Info("Pods are potential preemption victims on domain", "pods", podRefs(v.pods),
				"domain", podGroupDomain)
			return false, pl.takeVictimOut(ctx, snapshot, v, placed)
		}
		if err := snapshot.AddPod(a.PodInfo, a.NodeName); err != nil {
			return false, err
		}
		// As kube-scheduler, a Reserve failure here is not looked at: the
		// member was reserved on this node once already, by the algorithm.
		pl.fh.RunReservePluginsReserve(ctx, a.State, pod, a.NodeName)
		undo = append(undo, func() error {
			pl.fh.RunReservePluginsUnreserve(ctx, a.State, pod, a.NodeName)
			return snapshot.RemovePod(logger, pod, a.NodeName)
		})
	}
	return true, nil
}

// putVictimBack puts v's pods back into the snapshot and tells every
// placed member's PreFilter state, with the pod's node as it now is.
func (pl *DefaultPreemption) putVictimBack(ctx context.Context, snapshot framework.MutableSnapshotSharedLister,
	v *victim, placed []framework.ProposedAssignment) error {
	for _, pi := range v.pods {
		node := pi.Pod.Spec.NodeName
		if err := snapshot.AddPod(pi, node); err != nil {
			return err
		}
		ni, err := snapshot.NodeInfos().Get(node)
		if err != nil {
			return err
		}
		for _, a := range placed {
			if err := pl.fh.RunPreFilterExtensionAddPod(ctx, a.State, a.PodInfo.Pod, pi, ni).AsError(); err != nil {
				return err
			}
		}
	}
	return nil
}

// takeVictimOut takes v's pods out of the snapshot again and tells every
// placed member's PreFilter state, with the pod's node as it now is.
func (pl *DefaultPreemption) takeVictimOut(ctx context.Context, snapshot framework.MutableSnapshotSharedLister,
	v *victim, placed []framework.ProposedAssignment) error {
	logger := klog.FromContext(ctx)
	for _, pi := range v.pods {
		node := pi.Pod.Spec.NodeName
		if err := snapshot.RemovePod(logger, pi.Pod, node); err != nil {
			return err
		}
		ni, err := snapshot.NodeInfos().Get(node)
		if err != nil {
			return err
		}
		for _, a := range placed {
			if err := pl.fh.RunPreFilterExtensionRemovePod(ctx, a.State, a.PodInfo.Pod, pi, ni).AsError(); err != nil {
				return err
			}
		}
	}
	return nil
}
