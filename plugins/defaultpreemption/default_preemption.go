package defaultpreemption

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "DefaultPreemption"

// Messages this plugin reports, as kube-scheduler words them. PostFilter
// prefixes each with "preemption: ".
const (
	msgPreemptNever        = "not eligible due to preemptionPolicy=Never."
	msgTerminatingOnNode   = "not eligible due to a terminating pod on the nominated node."
	msgNoVictims           = "No preemption victims found for incoming pod"
	msgNotHelpful          = "Preemption is not helpful for scheduling"
	msgWaitingForVictims   = "waiting for the preemption for this pod to be finished"
	msgFoundPlacementFmt   = "found a potential placement for pod on node %v, preempting %d victims"
	msgNoCandidateSelected = "no candidate node for preemption"
	msgWaitingForPodGroup  = "waiting for the preemption for this pod group to be finished"
)

// DefaultPreemption makes room for a pod that fits nowhere by evicting pods
// of lower priority.
type DefaultPreemption struct {
	fh   framework.Handle
	args configv1.DefaultPreemptionArgs
	// podLister gives the preemptor's latest object; pdbLister the budgets.
	podLister corelisters.PodLister
	pdbLister policylisters.PodDisruptionBudgetLister
	// executor evicts victims in the background and knows which preemptors
	// are still waiting for theirs.
	executor *executor
	// offset picks where the dry run starts among the candidate nodes
	// (random; tests fix it).
	offset func(n int32) int32
	// podGroups is what the scheduler knows of pod groups, live (the
	// cache), for PreEnqueue; nil without GenericWorkload, which is how
	// the plugin knows the gate is off: victims are then single pods of
	// their own priority (victims.go).
	podGroups framework.PodGroupManager
	// moreImportant orders victim units for reprieve in a pod's
	// preemption: moreImportantVictim with GenericWorkload, else
	// moreImportantLonePod, the order minisched always had.
	moreImportant func(a, b *victim) bool
}

var (
	_ framework.PostFilterPlugin         = &DefaultPreemption{}
	_ framework.PodGroupPostFilterPlugin = &DefaultPreemption{}
	_ framework.PreEnqueuePlugin         = &DefaultPreemption{}
	_ framework.EnqueueExtensions        = &DefaultPreemption{}
)

// New returns the plugin with its args (defaults: 10% and 100 candidates).
// It asks the informer factory for pods and PodDisruptionBudgets, so both
// informers run (the scheduler needs list and watch on
// poddisruptionbudgets). With GenericWorkload (the handle has a
// PodGroupManager) it also preempts for whole pod groups
// (podgroup_preemption.go).
func New(_ context.Context, raw *runtime.RawExtension, fh framework.Handle) (framework.Plugin, error) {
	args, err := DecodeArgs(raw)
	if err != nil {
		return nil, err
	}
	pl := &DefaultPreemption{fh: fh, args: *args, offset: randomOffset, podGroups: fh.PodGroupManager(),
		moreImportant: moreImportantLonePod}
	if pl.podGroups != nil {
		pl.moreImportant = moreImportantVictim
	}
	if f := fh.SharedInformerFactory(); f != nil {
		pl.podLister = f.Core().V1().Pods().Lister()
		pl.pdbLister = f.Policy().V1().PodDisruptionBudgets().Lister()
	}
	pl.executor = newExecutor(fh, pl.podLister)
	return pl, nil
}

// Name returns Name.
func (pl *DefaultPreemption) Name() string { return Name }

// PostFilter tries to make room for pod by preemption. On success the pod
// is nominated to the chosen node and its victims are being evicted; the
// pod itself stays unschedulable until they are gone. Every message is
// prefixed "preemption: ", which is how it appears in FailedScheduling.
func (pl *DefaultPreemption) PostFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	m *framework.NodeToStatus) (*framework.PostFilterResult, *framework.Status) {
	pl.fh.Metrics().PreemptionAttempt()
	result, status := pl.preempt(ctx, state, pod, m)
	if msg := status.Message(); msg != "" {
		return result, framework.NewStatus(status.Code(), "preemption: "+msg)
	}
	return result, status
}

