// One pod's way through the scheduler, in the order it meets each step,
// with kube-scheduler's names, and the chapter of docs/ that explains it:
//
//	scheduleOne                pop the next pod                                   1
//	scheduleOnePod             the scheduling cycle, then the binding cycle       1, 5
//	schedulingCycle            schedulingAlgorithm, then prepareForBindingCycle   5, 6
//	  schedulingAlgorithm      schedulePod; PostFilter when nothing fits          10
//	  schedulePod              snapshot → Filter → Score → the best node          1, 2, 3
//	    findNodesThatFitPod    PreFilter, a nominated or hinted node, Filter,     2, 10, 12, 15
//	                           extenders
//	    prioritizeNodes        PreScore, Score, extenders' Prioritize             3, 4, 12
//	    selectHost             the best total, from a heap; the rest is kept      3, 15
//	                           for OpportunisticBatching
//	  prepareForBindingCycle   assumeAndReserve, then Permit                      5, 6
//	    assumeAndReserve       the cache counts the pod on its node; Reserve      6
//	runBindingCycle            bindingCycle; on failure, handleBindingCycleError  5
//	  bindingCycle             nominated node, WaitOnPermit, PreBind, bind,       5, 16
//	                           PostBind
//	    bind                   a binding extender, or the Bind plugins            5, 12
//
// The rest lives in files of its own, each called from one place here:
// failure.go puts back a pod that could not be scheduled or bound (chapters
// 7 and 8); record.go builds the record of an attempt once its cycle has
// ended, for explain and the live view; backpressure.go holds the next pod
// in the queue while the apiserver is the bottleneck (chapter 15);
// pools.go lends a cycle's score arrays to the next one (chapter 15);
// extender.go is the client of HTTP extenders (chapter 12).

package minisched

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/minisched/metrics"
	"github.com/minisched/minisched/podstatus"
)

// ErrNoNodesAvailable is returned when the cluster has no nodes at all.
var ErrNoNodesAvailable = errors.New("no nodes available to schedule pods")

// scheduleResult is what a scheduling cycle returns, whether it found a
// node or not.
type scheduleResult struct {
	// suggestedHost is the chosen node: "" when no node was found, still
	// set when assume, Reserve or Permit then failed.
	suggestedHost string
	// evaluatedNodes counts the nodes the search examined; feasibleNodes
	// those that passed Filter and the extenders. Both stay 0 when no node
	// fits.
	evaluatedNodes int
	feasibleNodes  int
	// nominatingInfo, for a failed cycle, is how the pod's nominated node
	// changes: set by preemption, cleared when the pod failed otherwise,
	// nil to keep it (PostFilter ran and asked for no change).
	nominatingInfo *framework.NominatingInfo
	// start is when the pod was popped: attempt durations count from it.
	start time.Time

	// seen is what the cycle saw, for the attempt record; record is that
	// record (nil: nobody reads records), which gets its outcome when the
	// attempt ends (record.go).
	seen   cycleSeen
	record *attempt.Record
	// podGroup is, for a member of a pod group, its group's attempt, which
	// its record carries (nil: no pod group, or nobody reads records).
	podGroup *attempt.GroupAttempt
}

// cycleSeen is what a scheduling cycle saw, as far as it got: the cycle
// computes it anyway, so returning it costs nothing, and recordAttempt
// builds the attempt record from it.
type cycleSeen struct {
	// diagnosis has no NodeToStatus if the cycle failed before the search
	// for feasible nodes finished (no nodes, or an error on the way).
	diagnosis framework.Diagnosis
	// feasible are the nodes that passed every filter and extender; scores
	// are theirs (nil if they were not ranked), and extenderWeights the
	// weight each prioritizing extender answered with.
	feasible        []*framework.NodeInfo
	scores          []framework.NodePluginScores
	extenderWeights map[string]int64
	// victims are the pods preemption evicts on the nominated node.
	victims []*v1.Pod
	// hint is the node OpportunisticBatching offered ("" if none).
	hint string
}

// clearNominatedNode is the nominatingInfo of a failure PostFilter did not
// decide on (no PostFilter plugins, no nodes, an error, or a failure after
// a node was chosen): any earlier nomination is dropped.
var clearNominatedNode = &framework.NominatingInfo{NominatingMode: framework.ModeOverride}

// scheduleOne pops the next entity and schedules it: a pod
// (scheduleOnePod) or, with GenericWorkload, a pod group, which goes to its
// own cycle (chapter 19), as in kube-scheduler's ScheduleOne.
func (s *Scheduler) scheduleOne(ctx, bindCtx context.Context) {
	// Back-pressure (backpressure.go): while the apiserver is the
	// bottleneck, the next pod waits in the queue, not with a node chosen.
	if !s.waitForBindSlot(ctx) {
		return
	}
	entity, err := s.Queue.Pop(klog.FromContext(ctx))
	if err != nil || entity == nil {
		return // the queue was closed
	}
	switch e := entity.(type) {
	case *framework.QueuedPodInfo:
		s.scheduleOnePod(ctx, bindCtx, e)
	case *framework.QueuedPodGroupInfo:
		s.scheduleOnePodGroup(ctx, bindCtx, e)
	default:
		klog.FromContext(ctx).Error(nil, "Popped an entity the scheduler does not know", "type", fmt.Sprintf("%T", e))
	}
}

