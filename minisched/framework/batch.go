// This file is OpportunisticBatching (KEP-5598; beta and on by default in
// kube-scheduler since 1.35, with rescoring since 1.37): when pods that are
// alike come one after another, the ranking one full cycle computed serves
// the next ones. The first pod is filtered and scored on every node as
// usual; the cycle keeps the nodes it did not pick, best first. The next pod
// with the same signature gets the best remaining node as a hint, which the
// scheduler tries the way it tries a nominated node: Filter on that one
// node, and if it passes, that is the pod's node, with no other Filter and
// no Score.
//
// It pays for workloads of one pod per node (a batch or ML job asking for a
// whole node, or the same host port): once a pod took node X, X no longer
// fits the next one, and the next best node of the old ranking is the next
// pod's best. A search over N nodes becomes a check of one or two.
//
// What it trades away: the ranking is frozen. Nodes added or changed since
// the full cycle are not considered, the other nodes' scores are not brought
// up to date, and with percentageOfNodesToScore only the nodes sampled then
// are candidates. Feasibility is never traded: the hint passes every Filter
// plugin. So the rules below keep the stored ranking short-lived.
//
// The rules, in the order GetNodeHint checks them (each failure means no
// hint for this pod, and is counted in scheduler_batch_cache_flushed_total
// by reason; the ranking it could not use is replaced or dropped when the
// cycle stores its own results):
//
//  1. a ranking is stored (the previous cycle was a full one that ranked
//     more than one node, or a hinted one whose hint was used);
//  2. this cycle immediately follows the one that stored or used it: any
//     other pod popped in between, of any profile, even one that failed,
//     means the cluster may have changed (pod_skipped). A cycle that finds
//     no node stores nothing, so the pod after it fails this rule too.
//     (kube-scheduler also keeps whether the last cycle succeeded, with the
//     reason pod_failed; since only a successful cycle stores anything,
//     that check never fails, and minisched leaves it out.) With
//     GenericWorkload, the members of one pod group are tried in one
//     cycle, and share its number: a member may use the ranking the member
//     before it stored, as in kube-scheduler.
//  3. the pod has no nominated node: preemption made room for it on a
//     particular node, which it tries first instead (pod_nominated);
//  4. its signature is not nil and equals the stored one byte for byte
//     (pod_incompatible);
//  5. the ranking is at most maxBatchAge old, counted from the full cycle
//     that built it (expired);
//  6. the node chosen last still exists (node_missing). It is filtered
//     again for this pod: if it still fits (several pods per node), it is
//     rescored and ranked again among the stored nodes, each of which keeps
//     its old raw scores; if Filter rejects it, it is left out; an Error
//     means no hint (filter_error).
//
// Then the hint is the best node of the ranking, popped. After the cycle,
// StoreScheduleResults keeps the ranking if the hint was chosen, replaces it
// with this cycle's leftovers if a full cycle ranked more than one node of
// a signed pod, and drops it otherwise.
//
// The profile's part is here too: which of its plugins sign pods
// (computeSignPlugins), the signature the queue asks for when a pod is added
// or updated (Framework.SignPod; the fragment keys and the signers several
// plugins share are in signers.go), and the scheduler's two calls,
// Framework.GetNodeHint after PreFilter and Framework.StoreScheduleResults
// after a cycle that found a node.

package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/metrics"
)

// maxBatchAge is how long a stored ranking may be used, from the full cycle
// that built it, as in kube-scheduler.
const maxBatchAge = 500 * time.Millisecond

