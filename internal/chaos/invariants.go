// This file holds what a chaos run checks: the invariants, read from the
// apiserver's state and from the run's watch of bindings, and the run's own
// simple fit check, which says which pending pods the scheduler must bind.

package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/podstatus"
	"github.com/minisched/minisched/queue"
)

// amount is what the invariants count on a node: cpu, memory and pods.
type amount struct {
	milliCPU, memory, pods int64
}

func (a amount) plus(b amount) amount {
	return amount{a.milliCPU + b.milliCPU, a.memory + b.memory, a.pods + b.pods}
}

func (a amount) minus(b amount) amount {
	return amount{a.milliCPU - b.milliCPU, a.memory - b.memory, a.pods - b.pods}
}

// within reports whether a fits in b.
func (a amount) within(b amount) bool {
	return a.milliCPU <= b.milliCPU && a.memory <= b.memory && a.pods <= b.pods
}

func (a amount) String() string {
	return fmt.Sprintf("cpu=%dm memory=%dMi pods=%d", a.milliCPU, a.memory>>20, a.pods)
}

// requestsOf is what a pod takes: its effective requests, computed the
// way kubelet admits pods, and one pod.
func requestsOf(p *v1.Pod) amount {
	rl := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	return amount{milliCPU: rl.Cpu().MilliValue(), memory: rl.Memory().Value(), pods: 1}
}

func allocatableOf(n *v1.Node) amount {
	a := n.Status.Allocatable
	return amount{milliCPU: a.Cpu().MilliValue(), memory: a.Memory().Value(), pods: a.Pods().Value()}
}

func priorityOf(p *v1.Pod) int32 { return ptr.Deref(p.Spec.Priority, 0) }

// cluster is the apiserver's state as the invariants read it.
type cluster struct {
	nodes map[string]*v1.Node
	// bound holds, per node name, the pods bound to it, Terminating ones
	// included: with no kubelet to finish them, they hold their resources
	// until someone deletes them with no grace period.
	bound map[string][]*v1.Pod
	// pending are the pods not bound and not being deleted.
	pending []*v1.Pod
	// podGroups are the pod groups, by name.
	podGroups map[string]*schedulingv1beta1.PodGroup
	// storage and devices are the claims, volumes, slices and class.
	storage *storage
	devices *devices
}

// podsByUID returns every pod of c, bound or pending, by UID.
func (c *cluster) podsByUID() map[types.UID]*v1.Pod {
	out := map[types.UID]*v1.Pod{}
	for _, pods := range c.bound {
		for _, p := range pods {
			out[p.UID] = p
		}
	}
	for _, p := range c.pending {
		out[p.UID] = p
	}
	return out
}

