// This file holds the operations a chaos run draws from: what each changes
// in the cluster, how often it is drawn, and what its arguments can be.

package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/builders"
)

// The labels and the taint the operations put on nodes and pods.
const (
	// colorLabel is a node label that pods may select (red or blue).
	colorLabel = "chaos.minisched.io/color"
	// revLabel is the pod label updatePod changes.
	revLabel = "chaos.minisched.io/rev"
	// taintKey is the NoSchedule taint taintNode puts on nodes, which some
	// pods tolerate.
	taintKey = "chaos.minisched.io/dedicated"
)

// maxNodes bounds how many nodes a run has at once.
const maxNodes = 8

// The shapes the operations draw from.
var (
	colors     = []string{"", "red", "blue"}
	nodeShapes = []map[v1.ResourceName]string{
		{v1.ResourceCPU: "2", v1.ResourceMemory: "4Gi", v1.ResourcePods: "6"},
		{v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi", v1.ResourcePods: "8"},
		{v1.ResourceCPU: "8", v1.ResourceMemory: "16Gi", v1.ResourcePods: "10"},
	}
	podCPUs     = []string{"", "100m", "250m", "500m", "1", "2"}
	podMemories = []string{"", "128Mi", "512Mi", "1Gi", "2Gi"}
)

// step is a drawn operation: what it will do, and doing it.
type step struct {
	what  string
	apply func(ctx context.Context) (outcome string, err error)
}

// operation is one kind of change. applies says whether it can be drawn
// now; draw draws its arguments and updates the run's bookkeeping. Both
// read only the run's bookkeeping and generator, never the cluster, so that
// the operations drawn depend on the seed alone.
type operation struct {
	name    string
	weight  int
	applies func(r *Run) bool
	draw    func(r *Run) step
}

// operations is every operation, with its weight. Pods are created most
// often, so that nodes fill up and preemption has work.
var operations = []operation{
	addNode,
	{name: "deleteNode", weight: 2, applies: moreNodesThan(2), draw: drawDeleteNode},
	{name: "cordon", weight: 3, applies: moreNodesThan(0), draw: drawCordon(true)},
	{name: "uncordon", weight: 3, applies: moreNodesThan(0), draw: drawCordon(false)},
	{name: "labelNode", weight: 3, applies: moreNodesThan(0), draw: drawLabelNode},
	{name: "taintNode", weight: 2, applies: moreNodesThan(0), draw: drawTaint(true)},
	{name: "untaintNode", weight: 2, applies: moreNodesThan(0), draw: drawTaint(false)},
	{name: "createPod", weight: 30, applies: always, draw: drawCreatePod},
	{name: "createPreemptor", weight: 5, applies: always, draw: drawCreatePreemptor},
	{name: "deletePod", weight: 12, applies: hasPods, draw: drawDeletePod},
	{name: "updatePod", weight: 6, applies: hasPods, draw: drawUpdatePod},
	{name: "bindElsewhere", weight: 6, applies: moreNodesThan(0), draw: drawBindElsewhere},
	{name: "settle", weight: 1, applies: always, draw: drawSettle},
}

// drawSettle waits, in the middle of the run, for the scheduler to settle,
// and checks what must hold then (Run.settle).
func drawSettle(r *Run) step {
	return step{what: "wait for the scheduler to settle, and check", apply: func(ctx context.Context) (string, error) {
		if err := r.settle(ctx); err != nil {
			return "", err
		}
		return "settled", nil
	}}
}

// addNode is an operation of its own because Start uses it too.
var addNode = operation{
	name: "addNode", weight: 4,
	applies: func(r *Run) bool { return len(r.nodes) < maxNodes },
	draw:    drawAddNode,
}

func always(*Run) bool    { return true }
func hasPods(r *Run) bool { return len(r.pods) > 0 }
func moreNodesThan(n int) func(*Run) bool {
	return func(r *Run) bool { return len(r.nodes) > n }
}

// drawNode draws one of the run's nodes.
func (r *Run) drawNode() string { return r.nodes[r.rng.IntN(len(r.nodes))] }

// drawPod draws one of the run's pods.
func (r *Run) drawPod() string { return r.pods[r.rng.IntN(len(r.pods))] }

func describe(m map[v1.ResourceName]string) string {
	var parts []string
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods} {
		if q, ok := m[name]; ok {
			parts = append(parts, fmt.Sprintf("%s=%s", name, q))
		}
	}
	if len(parts) == 0 {
		return "no requests"
	}
	return strings.Join(parts, " ")
}