// preempt is kube-scheduler's Evaluator.Preempt:
//
//  1. Take the preemptor's latest object; check it may preempt at all.
//  2. Find the candidates: nodes rejected as Unschedulable where removing
//     lower-priority pods makes it fit (the dry run, candidates.go).
//  3. Let the preempting extenders trim the candidates (extenders.go).
//  4. Pick one node by the ordered criteria.
//  5. Evict its victims in the background and nominate the pod there.
//
// With no candidate the result clears any earlier nomination, and the
// message says why per node.
func (pl *DefaultPreemption) preempt(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	m *framework.NodeToStatus) (*framework.PostFilterResult, *framework.Status) {
	logger := klog.FromContext(ctx)
	// 1. The latest object: its nominated node may have changed.
	if pl.podLister != nil {
		latest, err := pl.podLister.Pods(pod.Namespace).Get(pod.Name)
		if err != nil {
			logger.Error(err, "Could not get the updated preemptor pod object")
			return nil, framework.AsStatus(err)
		}
		pod = latest
	}
	if ok, msg := pl.podEligibleToPreemptOthers(pod, m.Get(pod.Status.NominatedNodeName)); !ok {
		logger.V(5).Info("Pod is not eligible for preemption", "reason", msg)
		return nil, framework.NewStatus(framework.Unschedulable, msg)
	}

	// 2. The candidates.
	allNodes, err := pl.fh.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	candidates, nodeStatuses, err := pl.findCandidates(ctx, state, allNodes, pod, m)
	if err != nil && len(candidates) == 0 {
		return nil, framework.AsStatus(err)
	}
	if len(candidates) == 0 {
		logger.V(2).Info("No preemption candidate is found; preemption is not helpful for scheduling")
		fitErr := &framework.FitError{Pod: pod, NumAllNodes: len(allNodes), Diagnosis: framework.Diagnosis{
			NodeToStatus: nodeStatuses,
		}}
		fitErr.Diagnosis.NodeToStatus.SetAbsentNodesStatus(
			framework.NewStatus(framework.UnschedulableAndUnresolvable, msgNotHelpful))
		return framework.NewPostFilterResultWithNominatedNode(""),
			framework.NewStatus(framework.Unschedulable, fitErr.Error())
	}

	// 3. The extenders' say: each preempting extender may trim the candidates.
	if candidates, err = pl.callExtenders(logger, pod, candidates); err != nil {
		return nil, framework.AsStatus(err)
	}

	// 4. The best candidate.
	best := pickOneNodeForPreemption(logger, candidates)
	if best == nil {
		return nil, framework.NewStatus(framework.Unschedulable, msgNoCandidateSelected)
	}
	logger.V(2).Info("The target node for the preemption is determined", "node", best.name,
		"victims", klog.KObjSlice(best.victims))

	// 5. Evict, in the background; nominate now.
	pl.fh.Metrics().PreemptionVictims(len(best.victims))
	pl.executor.preemptAsync(ctx, best, podPreemptor(pod))
	result := framework.NewPostFilterResultWithNominatedNode(best.name)
	result.Victims = best.victims
	return result, framework.NewStatus(framework.Success, fmt.Sprintf(msgFoundPlacementFmt, best.name, len(best.victims)))
}

// podEligibleToPreemptOthers says whether pod may preempt, and why not:
//   - its preemptionPolicy is Never;
//   - or it already preempted on its nominated node and a lower-priority
//     victim there (judged by victimPriority) is still terminating
//     (evicting more now would be premature). If Filter found the
//     nominated node hopeless (UnschedulableAndUnresolvable), the pod may
//     preempt elsewhere.
func (pl *DefaultPreemption) podEligibleToPreemptOthers(pod *v1.Pod, nominatedNodeStatus *framework.Status) (bool,
	string) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return false, msgPreemptNever
	}
	nominated := pod.Status.NominatedNodeName
	if nominated == "" {
		return true, ""
	}
	if nominatedNodeStatus.Code() == framework.UnschedulableAndUnresolvable {
		return true, ""
	}
	nodeInfo, err := pl.fh.SnapshotSharedLister().NodeInfos().Get(nominated)
	if err != nil {
		return true, ""
	}
	priority := corev1helpers.PodPriority(pod)
	for _, pi := range nodeInfo.Pods {
		if pl.victimPriority(pi.Pod) < priority && terminatingByPreemption(pi.Pod) {
			return false, msgTerminatingOnNode
		}
	}
	return true, ""
}

// terminatingByPreemption reports a pod being deleted because the scheduler
// preempted it: DisruptionTarget=True with reason PreemptionByScheduler.
func terminatingByPreemption(p *v1.Pod) bool {
	if p.DeletionTimestamp == nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget {
			return c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonPreemptionByScheduler
		}
	}
	return false
}

// PreEnqueue holds back a preemptor whose victims are still being evicted:
// trying it now would only find the same nodes full. With GenericWorkload,
// a member of a pod group is held back while its group's preemption runs
// (the whole group, then: one gated member gates the group). A member
// whose PodGroup the scheduler has not seen is not this plugin's to hold
// back.
func (pl *DefaultPreemption) PreEnqueue(_ context.Context, pod *v1.Pod) *framework.Status {
	if name, ok := framework.PodGroupName(pod); ok && pl.podGroups != nil {
		pg, err := pl.podGroups.PodGroups().Get(pod.Namespace, name)
		if err == nil && pl.executor.isRunning(pg.UID) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, msgWaitingForPodGroup)
		}
		return nil
	}
	if pl.executor.isRunning(pod.UID) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, msgWaitingForVictims)
	}
	return nil
}

// EventsToRegister lists an assigned pod's deletion, so that a preemptor
// this plugin gates is looked at again when a victim goes. The hint always
// says QueueSkip: whether the pod now fits is for the plugins that rejected
// it to say (their own events fire for the same deletion), and the gate
// lifts through Activate or the next such event.
func (pl *DefaultPreemption) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{{
		Event: framework.ClusterEvent{Resource: framework.Pod, ActionType: framework.Delete},
		QueueingHintFn: func(klog.Logger, *v1.Pod, interface{}, interface{}) (framework.QueueingHint, error) {
			return framework.QueueSkip, nil
		},
	}}, nil
}
