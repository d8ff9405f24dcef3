// This file evicts the victims of a preemption, in the background as
// kube-scheduler v1.37 does (SchedulerAsyncPreemption): the scheduling cycle
// nominates the preemptor and moves on; a goroutine does the API calls.
// The preemptor is a pod, or a pod group's members (podgroup_preemption.go):
// the same eviction, worded for its kind, keyed by the PodGroup's UID.

package defaultpreemption

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/podstatus"
)

// preemptor is who a preemption makes room for: one pod, or the members
// of a pod group. It says how the eviction is worded and whom to wake.
type preemptor struct {
	// uid keys the preemption in the executor: the pod's UID, or the
	// PodGroup's.
	uid types.UID
	// kind is kindPod or kindPodGroup, as the victims' event and condition
	// name it.
	kind string
	// object is the pod or the PodGroup, the event's related object.
	object runtime.Object
	// schedulerName signs the victims' DisruptionTarget condition: the
	// pod's, or the first member's (all members share one).
	schedulerName string
	// priority is the pod's or the PodGroup's: nominations of lower
	// priority on the node lose their room.
	priority int32
	// pods are activated, by name, when no victim's deletion event is to
	// wake them.
	pods map[string]*v1.Pod
}

// podPreemptor is a pod preempting for itself.
func podPreemptor(pod *v1.Pod) *preemptor {
	return &preemptor{uid: pod.UID, kind: kindPod, object: pod, schedulerName: pod.Spec.SchedulerName,
		priority: corev1helpers.PodPriority(pod), pods: map[string]*v1.Pod{pod.Name: pod}}
}

// podGroupPreemptor is a pod group preempting for members (at least one).
func podGroupPreemptor(pg *schedulingv1beta1.PodGroup, members []*v1.Pod) *preemptor {
	p := &preemptor{uid: pg.UID, kind: kindPodGroup, object: pg, schedulerName: members[0].Spec.SchedulerName,
		priority: framework.PodGroupPriority(pg), pods: make(map[string]*v1.Pod, len(members))}
	for _, m := range members {
		p.pods[m.Name] = m
	}
	return p
}

// executor runs preemptions and remembers which preemptors still wait for
// theirs, for the PreEnqueue gate.
type executor struct {
	fh        framework.Handle
	podLister corelisters.PodLister

	mu sync.RWMutex
	// preempting holds the preemptors whose goroutine is still running.
	preempting sets.Set[types.UID]
	// lastVictim is each preemptor's last victim, once the goroutine has
	// come to it: when it is being deleted, the preemption is as good as
	// done.
	lastVictim map[types.UID]types.NamespacedName
}

func newExecutor(fh framework.Handle, podLister corelisters.PodLister) *executor {
	return &executor{
		fh:         fh,
		podLister:  podLister,
		preempting: sets.New[types.UID](),
		lastVictim: map[types.UID]types.NamespacedName{},
	}
}

// preemptAsync starts evicting c's victims for p and returns at once;
// evict does the work in a goroutine and, if it says so, p's pods are
// activated at the end. Victims already being deleted are skipped. Until
// the last victim is being deleted, PreEnqueue keeps p's pods out of
// activeQ.
func (e *executor) preemptAsync(ctx context.Context, c *candidate, p *preemptor) {
	logger := klog.FromContext(ctx)
	var victims []*v1.Pod
	for _, v := range c.victims {
		if v.DeletionTimestamp != nil {
			logger.V(2).Info("Victim Pod is already being deleted, skipping the API call for it",
				"node", c.name, "victim", klog.KObj(v))
			continue
		}
		victims = append(victims, v)
	}
	if len(victims) == 0 {
		return
	}
	e.mu.Lock()
	e.preempting.Insert(p.uid)
	e.mu.Unlock()
	logger.V(2).Info("Start the preemption asynchronously", "node", c.name, "victims", len(c.victims),
		"victimsToDelete", len(victims))
	go func() {
		// The cycle's context ends with the cycle; the evictions outlive it.
		if e.evict(klog.NewContext(context.Background(), logger), c.name, p, victims) {
			e.fh.Activate(logger, p.pods)
		}
	}()
}