// scheduleOnePod takes one pod through the scheduling cycle and, if a node
// was found, starts its binding cycle in a goroutine. Every pod it is given
// ends its in-flight period in the queue exactly once (see
// queue.PriorityQueue.Done for where).
func (s *Scheduler) scheduleOnePod(ctx, bindCtx context.Context, podInfo *framework.QueuedPodInfo) {
	pod := podInfo.Pod
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "pod", klog.KObj(pod))
	ctx = klog.NewContext(ctx, logger)

	schedFramework, err := s.frameworkForPod(pod)
	if err != nil {
		logger.Error(err, "Popped a pod no profile schedules")
		s.Queue.Done(pod.UID)
		return
	}
	if s.skipPodSchedule(logger, pod) {
		s.Queue.Done(pod.UID)
		return
	}

	logger.V(3).Info("Attempting to schedule pod", "attempts", podInfo.Attempts)
	start := time.Now()
	state := s.newCycleState(podInfo)
	result, assumedPodInfo, status := s.schedulingCycle(ctx, state, schedFramework, podInfo)
	result.start = start
	// The record of the attempt (record.go), for explain and the live view,
	// is built from what the cycle saw, and only while someone reads
	// records; after it, nothing reads what the cycle saw (pools.go).
	result.record = s.recordAttempt(schedFramework, state, podInfo, result)
	releaseSeen(state, &result)
	if !status.IsSuccess() {
		s.handleSchedulingFailure(ctx, schedFramework, assumedPodInfo, status, result.nominatingInfo, start, result.record)
		return
	}

	// Bind in the background: the pod is assumed, so the next cycle already
	// counts it on its node.
	s.bindings.Add(1)
	go func() {
		defer s.bindings.Done()
		s.runBindingCycle(klog.NewContext(bindCtx, logger), state, schedFramework, result, assumedPodInfo)
	}()
}

// skipPodSchedule reports pods that must not be scheduled now: one being
// deleted, or one already assumed (an update raced with its binding).
func (s *Scheduler) skipPodSchedule(logger klog.Logger, pod *v1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		logger.V(3).Info("Skip scheduling a pod that is being deleted")
		return true
	}
	if assumed, _ := s.Cache.IsAssumedPod(pod); assumed {
		logger.V(3).Info("Skip scheduling a pod that is already assumed")
		return true
	}
	return false
}

// newCycleState is a fresh CycleState for one cycle, with an empty
// PodsToActivate for plugins to fill. Each plugin call is timed in a sample
// of the cycles only (metrics.PluginMetricsSamplePercent), as
// kube-scheduler does: timing every call costs more than it tells. A cycle
// whose per-plugin scores nobody will read computes their totals only
// (scoreTotalsOnly, pools.go).
func (s *Scheduler) newCycleState(podInfo *framework.QueuedPodInfo) *framework.CycleState {
	state := framework.NewCycleState()
	state.RecordPluginMetrics = rand.IntN(100) < metrics.PluginMetricsSamplePercent
	state.Write(framework.PodsToActivateKey, framework.NewPodsToActivate())
	state.ScoreTotalsOnly = s.scoreTotalsOnly(podInfo)
	return state
}

// schedulingCycle records the pod's PodInfo in state (for plugins to read
// its requests from), finds a node (schedulingAlgorithm), then assumes the
// pod there and runs Reserve and Permit (prepareForBindingCycle). On
// failure it has already undone what it did (Unreserve, Forget) and returns
// a status for the failure handler: a rejection by plugins carries a
// *FitError; a cluster without nodes is UnschedulableAndUnresolvable with
// ErrNoNodesAvailable; anything else is an error.
func (s *Scheduler) schedulingCycle(ctx context.Context, state *framework.CycleState,
	schedFramework *framework.Framework, podInfo *framework.QueuedPodInfo) (scheduleResult, *framework.QueuedPodInfo, *framework.Status) {
	state.SetPodInfo(podInfo.PodInfo)
	result, status := s.schedulingAlgorithm(ctx, schedFramework, state, podInfo)
	if !status.IsSuccess() {
		return result, podInfo, status
	}
	// From here on a failure clears any nomination.
	result.nominatingInfo = clearNominatedNode
	assumedPodInfo, status := s.prepareForBindingCycle(ctx, state, schedFramework, podInfo, result.suggestedHost)
	return result, assumedPodInfo, status
}

// schedulingAlgorithm runs schedulePod and, when no node fits, PostFilter
// (preemption), which decides the nomination. It turns schedulePod's error
// into the cycle's status, and is timed for
// scheduler_scheduling_algorithm_duration_seconds.
func (s *Scheduler) schedulingAlgorithm(ctx context.Context, schedFramework *framework.Framework,
	state *framework.CycleState, podInfo *framework.QueuedPodInfo) (scheduleResult, *framework.Status) {
	start := time.Now()
	defer func() { s.metrics.Algorithm(time.Since(start)) }()
	pod := podInfo.Pod
	result, err := s.schedulePod(ctx, schedFramework, state, podInfo)
	if err == nil {
		return result, nil
	}
	var fitErr *framework.FitError
	switch {
	case errors.Is(err, ErrNoNodesAvailable):
		result.nominatingInfo = clearNominatedNode
		return result, framework.NewStatus(framework.UnschedulableAndUnresolvable).WithError(err)
	case errors.As(err, &fitErr) && state.InPodGroupCycle:
		// A member of a pod group: its group's PodGroupPostFilter runs
		// once the whole group was tried, and may yet nominate it.
		result.nominatingInfo = nil
		return result, framework.NewStatus(framework.Unschedulable).WithError(fitErr)
	case errors.As(err, &fitErr):
		result.nominatingInfo, result.seen.victims = s.runPostFilter(ctx, schedFramework, state, pod, fitErr)
		return result, framework.NewStatus(framework.Unschedulable).WithError(fitErr)
	default:
		klog.FromContext(ctx).Error(err, "Error selecting node for pod")
		result.nominatingInfo = clearNominatedNode
		return result, framework.AsStatus(err)
	}
}

