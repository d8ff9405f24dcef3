// This file holds the run's pod groups (chapter 19): operations that create
// gangs and basic groups with their members, change a gang's minCount,
// delete members and delete groups, and the invariant that no gang is left
// with fewer than minCount members bound, but where kube-scheduler would
// leave it so too.

package chaos

import (
	"context"
	"fmt"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/builders"
)

// maxGroups bounds how many pod groups a run has at once.
const maxGroups = 4

// group is a pod group of the run's bookkeeping.
type group struct {
	name string
	// gang is its policy (basic otherwise), minCount a gang's.
	gang     bool
	minCount int
	// members are the member pods the run created and did not delete.
	members []string
}

// groupOf returns the name of the pod group p belongs to, or "".
func groupOf(p *v1.Pod) string {
	if g := p.Spec.SchedulingGroup; g != nil {
		return ptr.Deref(g.PodGroupName, "")
	}
	return ""
}

// gangExcuses records, per pod group, why it may be left with fewer than
// minCount members bound: each reason is a case in which kube-scheduler
// v1.37.1 leaves a gang so, since it never unbinds a pod.
//
//   - A member that was bound is deleted (by the run, or preempted): the
//     others stay bound; nothing in the scheduler evicts them (the gang's
//     minCount is checked at Permit, pkg/scheduler/framework/plugins/
//     gangscheduling/gangscheduling.go, Permit, and only for pods being
//     scheduled).
//   - minCount is raised above the members bound under the old one (bound
//     already, or let through Permit before the scheduler saw the change;
//     see boundUnderOldMinCount): the PodGroup update only requeues pending
//     members (GangScheduling's EventsToRegister), it takes nothing back.
//   - The gang's binding cycles were cut short after some members were
//     bound: the scheduler was killed, or a member's binding failed (an
//     injected error, the apiserver restarting) once Permit had let the
//     whole gang go. Each member's binding cycle binds it alone
//     (schedule_one.go, runBindingCycle); a failed one is un-reserved and
//     tried again, and if it no longer fits, the rest stay bound.
type gangExcuses struct {
	mu      sync.Mutex
	reasons map[string]string
	// erred are the pods that had an attempt end in an error
	// (SchedulerError): a failed bind, or a failed write before it.
	erred map[string]bool
}

func (e *gangExcuses) excuse(group, reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.reasons[group]; !ok {
		e.reasons[group] = reason
	}
}

func (e *gangExcuses) reason(group string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.reasons[group]
	return r, ok
}

func (e *gangExcuses) errored(pod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.erred[pod] = true
}

func (e *gangExcuses) hasErred(pod string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.erred[pod]
}

// groupOperations are the pod-group operations.
var groupOperations = []operation{
	{name: "createGroup", weight: 5, applies: func(r *Run) bool { return len(r.groups) < maxGroups }, draw: drawCreateGroup},
	{name: "changeMinCount", weight: 2, applies: hasGang, draw: drawChangeMinCount},
	{name: "deleteMember", weight: 2, applies: hasMembers, draw: drawDeleteMember},
	{name: "deleteGroup", weight: 1, applies: func(r *Run) bool { return len(r.groups) > 0 }, draw: drawDeleteGroup},
}

func hasGang(r *Run) bool {
	return slices.ContainsFunc(r.groups, func(g *group) bool { return g.gang })
}

func hasMembers(r *Run) bool {
	return slices.ContainsFunc(r.allGroups(), func(g *group) bool { return len(g.members) > 0 })
}

// allGroups are the run's groups, those it deleted included (their members
// stay).
func (r *Run) allGroups() []*group { return slices.Concat(r.groups, r.deletedGroups) }

// drawCreateGroup draws a gang (mostly) or a basic group of two to four
// members alike, each asking for a drawn share of a node.
func drawCreateGroup(r *Run) step {
	gang := r.rng.IntN(4) != 0
	n := 2 + r.rng.IntN(3)
	minCount := 0
	if gang {
		// Mostly all of them; sometimes fewer, sometimes more than exist.
		minCount = []int{n, n, n - 1, n + 1}[r.rng.IntN(4)]
	}
	cpu := []string{"250m", "500m", "1"}[r.rng.IntN(3)]
	class := priorityClasses[r.rng.IntN(2)].Name
	return r.createGroup(gang, n, minCount, cpu, class)
}