// computeSignPlugins collects the plugins that sign pods: every PreFilter,
// Filter, PreScore and Score plugin must, since a signature must capture all
// that decides where the pod fits and how nodes rank. If one does not, or if
// extenders are configured (they see the pod as they like), the profile signs
// no pod and OpportunisticBatching never fires for it.
func (f *Framework) computeSignPlugins(logger klog.Logger) {
	f.signatures = true
	if len(f.extenders) > 0 {
		logger.Info("Disabling signatures for profile because it has extenders configured.", "profile", f.profileName)
		f.signatures = false
	}
	var candidates []Plugin
	for _, pl := range f.preFilterPlugins {
		candidates = append(candidates, pl)
	}
	for _, pl := range f.filterPlugins {
		candidates = append(candidates, pl)
	}
	for _, pl := range f.preScorePlugins {
		candidates = append(candidates, pl)
	}
	for _, pl := range f.scorePlugins {
		candidates = append(candidates, pl)
	}
	seen, unsigned := sets.New[string](), sets.New[string]()
	for _, pl := range candidates {
		if seen.Has(pl.Name()) {
			continue
		}
		seen.Insert(pl.Name())
		if sp, ok := pl.(SignPlugin); ok {
			f.signPlugins = append(f.signPlugins, sp)
		} else {
			unsigned.Insert(pl.Name())
			f.signatures = false
		}
	}
	if unsigned.Len() > 0 {
		logger.Info("Disabling signatures for profile because plugins do not support it.", "profile", f.profileName,
			"plugins", sets.List(unsigned))
	}
}

// SignPod returns the pod's signature: spec.schedulerName and every sign
// plugin's fragments, by key, as JSON (a key two plugins give is kept once).
// It is nil when the profile signs no pod or a plugin refuses this one; the
// queue calls it when the pod is added or updated (see SignPlugin).
func (f *Framework) SignPod(ctx context.Context, pod *v1.Pod) (sig PodSignature) {
	var status *Status
	defer f.observe(signPoint, time.Now(), &status)
	if !f.signatures {
		return nil
	}
	logger := klog.FromContext(ctx)
	fragments := map[string]any{SchedulerNameSignerName: pod.Spec.SchedulerName}
	for _, pl := range f.signPlugins {
		parts, s := pl.SignPod(ctx, pod)
		if !s.IsSuccess() {
			if s.Code() == Error {
				logger.Error(s.AsError(), "SignPod failed for plugin", "plugin", pl.Name())
			}
			logger.V(5).Info("SignPod can't sign pod due to plugin", "pod", klog.KObj(pod), "plugin", pl.Name(),
				"status", s.Message())
			return nil
		}
		for _, p := range parts {
			fragments[p.Key] = p.Value
		}
	}
	out, err := json.Marshal(fragments)
	if err != nil {
		status = AsStatus(err)
		logger.Error(err, "SignPod failed to marshal signature object", "pod", klog.KObj(pod))
		return nil
	}
	return out
}

// OpportunisticBatch is one profile's batching state: the ranking kept from
// the last full cycle and what the last cycle decided. Scheduling cycles
// run one at a time, so it needs no lock.
type OpportunisticBatch struct {
	// fw runs the Filter and Score plugins for the refresh of the last node.
	fw *Framework
	// state is the stored ranking; nil when there is none.
	state *batchState
	// lastCycle is the last cycle that stored its results.
	lastCycle batchCycle
}

// batchState is a stored ranking.
type batchState struct {
	signature    PodSignature
	sortedNodes  *SortedScoredNodes
	creationTime time.Time
}

// batchCycle is what a cycle that stored its results decided.
type batchCycle struct {
	cycleCount int64
	chosenNode string
}

// newOpportunisticBatch returns a profile's batching state, with no ranking
// stored.
func newOpportunisticBatch(fw *Framework) *OpportunisticBatch {
	return &OpportunisticBatch{fw: fw}
}

// GetNodeHint asks OpportunisticBatching for a node to try first
// (OpportunisticBatch.GetNodeHint, below).
func (f *Framework) GetNodeHint(ctx context.Context, pod *v1.Pod, signature PodSignature, state *CycleState,
	cycleCount int64) string {
	return f.batch.GetNodeHint(ctx, pod, signature, state, cycleCount)
}