// schedulePod refreshes the snapshot and picks a node: Filter narrows the
// nodes (findNodesThatFitPod), Score ranks them (prioritizeNodes), selectHost
// takes the best. It returns what it saw as far as it got, with an error
// when it found no node: ErrNoNodesAvailable, a *FitError, or a failure.
// When it found one, it tells OpportunisticBatching what it chose and keeps
// the ranking of the rest for the next pod (StoreScheduleResults).
func (s *Scheduler) schedulePod(ctx context.Context, schedFramework *framework.Framework,
	state *framework.CycleState, podInfo *framework.QueuedPodInfo) (result scheduleResult, err error) {
	pod := podInfo.Pod
	// A pod group's cycle refreshed the snapshot once, for all its
	// members: refreshing it per member would drop the members placed in
	// it so far.
	if !state.InPodGroupCycle {
		if err := s.Cache.UpdateSnapshot(klog.FromContext(ctx), s.snapshot); err != nil {
			return result, err
		}
	}
	// Within a pod group's placement (TopologyAwareWorkloadScheduling),
	// only the placement's nodes are searched, and counted.
	if s.snapshot.NumNodesInPlacement() == 0 {
		return result, ErrNoNodesAvailable
	}
	// The cycle's number, which OpportunisticBatching compares with the
	// last stored one: only this goroutine pops, so it holds all cycle.
	cycle := s.Queue.SchedulingCycle()
	feasible, diagnosis, hint, err := s.findNodesThatFitPod(ctx, schedFramework, state, podInfo, cycle)
	if err != nil {
		return result, err
	}
	result.seen.diagnosis, result.seen.feasible, result.seen.hint = diagnosis, feasible, hint
	if len(feasible) == 0 {
		return result, &framework.FitError{Pod: pod, NumAllNodes: s.snapshot.NumNodesInPlacement(), Diagnosis: diagnosis}
	}
	result.evaluatedNodes = len(feasible) + diagnosis.NodeToStatus.Len()
	result.feasibleNodes = len(feasible)
	// One feasible node (the nominated or hinted one, often): nothing to
	// rank, and no ranking to keep.
	if len(feasible) == 1 {
		result.suggestedHost = feasible[0].Node().Name
		schedFramework.StoreScheduleResults(ctx, podInfo.PodSignature, hint, result.suggestedHost, nil, cycle)
		return result, nil
	}
	result.seen.scores, result.seen.extenderWeights, err = s.prioritizeNodes(ctx, schedFramework, state, pod, feasible)
	if err != nil {
		return result, err
	}
	ranking := selectHost(result.seen.scores)
	result.suggestedHost = ranking.Pop().Name
	schedFramework.StoreScheduleResults(ctx, podInfo.PodSignature, hint, result.suggestedHost, ranking, cycle)
	return result, nil
}

// Finding the feasible nodes: findNodesThatFitPod runs PreFilter and decides
// which nodes to search; numFeasibleNodesToFind says how many feasible nodes
// are enough; findNodesThatPassFilters runs Filter over the nodes in parallel
// until it has found that many; findNodesThatPassExtenders asks the
// extenders about the survivors.

// Sampling bounds for percentageOfNodesToScore, as in kube-scheduler.
const (
	// minFeasibleNodesToFind: clusters smaller than this are searched whole,
	// and a sampled search looks for at least this many feasible nodes.
	minFeasibleNodesToFind = 100
	// minFeasibleNodesPercentageToFind is the floor of the adaptive
	// percentage.
	minFeasibleNodesPercentageToFind = 5
)

