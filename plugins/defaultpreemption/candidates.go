// This file is the dry run: which nodes could help, the victims on each,
// and the choice of one node.

package defaultpreemption

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// candidate is a node where preemption would make the pod fit, with the
// victims to evict there, most important first.
type candidate struct {
	name             string
	victims          []*v1.Pod
	numPDBViolations int
}

// findCandidates runs the dry run on the nodes Filter rejected as
// Unschedulable (UnschedulableAndUnresolvable nodes cannot be helped by
// evicting pods). It tries numCandidates nodes' worth, starting at a random
// offset so that successive preemptions spread over the cluster, and
// returns the candidates (those violating no PDB first) and why each other
// node tried could not help.
func (pl *DefaultPreemption) findCandidates(ctx context.Context, state *framework.CycleState,
	allNodes []*framework.NodeInfo, pod *v1.Pod, m *framework.NodeToStatus) ([]*candidate, *framework.NodeToStatus,
	error) {
	if len(allNodes) == 0 {
		return nil, nil, errors.New("no nodes available")
	}
	potential, err := m.NodesForStatusCode(pl.fh.SnapshotSharedLister().NodeInfos(), framework.Unschedulable)
	if err != nil {
		return nil, nil, err
	}
	if len(potential) == 0 {
		klog.FromContext(ctx).V(3).Info("Preemption will not help schedule pod on any node")
		return nil, framework.NewNodeToStatus(), nil
	}
	pdbs, err := pl.podDisruptionBudgets()
	if err != nil {
		return nil, nil, err
	}
	n := int32(len(potential))
	return pl.dryRunPreemption(ctx, state, pod, potential, pdbs, pl.offset(n), pl.numCandidates(n))
}

// randomOffset is where the dry run starts among n candidate nodes.
func randomOffset(n int32) int32 { return rand.Int32N(n) }

// numCandidates is how many candidates the dry run looks for among
// numNodes: minCandidateNodesPercentage of them, at least
// minCandidateNodesAbsolute, at most all.
func (pl *DefaultPreemption) numCandidates(numNodes int32) int32 {
	n := numNodes * *pl.args.MinCandidateNodesPercentage / 100
	n = max(n, *pl.args.MinCandidateNodesAbsolute)
	return min(n, numNodes)
}

// candidateList collects candidates from parallel workers, up to a capacity;
// later ones are dropped.
type candidateList struct {
	next  atomic.Int32
	items []*candidate
}

func newCandidateList(capacity int32) *candidateList {
	return &candidateList{items: make([]*candidate, capacity)}
}

func (l *candidateList) add(c *candidate) {
	if i := l.next.Add(1) - 1; i < int32(len(l.items)) {
		l.items[i] = c
	}
}

func (l *candidateList) size() int32 { return min(l.next.Load(), int32(len(l.items))) }

// get is only valid once every add has returned.
func (l *candidateList) get() []*candidate { return l.items[:l.size()] }

// dryRunPreemption looks for victims on the potential nodes in parallel,
// each on a copy of its NodeInfo and of the cycle state, starting at offset
// and wrapping around. It stops once it has numCandidates candidates
// including at least one that violates no PDB.
func (pl *DefaultPreemption) dryRunPreemption(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	potential []*framework.NodeInfo, pdbs []*policyv1.PodDisruptionBudget, offset,
	numCandidates int32) ([]*candidate, *framework.NodeToStatus, error) {
	nonViolating, violating := newCandidateList(numCandidates), newCandidateList(numCandidates)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logger := klog.FromContext(ctx)
	logger.V(5).Info("Dry run the preemption", "potentialNodes", len(potential), "pdbs", len(pdbs),
		"offset", offset, "candidates", numCandidates)
	var (
		mu           sync.Mutex
		errs         []error
		nodeStatuses = framework.NewNodeToStatus()
	)
	checkNode := func(i int) {
		nodeInfo := potential[(int(offset)+i)%len(potential)]
		// Each node is judged alone: a pod group's unit spanning two
		// nodes is a potential victim on both, and the one candidate
		// chosen evicts it once.
		units, err := pl.victimsOn([]*framework.NodeInfo{nodeInfo})
		if err != nil {
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, err)
			return
		}
		victims, numViolations, status := pl.selectVictimsOnNode(ctx, state.Clone(), pod, nodeInfo.Snapshot(), units, pdbs)
		if status.IsSuccess() && len(victims) != 0 {
			c := &candidate{name: nodeInfo.Node().Name, victims: victims, numPDBViolations: numViolations}
			if numViolations == 0 {
				nonViolating.add(c)
			} else {
				violating.add(c)
			}
			if nv := nonViolating.size(); nv > 0 && nv+violating.size() >= numCandidates {
				cancel()
			}
			return
		}
		if status.IsSuccess() {
			status = framework.AsStatus(fmt.Errorf("expected at least one victim pod on node %q", nodeInfo.Node().Name))
		}
		mu.Lock()
		defer mu.Unlock()
		if status.Code() == framework.Error {
			errs = append(errs, status.AsError())
		}
		nodeStatuses.Set(nodeInfo.Node().Name, status)
	}
	pl.fh.Parallelizer().Until(ctx, len(potential), checkNode)
	return append(nonViolating.get(), violating.get()...), nodeStatuses, utilerrors.NewAggregate(errs)
}