// createGroup adds a group of n members to the bookkeeping and returns the
// step that creates it: the PodGroup, then its members.
func (r *Run) createGroup(gang bool, n, minCount int, cpu, class string) step {
	g := &group{name: fmt.Sprintf("group-%d", r.groupSeq), gang: gang, minCount: minCount}
	r.groupSeq++
	for i := range n {
		g.members = append(g.members, fmt.Sprintf("%s-m%d", g.name, i))
	}
	r.groups = append(r.groups, g)
	members := slices.Clone(g.members)
	policy := "basic"
	if g.gang {
		policy = fmt.Sprintf("gang, minCount %d", g.minCount)
	}
	return step{
		what: fmt.Sprintf("create pod group %s (%s) with %d members (cpu %s, %s)", g.name, policy, n, cpu, class),
		apply: func(ctx context.Context) (string, error) {
			pg := builders.MakePodGroup().Namespace(r.cfg.Namespace).Name(g.name).PriorityClassName(class)
			if g.gang {
				pg.Gang(int32(g.minCount))
			}
			if _, err := r.client.SchedulingV1beta1().PodGroups(r.cfg.Namespace).Create(ctx, pg.Obj(),
				metav1.CreateOptions{}); err != nil {
				return "", fmt.Errorf("creating pod group %s: %w", g.name, err)
			}
			for _, m := range members {
				p := builders.MakePod().Namespace(r.cfg.Namespace).Name(m).SchedulerName(r.cfg.SchedulerName).
					PriorityClassName(class).TerminationGracePeriod(0).PodGroup(g.name).
					Req(map[v1.ResourceName]string{v1.ResourceCPU: cpu, v1.ResourceMemory: "128Mi"}).Obj()
				created, err := r.client.CoreV1().Pods(r.cfg.Namespace).Create(ctx, p, metav1.CreateOptions{})
				if err != nil {
					return "", fmt.Errorf("creating member %s: %w", m, err)
				}
				if created.Spec.SchedulingGroup == nil {
					return "", fmt.Errorf("member %s lost spec.schedulingGroup: does the apiserver run with GenericWorkload?", m)
				}
			}
			return "created", nil
		},
	}
}

// drawGroup draws one of the groups for which ok holds, among those given.
func (r *Run) drawGroup(among []*group, ok func(*group) bool) *group {
	var gs []*group
	for _, g := range among {
		if ok(g) {
			gs = append(gs, g)
		}
	}
	return gs[r.rng.IntN(len(gs))]
}

func drawChangeMinCount(r *Run) step {
	g := r.drawGroup(r.groups, func(g *group) bool { return g.gang })
	old := g.minCount
	g.minCount = 1 + r.rng.IntN(len(g.members)+1)
	minCount := g.minCount
	return step{
		what: fmt.Sprintf("change pod group %s's minCount from %d to %d", g.name, old, minCount),
		apply: func(ctx context.Context) (string, error) {
			patch := fmt.Sprintf(`{"spec":{"schedulingPolicy":{"gang":{"minCount":%d}}}}`, minCount)
			patched, err := r.client.SchedulingV1beta1().PodGroups(r.cfg.Namespace).Patch(ctx, g.name,
				types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return "the group is gone", nil
			case err != nil:
				return "", fmt.Errorf("patching pod group %s: %w", g.name, err)
			}
			bound, err := r.boundUnderOldMinCount(ctx, patched)
			if err != nil {
				return "", err
			}
			if bound > 0 && bound < minCount {
				r.gangs.excuse(g.name, fmt.Sprintf("minCount raised to %d with %d members bound", minCount, bound))
			}
			return fmt.Sprintf("done (%d members bound)", bound), nil
		},
	}
}