// findNodesThatFitPod runs PreFilter once, then Filter and the filtering
// extenders over the candidate nodes (a nominated or hinted node first),
// recording in the diagnosis why each rejected node failed. It also returns
// the node OpportunisticBatching hinted at ("" if none); cycle is this
// scheduling cycle's number (PriorityQueue.SchedulingCycle).
func (s *Scheduler) findNodesThatFitPod(ctx context.Context, schedFramework *framework.Framework,
	state *framework.CycleState, podInfo *framework.QueuedPodInfo, cycle int64) ([]*framework.NodeInfo, framework.Diagnosis, string, error) {
	pod := podInfo.Pod
	diagnosis := framework.NewDiagnosis()
	// PreFilter sees every node; the search covers the placement's, when a
	// pod group's cycle assumed one (cache/snapshot_placement.go).
	allNodes, err := s.snapshot.NodeInfos().List()
	if err != nil {
		return nil, diagnosis, "", err
	}
	candidates, err := s.snapshot.ListNodesInPlacement()
	if err != nil {
		return nil, diagnosis, "", err
	}

	// Step 1: PreFilter. A rejection here rejects every node for the same
	// reason: say it once. A PreFilterResult may narrow the candidates.
	ctx = s.step(ctx, schedFramework, state, pod, framework.SchedulingCycle, "PreFilter", "")
	preRes, sts, narrowing := schedFramework.RunPreFilterPlugins(ctx, state, pod, allNodes)
	diagnosis.UnschedulablePlugins = narrowing
	if !sts.IsSuccess() {
		if !sts.IsRejected() {
			return nil, diagnosis, "", sts.AsError()
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(sts)
		diagnosis.PreFilterMsg = sts.Message()
		diagnosis.AddPluginStatus(sts)
		return nil, diagnosis, "", nil
	}

	// Step 2: a pod nominated to a node (a preemption made room there) tries
	// that node first; so does a pod alike the one scheduled just before,
	// on the node OpportunisticBatching hints at: the best that cycle did
	// not take. If it fits, the search is over. (A nominated pod never gets
	// a hint: GetNodeHint refuses it.)
	ctx = s.step(ctx, schedFramework, state, pod, framework.SchedulingCycle, "Filter", "")
	hint := schedFramework.GetNodeHint(ctx, pod, podInfo.PodSignature, state, cycle)
	if first := cmp.Or(pod.Status.NominatedNodeName, hint); first != "" {
		feasible, err := s.evaluateNominatedNode(ctx, schedFramework, state, pod, first, &diagnosis)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Evaluation failed on the nominated or hinted node", "node", first)
		}
		if len(feasible) != 0 {
			return feasible, diagnosis, hint, nil
		}
	}

	// Step 3: the candidates. Nodes a PreFilterResult left out are rejected
	// by the plugins that narrowed the set.
	nodes := candidates
	if !preRes.AllNodes() {
		nodes = make([]*framework.NodeInfo, 0, len(preRes.NodeNames))
		for _, name := range sets.List(preRes.NodeNames) {
			if ni, err := s.snapshot.GetNodeInPlacement(name); err == nil {
				nodes = append(nodes, ni)
			}
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(framework.NewStatus(framework.UnschedulableAndUnresolvable,
			fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(narrowing))))
	}

	// Step 4: Filter, in parallel, until enough feasible nodes are found.
	feasible, err := s.findNodesThatPassFilters(ctx, schedFramework, state, pod, &diagnosis, nodes)
	if err != nil {
		return nil, diagnosis, hint, err
	}

	// Step 5: the next search starts after the nodes this one examined (the
	// feasible ones kept and the rejected ones), so that successive pods
	// spread their Filter work over all nodes.
	if len(nodes) > 0 {
		processed := len(feasible) + diagnosis.NodeToStatus.Len()
		s.nextStartNodeIndex = (s.nextStartNodeIndex + processed) % len(nodes)
	}

	// Step 6: the extenders filter what the plugins left. They register no
	// events, so a pod they turned nodes away for is retried on any event.
	passed, err := findNodesThatPassExtenders(ctx, schedFramework.Extenders(), pod, feasible, diagnosis.NodeToStatus)
	if err != nil {
		return nil, diagnosis, hint, err
	}
	if len(passed) != len(feasible) {
		diagnosis.UnschedulablePlugins.Insert(framework.ExtenderName)
	}
	return passed, diagnosis, hint, nil
}

// evaluateNominatedNode runs Filter and the extenders on one node alone: the
// pod's nominated node, or the node OpportunisticBatching hinted at. A
// rejection is recorded in diagnosis; the full search that follows sets it
// again if it reaches that node, and keeps it otherwise. A node outside the
// placement a pod group's cycle is trying is skipped, and not an error:
// the group is tried in other placements too.
func (s *Scheduler) evaluateNominatedNode(ctx context.Context, schedFramework *framework.Framework,
	state *framework.CycleState, pod *v1.Pod, node string, diagnosis *framework.Diagnosis) ([]*framework.NodeInfo, error) {
	nodeInfo, err := s.snapshot.GetNodeInPlacement(node)
	if err != nil {
		if _, err := s.snapshot.Get(node); err != nil {
			return nil, err
		}
		klog.FromContext(ctx).V(4).Info("Pod's nominated node is present in the cluster but not available in the current placement",
			"pod", klog.KObj(pod), "node", node)
		return nil, nil
	}
	feasible, err := s.findNodesThatPassFilters(ctx, schedFramework, state, pod, diagnosis, []*framework.NodeInfo{nodeInfo})
	if err != nil {
		return nil, err
	}
	return findNodesThatPassExtenders(ctx, schedFramework.Extenders(), pod, feasible, diagnosis.NodeToStatus)
}

// findNodesThatPassFilters runs the Filter plugins on nodes in parallel,
// starting at nextStartNodeIndex and wrapping around, and stops once
// numFeasibleNodesToFind feasible nodes were found or every node was tried.
// When nothing ranks the nodes and no extender filters them, the first
// feasible node is as good as any, and the search stops there. Rejected
// nodes are recorded in diagnosis; an Error from any plugin aborts the
// search.
func (s *Scheduler) findNodesThatPassFilters(ctx context.Context, schedFramework *framework.Framework,
	state *framework.CycleState, pod *v1.Pod, diagnosis *framework.Diagnosis,
	nodes []*framework.NodeInfo) ([]*framework.NodeInfo, error) {
	numAllNodes := len(nodes)
	if numAllNodes == 0 {
		return nil, nil
	}
	want := s.numFeasibleNodesToFind(schedFramework.ProfileName(), numAllNodes)
	if !hasExtenderFilters(schedFramework) && !hasScoring(schedFramework) {
		want = 1
	}
	start := s.nextStartNodeIndex % numAllNodes

	// Without Filter plugins every node is feasible: take the first ones.
	if !schedFramework.HasFilterPlugins() {
		feasible := make([]*framework.NodeInfo, want)
		for i := range feasible {
			feasible[i] = nodes[(start+i)%numAllNodes]
		}
		return feasible, nil
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		feasible = make([]*framework.NodeInfo, 0, want)
		// The rejected nodes' verdicts, by index; made at the first
		// rejection (often none is).
		statuses []*framework.Status
		firstErr error
	)
	checkNode := func(i int) {
		nodeInfo := nodes[(start+i)%numAllNodes]
		status := schedFramework.RunFilterPluginsWithNominatedPods(ctx, state, pod, nodeInfo)
		s.stepFilterResult(state, nodeInfo, status)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case status.IsSuccess():
			// Enough found: stop the workers that have not started a node
			// yet; nodes that pass after that are not kept.
			if len(feasible) < want {
				feasible = append(feasible, nodeInfo)
			}
			if len(feasible) >= want {
				cancel()
			}
		case status.Code() == framework.Error:
			if firstErr == nil {
				firstErr = status.AsError()
			}
			cancel()
		default:
			if statuses == nil {
				statuses = make([]*framework.Status, numAllNodes)
			}
			statuses[i] = status
		}
	}
	filterStart := time.Now()
	schedFramework.Parallelizer().Until(ctx, numAllNodes, checkNode)
	if firstErr != nil {
		schedFramework.ObserveFilter(filterStart, framework.AsStatus(firstErr))
		return nil, firstErr
	}
	schedFramework.ObserveFilter(filterStart, nil)
	for i, status := range statuses {
		if status != nil {
			diagnosis.NodeToStatus.Set(nodes[(start+i)%numAllNodes].Node().Name, status)
			diagnosis.AddPluginStatus(status)
		}
	}
	return feasible, nil
}