// selectVictimsOnNode finds the fewest, least important victim units to
// evict so the preemptor fits on nodeInfo (a copy, the "main node"), with
// state (a copy) kept in step through PreFilterExtensions. units are the
// units with a pod on the node (victimsOn):
//
//  1. Every unit of lower priority is a potential victim; with none, the
//     node cannot help.
//  2. Remove them all. If the preemptor still does not fit (counting the
//     nominated pods of at least its priority), the node cannot help.
//  3. Reprieve: put them back one by one, most important first, those whose
//     eviction would violate a PodDisruptionBudget before the others; a unit
//     that makes the preemptor no longer fit is a victim after all.
//
// Only the main node's NodeInfo changes. A pod group's pods on other nodes
// are taken out of (and put back into) the PreFilter state only, with
// their node's NodeInfo from the snapshot, which no one changes: Filter
// runs on the main node alone, as in kube-scheduler.
//
// It returns the victims' pods (units most important first) and how many of
// them violate a PDB.
func (pl *DefaultPreemption) selectVictimsOnNode(ctx context.Context, state *framework.CycleState,
	preemptor *v1.Pod, nodeInfo *framework.NodeInfo, units []*victim, pdbs []*policyv1.PodDisruptionBudget) ([]*v1.Pod,
	int, *framework.Status) {
	logger := klog.FromContext(ctx)
	mainNode := nodeInfo.Node().Name
	nodes := map[string]*framework.NodeInfo{mainNode: nodeInfo}
	remove := func(v *victim) error {
		for _, pi := range v.pods {
			if pi.Pod.Spec.NodeName == mainNode {
				if err := nodeInfo.RemovePod(pi.Pod); err != nil {
					return err
				}
			}
			if err := pl.fh.RunPreFilterExtensionRemovePod(ctx, state, preemptor, pi,
				nodes[pi.Pod.Spec.NodeName]).AsError(); err != nil {
				return err
			}
		}
		return nil
	}
	add := func(v *victim) error {
		for _, pi := range v.pods {
			if pi.Pod.Spec.NodeName == mainNode {
				nodeInfo.AddPodInfo(pi)
			}
			if err := pl.fh.RunPreFilterExtensionAddPod(ctx, state, preemptor, pi,
				nodes[pi.Pod.Spec.NodeName]).AsError(); err != nil {
				return err
			}
		}
		return nil
	}

	// 1. The potential victims.
	priority := corev1helpers.PodPriority(preemptor)
	var potential []*victim
	for _, v := range units {
		if v.priority < priority {
			potential = append(potential, v)
		}
	}
	if len(potential) == 0 {
		return nil, 0, framework.NewStatus(framework.UnschedulableAndUnresolvable, msgNoVictims)
	}

	// 2. Remove them all; does the preemptor fit now?
	for _, v := range potential {
		for name, ni := range v.nodes {
			if _, ok := nodes[name]; !ok {
				nodes[name] = ni
			}
		}
		if err := remove(v); err != nil {
			return nil, 0, framework.AsStatus(err)
		}
	}
	if status := pl.fh.RunFilterPluginsWithNominatedPods(ctx, state, preemptor, nodeInfo); !status.IsSuccess() {
		return nil, 0, status
	}

	// 3. Reprieve as many as possible, most important first.
	sort.SliceStable(potential, func(i, j int) bool { return pl.moreImportant(potential[i], potential[j]) })
	violating, nonViolating := filterVictimsWithPDBViolation(potential, pdbs)
	var victims []*victim
	reprieve := func(v *victim) (bool, error) {
		if err := add(v); err != nil {
			return false, err
		}
		fits := pl.fh.RunFilterPluginsWithNominatedPods(ctx, state, preemptor, nodeInfo).IsSuccess()
		if !fits {
			if err := remove(v); err != nil {
				return false, err
			}
			victims = append(victims, v)
			logger.V(5).Info("Pods are potential preemption victims on node", "pods", podRefs(v.pods),
				"node", mainNode)
		}
		return fits, nil
	}
	numViolating := 0
	for _, vv := range violating {
		fits, err := reprieve(vv.victim)
		if err != nil {
			return nil, 0, framework.AsStatus(err)
		}
		if !fits {
			numViolating += vv.pods
		}
	}
	for _, v := range nonViolating {
		if _, err := reprieve(v); err != nil {
			return nil, 0, framework.AsStatus(err)
		}
	}
	// Violating victims came first: restore the order of importance.
	if len(violating) != 0 && len(nonViolating) != 0 {
		sort.SliceStable(victims, func(i, j int) bool { return pl.moreImportant(victims[i], victims[j]) })
	}
	return victimPods(victims), numViolating, nil
}

