package minisched

import (
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

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/minisched/metrics"
)

// ErrNoNodesAvailable is returned when the cluster has no nodes at all.
var ErrNoNodesAvailable = errors.New("no nodes available to schedule pods")

// scheduleResult is the outcome of a successful scheduling cycle.
type scheduleResult struct {
	// suggestedHost is the chosen node.
	suggestedHost string
	// evaluatedNodes counts the nodes Filter examined; feasibleNodes those
	// that passed.
	evaluatedNodes int
	feasibleNodes  int
	// explanation is what the observer is told about the decision; empty
	// without an observer.
	explanation explanation
	// start is when the pod was popped: attempt durations count from it.
	start time.Time
	// nominatingInfo, for a failed cycle, is how the pod's nominated node
	// changes: set by preemption, cleared when the pod failed otherwise,
	// nil to keep it (preemption could not help but says nothing).
	nominatingInfo *framework.NominatingInfo
}

// clearNominatedNode is the nominatingInfo of a failure that does not come
// from PostFilter: any earlier nomination is dropped.
var clearNominatedNode = &framework.NominatingInfo{NominatingMode: framework.ModeOverride}

// scheduleOne takes one pod through the scheduling cycle and, if a node was
// found, starts its binding cycle in a goroutine. Every pod it pops is
// ends its in-flight period in the queue exactly once (see
// queue.PriorityQueue.Done for where).
//
//	(a free bind slot) → Pop → snapshot → PreFilter → Filter → (PostFilter) → PreScore → Score → select
//	    → assume → Reserve → Permit → go runBindingCycle
func (s *Scheduler) scheduleOne(ctx, bindCtx context.Context) {
	// Back-pressure: while maxConcurrentBinds Bind calls are in flight the
	// apiserver is the bottleneck, and a pod scheduled now would only wait
	// for a slot with its node already chosen. It waits in the queue instead.
	select {
	case s.bindSlots <- struct{}{}:
		<-s.bindSlots
	case <-ctx.Done():
		return
	}
	podInfo, err := s.Queue.Pop(klog.FromContext(ctx))
	if err != nil || podInfo == nil {
		return // the queue was closed
	}
	pod := podInfo.Pod
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "pod", klog.KObj(pod))
	ctx = klog.NewContext(ctx, logger)

	fwk, err := s.frameworkForPod(pod)
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
	state := framework.NewCycleState()
	// Time each plugin call in a sample of the cycles only.
	state.RecordPluginMetrics = rand.IntN(100) < metrics.PluginMetricsSamplePercent
	// Record the attempt node by node only if someone reads it.
	if s.recording() {
		startRecording(state)
	}
	podsToActivate := framework.NewPodsToActivate()
	state.Write(framework.PodsToActivateKey, podsToActivate)
	result, assumedPodInfo, status := s.schedulingCycle(ctx, state, fwk, podInfo)
	result.start = start
	if !status.IsSuccess() {
		s.handleSchedulingFailure(ctx, fwk, assumedPodInfo, status, result.nominatingInfo, start, recorderOf(state))
		return
	}
	s.activatePods(logger, podsToActivate)

	// Bind in the background: the pod is assumed, so the next cycle already
	// counts it on its node.
	s.bindings.Add(1)
	s.metrics.GoroutineStarted(metrics.Binding)
	go func() {
		defer s.bindings.Done()
		defer s.metrics.GoroutineDone(metrics.Binding)
		s.runBindingCycle(klog.NewContext(bindCtx, logger), state, fwk, result, assumedPodInfo)
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

// schedulingCycle finds a node, assumes the pod there, and runs Reserve and
// Permit. On failure it has already undone what it did (Unreserve, Forget)
// and returns a status for the failure handler: a rejection carries a
// *FitError.
func (s *Scheduler) schedulingCycle(ctx context.Context, state *framework.CycleState, fwk *framework.Framework,
	podInfo *framework.QueuedPodInfo) (scheduleResult, *framework.QueuedPodInfo, *framework.Status) {
	logger := klog.FromContext(ctx)
	pod := podInfo.Pod

	result, err := s.scheduleAlgorithm(ctx, fwk, state, pod)
	if err != nil {
		var fitErr *framework.FitError
		switch {
		case errors.Is(err, ErrNoNodesAvailable):
			result.nominatingInfo = clearNominatedNode
			return result, podInfo, framework.NewStatus(framework.UnschedulableAndUnresolvable).WithError(err)
		case errors.As(err, &fitErr):
			// scheduleAlgorithm ran PostFilter and set the nomination.
			return result, podInfo, framework.NewStatus(framework.Unschedulable).WithError(fitErr)
		default:
			logger.Error(err, "Error selecting node for pod")
			result.nominatingInfo = clearNominatedNode
			return result, podInfo, framework.AsStatus(err)
		}
	}
	// From here on a failure clears any nomination.
	result.nominatingInfo = clearNominatedNode

	// Assume: from now on the cache counts the pod on the chosen node, so the
	// next cycle sees it without waiting for the bind to reach the apiserver.
	assumedPodInfo := podInfo.DeepCopy()
	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = result.suggestedHost
	assumedPodInfo.PodInfo = framework.NewPodInfo(assumed)
	if err := s.Cache.AssumePod(logger, assumed); err != nil {
		// A bug in retrying logic, most likely; the failure handler will not
		// requeue a pod that turns out to be bound already.
		return result, assumedPodInfo, framework.AsStatus(err)
	}
	// An assumed pod counts on its node: it no longer needs a nomination
	// to hold the room.
	s.Queue.DeleteNominatedPodIfExists(assumed)

	if sts := fwk.RunReservePluginsReserve(ctx, state, assumed, result.suggestedHost); !sts.IsSuccess() {
		s.unreserveAndForget(ctx, state, fwk, assumed, result.suggestedHost)
		return result, assumedPodInfo, rejectionOnNode(pod, result.suggestedHost, sts)
	}

	if sts := fwk.RunPermitPlugins(ctx, state, assumed, result.suggestedHost); !sts.IsWait() && !sts.IsSuccess() {
		s.unreserveAndForget(ctx, state, fwk, assumed, result.suggestedHost)
		return result, assumedPodInfo, rejectionOnNode(pod, result.suggestedHost, sts)
	}
	return result, assumedPodInfo, nil
}

// scheduleAlgorithm is schedulePod, with PostFilter when it fails, timed
// for scheduler_scheduling_algorithm_duration_seconds.
func (s *Scheduler) scheduleAlgorithm(ctx context.Context, fwk *framework.Framework, state *framework.CycleState,
	pod *v1.Pod) (result scheduleResult, err error) {
	start := time.Now()
	defer func() { s.metrics.Algorithm(time.Since(start)) }()
	result, err = s.schedulePod(ctx, fwk, state, pod)
	var fitErr *framework.FitError
	if errors.As(err, &fitErr) {
		result.nominatingInfo = s.runPostFilter(ctx, fwk, state, pod, fitErr)
	}
	return result, err
}

// runPostFilter gives PostFilter plugins (preemption) a chance to make room,
// records what they said in the FitError's message, and returns how the
// pod's nominated node changes.
func (s *Scheduler) runPostFilter(ctx context.Context, fwk *framework.Framework, state *framework.CycleState,
	pod *v1.Pod, fitErr *framework.FitError) *framework.NominatingInfo {
	logger := klog.FromContext(ctx)
	if !fwk.HasPostFilterPlugins() {
		logger.V(3).Info("No PostFilter plugins are registered, so no preemption will be performed")
		return clearNominatedNode
	}
	result, status := fwk.RunPostFilterPlugins(ctx, state, pod, fitErr.Diagnosis.NodeToStatus)
	fitErr.Diagnosis.PostFilterMsg = status.Message()
	if status.Code() == framework.Error {
		logger.Error(status.AsError(), "PostFilter failed")
	} else {
		logger.V(5).Info("Status after running PostFilter plugins", "status", status.Message())
	}
	if result == nil {
		return nil
	}
	return result.NominatingInfo
}

// activatePods moves the pods plugins put in PodsToActivate to activeQ, and
// empties it.
func (s *Scheduler) activatePods(logger klog.Logger, p *framework.PodsToActivate) {
	p.Lock()
	defer p.Unlock()
	if len(p.Map) == 0 {
		return
	}
	s.Queue.Activate(logger, p.Map)
	p.Map = map[string]*v1.Pod{}
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

// unreserveAndForget undoes Reserve and the assumption.
func (s *Scheduler) unreserveAndForget(ctx context.Context, state *framework.CycleState, fwk *framework.Framework,
	assumed *v1.Pod, node string) {
	fwk.RunReservePluginsUnreserve(ctx, state, assumed, node)
	if err := s.Cache.ForgetPod(klog.FromContext(ctx), assumed); err != nil {
		klog.FromContext(ctx).Error(err, "Scheduler cache ForgetPod failed")
	}
}

// schedulePod refreshes the snapshot and picks a node: Filter narrows the
// nodes (findNodesThatFitPod), Score ranks them (prioritizeNodes), selectHost
// takes the best.
func (s *Scheduler) schedulePod(ctx context.Context, fwk *framework.Framework, state *framework.CycleState,
	pod *v1.Pod) (scheduleResult, error) {
	if err := s.Cache.UpdateSnapshot(klog.FromContext(ctx), s.snapshot); err != nil {
		return scheduleResult{}, err
	}
	if s.snapshot.NumNodes() == 0 {
		return scheduleResult{}, ErrNoNodesAvailable
	}
	feasible, diagnosis, err := s.findNodesThatFitPod(ctx, fwk, state, pod)
	if err != nil {
		return scheduleResult{}, err
	}
	recorderOf(state).filtered(s.snapshot.NodeInfos(), feasible, &diagnosis)
	if len(feasible) == 0 {
		return scheduleResult{}, &framework.FitError{Pod: pod, NumAllNodes: s.snapshot.NumNodes(), Diagnosis: diagnosis}
	}
	result := scheduleResult{
		evaluatedNodes: len(feasible) + diagnosis.NodeToStatus.Len(),
		feasibleNodes:  len(feasible),
	}
	// One feasible node: nothing to rank.
	if len(feasible) == 1 {
		result.suggestedHost = feasible[0].Node().Name
		result.explanation = s.explain(nil, &diagnosis)
		return result, nil
	}
	scores, err := s.prioritizeNodes(ctx, fwk, state, pod, feasible)
	if err != nil {
		return scheduleResult{}, err
	}
	result.suggestedHost = s.selectHost(scores)
	if hasScoring(fwk) {
		result.explanation = s.explain(scores, &diagnosis)
	} else {
		result.explanation = s.explain(nil, &diagnosis)
	}
	return result, nil
}

// Finding the feasible nodes: findNodesThatFitPod runs PreFilter and decides
// which nodes to search; numFeasibleNodesToFind says how many feasible nodes
// are enough; findNodesThatPassFilters runs Filter over the nodes in parallel
// until it has found that many.

// Sampling bounds for percentageOfNodesToScore, as in kube-scheduler.
const (
	// minFeasibleNodesToFind: clusters smaller than this are searched whole,
	// and a search never stops with fewer feasible nodes than this.
	minFeasibleNodesToFind = 100
	// minFeasibleNodesPercentageToFind is the floor of the adaptive
	// percentage.
	minFeasibleNodesPercentageToFind = 5
)

// findNodesThatFitPod runs PreFilter once and Filter over the candidate
// nodes, recording in the diagnosis why each rejected node failed.
func (s *Scheduler) findNodesThatFitPod(ctx context.Context, fwk *framework.Framework, state *framework.CycleState,
	pod *v1.Pod) ([]*framework.NodeInfo, framework.Diagnosis, error) {
	diagnosis := framework.NewDiagnosis()
	allNodes, err := s.snapshot.NodeInfos().List()
	if err != nil {
		return nil, diagnosis, err
	}

	// Step 1: PreFilter. A rejection here rejects every node for the same
	// reason: say it once. A PreFilterResult may narrow the candidates.
	preRes, sts, narrowing := fwk.RunPreFilterPlugins(ctx, state, pod, allNodes)
	recorderOf(state).preFiltered(sts, state.SkipFilterPlugins, len(allNodes))
	diagnosis.UnschedulablePlugins = narrowing
	if !sts.IsSuccess() {
		if !sts.IsRejected() {
			return nil, diagnosis, sts.AsError()
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(sts)
		diagnosis.PreFilterMsg = sts.Message()
		diagnosis.AddPluginStatus(sts)
		return nil, diagnosis, nil
	}

	// Step 2: a pod nominated to a node (a preemption made room there) tries
	// that node first; if it fits, the search is over.
	if pod.Status.NominatedNodeName != "" {
		feasible, err := s.evaluateNominatedNode(ctx, fwk, state, pod, &diagnosis)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Evaluation failed on nominated node", "node", pod.Status.NominatedNodeName)
		}
		if len(feasible) != 0 {
			return feasible, diagnosis, nil
		}
	}

	// Step 3: the candidates. Nodes a PreFilterResult left out are rejected
	// by the plugins that narrowed the set.
	nodes := allNodes
	if !preRes.AllNodes() {
		nodes = make([]*framework.NodeInfo, 0, len(preRes.NodeNames))
		for _, name := range sets.List(preRes.NodeNames) {
			if ni, err := s.snapshot.NodeInfos().Get(name); err == nil {
				nodes = append(nodes, ni)
			}
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(framework.NewStatus(framework.UnschedulableAndUnresolvable,
			fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(narrowing))))
	}

	// Step 4: Filter, in parallel, until enough feasible nodes are found.
	feasible, err := s.findNodesThatPassFilters(ctx, fwk, state, pod, &diagnosis, nodes)
	if err != nil {
		return nil, diagnosis, err
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
	passed, err := findNodesThatPassExtenders(ctx, fwk.Extenders(), pod, feasible, diagnosis.NodeToStatus,
		recorderOf(state))
	if err != nil {
		return nil, diagnosis, err
	}
	if len(passed) != len(feasible) {
		diagnosis.UnschedulablePlugins.Insert(framework.ExtenderName)
	}
	return passed, diagnosis, nil
}

// findNodesThatPassExtenders runs the interested extenders' Filter one after
// another, each on the nodes the previous ones kept, and records why each
// rejected node failed: Unschedulable, or UnschedulableAndUnresolvable
// (which wins when an extender names a node in both maps). A failing
// ignorable extender is skipped; any other failure is the attempt's error.
// A recorded cycle notes each extender's verdicts in rec.
func findNodesThatPassExtenders(ctx context.Context, extenders []framework.Extender, pod *v1.Pod,
	feasible []*framework.NodeInfo, statuses *framework.NodeToStatus, rec *attemptRecorder) ([]*framework.NodeInfo, error) {
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
		rec.extenderFiltered(ext, failed, unresolvable)
		for node, msg := range unresolvable {
			statuses.Set(node, framework.NewStatus(framework.UnschedulableAndUnresolvable, msg))
		}
		for node, msg := range failed {
			if _, both := unresolvable[node]; !both {
				statuses.Set(node, framework.NewStatus(framework.Unschedulable, msg))
			}
		}
		feasible = passed
	}
	return feasible, nil
}

// evaluateNominatedNode runs Filter on the pod's nominated node alone.
// Rejections are recorded in diagnosis; the full search that follows a
// rejection overwrites them.
func (s *Scheduler) evaluateNominatedNode(ctx context.Context, fwk *framework.Framework,
	state *framework.CycleState, pod *v1.Pod, diagnosis *framework.Diagnosis) ([]*framework.NodeInfo, error) {
	nodeInfo, err := s.snapshot.NodeInfos().Get(pod.Status.NominatedNodeName)
	if err != nil {
		return nil, err
	}
	feasible, err := s.findNodesThatPassFilters(ctx, fwk, state, pod, diagnosis, []*framework.NodeInfo{nodeInfo})
	if err != nil {
		return nil, err
	}
	return findNodesThatPassExtenders(ctx, fwk.Extenders(), pod, feasible, diagnosis.NodeToStatus, recorderOf(state))
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

// hasScoring reports whether anything will rank the feasible nodes: a
// Score plugin or a prioritizing extender.
func hasScoring(fwk *framework.Framework) bool {
	if fwk.HasScorePlugins() {
		return true
	}
	for _, ext := range fwk.Extenders() {
		if ext.IsPrioritizer() {
			return true
		}
	}
	return false
}

// hasExtenderFilters reports whether an extender filters nodes.
func hasExtenderFilters(fwk *framework.Framework) bool {
	for _, ext := range fwk.Extenders() {
		if ext.IsFilter() {
			return true
		}
	}
	return false
}

// findNodesThatPassFilters runs the Filter plugins on nodes in parallel,
// starting at nextStartNodeIndex and wrapping around, and stops once
// numFeasibleNodesToFind feasible nodes were found or every node was tried.
// When nothing ranks the nodes and no extender filters them, the first
// feasible node is as good as any, and the search stops there. Rejected
// nodes are recorded in diagnosis; an Error from any plugin aborts the
// search.
func (s *Scheduler) findNodesThatPassFilters(ctx context.Context, fwk *framework.Framework,
	state *framework.CycleState, pod *v1.Pod, diagnosis *framework.Diagnosis,
	nodes []*framework.NodeInfo) ([]*framework.NodeInfo, error) {
	numAllNodes := len(nodes)
	if numAllNodes == 0 {
		return nil, nil
	}
	want := s.numFeasibleNodesToFind(fwk.ProfileName(), numAllNodes)
	if !hasExtenderFilters(fwk) && !hasScoring(fwk) {
		want = 1
	}
	start := s.nextStartNodeIndex % numAllNodes

	// Without Filter plugins every node is feasible: take the first ones.
	if !fwk.HasFilterPlugins() {
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
		statuses = make([]*framework.Status, numAllNodes) // the rejected nodes' verdicts
		firstErr error
	)
	checkNode := func(i int) {
		nodeInfo := nodes[(start+i)%numAllNodes]
		status := fwk.RunFilterPluginsWithNominatedPods(ctx, state, pod, nodeInfo)
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
			statuses[i] = status
		}
	}
	filterStart := time.Now()
	fwk.Parallelizer().Until(ctx, numAllNodes, checkNode)
	if firstErr != nil {
		fwk.ObserveFilter(filterStart, framework.AsStatus(firstErr))
		return nil, firstErr
	}
	fwk.ObserveFilter(filterStart, nil)
	for i, status := range statuses {
		if status != nil {
			diagnosis.NodeToStatus.Set(nodes[(start+i)%numAllNodes].Node().Name, status)
			diagnosis.AddPluginStatus(status)
		}
	}
	return feasible, nil
}

// prioritizeNodes scores the feasible nodes: the Score plugins' weighted
// sum plus the prioritizing extenders' scores. Without either every node
// scores 1 and the choice is random: the talk's "random scheduler".
func (s *Scheduler) prioritizeNodes(ctx context.Context, fwk *framework.Framework, state *framework.CycleState,
	pod *v1.Pod, nodes []*framework.NodeInfo) ([]framework.NodePluginScores, error) {
	if !fwk.HasScorePlugins() && len(fwk.Extenders()) == 0 {
		out := make([]framework.NodePluginScores, len(nodes))
		for i, n := range nodes {
			out[i] = framework.NodePluginScores{Name: n.Node().Name, TotalScore: 1}
		}
		return out, nil
	}
	if sts := fwk.RunPreScorePlugins(ctx, state, pod, nodes); !sts.IsSuccess() {
		return nil, sts.AsError()
	}
	scores, sts := fwk.RunScorePlugins(ctx, state, pod, nodes)
	if !sts.IsSuccess() {
		return nil, sts.AsError()
	}
	rec := recorderOf(state)
	addExtenderScores(ctx, fwk.Extenders(), pod, nodes, scores, rec)
	rec.scored(scores)
	if logger := klog.FromContext(ctx); logger.V(10).Enabled() {
		for _, ns := range scores {
			logger.V(10).Info("Node scored", "node", ns.Name, "score", ns.TotalScore)
		}
	}
	return scores, nil
}

// addExtenderScores asks the interested extenders, in parallel, to score
// nodes, and adds score × weight × (MaxNodeScore / MaxExtenderPriority) to
// each node's total: an extender scores 0–10, plugins 0–100. An extender
// that fails only loses its say. A recorded cycle notes their raw scores in
// rec.
func addExtenderScores(ctx context.Context, extenders []framework.Extender, pod *v1.Pod,
	nodes []*framework.NodeInfo, scores []framework.NodePluginScores, rec *attemptRecorder) {
	logger := klog.FromContext(ctx)
	byNode := make(map[string]*framework.NodePluginScores, len(scores))
	for i := range scores {
		byNode[scores[i].Name] = &scores[i]
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
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
			rec.extenderPrioritized(ext, weight, *list)
			for _, hp := range *list {
				ns, ok := byNode[hp.Host]
				if !ok {
					continue // a node it was not asked about
				}
				score := hp.Score * weight * (framework.MaxNodeScore / extenderv1.MaxExtenderPriority)
				ns.Scores = append(ns.Scores, framework.PluginScore{Name: ext.Name(), Score: score})
				ns.TotalScore += score
			}
		})
	}
	wg.Wait()
}