func (r *Run) readCluster(ctx context.Context) (*cluster, error) {
	nodes, err := r.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	pods, err := r.client.CoreV1().Pods(r.cfg.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	groups, err := r.client.SchedulingV1beta1().PodGroups(r.cfg.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pod groups: %w", err)
	}
	c := &cluster{nodes: map[string]*v1.Node{}, bound: map[string][]*v1.Pod{},
		podGroups: map[string]*schedulingv1beta1.PodGroup{}}
	for i := range groups.Items {
		c.podGroups[groups.Items[i].Name] = &groups.Items[i]
	}
	if c.storage, err = r.readStorage(ctx); err != nil {
		return nil, err
	}
	if c.devices, err = r.readDevices(ctx); err != nil {
		return nil, err
	}
	for i := range nodes.Items {
		c.nodes[nodes.Items[i].Name] = &nodes.Items[i]
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		switch {
		case p.Spec.NodeName != "":
			c.bound[p.Spec.NodeName] = append(c.bound[p.Spec.NodeName], p)
		case p.DeletionTimestamp == nil:
			c.pending = append(c.pending, p)
		}
	}
	return c, nil
}

// nodeNames lists the nodes, sorted.
func (c *cluster) nodeNames() []string {
	names := make([]string, 0, len(c.nodes))
	for name := range c.nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// nodeOf returns the node the pod with uid is bound to, or "".
func (c *cluster) nodeOf(uid types.UID) string {
	for node, pods := range c.bound {
		for _, p := range pods {
			if p.UID == uid {
				return node
			}
		}
	}
	return ""
}

// used sums what the pods bound to node take, and those of them with a
// priority below below (all of them with below nil).
func (c *cluster) used(node string, below *int32) amount {
	var sum amount
	for _, p := range c.bound[node] {
		if below == nil || priorityOf(p) < *below {
			sum = sum.plus(requestsOf(p))
		}
	}
	return sum
}

// fits is the run's own fit check, conservative and only as rich as the
// operations need: the node is not cordoned, every NoSchedule or NoExecute
// taint is tolerated, the node selector matches, the pod's claims can be
// had there (volumesFit, devicesFit), and the pod's requests fit
// next to the pods bound there and the pending pods of at least its
// priority nominated there. It returns why not when the pod does not fit.
func (c *cluster) fits(p *v1.Pod, node string) (bool, string) {
	if ok, why := c.fitsBeforeDevices(p, node); !ok {
		return false, why
	}
	if len(p.Spec.ResourceClaims) > 0 {
		if ok, why := c.devices.devicesFit(p, node); !ok {
			return false, why
		}
	}
	return true, ""
}

// fitsBeforeDevices is fits without the pod's claims: whether p passes, on
// node, what kube-scheduler's filters before DynamicResources check
// (taints, cordon, selector, volumes, room), so that DynamicResources'
// Filter is asked about the node.
func (c *cluster) fitsBeforeDevices(p *v1.Pod, node string) (bool, string) {
	if _, ok := c.nodes[node]; !ok {
		return false, "no node " + node
	}
	if ok, why := c.admits(p, node); !ok {
		return false, why
	}
	if ok, why := c.volumesFit(p, node); !ok {
		return false, why
	}
	taken := c.used(node, nil)
	for _, q := range c.pending {
		if q.UID != p.UID && q.Status.NominatedNodeName == node && priorityOf(q) >= priorityOf(p) {
			taken = taken.plus(requestsOf(q))
		}
	}
	if free := allocatableOf(c.nodes[node]).minus(taken); !requestsOf(p).within(free) {
		return false, fmt.Sprintf("needs %s, %s free", requestsOf(p), free)
	}
	return true, ""
}

// admits is the part of fits that does not count resources.
func (c *cluster) admits(p *v1.Pod, node string) (bool, string) {
	n := c.nodes[node]
	if n.Spec.Unschedulable {
		return false, "cordoned"
	}
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if t.Effect == v1.TaintEffectPreferNoSchedule {
			continue
		}
		tolerated := slices.ContainsFunc(p.Spec.Tolerations, func(tol v1.Toleration) bool {
			return tol.ToleratesTaint(klog.Background(), t, false)
		})
		if !tolerated {
			return false, "taint " + t.Key
		}
	}
	for k, v := range p.Spec.NodeSelector {
		if n.Labels[k] != v {
			return false, "selector " + k + "=" + v
		}
	}
	return true, ""
}

// pendingThatFit lists the pending pods that fit on some node, each with
// that node and what the scheduler last said about the pod. Members of pod
// groups are left out: whether a group fits is more than whether each
// member does (checkGangs checks what is bound of them).
func (c *cluster) pendingThatFit() []string {
	var out []string
	for _, p := range c.pending {
		if groupOf(p) != "" {
			continue
		}
		for _, node := range c.nodeNames() {
			if ok, _ := c.fits(p, node); ok {
				out = append(out, fmt.Sprintf("%s fits on %s (%s)", p.Name, node, scheduledCondition(p)))
				break
			}
		}
	}
	return out
}

// pendingWithoutReason lists the pending pods that lack PodScheduled=False
// with a reason. A member of a pod group that does not exist, or of a gang
// with fewer members than its minCount, is left out: kube-scheduler keeps
// it out of the queue (GangScheduling's PreEnqueue) and says nothing on
// the pod.
func (c *cluster) pendingWithoutReason() []*v1.Pod {
	members := map[string]int{}
	for _, pods := range c.bound {
		for _, p := range pods {
			if g := groupOf(p); g != "" && p.DeletionTimestamp == nil {
				members[g]++
			}
		}
	}
	for _, p := range c.pending {
		if g := groupOf(p); g != "" {
			members[g]++
		}
	}
	var out []*v1.Pod
	for _, p := range c.pending {
		if g := groupOf(p); g != "" {
			pg, ok := c.podGroups[g]
			if !ok || (pg.Spec.SchedulingPolicy.Gang != nil && members[g] < int(pg.Spec.SchedulingPolicy.Gang.MinCount)) {
				continue
			}
		}
		cond := podScheduled(p)
		if cond == nil || cond.Status != v1.ConditionFalse || cond.Reason == "" {
			out = append(out, p)
		}
	}
	return out
}

// describePods names each pod with what it says of its scheduling.
func describePods(pods []*v1.Pod) string {
	parts := make([]string, len(pods))
	for i, p := range pods {
		parts[i] = fmt.Sprintf("%s (%s)", p.Name, scheduledCondition(p))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func podScheduled(p *v1.Pod) *v1.PodCondition { return podstatus.Condition(&p.Status, v1.PodScheduled) }

// scheduledCondition describes the pod's PodScheduled condition.
func scheduledCondition(p *v1.Pod) string {
	cond := podScheduled(p)
	if cond == nil {
		return "no PodScheduled condition"
	}
	return fmt.Sprintf("PodScheduled=%s %s: %s", cond.Status, cond.Reason, cond.Message)
}

// roomForForeignPod reports whether another client may bind pod to node
// without making our scheduler overcommit it: the node must have room for
// pod and for every pending pod that our scheduler might be placing there
// at this moment. Without this margin, a pod our scheduler assumed on the
// node a moment before, and binds a moment after, would overcommit the
// node through no fault of its own.
//
// A pending pod might be placed on node if its requests fit in what is free
// there plus what pods of lower priority take (it might preempt them), and
// either the node admits it (selector, taints, cordon) or it is in trying:
// the scheduler was trying it (in flight or assumed) before c was read, with
// a snapshot that may predate the node's last change. A pod the scheduler
// pops later sees the node as it is, since every node operation waits for
// the scheduler's cache to take its change in (see trying).
func (r *Run) roomForForeignPod(c *cluster, node string, pod *v1.Pod, trying map[types.UID]bool) bool {
	free := allocatableOf(c.nodes[node]).minus(c.used(node, nil))
	need := requestsOf(pod)
	for _, q := range c.pending {
		if q.UID == pod.UID {
			continue
		}
		prio := priorityOf(q)
		if !requestsOf(q).within(free.plus(c.used(node, &prio))) {
			continue
		}
		if admitted, _ := c.admits(q, node); admitted || trying[q.UID] {
			need = need.plus(requestsOf(q))
		}
	}
	return need.within(free)
}

// trying returns the pods among c's pending pods that the scheduler is
// trying at this moment: popped and not yet done, or assumed and not yet
// confirmed by its informer.
func (r *Run) trying(c *cluster) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, q := range c.pending {
		if r.isTrying(q) {
			out[q.UID] = true
		}
	}
	return out
}

// isTrying reports whether the scheduler is trying p: popped and not yet
// done, or assumed and not yet confirmed by its informer.
func (r *Run) isTrying(p *v1.Pod) bool {
	assumed, _ := r.current().Cache.IsAssumedPod(p)
	return assumed || r.current().Queue.Locate(p.UID) == queue.InFlight
}

// preempted reports whether the scheduler marked p as a victim of
// preemption.
func preempted(p *v1.Pod) bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c v1.PodCondition) bool {
		return c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonPreemptionByScheduler
	})
}