// boundUnderOldMinCount counts the members of the pod group pg bound under
// the minCount it had before pg: those bound already, and those whose Permit
// read the old one. A cycle reads the group from the scheduler's cache, so it
// waits until that cache has pg and the members being tried then are done
// with (bound, or back in the queue). Counting before the patch would miss a
// binding in flight, and the gang would look short for no reason.
func (r *Run) boundUnderOldMinCount(ctx context.Context, pg *schedulingv1beta1.PodGroup) (int, error) {
	want, err := parseRV(pg.ResourceVersion)
	if err != nil {
		return 0, err
	}
	var trying map[types.UID]bool
	var left string
	err = wait.PollUntilContextTimeout(ctx, pollInterval/10, settleTimeout, true, func(ctx context.Context) (bool, error) {
		if trying == nil {
			cached, err := r.current().Cache.PodGroups().Get(pg.Namespace, pg.Name)
			if err != nil {
				left = "the group: " + err.Error()
				return false, nil
			}
			got, err := parseRV(cached.ResourceVersion)
			if err != nil || got < want {
				left = fmt.Sprintf("the group at resource version %d, not %d", got, want)
				return false, err
			}
		}
		c, err := r.readCluster(ctx)
		if err != nil {
			return false, err
		}
		if trying == nil {
			trying = r.trying(c)
		}
		for _, p := range c.pending {
			if groupOf(p) == pg.Name && trying[p.UID] && r.isTrying(p) {
				left = "member " + p.Name + " being tried"
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return 0, fmt.Errorf("the scheduler still had %s %v after pod group %s's minCount changed: %w",
			left, settleTimeout, pg.Name, err)
	}
	return r.boundMembers(ctx, pg.Name)
}

// boundMembers counts the members of the pod group bound now.
func (r *Run) boundMembers(ctx context.Context, name string) (int, error) {
	c, err := r.readCluster(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, pods := range c.bound {
		for _, p := range pods {
			if groupOf(p) == name && p.DeletionTimestamp == nil {
				n++
			}
		}
	}
	return n, nil
}

func drawDeleteMember(r *Run) step {
	g := r.drawGroup(r.allGroups(), func(g *group) bool { return len(g.members) > 0 })
	i := r.rng.IntN(len(g.members))
	name := g.members[i]
	g.members = slices.Delete(g.members, i, i+1)
	return step{what: fmt.Sprintf("delete member %s of pod group %s", name, g.name),
		apply: func(ctx context.Context) (string, error) {
			p, err := r.client.CoreV1().Pods(r.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				r.gangs.excuse(g.name, "a member ("+name+") was preempted")
				return "already gone (preempted)", nil
			}
			if err != nil {
				return "", fmt.Errorf("reading member %s: %w", name, err)
			}
			err = r.client.CoreV1().Pods(r.cfg.Namespace).Delete(ctx, name,
				metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			switch {
			case apierrors.IsNotFound(err):
				r.gangs.excuse(g.name, "a member ("+name+") was preempted")
				return "already gone (preempted)", nil
			case err != nil:
				return "", fmt.Errorf("deleting member %s: %w", name, err)
			}
			if p.Spec.NodeName != "" {
				r.gangs.excuse(g.name, "a bound member ("+name+") was deleted")
				return "deleted; it was bound to " + p.Spec.NodeName, nil
			}
			return "deleted; it was pending", nil
		}}
}

func drawDeleteGroup(r *Run) step {
	i := r.rng.IntN(len(r.groups))
	g := r.groups[i]
	r.groups = slices.Delete(r.groups, i, i+1)
	r.deletedGroups = append(r.deletedGroups, g)
	return step{what: fmt.Sprintf("delete pod group %s (its %d members stay)", g.name, len(g.members)),
		apply: func(ctx context.Context) (string, error) {
			err := r.client.SchedulingV1beta1().PodGroups(r.cfg.Namespace).Delete(ctx, g.name, metav1.DeleteOptions{})
			if err != nil {
				return "", fmt.Errorf("deleting pod group %s: %w", g.name, err)
			}
			return "deleted", nil
		}}
}

// excuseHalfBound excuses every gang that has members both bound and
// pending now: called right after a kill, whose binding cycles it cut.
func (r *Run) excuseHalfBound(ctx context.Context, why string) error {
	c, err := r.readCluster(ctx)
	if err != nil {
		return err
	}
	bound := map[string]bool{}
	for _, pods := range c.bound {
		for _, p := range pods {
			if g := groupOf(p); g != "" {
				bound[g] = true
			}
		}
	}
	for _, p := range c.pending {
		if g := groupOf(p); g != "" && bound[g] {
			r.gangs.excuse(g, why)
		}
	}
	return nil
}

// checkGangs lists the gangs with fewer than minCount members bound, but
// some, that no excuse covers (gangExcuses), with the minCount of c's pod
// groups.
func (r *Run) checkGangs(c *cluster) []string {
	bound := map[string][]string{}
	pending := map[string][]*v1.Pod{}
	for _, pods := range c.bound {
		for _, p := range pods {
			if g := groupOf(p); g != "" && p.DeletionTimestamp == nil {
				bound[g] = append(bound[g], p.Name)
			}
		}
	}
	for _, p := range c.pending {
		if g := groupOf(p); g != "" {
			pending[g] = append(pending[g], p)
		}
	}
	var out []string
	for _, pg := range c.podGroups {
		gang := pg.Spec.SchedulingPolicy.Gang
		if gang == nil {
			continue
		}
		n := len(bound[pg.Name])
		if n == 0 || n >= int(gang.MinCount) {
			continue
		}
		if reason, ok := r.gangs.reason(pg.Name); ok {
			r.cfg.Logf("pod group %s has %d of minCount %d members bound, as kube-scheduler would leave it: %s",
				pg.Name, n, gang.MinCount, reason)
			continue
		}
		if slices.ContainsFunc(pending[pg.Name], func(p *v1.Pod) bool { return r.gangs.hasErred(p.Name) }) {
			r.cfg.Logf("pod group %s has %d of minCount %d members bound, as kube-scheduler would leave it: "+
				"a member's attempt ended in an error after the others were bound", pg.Name, n, gang.MinCount)
			continue
		}
		if gone := r.membersGone(pg.Name, c); len(gone) > 0 {
			r.cfg.Logf("pod group %s has %d of minCount %d members bound, as kube-scheduler would leave it: "+
				"members preempted: %v", pg.Name, n, gang.MinCount, gone)
			continue
		}
		slices.Sort(bound[pg.Name])
		out = append(out, fmt.Sprintf("gang %s has %d members bound (%v), fewer than its minCount %d",
			pg.Name, n, bound[pg.Name], gang.MinCount))
	}
	slices.Sort(out)
	return out
}

// membersGone lists the members of the run's group name that the run did
// not delete and that no longer exist: preempted.
func (r *Run) membersGone(name string, c *cluster) []string {
	exists := map[string]bool{}
	for _, pods := range c.bound {
		for _, p := range pods {
			exists[p.Name] = true
		}
	}
	for _, p := range c.pending {
		exists[p.Name] = true
	}
	var gone []string
	for _, g := range r.allGroups() {
		if g.name != name {
			continue
		}
		for _, m := range g.members {
			if !exists[m] {
				gone = append(gone, m)
			}
		}
	}
	return gone
}