// selectHost picks the node with the highest total score, breaking ties
// uniformly at random (reservoir sampling over the tied nodes).
func (s *Scheduler) selectHost(scores []framework.NodePluginScores) string {
	best, ties := 0, 1
	for i := 1; i < len(scores); i++ {
		switch {
		case scores[i].TotalScore > scores[best].TotalScore:
			best, ties = i, 1
		case scores[i].TotalScore == scores[best].TotalScore:
			ties++
			if s.randIntN(ties) == 0 {
				best = i
			}
		}
	}
	return scores[best].Name
}

// bind binds the pod through the first interested binding extender, or
// else through the Bind plugins (kube-scheduler's precedence). A failing
// ignorable extender passes the turn to the next binder.
func (s *Scheduler) bind(ctx context.Context, state *framework.CycleState, fwk *framework.Framework,
	assumed *v1.Pod, node string) *framework.Status {
	// The bind slot bounds the requests in flight (see maxConcurrentBinds).
	select {
	case s.bindSlots <- struct{}{}:
	case <-ctx.Done():
		return framework.AsStatus(context.Cause(ctx))
	}
	defer func() { <-s.bindSlots }()
	for _, ext := range fwk.Extenders() {
		if !ext.IsBinder() || !ext.IsInterested(assumed) {
			continue
		}
		err := ext.Bind(&v1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: assumed.Namespace, Name: assumed.Name, UID: assumed.UID},
			Target:     v1.ObjectReference{Kind: "Node", Name: node},
		})
		if err != nil && ext.IsIgnorable() {
			klog.FromContext(ctx).Info("Skipping extender in bind as it returned error and has ignorable flag set",
				"extender", ext.Name(), "err", err)
			continue
		}
		return framework.AsStatus(err)
	}
	return fwk.RunBindPlugins(ctx, state, assumed, node)
}