// boundNotScheduled lists the bound pods whose PodScheduled condition is
// not True. The binding sets it True; a scheduler that tried the pod while
// another client bound it, and failed to assume it (the informer had
// already brought the pod to its cache), reports the failure with a status
// patch computed from its stale copy, which turns it False again.
// kube-scheduler v1.37's handleSchedulingFailure patches a pod it finds
// assigned in the same way.
func (c *cluster) boundNotScheduled() []string {
	var out []string
	for _, pods := range c.bound {
		for _, p := range pods {
			if cond := podScheduled(p); cond == nil || cond.Status != v1.ConditionTrue {
				out = append(out, fmt.Sprintf("%s on %s (%s)", p.Name, p.Spec.NodeName, scheduledCondition(p)))
			}
		}
	}
	slices.Sort(out)
	return out
}

// summary counts nodes and pods, for the log.
func (c *cluster) summary() string {
	bound, terminating, orphans := 0, 0, 0
	for node, pods := range c.bound {
		bound += len(pods)
		for _, p := range pods {
			if p.DeletionTimestamp != nil {
				terminating++
			}
		}
		if _, ok := c.nodes[node]; !ok {
			orphans += len(pods)
		}
	}
	allocated, reserved, boundClaims, members := 0, 0, 0, 0
	for _, claim := range c.devices.claims {
		if claim.Status.Allocation != nil {
			allocated++
		}
		reserved += len(claim.Status.ReservedFor)
	}
	for _, pvc := range c.storage.claims {
		if pvc.Status.Phase == v1.ClaimBound {
			boundClaims++
		}
	}
	for _, pods := range c.bound {
		for _, p := range pods {
			if groupOf(p) != "" {
				members++
			}
		}
	}
	return fmt.Sprintf("%d nodes, %d pods bound (%d Terminating, %d on deleted nodes, %d members of %d pod groups), "+
		"%d pending; %d of %d ResourceClaims allocated, %d reservations; %d of %d PVCs bound",
		len(c.nodes), bound, terminating, orphans, members, len(c.podGroups), len(c.pending),
		allocated, len(c.devices.claims), reserved, boundClaims, len(c.storage.claims))
}