// victimPods are the units' pods, unit by unit.
func victimPods(units []*victim) []*v1.Pod {
	var out []*v1.Pod
	for _, v := range units {
		for _, pi := range v.pods {
			out = append(out, pi.Pod)
		}
	}
	return out
}

// podRefs names pods in logs.
func podRefs(pods []*framework.PodInfo) []klog.ObjectRef {
	out := make([]klog.ObjectRef, len(pods))
	for i, pi := range pods {
		out[i] = klog.KObj(pi.Pod)
	}
	return out
}

// moreImportantPod orders victims: higher priority first, then the one
// that started earlier (it has run longer). A pod without a start time
// (never started: no kubelet, or just bound) counts as starting now.
func moreImportantPod(a, b *v1.Pod) bool {
	pa, pb := corev1helpers.PodPriority(a), corev1helpers.PodPriority(b)
	if pa != pb {
		return pa > pb
	}
	return podStartTime(a).Before(podStartTime(b))
}

// podStartTime is status.startTime, or now for a pod that has none.
func podStartTime(p *v1.Pod) time.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	return time.Now()
}

// pickOneNodeForPreemption picks the candidate by kube-scheduler's ordered
// criteria, each applied only to the candidates tied on the previous ones:
//
//  1. the fewest PodDisruptionBudget violations;
//  2. the lowest priority among its most important victims;
//  3. the smallest sum of victim priorities;
//  4. the fewest victims;
//  5. the latest start among its highest-priority victims (evict the pods
//     that have run the shortest);
//  6. otherwise any of them (the order is random).
func pickOneNodeForPreemption(logger klog.Logger, candidates []*candidate) *candidate {
	if len(candidates) == 0 {
		return nil
	}
	criteria := []func(c *candidate) int64{
		func(c *candidate) int64 { return -int64(c.numPDBViolations) },
		func(c *candidate) int64 { return -int64(corev1helpers.PodPriority(c.victims[0])) },
		func(c *candidate) int64 {
			var sum int64
			for _, p := range c.victims {
				// Shift to non-negative, so that fewer pods of negative
				// priority do not lose to more of them.
				sum += int64(corev1helpers.PodPriority(p)) + int64(math.MaxInt32+1)
			}
			return -sum
		},
		func(c *candidate) int64 { return -int64(len(c.victims)) },
		func(c *candidate) int64 { return earliestStartOfHighestPriority(c.victims).UnixNano() },
	}
	// Candidates arrive in the order parallel workers found them: shuffle,
	// so the last criterion is an honest coin.
	tied := append([]*candidate(nil), candidates...)
	rand.Shuffle(len(tied), func(i, j int) { tied[i], tied[j] = tied[j], tied[i] })
	for _, score := range criteria {
		best := int64(math.MinInt64)
		var next []*candidate
		for _, c := range tied {
			switch s := score(c); {
			case s > best:
				best, next = s, []*candidate{c}
			case s == best:
				next = append(next, c)
			}
		}
		if len(next) == 1 {
			return next[0]
		}
		tied = next
	}
	logger.V(5).Info("Preemption candidates tie on every criterion; picking one", "candidates", len(tied))
	return tied[0]
}

// earliestStartOfHighestPriority is the earliest start time among the
// victims of the highest priority.
func earliestStartOfHighestPriority(victims []*v1.Pod) time.Time {
	earliest, top := podStartTime(victims[0]), corev1helpers.PodPriority(victims[0])
	for _, p := range victims[1:] {
		switch pr := corev1helpers.PodPriority(p); {
		case pr > top:
			top, earliest = pr, podStartTime(p)
		case pr == top:
			if t := podStartTime(p); t.Before(earliest) {
				earliest = t
			}
		}
	}
	return earliest
}