// runBindingCycle is the binding goroutine of an assumed pod: it waits for
// Permit's verdict, marks the pod Done in the queue once Permit allowed it,
// then binds. A failure at any step goes to handleBindingCycleError, whose
// requeue ends the in-flight period if Permit had not.
func (s *Scheduler) runBindingCycle(ctx context.Context, state *framework.CycleState, fwk *framework.Framework,
	result scheduleResult, assumedPodInfo *framework.QueuedPodInfo) {
	assumed := assumedPodInfo.Pod
	if sts := s.announceNode(ctx, state, fwk, assumed, result.suggestedHost); !sts.IsSuccess() {
		s.handleBindingCycleError(ctx, state, fwk, assumedPodInfo, result.suggestedHost, sts, result.start)
		return
	}
	if sts := s.waitOnPermit(ctx, fwk, assumed, result.suggestedHost); !sts.IsSuccess() {
		s.handleBindingCycleError(ctx, state, fwk, assumedPodInfo, result.suggestedHost, sts, result.start)
		return
	}
	// Permit was the last extension point that can reject the pod: from
	// here on a failure is an error and goes to backoff, so the queue can
	// drop the events it kept for the pod now, not after the API calls.
	s.Queue.Done(assumed.UID)
	if sts := s.bindingCycle(ctx, state, fwk, result, assumedPodInfo); !sts.IsSuccess() {
		s.handleBindingCycleError(ctx, state, fwk, assumedPodInfo, result.suggestedHost, sts, result.start)
		return
	}
	if p, err := state.Read(framework.PodsToActivateKey); err == nil {
		s.activatePods(klog.FromContext(ctx), p.(*framework.PodsToActivate))
	}
}