// numFeasibleNodesToFind is how many feasible nodes are enough: all of them
// in clusters under 100 nodes, otherwise percentageOfNodesToScore (by
// default 50% minus 1% per 125 nodes, at least 5%), but never fewer than 100.
func (s *Scheduler) numFeasibleNodesToFind(profile string, numAllNodes int) int {
	if numAllNodes < minFeasibleNodesToFind {
		return numAllNodes
	}
	percentage := s.percentageOfNodesToScore
	if p := s.profilePercentage[profile]; p != nil {
		percentage = *p
	}
	if percentage == 0 {
		percentage = max(int32(50)-int32(numAllNodes)/125, minFeasibleNodesPercentageToFind)
	}
	return max(numAllNodes*int(percentage)/100, minFeasibleNodesToFind)
}

// hasExtenderFilters reports whether an extender filters nodes.
func hasExtenderFilters(schedFramework *framework.Framework) bool {
	for _, ext := range schedFramework.Extenders() {
		if ext.IsFilter() {
			return true
		}
	}
	return false
}

// hasScoring reports whether anything will rank the feasible nodes: a
// Score plugin or a prioritizing extender.
func hasScoring(schedFramework *framework.Framework) bool {
	if schedFramework.HasScorePlugins() {
		return true
	}
	for _, ext := range schedFramework.Extenders() {
		if ext.IsPrioritizer() {
			return true
		}
	}
	return false
}

// findNodesThatPassExtenders runs the interested extenders' Filter one after
// another, each on the nodes the previous ones kept, and records why each
// rejected node failed, under the extender's name: Unschedulable, or
// UnschedulableAndUnresolvable (which wins when an extender names a node in
// both maps). A failing ignorable extender is skipped; any other failure is
// the attempt's error.
func findNodesThatPassExtenders(ctx context.Context, extenders []framework.Extender, pod *v1.Pod,
	feasible []*framework.NodeInfo, statuses *framework.NodeToStatus) ([]*framework.NodeInfo, error) {
	logger := klog.FromContext(ctx)
	for _, ext := range extenders {
		if len(feasible) == 0 {
			break
		}
		if !ext.IsInterested(pod) {
			continue
		}
		passed, failed, unresolvable, err := ext.Filter(pod, feasible)
		if err != nil {
			if ext.IsIgnorable() {
				logger.Info("Skipping extender as it returned error and has ignorable flag set",
					"extender", ext.Name(), "err", err)
				continue
			}
			return nil, err
		}
		for node, msg := range unresolvable {
			statuses.Set(node, framework.NewStatus(framework.UnschedulableAndUnresolvable, msg).WithPlugin(ext.Name()))
		}
		for node, msg := range failed {
			if _, both := unresolvable[node]; !both {
				statuses.Set(node, framework.NewStatus(framework.Unschedulable, msg).WithPlugin(ext.Name()))
			}
		}
		feasible = passed
	}
	return feasible, nil
}

// prioritizeNodes scores the feasible nodes: the Score plugins' weighted
// sum plus the prioritizing extenders' scores. It also returns the weight
// each prioritizing extender answered with (nil if none did).
func (s *Scheduler) prioritizeNodes(ctx context.Context, schedFramework *framework.Framework,
	state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) ([]framework.NodePluginScores, map[string]int64, error) {
	ctx = s.step(ctx, schedFramework, state, pod, framework.SchedulingCycle, "PreScore", "")
	if sts := schedFramework.RunPreScorePlugins(ctx, state, pod, nodes); !sts.IsSuccess() {
		return nil, nil, sts.AsError()
	}
	ctx = s.step(ctx, schedFramework, state, pod, framework.SchedulingCycle, "Score", "")
	scores, sts := schedFramework.RunScorePlugins(ctx, state, pod, nodes)
	if !sts.IsSuccess() {
		return nil, nil, sts.AsError()
	}
	weights := addExtenderScores(ctx, schedFramework.Extenders(), pod, nodes, scores, s.randInt)
	s.stepScores(state, scores)
	if logger := klog.FromContext(ctx); logger.V(10).Enabled() {
		for _, ns := range scores {
			logger.V(10).Info("Node scored", "node", ns.Name, "score", ns.TotalScore)
		}
	}
	return scores, weights, nil
}