func drawAddNode(r *Run) step {
	name := fmt.Sprintf("node-%d", r.nodeSeq)
	r.nodeSeq++
	shape := nodeShapes[r.rng.IntN(len(nodeShapes))]
	color := colors[r.rng.IntN(len(colors))]
	r.nodes = append(r.nodes, name)
	r.createdNodes[name] = true
	return step{
		what: fmt.Sprintf("add node %s (%s, color %q)", name, describe(shape), color),
		apply: func(ctx context.Context) (string, error) {
			n := builders.MakeNode().Name(name).Label(v1.LabelHostname, name).Capacity(shape)
			if color != "" {
				n.Label(colorLabel, color)
			}
			n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
			if err := r.env.CreateNodes(ctx, n.Obj()); err != nil {
				return "", err
			}
			created, err := r.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return "", fmt.Errorf("reading node %s: %w", name, err)
			}
			return "created", r.waitForNodeInCache(ctx, created)
		},
	}
}

func drawDeleteNode(r *Run) step {
	i := r.rng.IntN(len(r.nodes))
	name := r.nodes[i]
	r.nodes = slices.Delete(r.nodes, i, i+1)
	return step{
		what:  "delete node " + name,
		apply: func(ctx context.Context) (string, error) { return r.deleteNode(ctx, name) },
	}
}