// CheckInvariants checks, from the apiserver's state and the run's watch,
// what must hold at every moment:
//   - no node holds pods whose requests (cpu, memory, pod count) exceed its
//     allocatable;
//   - the only Terminating pods are victims of preemption;
//   - no pod was bound twice, nor to a node that never existed or that was
//     already deleted (see nodeDeletion);
//   - every pod the scheduler reported Scheduled is bound where it said;
//   - no device is allocated to two claims, no volume bound to two claims,
//     and no ReadWriteOncePod claim serves two bound pods (checkDevices,
//     checkVolumes).
func (r *Run) CheckInvariants(ctx context.Context) error {
	c, err := r.readCluster(ctx)
	if err != nil {
		return err
	}
	bindings, violations := r.watch.snapshot()

	for _, node := range c.nodeNames() {
		used, alloc := c.used(node, nil), allocatableOf(c.nodes[node])
		if !used.within(alloc) {
			var names []string
			for _, p := range c.bound[node] {
				names = append(names, fmt.Sprintf("%s(%s)", p.Name, requestsOf(p)))
			}
			violations = append(violations, fmt.Sprintf("node %s holds %s, more than its allocatable %s: %s",
				node, used, alloc, strings.Join(names, ", ")))
		}
	}

	// The run deletes pods with no grace period, and pods that are not
	// bound go at once: a Terminating pod is a victim of preemption whose
	// grace period has not run out (with no kubelet, it never does).
	for _, pods := range c.bound {
		for _, p := range pods {
			if p.DeletionTimestamp != nil && !preempted(p) {
				violations = append(violations, fmt.Sprintf("pod %s is Terminating, but not preempted", p.Name))
			}
		}
	}

	for uid, b := range bindings {
		if !r.createdNodes[b.node] {
			violations = append(violations, fmt.Sprintf("pod %s is bound to %s, a node that never existed", b.pod, b.node))
			continue
		}
		d, deleted := r.deletions[b.node]
		switch {
		case !deleted || b.rv <= d.before:
		case b.rv > d.settled:
			violations = append(violations, fmt.Sprintf(
				"pod %s was bound to %s at resource version %d, after the node's deletion had settled at %d",
				b.pod, b.node, b.rv, d.settled))
		case !r.racesReported[uid]:
			r.racesReported[uid] = true
			r.cfg.Logf("pod %s was bound to %s while the node's deletion reached the scheduler (a binding in flight): "+
				"resource version %d, deletion between %d and %d", b.pod, b.node, b.rv, d.before, d.settled)
		}
	}

	for uid, node := range r.scheduledReports.snapshot() {
		if b, ok := bindings[uid]; ok && b.node != node {
			violations = append(violations, fmt.Sprintf("the scheduler reported pod %s Scheduled on %s, but it is bound to %s",
				b.pod, node, b.node))
		}
	}

	violations = append(violations, r.checkVolumes(c, false)...)
	violations = append(violations, r.checkDevices(c, false)...)

	if len(violations) > 0 {
		slices.Sort(violations)
		return errors.New("invariants broken:\n\t" + strings.Join(violations, "\n\t"))
	}
	return nil
}