// announceNode sets status.nominatedNodeName to the chosen node when
// binding will take a while: the pod waits on Permit, or a PreBind plugin
// has work to do (kube-scheduler's NominatedNodeNameForExpectation, on in
// v1.37). Other components (a cluster autoscaler, say) then know where the
// pod is going. A pod bound at once is not patched. A failed patch is only
// logged; a failed PreBind pre-flight aborts the binding cycle.
func (s *Scheduler) announceNode(ctx context.Context, state *framework.CycleState, fwk *framework.Framework,
	assumed *v1.Pod, node string) *framework.Status {
	preFlight := fwk.RunPreBindPreFlights(ctx, state, assumed, node)
	if preFlight.Code() == framework.Error || preFlight.IsRejected() {
		return preFlight
	}
	if !preFlight.IsSuccess() && !fwk.WillWaitOnPermit(assumed) {
		return nil
	}
	info := &framework.NominatingInfo{NominatedNodeName: node, NominatingMode: framework.ModeOverride}
	if err := updatePod(ctx, s.client, assumed, nil, info); err != nil {
		klog.FromContext(ctx).Error(err, "Failed to set the nominated node name in the binding cycle",
			"nominatedNodeName", node)
	}
	return nil
}

// waitOnPermit blocks until a pod that Permit asked to wait is allowed or
// rejected. A rejection becomes a FitError about the chosen node.
func (s *Scheduler) waitOnPermit(ctx context.Context, fwk *framework.Framework, assumed *v1.Pod,
	node string) *framework.Status {
	sts := fwk.WaitOnPermit(ctx, assumed)
	if sts.IsRejected() {
		return rejectionOnNode(assumed, node, sts)
	}
	return sts
}