// GetNodeHint returns the node the pod should try first, or "" if the
// stored ranking cannot be used for it (the rules in the file's comment).
// It runs after PreFilter, with the cycle's state; cycleCount is the
// queue's count of pops, this pod's included.
func (b *OpportunisticBatch) GetNodeHint(ctx context.Context, pod *v1.Pod, signature PodSignature,
	state *CycleState, cycleCount int64) string {
	logger := klog.FromContext(ctx)
	start := time.Now()
	hint := b.nodeHint(ctx, pod, signature, state, cycleCount)
	profile := b.fw.profileName
	if hint == "" {
		b.fw.metrics.BatchAttempt(profile, metrics.BatchAttemptNoHint)
		b.fw.metrics.NodeHint("no_hint", profile, time.Since(start))
		logger.V(4).Info("OpportunisticBatch no node hint available for pod", "profile", profile,
			"pod", klog.KObj(pod), "cycleCount", cycleCount)
		return ""
	}
	b.fw.metrics.NodeHint("hint", profile, time.Since(start))
	logger.V(3).Info("OpportunisticBatch provided node hint", "profile", profile, "pod", klog.KObj(pod),
		"cycleCount", cycleCount, "hint", hint, "remainingNodes", b.state.sortedNodes.Len())
	return hint
}

// nodeHint applies the rules and pops the hint.
func (b *OpportunisticBatch) nodeHint(ctx context.Context, pod *v1.Pod, signature PodSignature,
	state *CycleState, cycleCount int64) string {
	if !b.compatible(ctx, pod, signature, cycleCount) {
		return ""
	}
	if !b.refreshLastChosenNode(ctx, pod, state, cycleCount) {
		return ""
	}
	return b.state.sortedNodes.Pop().Name
}

// compatible checks rules 1–5.
func (b *OpportunisticBatch) compatible(ctx context.Context, pod *v1.Pod, signature PodSignature, cycleCount int64) bool {
	if b.state == nil || b.state.sortedNodes.Len() == 0 {
		return false // rule 1: nothing stored, nothing to count
	}
	var reason string
	switch {
	case cycleCount != b.lastCycle.cycleCount+1 &&
		!(b.fw.gates.GenericWorkload && cycleCount == b.lastCycle.cycleCount):
		reason = metrics.BatchFlushPodSkipped // rule 2
	case pod.Status.NominatedNodeName != "":
		reason = metrics.BatchFlushPodNominated // rule 3
	case signature == nil || !bytes.Equal(signature, b.state.signature):
		reason = metrics.BatchFlushPodIncompatible // rule 4
	case b.fw.clock.Now().After(b.state.creationTime.Add(maxBatchAge)):
		reason = metrics.BatchFlushExpired // rule 5
	default:
		return true
	}
	b.unusable(ctx, cycleCount, reason)
	return false
}

// refreshLastChosenNode is rule 6: the node the last cycle chose is filtered
// again for this pod, and if it still fits, rescored and put back among the
// candidates. It reports whether the ranking can give a hint.
func (b *OpportunisticBatch) refreshLastChosenNode(ctx context.Context, pod *v1.Pod, state *CycleState,
	cycleCount int64) bool {
	last, err := b.fw.snapshot.NodeInfos().Get(b.lastCycle.chosenNode)
	if err != nil || last == nil {
		b.unusable(ctx, cycleCount, metrics.BatchFlushNodeMissing)
		return false
	}
	sts := b.fw.RunFilterPlugins(ctx, state, pod, last)
	switch {
	case sts.IsSuccess():
		return b.rescore(ctx, pod, state, cycleCount, last)
	case sts.IsRejected():
		return true // full: the next node of the ranking is the hint
	default:
		b.unusable(ctx, cycleCount, metrics.BatchFlushFilterError)
		return false
	}
}