// evict is the body of preemptAsync's goroutine, for a preemptor p already
// in e.preempting, and victims (at least one) not yet being deleted. It:
//
//  1. clears the nominations of lower-priority pods on the node (they would
//     otherwise hold room the preemptor is about to take);
//  2. preempts every victim but the last, in parallel, then the last one;
//     a victim waiting on Permit is rejected in memory, any other gets
//     DisruptionTarget=True and is deleted (with its grace period);
//  3. takes p out of e.preempting, and reports whether the caller must
//     activate p's pods: if something failed, or if no deletion event of
//     the last victim is to come to wake them.
//
// No event is to come when the last victim was only rejected in memory, or
// when it was already gone. kube-scheduler v1.37.1 activates on the first
// but not the second (kubernetes#141694): a pod that preempts again for a
// victim its first preemption deleted saw that victim's deletion event
// while in flight, was gated by PreEnqueue as it came back (this preemption
// had begun), and waited for the five-minute flush. minisched activates it.
func (e *executor) evict(ctx context.Context, node string, p *preemptor, victims []*v1.Pod) (activate bool) {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	failed, lastQuiet := false, false

	// 1. Lower-priority nominations on the node.
	if err := e.clearLowerPriorityNominations(ctx, p, node); err != nil {
		logger.Error(err, "Cannot clear 'NominatedNodeName' field from lower priority pods on the same target node",
			"node", node)
		failed = true
	}

	// 2. All victims but the last, in parallel; then the last.
	var errOnce sync.Once
	var firstErr error
	e.fh.Parallelizer().Until(ctx, len(victims)-1, func(i int) {
		if _, err := e.preemptPod(ctx, node, p, victims[i]); err != nil {
			errOnce.Do(func() { firstErr = err; cancel() })
		}
	})
	if firstErr != nil {
		logger.Error(firstErr, "Error occurred during async preemption")
		failed = true
	} else {
		last := victims[len(victims)-1]
		e.mu.Lock()
		e.lastVictim[p.uid] = types.NamespacedName{Namespace: last.Namespace, Name: last.Name}
		e.mu.Unlock()
		quiet, err := e.preemptPod(ctx, node, p, last)
		switch {
		case err != nil:
			logger.Error(err, "Error occurred during async preemption of the last victim")
			failed = true
		case quiet:
			lastQuiet = true
		}
	}

	// 3. The gate lifts.
	e.mu.Lock()
	e.preempting.Delete(p.uid)
	delete(e.lastVictim, p.uid)
	e.mu.Unlock()
	logger.V(2).Info("Async preemption finished", "node", node, "failed", failed)
	return failed || lastQuiet
}

// preemptPod evicts one victim and records a Preempted event on it, whose
// related object is the preemptor (the pod, or the PodGroup). A victim
// waiting on Permit is rejected in memory: it was never bound, so there is
// nothing to delete. Any other victim gets the DisruptionTarget condition,
// so its owners know why it goes, and is deleted. A victim already gone is
// not an error. It reports quiet when no deletion event of the victim is
// to follow this call: it was rejected in memory, or it was already gone
// (its deletion event is behind us).
func (e *executor) preemptPod(ctx context.Context, node string, p *preemptor, victim *v1.Pod) (quiet bool, err error) {
	logger := klog.FromContext(ctx)
	msg := fmt.Sprintf("Preempted by %s %v on node %v", p.kind, p.uid, node)
	inMemory := false
	if wp := e.fh.GetWaitingPod(victim.UID); wp != nil && wp.Preempt(Name, "preempted") {
		logger.V(2).Info("Preemptor preempted a waiting pod", "waitingPod", klog.KObj(victim), "node", node)
		inMemory = true
		msg += " (in kube-scheduler memory)."
	} else {
		cond := &v1.PodCondition{
			Type:               v1.DisruptionTarget,
			ObservedGeneration: victim.Generation,
			Status:             v1.ConditionTrue,
			Reason:             v1.PodReasonPreemptionByScheduler,
			Message:            fmt.Sprintf("%s: preempting to accommodate a higher priority %s", p.schedulerName, p.kind),
		}
		newStatus := victim.Status.DeepCopy()
		if podstatus.SetCondition(newStatus, cond) {
			if err := podstatus.Patch(ctx, e.fh.ClientSet(), victim, newStatus); err != nil {
				if apierrors.IsNotFound(err) {
					logger.V(2).Info("Victim Pod is already deleted", "victim", klog.KObj(victim), "node", node)
					return true, nil
				}
				return false, fmt.Errorf("adding DisruptionTarget to %s/%s: %w", victim.Namespace, victim.Name, err)
			}
		}
		if err := e.fh.ClientSet().CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name,
			metav1.DeleteOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				logger.V(2).Info("Victim Pod is already deleted", "victim", klog.KObj(victim), "node", node)
				return true, nil
			}
			return false, fmt.Errorf("deleting victim %s/%s: %w", victim.Namespace, victim.Name, err)
		}
		logger.V(2).Info("Preemptor Pod preempted victim Pod", "victim", klog.KObj(victim), "node", node)
	}
	if r := e.fh.EventRecorder(); r != nil {
		r.Eventf(victim, p.object, v1.EventTypeNormal, "Preempted", "Preempting", msg)
	}
	return inMemory, nil
}

// clearLowerPriorityNominations removes status.nominatedNodeName from the
// pods nominated to node with a lower priority than p. (A pod group's
// "node" is the cluster, to which no pod is nominated: as in
// kube-scheduler, its preemption clears nothing.)
func (e *executor) clearLowerPriorityNominations(ctx context.Context, p *preemptor, node string) error {
	priority := p.priority
	var errs []error
	for _, pi := range e.fh.NominatedPodsForNode(node) {
		p := pi.Pod
		if corev1helpers.PodPriority(p) >= priority || p.Status.NominatedNodeName == "" {
			continue
		}
		newStatus := p.Status.DeepCopy()
		newStatus.NominatedNodeName = ""
		if err := podstatus.Patch(ctx, e.fh.ClientSet(), p, newStatus); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("clearing nominations on %s: %v", node, errs)
	}
	return nil
}

// isRunning reports whether uid's preemption still holds it back: its
// goroutine runs, and it has not yet reached a last victim that is being
// deleted (or is gone).
func (e *executor) isRunning(uid types.UID) bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if !e.preempting.Has(uid) {
		return false
	}
	last, ok := e.lastVictim[uid]
	if !ok || e.podLister == nil {
		return true
	}
	victim, err := e.podLister.Pods(last.Namespace).Get(last.Name)
	if err != nil {
		return false
	}
	return victim.DeletionTimestamp == nil
}