// bindingCycle runs PreBind, Bind and PostBind for a pod Permit allowed, and
// tells the observer.
func (s *Scheduler) bindingCycle(ctx context.Context, state *framework.CycleState, fwk *framework.Framework,
	result scheduleResult, assumedPodInfo *framework.QueuedPodInfo) *framework.Status {
	assumed := assumedPodInfo.Pod
	if sts := fwk.RunPreBindPlugins(ctx, state, assumed, result.suggestedHost); !sts.IsSuccess() {
		return sts
	}
	sts := s.bind(ctx, state, fwk, assumed, result.suggestedHost)
	if sts.IsSkip() {
		sts = framework.AsStatus(fmt.Errorf("no Bind plugin bound pod %s", framework.PodKey(assumed)))
	}
	if err := s.Cache.FinishBinding(klog.FromContext(ctx), assumed); err != nil {
		klog.FromContext(ctx).Error(err, "Scheduler cache FinishBinding failed")
	}
	if !sts.IsSuccess() {
		return sts
	}
	klog.FromContext(ctx).V(2).Info("Successfully bound pod to node", "node", result.suggestedHost,
		"evaluatedNodes", result.evaluatedNodes, "feasibleNodes", result.feasibleNodes)
	s.metrics.Attempt(metrics.ScheduledResult, fwk.ProfileName(), time.Since(result.start))
	if first := assumedPodInfo.InitialAttemptTimestamp; first != nil {
		s.metrics.PodBound(assumedPodInfo.Attempts, *first)
	}
	msg := fmt.Sprintf("Successfully assigned %v/%v to %v", assumed.Namespace, assumed.Name, result.suggestedHost)
	fwk.EventRecorder().Eventf(assumed, nil, v1.EventTypeNormal, "Scheduled", "Binding", msg)
	fwk.RunPostBindPlugins(ctx, state, assumed, result.suggestedHost)
	a := Attempt{
		Namespace: assumed.Namespace, Name: assumed.Name, UID: assumed.UID, Profile: fwk.ProfileName(),
		Result: Scheduled, Node: result.suggestedHost, Message: msg, Attempts: assumedPodInfo.Attempts,
		Time: time.Now(), TopScores: result.explanation.topScores, Rejections: result.explanation.rejections,
	}
	s.finishRecord(recorderOf(state), fwk, assumed, &a)
	s.observe(a)
	return nil
}