// addExtenderScores asks the interested extenders, in parallel, to score
// nodes, and adds score × weight × (MaxNodeScore / MaxExtenderPriority) to
// each node's total: an extender scores 0–10, plugins 0–100. A node an
// extender scored gets a Randomizer from randomizer, so that ties between
// such nodes are broken at random (as kube-scheduler does). An extender
// that fails only loses its say. It returns the weight of each prioritizing
// extender that answered (nil if none did).
func addExtenderScores(ctx context.Context, extenders []framework.Extender, pod *v1.Pod,
	nodes []*framework.NodeInfo, scores []framework.NodePluginScores, randomizer func() int) map[string]int64 {
	if len(extenders) == 0 {
		return nil // nothing to ask, and no index of the nodes to build
	}
	logger := klog.FromContext(ctx)
	byNode := make(map[string]*framework.NodePluginScores, len(scores))
	for i := range scores {
		byNode[scores[i].Name] = &scores[i]
	}
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		weights map[string]int64
	)
	for _, ext := range extenders {
		if !ext.IsInterested(pod) {
			continue
		}
		wg.Go(func() {
			list, weight, err := ext.Prioritize(pod, nodes)
			if err != nil {
				logger.V(5).Info("Failed to run extender's priority function. No score given by this extender.",
					"extender", ext.Name(), "err", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if ext.IsPrioritizer() {
				if weights == nil {
					weights = map[string]int64{}
				}
				weights[ext.Name()] = weight
			}
			for _, hp := range *list {
				ns, ok := byNode[hp.Host]
				if !ok {
					continue // a node it was not asked about
				}
				score := hp.Score * weight * (framework.MaxNodeScore / extenderv1.MaxExtenderPriority)
				ns.Scores = append(ns.Scores, framework.PluginScore{Name: ext.Name(), Score: score, Raw: hp.Score})
				ns.TotalScore += score
				ns.Randomizer = randomizer()
			}
		})
	}
	wg.Wait()
	return weights
}

// selectHost ranks the scored nodes in a heap, best first (as kube-scheduler
// v1.37 does); the caller pops the winner, and the rest are the ranking
// OpportunisticBatching keeps. Ties go to the node with the higher
// Randomizer, set only where an extender scored; without extenders, to
// whichever tied node the heap puts on top, which depends on the order
// Filter found them in (see framework.SortedScoredNodes). The heap is built
// in scores' array: the nodes stay in it, in another order (the attempt
// record finds each by name).
func selectHost(scores []framework.NodePluginScores) *framework.SortedScoredNodes {
	return framework.NewSortedScoredNodes(scores)
}

// runPostFilter gives PostFilter plugins (preemption) a chance to make room,
// records what they said in the FitError's message, and returns how the
// pod's nominated node changes and the victims evicted there.
func (s *Scheduler) runPostFilter(ctx context.Context, schedFramework *framework.Framework,
	state *framework.CycleState, pod *v1.Pod, fitErr *framework.FitError) (*framework.NominatingInfo, []*v1.Pod) {
	logger := klog.FromContext(ctx)
	if !schedFramework.HasPostFilterPlugins() {
		logger.V(3).Info("No PostFilter plugins are registered, so no preemption will be performed")
		return clearNominatedNode, nil
	}
	ctx = s.step(ctx, schedFramework, state, pod, framework.SchedulingCycle, "PostFilter", "")
	result, status := schedFramework.RunPostFilterPlugins(ctx, state, pod, fitErr.Diagnosis.NodeToStatus)
	fitErr.Diagnosis.PostFilterMsg = status.Message()
	if status.Code() == framework.Error {
		logger.Error(status.AsError(), "PostFilter failed")
	} else {
		logger.V(5).Info("Status after running PostFilter plugins", "status", status.Message())
	}
	if result == nil {
		return nil, nil
	}
	return result.NominatingInfo, result.Victims
}

// prepareForBindingCycle applies the algorithm's choice in memory: it
// assumes the pod on node and runs Reserve (assumeAndReserve), then Permit;
// when all succeed it ends by activating the pods plugins asked for. A
// Permit rejection undoes Reserve and the assumption.
func (s *Scheduler) prepareForBindingCycle(ctx context.Context, state *framework.CycleState,
	schedFramework *framework.Framework, podInfo *framework.QueuedPodInfo, node string) (*framework.QueuedPodInfo, *framework.Status) {
	assumedPodInfo, status := s.assumeAndReserve(ctx, state, schedFramework, podInfo, node)
	if !status.IsSuccess() {
		return assumedPodInfo, status
	}
	assumed := assumedPodInfo.Pod
	ctx = s.step(ctx, schedFramework, state, assumed, framework.SchedulingCycle, "Permit", node)
	if sts := schedFramework.RunPermitPlugins(ctx, state, assumed, node); !sts.IsWait() && !sts.IsSuccess() {
		s.unreserveAndForget(ctx, state, schedFramework, assumed, node)
		return assumedPodInfo, rejectionOnNode(podInfo.Pod, node, sts)
	}
	s.activatePods(klog.FromContext(ctx), state)
	return assumedPodInfo, nil
}

// assumeAndReserve assumes the pod on node in the cache and runs Reserve.
// From then on the cache counts the pod there, so the next cycle sees it
// without waiting for the bind to reach the apiserver. A member tried in
// its pod group's cycle (state.InPodGroupCycle) is assumed in the snapshot
// instead, for the next members to see, until the group's cycle undoes it.
// A failing Reserve is undone (unreserveAndForget); a rejection is
// reported like a Filter rejection of that node (rejectionOnNode), any
// other code as an error.
func (s *Scheduler) assumeAndReserve(ctx context.Context, state *framework.CycleState,
	schedFramework *framework.Framework, podInfo *framework.QueuedPodInfo, node string) (*framework.QueuedPodInfo, *framework.Status) {
	logger := klog.FromContext(ctx)
	assumedPodInfo := podInfo.DeepCopy()
	assumed := podInfo.Pod.DeepCopy()
	assumed.Spec.NodeName = node
	assumedPodInfo.PodInfo = podInfo.PodInfo.WithPod(assumed)
	if err := s.assume(logger, state, assumedPodInfo.PodInfo); err != nil {
		// A bug in retrying logic, most likely; the failure handler will not
		// requeue a pod that turns out to be bound already.
		return assumedPodInfo, framework.AsStatus(err)
	}
	// An assumed pod counts on its node: it no longer needs a nomination
	// to hold the room.
	s.Queue.DeleteNominatedPodIfExists(assumed)

	ctx = s.step(ctx, schedFramework, state, assumed, framework.SchedulingCycle, "Reserve", node)
	if sts := schedFramework.RunReservePluginsReserve(ctx, state, assumed, node); !sts.IsSuccess() {
		s.unreserveAndForget(ctx, state, schedFramework, assumed, node)
		return assumedPodInfo, rejectionOnNode(podInfo.Pod, node, sts)
	}
	return assumedPodInfo, nil
}

// assume counts the pod on its node: in the cache, or in the snapshot for a
// member tried in its pod group's cycle.
func (s *Scheduler) assume(logger klog.Logger, state *framework.CycleState, podInfo *framework.PodInfo) error {
	if state.InPodGroupCycle {
		return s.snapshot.AssumePod(podInfo)
	}
	return s.Cache.AssumePodInfo(logger, podInfo)
}

// unreserveAndForget undoes Reserve and the assumption. A member assumed
// in the snapshot also gets back the nomination assume dropped.
func (s *Scheduler) unreserveAndForget(ctx context.Context, state *framework.CycleState,
	schedFramework *framework.Framework, assumed *v1.Pod, node string) {
	logger := klog.FromContext(ctx)
	schedFramework.RunReservePluginsUnreserve(ctx, state, assumed, node)
	if state.InPodGroupCycle {
		if err := s.snapshot.ForgetPod(logger, assumed); err != nil {
			logger.Error(err, "Scheduler snapshot ForgetPod failed")
		}
		if nominated := assumed.Status.NominatedNodeName; nominated != "" {
			pending := assumed.DeepCopy()
			pending.Spec.NodeName = ""
			s.Queue.AddNominatedPod(logger, framework.NewPodInfo(pending),
				&framework.NominatingInfo{NominatedNodeName: nominated, NominatingMode: framework.ModeOverride})
		}
		return
	}
	if err := s.Cache.ForgetPod(logger, assumed); err != nil {
		logger.Error(err, "Scheduler cache ForgetPod failed")
	}
}

// rejectionOnNode turns a Reserve or Permit rejection into a FitError about
// that one node, so it is reported and requeued like a Filter rejection.
// Other codes pass through as errors.
func rejectionOnNode(pod *v1.Pod, node string, sts *framework.Status) *framework.Status {
	if !sts.IsRejected() {
		return sts
	}
	fitErr := &framework.FitError{Pod: pod, NumAllNodes: 1, Diagnosis: framework.NewDiagnosis()}
	fitErr.Diagnosis.NodeToStatus.Set(node, sts)
	fitErr.Diagnosis.AddPluginStatus(sts)
	return framework.NewStatus(sts.Code()).WithError(fitErr)
}

// activatePods moves the pods plugins put in the cycle's PodsToActivate to
// activeQ, and empties it.
func (s *Scheduler) activatePods(logger klog.Logger, state *framework.CycleState) {
	data, err := state.Read(framework.PodsToActivateKey)
	if err != nil {
		return
	}
	p := data.(*framework.PodsToActivate)
	p.Lock()
	defer p.Unlock()
	if len(p.Map) == 0 {
		return
	}
	s.Queue.Activate(logger, p.Map)
	p.Map = map[string]*v1.Pod{}
}

// runBindingCycle is the binding goroutine of an assumed pod: bindingCycle,
// and handleBindingCycleError if it failed, whose failure handler ends the
// in-flight period if bindingCycle had not.
func (s *Scheduler) runBindingCycle(ctx context.Context, state *framework.CycleState,
	schedFramework *framework.Framework, result scheduleResult, assumedPodInfo *framework.QueuedPodInfo) {
	s.metrics.GoroutineStarted(metrics.Binding)
	defer s.metrics.GoroutineDone(metrics.Binding)
	if sts := s.bindingCycle(ctx, state, schedFramework, result, assumedPodInfo); !sts.IsSuccess() {
		s.handleBindingCycleError(ctx, state, schedFramework, assumedPodInfo, result.suggestedHost, sts,
			result.start, result.record)
	}
}

// bindingCycle sets the nominated node when binding will take a while
// (patchNominatedNode), waits for Permit's verdict, marks the pod Done in
// the queue once Permit allowed it, runs PreBind and binds; once the pod is
// bound it records the success (metrics, the Scheduled event, the attempt's
// outcome), runs PostBind and activates the pods plugins asked for.
func (s *Scheduler) bindingCycle(ctx context.Context, state *framework.CycleState,
	schedFramework *framework.Framework, result scheduleResult, assumedPodInfo *framework.QueuedPodInfo) *framework.Status {
	logger := klog.FromContext(ctx)
	assumed, node := assumedPodInfo.Pod, result.suggestedHost
	if sts := s.patchNominatedNode(ctx, state, schedFramework, assumed, node); !sts.IsSuccess() {
		return sts
	}
	ctx = s.step(ctx, schedFramework, state, assumed, framework.BindingCycle, "WaitOnPermit", node)
	if sts := waitOnPermit(ctx, schedFramework, assumed, node); !sts.IsSuccess() {
		return sts
	}
	// Permit was the last extension point that can reject the pod: from
	// here on a failure is an error and goes to backoff, so the queue can
	// drop the events it kept for the pod now, not after the API calls.
	s.Queue.Done(assumed.UID)
	ctx = s.step(ctx, schedFramework, state, assumed, framework.BindingCycle, "PreBind", node)
	if sts := schedFramework.RunPreBindPlugins(ctx, state, assumed, node); !sts.IsSuccess() {
		return sts
	}
	ctx = s.step(ctx, schedFramework, state, assumed, framework.BindingCycle, "Bind", node)
	if sts := s.bind(ctx, state, schedFramework, assumed, node); !sts.IsSuccess() {
		return sts
	}
	logger.V(2).Info("Successfully bound pod to node", "node", node,
		"evaluatedNodes", result.evaluatedNodes, "feasibleNodes", result.feasibleNodes)
	s.metrics.Attempt(metrics.ScheduledResult, schedFramework.ProfileName(), time.Since(result.start))
	if first := assumedPodInfo.InitialAttemptTimestamp; first != nil {
		s.metrics.PodBound(assumedPodInfo.Attempts, *first)
	}
	msg := fmt.Sprintf("Successfully assigned %v/%v to %v", assumed.Namespace, assumed.Name, node)
	schedFramework.EventRecorder().Eventf(assumed, nil, v1.EventTypeNormal, "Scheduled", "Binding", msg)
	// The attempt's record (record.go) gets the outcome the event told.
	s.recordOutcome(assumed, result.record, attempt.Scheduled, node, msg)
	ctx = s.step(ctx, schedFramework, state, assumed, framework.BindingCycle, "PostBind", node)
	schedFramework.RunPostBindPlugins(ctx, state, assumed, node)
	s.activatePods(logger, state)
	return nil
}

// patchNominatedNode sets status.nominatedNodeName to the chosen node when
// binding will take a while: the pod waits on Permit, or a PreBind plugin
// has work to do (kube-scheduler's NominatedNodeNameForExpectation, on in
// v1.37). Other components (a cluster autoscaler, say) then know where the
// pod is going. A pod bound at once is not patched. A failed patch is only
// logged; a failed PreBind pre-flight aborts the binding cycle.
func (s *Scheduler) patchNominatedNode(ctx context.Context, state *framework.CycleState,
	schedFramework *framework.Framework, assumed *v1.Pod, node string) *framework.Status {
	preFlight := schedFramework.RunPreBindPreFlights(ctx, state, assumed, node)
	if preFlight.Code() == framework.Error || preFlight.IsRejected() {
		return preFlight
	}
	if !preFlight.IsSuccess() && !schedFramework.WillWaitOnPermit(assumed) {
		return nil
	}
	if err := podstatus.Update(ctx, s.client, assumed, nil, &node); err != nil {
		klog.FromContext(ctx).Error(err, "Failed to set the nominated node name in the binding cycle",
			"nominatedNodeName", node)
	}
	return nil
}

// waitOnPermit blocks until a pod that Permit asked to wait is allowed or
// rejected. A rejection becomes a FitError about the chosen node.
func waitOnPermit(ctx context.Context, schedFramework *framework.Framework, assumed *v1.Pod,
	node string) *framework.Status {
	sts := schedFramework.WaitOnPermit(ctx, assumed)
	if sts.IsRejected() {
		return rejectionOnNode(assumed, node, sts)
	}
	return sts
}

// bind binds the pod through the first interested binding extender, or
// else through the Bind plugins (kube-scheduler's precedence), and tells
// the cache the binding is over (finishBinding), whatever its outcome.
func (s *Scheduler) bind(ctx context.Context, state *framework.CycleState, schedFramework *framework.Framework,
	assumed *v1.Pod, node string) *framework.Status {
	defer s.finishBinding(klog.FromContext(ctx), assumed)
	// Back-pressure (backpressure.go): at most maxConcurrentBinds Bind
	// calls are in flight at once.
	release, err := s.takeBindSlot(ctx)
	if err != nil {
		return framework.AsStatus(err)
	}
	defer release()
	if bound, err := s.extendersBinding(klog.FromContext(ctx), schedFramework, assumed, node); bound {
		return framework.AsStatus(err)
	}
	sts := schedFramework.RunBindPlugins(ctx, state, assumed, node)
	if sts.IsSkip() {
		return framework.AsStatus(fmt.Errorf("no Bind plugin bound pod %s", framework.PodKey(assumed)))
	}
	return sts
}

// extendersBinding binds the pod through the first interested binding
// extender; bound is false when none took it. A failing ignorable extender
// passes the turn to the next.
func (s *Scheduler) extendersBinding(logger klog.Logger, schedFramework *framework.Framework,
	assumed *v1.Pod, node string) (bound bool, err error) {
	for _, ext := range schedFramework.Extenders() {
		if !ext.IsBinder() || !ext.IsInterested(assumed) {
			continue
		}
		err := ext.Bind(&v1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: assumed.Namespace, Name: assumed.Name, UID: assumed.UID},
			Target:     v1.ObjectReference{Kind: "Node", Name: node},
		})
		if err != nil && ext.IsIgnorable() {
			logger.Info("Skipping extender in bind as it returned error and has ignorable flag set",
				"extender", ext.Name(), "err", err)
			continue
		}
		return true, err
	}
	return false, nil
}

// finishBinding tells the cache that the assumed pod's binding is over: from
// then on the pod expires from the cache if the informer never confirms it.
func (s *Scheduler) finishBinding(logger klog.Logger, assumed *v1.Pod) {
	if err := s.Cache.FinishBinding(logger, assumed); err != nil {
		logger.Error(err, "Scheduler cache FinishBinding failed")
	}
}