// rescore scores the last chosen node again and ranks it among the stored
// nodes. PreScore sees all the candidates, the last node included, on a
// clone of the cycle's state (what it writes is for this ranking only);
// Score runs on the last node alone; NormalizeScore and the weights are
// applied again over every candidate, from the raw scores each keeps.
func (b *OpportunisticBatch) rescore(ctx context.Context, pod *v1.Pod, state *CycleState, cycleCount int64,
	last *NodeInfo) bool {
	start := time.Now()
	defer func() { b.fw.metrics.BatchRescore(b.fw.profileName, time.Since(start)) }()
	cached := b.state.sortedNodes.UnorderedList()
	nodes := make([]*NodeInfo, 0, len(cached)+1)
	for _, ns := range cached {
		ni, err := b.fw.snapshot.NodeInfos().Get(ns.Name)
		if err != nil || ni == nil {
			b.unusable(ctx, cycleCount, metrics.BatchFlushNodeMissing)
			return false
		}
		nodes = append(nodes, ni)
	}
	nodes = append(nodes, last)
	rescoreState := state.Clone()
	if sts := b.fw.RunPreScorePlugins(ctx, rescoreState, pod, nodes); !sts.IsSuccess() {
		b.unusable(ctx, cycleCount, metrics.BatchFlushPreScoreError)
		return false
	}
	fresh, sts := b.fw.RunRawScorePlugins(ctx, rescoreState, pod, last)
	if !sts.IsSuccess() {
		b.unusable(ctx, cycleCount, metrics.BatchFlushRescoreError)
		return false
	}
	scores := append(cached, NodePluginScores{Name: last.Node().Name, Scores: fresh})
	if sts := b.fw.NormalizeScores(ctx, rescoreState, pod, scores); !sts.IsSuccess() {
		b.unusable(ctx, cycleCount, metrics.BatchFlushNormalizeError)
		return false
	}
	b.state.sortedNodes = NewSortedScoredNodes(scores)
	return true
}

// StoreScheduleResults tells OpportunisticBatching what a cycle chose
// (OpportunisticBatch.StoreScheduleResults, below).
func (f *Framework) StoreScheduleResults(ctx context.Context, signature PodSignature, hintedNode, chosenNode string,
	otherNodes *SortedScoredNodes, cycleCount int64) {
	f.batch.StoreScheduleResults(ctx, signature, hintedNode, chosenNode, otherNodes, cycleCount)
}

// StoreScheduleResults is told what a cycle that found a node decided:
// hintedNode is the hint it was given ("" if none), chosenNode the node it
// chose, otherNodes the ranking of the nodes it did not choose (nil when it
// ranked none: a hint used, or a single feasible node).
func (b *OpportunisticBatch) StoreScheduleResults(ctx context.Context, signature PodSignature, hintedNode,
	chosenNode string, otherNodes *SortedScoredNodes, cycleCount int64) {
	logger := klog.FromContext(ctx)
	start := time.Now()
	profile := b.fw.profileName
	defer func() { b.fw.metrics.ScheduleResultsStored(profile, time.Since(start)) }()
	b.lastCycle = batchCycle{cycleCount: cycleCount, chosenNode: chosenNode}

	if hintedNode == chosenNode {
		// The hint was used: the ranking it came from stays, one shorter.
		b.fw.metrics.BatchAttempt(profile, metrics.BatchAttemptHintUsed)
		return
	}
	if hintedNode != "" {
		b.fw.metrics.BatchAttempt(profile, metrics.BatchAttemptHintNotUsed)
		logger.V(4).Info("OpportunisticBatch hint not used", "profile", profile, "cycleCount", cycleCount,
			"hint", hintedNode, "chosen", chosenNode)
	}
	switch {
	case otherNodes.Len() == 0:
		b.unusable(ctx, cycleCount, metrics.BatchFlushEmptyList)
		b.state = nil
	case signature == nil:
		b.unusable(ctx, cycleCount, metrics.BatchFlushPodNotBatchable)
		b.state = nil
	default:
		b.state = &batchState{signature: signature, sortedNodes: otherNodes, creationTime: b.fw.clock.Now()}
		logger.V(4).Info("OpportunisticBatch set batch information", "profile", profile,
			"nodes", otherNodes.Len(), "cycleCount", cycleCount)
	}
}

// unusable counts and logs why the stored ranking cannot serve (reason).
func (b *OpportunisticBatch) unusable(ctx context.Context, cycleCount int64, reason string) {
	b.fw.metrics.BatchFlushed(b.fw.profileName, reason)
	klog.FromContext(ctx).V(4).Info("OpportunisticBatch found unusable state", "profile", b.fw.profileName,
		"cycleCount", cycleCount, "reason", reason)
}