// deleteNode deletes a node, then waits until the scheduler's cache has
// dropped it, no pod is assumed on it any more and the pods the scheduler
// was trying then are done with, and records the resource versions that
// bracket the deletion (see nodeDeletion).
func (r *Run) deleteNode(ctx context.Context, name string) (string, error) {
	before, err := r.listRV(ctx)
	if err != nil {
		return "", err
	}
	c, err := r.readCluster(ctx)
	if err != nil {
		return "", err
	}
	if err := r.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return "", fmt.Errorf("deleting node %s: %w", name, err)
	}
	// atRemoval are the pods that may still be bound to the node once the
	// cache has dropped it: those the cache had on it (bound, or assumed
	// with their binding in flight), and those the scheduler was trying,
	// whose cycle may have started from a snapshot that had the node. A
	// cycle that starts later cannot choose the node.
	var atRemoval, tryingAtRemoval map[types.UID]bool
	var left string
	err = wait.PollUntilContextTimeout(ctx, pollInterval/10, settleTimeout, true, func(context.Context) (bool, error) {
		d := r.current().Cache.Dump()
		ni, ok := d.Nodes[name]
		if ok && ni.Node() != nil {
			left = "the node"
			return false, nil
		}
		if atRemoval == nil {
			atRemoval = map[types.UID]bool{}
			if ok {
				for _, pi := range ni.Pods {
					atRemoval[pi.Pod.UID] = true
				}
			}
			tryingAtRemoval = r.trying(c)
			for uid := range tryingAtRemoval {
				atRemoval[uid] = true
			}
		}
		// Settled once the pods tried then are done with, and no pod is
		// assumed on the node.
		for _, q := range c.pending {
			if tryingAtRemoval[q.UID] && r.isTrying(q) {
				left = "pod " + q.Name + " being tried"
				return false, nil
			}
		}
		if ok {
			for _, pi := range ni.Pods {
				if d.AssumedPods.Has(pi.Pod.UID) {
					left = "pod " + pi.Pod.Name + " assumed on it"
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("the scheduler's cache still had %s %v after node %s was deleted: %w",
			left, settleTimeout, name, err)
	}
	settled, err := r.listRV(ctx)
	if err != nil {
		return "", err
	}
	r.deletions[name] = nodeDeletion{before: before, settled: settled}
	pods, err := r.client.CoreV1().Pods(r.cfg.Namespace).List(ctx,
		metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
	if err != nil {
		return "", fmt.Errorf("listing the pods of node %s: %w", name, err)
	}
	for _, p := range pods.Items {
		if !atRemoval[p.UID] {
			return "", fmt.Errorf("pod %s was bound to node %s after the scheduler's cache had dropped the node", p.Name, name)
		}
	}
	return fmt.Sprintf("deleted; %d pods still bound to it (nothing evicts them)", len(pods.Items)), nil
}

func drawCordon(cordon bool) func(r *Run) step {
	verb := map[bool]string{true: "cordon", false: "uncordon"}[cordon]
	return func(r *Run) step {
		name := r.drawNode()
		return step{
			what: verb + " node " + name,
			apply: func(ctx context.Context) (string, error) {
				return r.patchNode(ctx, name, fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, cordon))
			},
		}
	}
}

func drawLabelNode(r *Run) step {
	name := r.drawNode()
	color := colors[r.rng.IntN(len(colors))]
	value := "null"
	if color != "" {
		value = fmt.Sprintf("%q", color)
	}
	return step{
		what: fmt.Sprintf("set label %s=%q on node %s", colorLabel, color, name),
		apply: func(ctx context.Context) (string, error) {
			patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, colorLabel, value)
			return r.patchNode(ctx, name, patch)
		},
	}
}

func drawTaint(taint bool) func(r *Run) step {
	return func(r *Run) step {
		name := r.drawNode()
		what, patch := "untaint node "+name, `{"spec":{"taints":null}}`
		if taint {
			what = fmt.Sprintf("taint node %s with %s:NoSchedule", name, taintKey)
			patch = fmt.Sprintf(`{"spec":{"taints":[{"key":%q,"value":"true","effect":"NoSchedule"}]}}`, taintKey)
		}
		return step{what: what, apply: func(ctx context.Context) (string, error) { return r.patchNode(ctx, name, patch) }}
	}
}

// patchNode patches a node and waits for the scheduler's cache to take the
// change in.
func (r *Run) patchNode(ctx context.Context, name, patch string) (string, error) {
	n, err := r.client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return "", fmt.Errorf("patching node %s with %s: %w", name, patch, err)
	}
	return "done", r.waitForNodeInCache(ctx, n)
}

// waitForNodeInCache waits until the scheduler's cache holds node as it is
// (or newer), so that any pod the scheduler pops from then on sees it so.
// Without it, a pod could be placed on a node the run believes cordoned or
// tainted.
func (r *Run) waitForNodeInCache(ctx context.Context, node *v1.Node) error {
	want, err := parseRV(node.ResourceVersion)
	if err != nil {
		return err
	}
	var got uint64
	err = wait.PollUntilContextTimeout(ctx, pollInterval/10, settleTimeout, true, func(context.Context) (bool, error) {
		cached := r.current().Cache.Dump().Nodes[node.Name].Node()
		if cached == nil {
			return false, nil
		}
		got, err = parseRV(cached.ResourceVersion)
		return got >= want, err
	})
	if err != nil {
		return fmt.Errorf("the scheduler's cache has node %s at resource version %d, not %d, after %v: %w",
			node.Name, got, want, settleTimeout, err)
	}
	return nil
}

// podSpec is what drawCreatePod draws for a pod.
type podSpec struct {
	name     string
	requests map[v1.ResourceName]string
	// class is the priority class.
	class    string
	color    string
	tolerate bool
	// pvc is a claim the pod mounts; claim a ResourceClaim it shares, and
	// claimTemplate the ResourceClaimTemplate of a claim of its own ("" for
	// none).
	pvc, claim, claimTemplate string
	// grace is terminationGracePeriodSeconds. A bound pod deleted without
	// a grace period of its own (as preemption deletes its victims) stays
	// Terminating that long, and with no kubelet to finish it, for ever.
	grace int64
}

func (p podSpec) String() string {
	s := fmt.Sprintf("%s (%s, %s", p.name, describe(p.requests), p.class)
	if p.color != "" {
		s += ", selects " + p.color
	}
	if p.tolerate {
		s += ", tolerates the taint"
	}
	if p.pvc != "" {
		s += ", mounts " + p.pvc
	}
	if p.claim != "" {
		s += ", claim " + p.claim
	}
	if p.claimTemplate != "" {
		s += ", a claim from template " + p.claimTemplate
	}
	return s + fmt.Sprintf(", grace %ds)", p.grace)
}

func (p podSpec) pod(namespace, schedulerName string) *v1.Pod {
	w := builders.MakePod().Namespace(namespace).Name(p.name).SchedulerName(schedulerName).PriorityClassName(p.class).
		TerminationGracePeriod(p.grace)
	if len(p.requests) > 0 {
		w.Req(p.requests)
	} else {
		w.Image(builders.PauseImage)
	}
	if p.color != "" {
		w.NodeSelector(colorLabel, p.color)
	}
	if p.tolerate {
		w.Toleration(v1.Toleration{Key: taintKey, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule})
	}
	if p.pvc != "" {
		w.PVC(p.pvc)
	}
	if p.claim != "" {
		w.ResourceClaim("gpu", p.claim)
	}
	if p.claimTemplate != "" {
		w.ResourceClaimTemplate("gpu", p.claimTemplate)
	}
	return w.Obj()
}

// newPodName names the next pod and records it in the bookkeeping.
func (r *Run) newPodName() string {
	name := fmt.Sprintf("pod-%d", r.podSeq)
	r.podSeq++
	r.pods = append(r.pods, name)
	return name
}

func drawCreatePod(r *Run) step {
	p := podSpec{name: r.newPodName(), requests: map[v1.ResourceName]string{}}
	if cpu := podCPUs[r.rng.IntN(len(podCPUs))]; cpu != "" {
		p.requests[v1.ResourceCPU] = cpu
	}
	if mem := podMemories[r.rng.IntN(len(podMemories))]; mem != "" {
		p.requests[v1.ResourceMemory] = mem
	}
	// Mostly low, some mid, few high.
	switch x := r.rng.IntN(10); {
	case x < 6:
		p.class = priorityClasses[0].Name
	case x < 9:
		p.class = priorityClasses[1].Name
	default:
		p.class = priorityClasses[2].Name
	}
	if r.rng.IntN(4) == 0 {
		p.color = colors[1+r.rng.IntN(len(colors)-1)]
	}
	p.tolerate = r.rng.IntN(4) == 0
	if r.rng.IntN(5) == 0 {
		p.grace = 30
	}
	return r.createStep("create pod "+p.String(), p)
}

// drawCreatePreemptor draws a large pod of the highest priority: on full
// nodes, it preempts.
func drawCreatePreemptor(r *Run) step {
	p := podSpec{
		name:     r.newPodName(),
		requests: map[v1.ResourceName]string{v1.ResourceCPU: []string{"2", "3"}[r.rng.IntN(2)], v1.ResourceMemory: "1Gi"},
		class:    priorityClasses[2].Name,
	}
	return r.createStep("create preemptor "+p.String(), p)
}

func (r *Run) createStep(what string, p podSpec) step {
	return step{what: what, apply: func(ctx context.Context) (string, error) {
		if _, err := r.createPod(ctx, p); err != nil {
			return "", err
		}
		return "created", nil
	}}
}

func (r *Run) createPod(ctx context.Context, p podSpec) (*v1.Pod, error) {
	created, err := r.client.CoreV1().Pods(r.cfg.Namespace).Create(ctx, p.pod(r.cfg.Namespace, r.cfg.SchedulerName), metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating pod %s: %w", p.name, err)
	}
	if created.Spec.Priority == nil {
		return nil, fmt.Errorf("pod %s has no priority: is the Priority admission plugin off?", p.name)
	}
	return created, nil
}

// ignoreNotFound returns nil for a NotFound error.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// createPods creates the pods in order, stopping at the first error.
func (r *Run) createPods(ctx context.Context, pods []podSpec) error {
	for _, p := range pods {
		if _, err := r.createPod(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

func drawDeletePod(r *Run) step {
	i := r.rng.IntN(len(r.pods))
	name := r.pods[i]
	r.pods = slices.Delete(r.pods, i, i+1)
	return step{what: "delete pod " + name, apply: func(ctx context.Context) (string, error) {
		err := r.client.CoreV1().Pods(r.cfg.Namespace).Delete(ctx, name,
			metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		switch {
		case apierrors.IsNotFound(err):
			return "already gone (preempted)", nil
		case err != nil:
			return "", fmt.Errorf("deleting pod %s: %w", name, err)
		}
		return "deleted", nil
	}}
}

func drawUpdatePod(r *Run) step {
	name := r.drawPod()
	rev := r.rng.IntN(1000)
	return step{what: fmt.Sprintf("set label %s=%d on pod %s", revLabel, rev, name),
		apply: func(ctx context.Context) (string, error) {
			patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"%d"}}}`, revLabel, rev)
			_, err := r.client.CoreV1().Pods(r.cfg.Namespace).Patch(ctx, name, types.MergePatchType, []byte(patch),
				metav1.PatchOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return "already gone (preempted)", nil
			case err != nil:
				return "", fmt.Errorf("patching pod %s: %w", name, err)
			}
			return "updated", nil
		}}
}

// drawBindElsewhere draws a small pod for our scheduler that another client
// binds first, through the Binding subresource, right after creating it: to
// the first node, in a drawn order, with room for it to spare (see
// roomForForeignPod). Our scheduler may still win the race; either way the
// pod must be bound once and counted once.
func drawBindElsewhere(r *Run) step {
	p := podSpec{
		name:     r.newPodName(),
		requests: map[v1.ResourceName]string{v1.ResourceCPU: []string{"100m", "250m"}[r.rng.IntN(2)], v1.ResourceMemory: "128Mi"},
		class:    priorityClasses[0].Name,
	}
	order := make([]string, len(r.nodes))
	for i, j := range r.rng.Perm(len(r.nodes)) {
		order[i] = r.nodes[j]
	}
	return step{
		what:  fmt.Sprintf("create pod %s and bind it from another client (nodes in order %v)", p, order),
		apply: func(ctx context.Context) (string, error) { return r.bindElsewhere(ctx, p, order) },
	}
}

func (r *Run) bindElsewhere(ctx context.Context, p podSpec, order []string) (string, error) {
	pod, err := r.createPod(ctx, p)
	if err != nil {
		return "", err
	}
	// Which pods the scheduler is trying is read between two reads of the
	// cluster: a pod it tries from then on sees every node as the second
	// read does; one it was trying before is pending in the first read.
	before, err := r.readCluster(ctx)
	if err != nil {
		return "", err
	}
	trying := r.trying(before)
	c, err := r.readCluster(ctx)
	if err != nil {
		return "", err
	}
	if node := c.nodeOf(pod.UID); node != "" {
		return "our scheduler bound it first, to " + node, nil
	}
	target := ""
	for _, name := range order {
		if _, ok := c.nodes[name]; ok && r.roomForForeignPod(c, name, pod, trying) {
			target = name
			break
		}
	}
	if target == "" {
		return "no node has room to spare; left to our scheduler", nil
	}
	b := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: target},
	}
	err = r.client.CoreV1().Pods(r.cfg.Namespace).Bind(ctx, b, metav1.CreateOptions{})
	if apierrors.IsConflict(err) {
		got, err := r.client.CoreV1().Pods(r.cfg.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("reading pod %s after a conflicting bind: %w", pod.Name, err)
		}
		return "our scheduler bound it first, to " + got.Spec.NodeName, nil
	}
	if apierrors.IsNotFound(err) {
		// Between the read and the bind our scheduler bound the pod, and a
		// preemptor evicted it (it is of the lowest priority): it was
		// scheduled once, and is gone, as a victim must be.
		return "our scheduler bound it first, and a preemptor evicted it", nil
	}
	if err != nil {
		return "", fmt.Errorf("binding pod %s to %s: %w", pod.Name, target, err)
	}
	// Wait for the scheduler to count the pod where it is: until it has,
	// it may place other pods in the room this one took.
	var state string
	err = wait.PollUntilContextTimeout(ctx, pollInterval, settleTimeout, true, func(context.Context) (bool, error) {
		got, err := r.current().Cache.GetPod(pod)
		if err != nil {
			state = "not in the cache"
			return false, nil
		}
		assumed, _ := r.current().Cache.IsAssumedPod(pod)
		state = fmt.Sprintf("on %q, assumed %v", got.Spec.NodeName, assumed)
		return got.Spec.NodeName == target && !assumed, nil
	})
	if err != nil {
		return "", fmt.Errorf("pod %s, bound to %s by another client, is %s in the scheduler's cache after %v: %w",
			pod.Name, target, state, settleTimeout, err)
	}
	return "bound to " + target + " by the other client", nil
}
