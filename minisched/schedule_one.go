package minisched

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// ErrNoNodesAvailable is returned when the cluster has no nodes at all.
var ErrNoNodesAvailable = errors.New("no nodes available to schedule pods")

// Sampling bounds for percentageOfNodesToScore, as in kube-scheduler.
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
	// numberOfHighestScoredNodesToReport is how many top nodes an Attempt
	// carries for narration.
	numberOfHighestScoredNodesToReport = 3
)

// scheduleResult is the outcome of a successful scheduling cycle.
type scheduleResult struct {
	suggestedHost  string
	evaluatedNodes int
	feasibleNodes  int
	topScores      []NodeScores
	rejections     []Rejection
}

// scheduleOne takes one pod through the scheduling cycle and, if a node was
// found, starts its binding cycle in a goroutine.
//
//	Pop → snapshot → PreFilter → Filter → (PostFilter) → PreScore → Score → select
//	    → assume → Reserve → Permit → go bindingCycle
func (s *Scheduler) scheduleOne(ctx, bindCtx context.Context) {
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
	state := framework.NewCycleState()
	result, assumedPodInfo, status := s.schedulingCycle(ctx, state, fwk, podInfo)
	if !status.IsSuccess() {
		s.handleSchedulingFailure(ctx, fwk, assumedPodInfo, status)
		return
	}

	// Bind in the background: the pod is assumed, so the next cycle already
	// counts it on its node.
	s.bindings.Add(1)
	go func() {
		defer s.bindings.Done()
		bctx := klog.NewContext(bindCtx, logger)
		if status := s.bindingCycle(bctx, state, fwk, result, assumedPodInfo); !status.IsSuccess() {
			s.handleBindingCycleError(bctx, state, fwk, assumedPodInfo, result.suggestedHost, status)
		}
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
func (s *Scheduler) schedulingCycle(ctx context.Context, state *framework.CycleState, fwk *framework.Framework, podInfo *framework.QueuedPodInfo) (scheduleResult, *framework.QueuedPodInfo, *framework.Status) {
	logger := klog.FromContext(ctx)
	pod := podInfo.Pod

	result, err := s.schedulePod(ctx, fwk, state, pod)
	if err != nil {
		var fitErr *framework.FitError
		switch {
		case errors.Is(err, ErrNoNodesAvailable):
			return result, podInfo, framework.NewStatus(framework.UnschedulableAndUnresolvable).WithError(err)
		case errors.As(err, &fitErr):
			s.runPostFilter(ctx, fwk, state, pod, fitErr)
			return result, podInfo, framework.NewStatus(framework.Unschedulable).WithError(fitErr)
		default:
			logger.Error(err, "Error selecting node for pod")
			return result, podInfo, framework.AsStatus(err)
		}
	}

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

// runPostFilter gives PostFilter plugins (preemption) a chance to make room,
// and records what they said in the FitError's message.
func (s *Scheduler) runPostFilter(ctx context.Context, fwk *framework.Framework, state *framework.CycleState, pod *v1.Pod, fitErr *framework.FitError) {
	if !fwk.HasPostFilterPlugins() {
		klog.FromContext(ctx).V(3).Info("No PostFilter plugins are registered, so no preemption will be performed")
		return
	}
	_, status := fwk.RunPostFilterPlugins(ctx, state, pod, fitErr.Diagnosis.NodeToStatus)
	fitErr.Diagnosis.PostFilterMsg = status.Message()
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
func (s *Scheduler) unreserveAndForget(ctx context.Context, state *framework.CycleState, fwk *framework.Framework, assumed *v1.Pod, node string) {
	fwk.RunReservePluginsUnreserve(ctx, state, assumed, node)
	if err := s.Cache.ForgetPod(klog.FromContext(ctx), assumed); err != nil {
		klog.FromContext(ctx).Error(err, "Scheduler cache ForgetPod failed")
	}
}

// schedulePod refreshes the snapshot and picks a node: Filter narrows the
// nodes, Score ranks them, selectHost takes the best.
func (s *Scheduler) schedulePod(ctx context.Context, fwk *framework.Framework, state *framework.CycleState, pod *v1.Pod) (scheduleResult, error) {
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
	if len(feasible) == 0 {
		return scheduleResult{}, &framework.FitError{Pod: pod, NumAllNodes: s.snapshot.NumNodes(), Diagnosis: diagnosis}
	}
	evaluated := len(feasible) + diagnosis.NodeToStatus.Len()
	// One feasible node: nothing to rank.
	if len(feasible) == 1 {
		return scheduleResult{suggestedHost: feasible[0].Node().Name, evaluatedNodes: evaluated, feasibleNodes: 1,
			rejections: s.rejectionsIfObserved(&diagnosis)}, nil
	}
	scores, err := s.prioritizeNodes(ctx, fwk, state, pod, feasible)
	if err != nil {
		return scheduleResult{}, err
	}
	host, top := s.selectHost(scores, fwk.HasScorePlugins())
	return scheduleResult{suggestedHost: host, evaluatedNodes: evaluated, feasibleNodes: len(feasible), topScores: top,
		rejections: s.rejectionsIfObserved(&diagnosis)}, nil
}

// rejectionsIfObserved lists the rejected nodes for the observer; without
// one, the cycle does not pay for it.
func (s *Scheduler) rejectionsIfObserved(d *framework.Diagnosis) []Rejection {
	if s.observer == nil {
		return nil
	}
	return rejections(d)
}

// findNodesThatFitPod runs PreFilter once and Filter over the candidate
// nodes, recording why each rejected node failed.
func (s *Scheduler) findNodesThatFitPod(ctx context.Context, fwk *framework.Framework, state *framework.CycleState, pod *v1.Pod) ([]*framework.NodeInfo, framework.Diagnosis, error) {
	diagnosis := framework.NewDiagnosis()
	allNodes, err := s.snapshot.NodeInfos().List()
	if err != nil {
		return nil, diagnosis, err
	}

	preRes, sts, narrowing := fwk.RunPreFilterPlugins(ctx, state, pod, allNodes)
	diagnosis.UnschedulablePlugins = narrowing
	if !sts.IsSuccess() {
		if !sts.IsRejected() {
			return nil, diagnosis, sts.AsError()
		}
		// Every node fails for the same reason: say it once.
		diagnosis.NodeToStatus.SetAbsentNodesStatus(sts)
		diagnosis.PreFilterMsg = sts.Message()
		diagnosis.AddPluginStatus(sts)
		return nil, diagnosis, nil
	}

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

	want := s.numFeasibleNodesToFind(fwk.ProfileName(), len(nodes))
	feasible, processed, err := fwk.FindNodesThatPassFilters(ctx, state, pod, &diagnosis, nodes, s.nextStartNodeIndex, want)
	if err != nil {
		return nil, diagnosis, err
	}
	if len(nodes) > 0 {
		s.nextStartNodeIndex = (s.nextStartNodeIndex + processed) % len(nodes)
	}
	return feasible, diagnosis, nil
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

// prioritizeNodes scores the feasible nodes. Without Score plugins every node
// scores 1 and the choice is random: the talk's "random scheduler".
func (s *Scheduler) prioritizeNodes(ctx context.Context, fwk *framework.Framework, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) ([]framework.NodePluginScores, error) {
	if !fwk.HasScorePlugins() {
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
	if logger := klog.FromContext(ctx); logger.V(10).Enabled() {
		for _, ns := range scores {
			logger.V(10).Info("Node scored", "node", ns.Name, "score", ns.TotalScore)
		}
	}
	return scores, nil
}

// selectHost picks the node with the highest total score, breaking ties
// uniformly at random (reservoir sampling over the tied nodes). It also
// returns the best few nodes for narration when scores were computed.
func (s *Scheduler) selectHost(scores []framework.NodePluginScores, scored bool) (string, []NodeScores) {
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
	if !scored {
		return scores[best].Name, nil
	}
	sorted := append([]framework.NodePluginScores(nil), scores...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].TotalScore > sorted[j].TotalScore })
	top := make([]NodeScores, 0, numberOfHighestScoredNodesToReport)
	for _, ns := range sorted[:min(len(sorted), numberOfHighestScoredNodesToReport)] {
		per := make(map[string]int64, len(ns.Scores))
		for _, ps := range ns.Scores {
			per[ps.Name] = ps.Score
		}
		top = append(top, NodeScores{Node: ns.Name, Total: ns.TotalScore, Plugin: per})
	}
	return scores[best].Name, top
}

// bindingCycle waits on Permit, then runs PreBind, Bind and PostBind.
func (s *Scheduler) bindingCycle(ctx context.Context, state *framework.CycleState, fwk *framework.Framework, result scheduleResult, assumedPodInfo *framework.QueuedPodInfo) *framework.Status {
	assumed := assumedPodInfo.Pod
	if sts := fwk.WaitOnPermit(ctx, assumed); !sts.IsSuccess() {
		if sts.IsRejected() {
			return rejectionOnNode(assumed, result.suggestedHost, sts)
		}
		return sts
	}
	// From here on a failure is not the pod's fault: it goes to backoff, not
	// among the unschedulable pods, so the queue can forget its events now.
	s.Queue.Done(assumed.UID)

	if sts := fwk.RunPreBindPlugins(ctx, state, assumed, result.suggestedHost); !sts.IsSuccess() {
		return sts
	}
	sts := fwk.RunBindPlugins(ctx, state, assumed, result.suggestedHost)
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
	msg := fmt.Sprintf("Successfully assigned %v/%v to %v", assumed.Namespace, assumed.Name, result.suggestedHost)
	fwk.EventRecorder().Eventf(assumed, nil, v1.EventTypeNormal, "Scheduled", "Binding", msg)
	fwk.RunPostBindPlugins(ctx, state, assumed, result.suggestedHost)
	s.observe(Attempt{
		Namespace: assumed.Namespace, Name: assumed.Name, UID: assumed.UID, Profile: fwk.ProfileName(),
		Result: Scheduled, Node: result.suggestedHost, Message: msg, Attempts: assumedPodInfo.Attempts,
		Time: time.Now(), TopScores: result.topScores, Rejections: result.rejections,
	})
	return nil
}
