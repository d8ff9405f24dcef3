// What chapter 18's stories do to make pods leave (docs/18-eviction.md):
// kube-controller-manager's controllers run for the one story that names
// them, ReplicaSets make replacements, and a story taints nodes, stops a
// kubelet, evicts through the Eviction API, or, where no component here
// can, plays the kubelet's eviction manager and says so.

package scenario

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/podstatus"
	"github.com/minisched/minisched/testenv"
)

// nodeLeaseDuration is how long KWOK's node Leases last in a story that
// runs the node lifecycle controller: KWOK renews each every quarter of it
// (2s), well inside the controller's grace period (testenv.FastNodeMonitor).
const nodeLeaseDuration = 8 * time.Second

// pdbTrap is why a story that evicts a pod a PodDisruptionBudget covers
// must run the disruption controller.
const pdbTrap = "without " + testenv.DisruptionController + " nobody writes the budget's status, the Eviction API " +
	"answers 429 with Retry-After: 10 (the budget is \"still being processed\"), and client-go retries that " +
	"silently, ten times: each eviction would hang for about 100s"

// checkControllers refuses, before anything starts, a story whose
// Controllers kube-controller-manager could not run as meant
// (testenv.CheckControllers), or that runs the node lifecycle controller
// without KWOK to renew the nodes' Leases.
func checkControllers(s Scenario) error {
	if err := testenv.CheckControllers(s.Controllers); err != nil {
		return fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	if slices.Contains(s.Controllers, testenv.NodeLifecycleController) && !s.Parts.Has(KWOK) {
		return fmt.Errorf("scenario %s: %s needs KWOK (a lifecycle) to renew the nodes' Leases; without "+
			"them it marks every node Unknown after %v", s.Name, testenv.NodeLifecycleController,
			testenv.FastNodeMonitor.GracePeriod)
	}
	return nil
}

// kwokOptions is how KWOK plays the kubelets for s: with node Leases when
// the node lifecycle controller watches them.
func kwokOptions(s Scenario) testenv.KWOKOptions {
	if slices.Contains(s.Controllers, testenv.NodeLifecycleController) {
		return testenv.KWOKOptions{NodeLeaseDuration: nodeLeaseDuration}
	}
	return testenv.KWOKOptions{}
}

// startStoryControllers starts kube-controller-manager with the story's
// own controllers (and the node lifecycle controller's fast timing), apart
// from the one the runner keeps for Storage and DRA: these must not
// outlive the story. A node lifecycle controller left running would mark
// the next stories' nodes Unknown, their KWOK renewing no Lease.
func (r *Runner) startStoryControllers(s Scenario) (stop func() error, err error) {
	if r.Environment == nil {
		return nil, errors.New("this scenario needs kube-controller-manager, which needs the runner's Environment")
	}
	var flags []string
	if slices.Contains(s.Controllers, testenv.NodeLifecycleController) {
		flags = testenv.FastNodeMonitor.Flags()
	}
	kcm, err := r.Environment.StartControllerManagerWithFlags(flags, s.Controllers...)
	if err != nil {
		return nil, err
	}
	return kcm.Stop, nil
}

// CreateReplicaSet creates a ReplicaSet of replicas copies of template,
// which gets CreatePods' defaults (scheduler name, container, image) and the
// label app=name, the ReplicaSet's selector. The ReplicaSet controller
// (the story's Controllers) makes its pods, named name-<random>.
func (e *Env) CreateReplicaSet(ctx context.Context, name string, replicas int32, template *v1.Pod) error {
	e.defaultPod(template)
	tmpl := v1.PodTemplateSpec{ObjectMeta: template.ObjectMeta, Spec: template.Spec}
	tmpl.Name, tmpl.Namespace = "", ""
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels["app"] = name
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.Namespace},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, Template: tmpl},
	}
	if _, err := e.Client.AppsV1().ReplicaSets(e.Namespace).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating ReplicaSet %s: %w", name, err)
	}
	return nil
}

// WaitForReplicas polls until the ReplicaSet has n pods that are running
// (Ready) and not being deleted, none of them in skip, and returns them by
// name; it fails after timeout, saying where each pod of the ReplicaSet
// stands.
func (e *Env) WaitForReplicas(ctx context.Context, rs string, n int, skip []string, timeout time.Duration) (
	[]v1.Pod, error) {
	var ready []v1.Pod
	var all []v1.Pod
	err := wait.PollUntilContextTimeout(ctx, PollInterval, e.WaitLimit(timeout), true, func(ctx context.Context) (bool, error) {
		var err error
		if all, err = e.PodsOf(ctx, rs); err != nil {
			return false, err
		}
		ready = ready[:0]
		for _, p := range all {
			if p.DeletionTimestamp == nil && !slices.Contains(skip, p.Name) && isReady(&p) {
				ready = append(ready, p)
			}
		}
		return len(ready) >= n, nil
	})
	if err != nil {
		var where []string
		for _, p := range all {
			where = append(where, fmt.Sprintf("%s on %q (%s)", p.Name, p.Spec.NodeName, p.Status.Phase))
		}
		return nil, fmt.Errorf("ReplicaSet %s has %d of %d pods ready within %v (%s): %w", rs, len(ready), n,
			timeout, strings.Join(where, "; "), err)
	}
	return ready, nil
}

// PodsOf lists the pods of a ReplicaSet made by CreateReplicaSet, sorted by
// name.
func (e *Env) PodsOf(ctx context.Context, rs string) ([]v1.Pod, error) {
	list, err := e.Client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.Set{"app": rs}.String()})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b v1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return list.Items, nil
}

// TaintNode adds a taint to a node (its timeAdded is the apiserver's
// business for NoExecute taints).
func (e *Env) TaintNode(ctx context.Context, node string, taint v1.Taint) error {
	return e.updateNode(ctx, node, func(n *v1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, taint)
	})
}

// UntaintNode removes the node's taints with this key and effect.
func (e *Env) UntaintNode(ctx context.Context, node, key string, effect v1.TaintEffect) error {
	return e.updateNode(ctx, node, func(n *v1.Node) {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t v1.Taint) bool {
			return t.Key == key && t.Effect == effect
		})
	})
}

// updateNode changes a node's spec, retrying on a conflict (the node
// lifecycle controller writes taints too).
func (e *Env) updateNode(ctx context.Context, name string, change func(*v1.Node)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := e.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(n)
		_, err = e.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("updating node %s: %w", name, err)
	}
	return nil
}

// WaitForNodeTaint polls until the node has a taint with this key and
// effect, and returns it.
func (e *Env) WaitForNodeTaint(ctx context.Context, node, key string, effect v1.TaintEffect,
	timeout time.Duration) (v1.Taint, error) {
	var found v1.Taint
	err := e.pollNode(ctx, node, timeout, func(n *v1.Node) bool {
		for _, t := range n.Spec.Taints {
			if t.Key == key && t.Effect == effect {
				found = t
				return true
			}
		}
		return false
	})
	if err != nil {
		return found, fmt.Errorf("node %s got no %s:%s taint within %v: %w", node, key, effect, timeout, err)
	}
	return found, nil
}

// WaitForNodeCondition polls until the node's condition of this type has
// this status, and returns it.
func (e *Env) WaitForNodeCondition(ctx context.Context, node string, typ v1.NodeConditionType,
	status v1.ConditionStatus, timeout time.Duration) (v1.NodeCondition, error) {
	var found v1.NodeCondition
	err := e.pollNode(ctx, node, timeout, func(n *v1.Node) bool {
		for _, c := range n.Status.Conditions {
			if c.Type == typ && c.Status == status {
				found = c
				return true
			}
		}
		return false
	})
	if err != nil {
		return found, fmt.Errorf("node %s's %s did not become %s within %v: %w", node, typ, status, timeout, err)
	}
	return found, nil
}

// pollNode polls the node until done says so.
func (e *Env) pollNode(ctx context.Context, name string, timeout time.Duration, done func(*v1.Node) bool) error {
	return wait.PollUntilContextTimeout(ctx, PollInterval, e.WaitLimit(timeout), true, func(ctx context.Context) (bool, error) {
		n, err := e.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return done(n), nil
	})
}

// deadKubeletHolder is who holds a Lease StopKubelet took over.
const deadKubeletHolder = "minisched-scenario-stopped-this-kubelet"

// StopKubelet stops the node's kubelet, as far as the cluster can tell: it
// waits for KWOK's Lease of the node, then takes it over for an hour. KWOK
// renews no Lease that another holds, and plays no node, and none of its
// pods, whose Lease it does not hold: the node's heartbeat stops, and its
// pods stay as they are, deletions included. A real kubelet that dies stops
// just the same (one difference: KWOK sometimes finishes a pod deletion it
// had under way), but its containers may go on running (a network partition)
// or be gone (a crashed machine): the control plane cannot tell which, and
// that is why it waits before it evicts. The story needs KWOK with Leases
// (its Controllers name node-lifecycle-controller).
func (e *Env) StopKubelet(ctx context.Context, node string) error {
	leases := e.Client.CoordinationV1().Leases(v1.NamespaceNodeLease)
	err := wait.PollUntilContextTimeout(ctx, PollInterval, e.WaitLimit(DefaultWait), true, func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return ptr.Deref(l.Spec.HolderIdentity, "") != "", nil
	})
	if err != nil {
		return fmt.Errorf("KWOK holds no Lease of node %s (does the story run %s, so that KWOK writes "+
			"Leases?): %w", node, testenv.NodeLifecycleController, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leases.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		l.Spec.HolderIdentity = ptr.To(deadKubeletHolder)
		l.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("taking over node %s's Lease: %w", node, err)
	}
	return nil
}

// WatchPodCondition starts watching the pod, and returns a wait that
// gives its first condition of this type with status True. Start it before
// what makes the condition: KWOK, playing the kubelet, deletes a pod a
// moment after it is marked, and the watch still sees the mark (the
// deleted pod's last state carries it).
func (e *Env) WatchPodCondition(ctx context.Context, name string, typ v1.PodConditionType) (
	wait func(timeout time.Duration) (v1.PodCondition, error), err error) {
	w, err := e.Client.CoreV1().Pods(e.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return nil, fmt.Errorf("watching pod %s: %w", name, err)
	}
	return func(timeout time.Duration) (v1.PodCondition, error) {
		defer w.Stop()
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return v1.PodCondition{}, fmt.Errorf("the watch of pod %s ended before its %s condition", name, typ)
				}
				p, isPod := ev.Object.(*v1.Pod)
				if !isPod {
					continue
				}
				if c := podstatus.Condition(&p.Status, typ); c != nil && c.Status == v1.ConditionTrue {
					return *c, nil
				}
				if ev.Type == watch.Deleted {
					return v1.PodCondition{}, fmt.Errorf("pod %s was deleted without a %s condition", name, typ)
				}
			case <-timer.C:
				return v1.PodCondition{}, fmt.Errorf("pod %s got no %s condition within %v", name, typ, timeout)
			case <-ctx.Done():
				return v1.PodCondition{}, ctx.Err()
			}
		}
	}, nil
}

// Evict asks the Eviction API to evict the pod, as `kubectl drain` does,
// and returns what it answered: nil, or the apiserver's refusal (an
// *apierrors.StatusError; a 429 when a PodDisruptionBudget allows no
// disruption). Before asking, it waits until the disruption controller has
// written the status of each budget that covers the pod (the Eviction API
// reads nothing else), and refuses a story that evicts such a pod without
// that controller (pdbTrap).
func (e *Env) Evict(ctx context.Context, name string) error {
	pod, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("evicting pod %s: %w", name, err)
	}
	budgets, err := e.budgetsOf(ctx, pod)
	if err != nil {
		return err
	}
	for _, b := range budgets {
		if !slices.Contains(e.controllers, testenv.DisruptionController) {
			return fmt.Errorf("evicting pod %s, which PodDisruptionBudget %s covers, in a story that does not run "+
				"%s: %s", name, b.Name, testenv.DisruptionController, pdbTrap)
		}
		if _, err := e.WaitForBudget(ctx, b.Name, DefaultWait); err != nil {
			return err
		}
	}
	// The request is the one Evictions().Evict sends, but tried once:
	// client-go retries a 429 that carries Retry-After, and the refusal is
	// what the story wants to show, not to wait out.
	eviction := &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.Namespace}}
	return e.Client.CoreV1().RESTClient().Post().Namespace(e.Namespace).Resource("pods").Name(name).
		SubResource("eviction").Body(eviction).MaxRetries(0).Do(ctx).Error()
}

// budgetsOf lists the PodDisruptionBudgets of the pod's namespace whose
// selector matches it.
func (e *Env) budgetsOf(ctx context.Context, pod *v1.Pod) ([]policyv1.PodDisruptionBudget, error) {
	list, err := e.Client.PolicyV1().PodDisruptionBudgets(pod.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the PodDisruptionBudgets of %s: %w", pod.Namespace, err)
	}
	var out []policyv1.PodDisruptionBudget
	for _, b := range list.Items {
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil {
			return nil, fmt.Errorf("PodDisruptionBudget %s's selector: %w", b.Name, err)
		}
		if !sel.Empty() && sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, b)
		}
	}
	return out, nil
}

// WaitForBudget polls until the disruption controller has written the
// budget's status for its current generation, and returns the budget.
func (e *Env) WaitForBudget(ctx context.Context, name string, timeout time.Duration) (
	*policyv1.PodDisruptionBudget, error) {
	return e.waitForBudget(ctx, name, timeout, func(*policyv1.PodDisruptionBudget) bool { return true })
}

// WaitForDisruptionsAllowed polls until the disruption controller allows n
// disruptions of the budget, and returns it.
func (e *Env) WaitForDisruptionsAllowed(ctx context.Context, name string, n int32, timeout time.Duration) (
	*policyv1.PodDisruptionBudget, error) {
	return e.waitForBudget(ctx, name, timeout, func(b *policyv1.PodDisruptionBudget) bool {
		return b.Status.DisruptionsAllowed == n
	})
}

// waitForBudget polls until the budget's status is current and done says so.
func (e *Env) waitForBudget(ctx context.Context, name string, timeout time.Duration,
	done func(*policyv1.PodDisruptionBudget) bool) (*policyv1.PodDisruptionBudget, error) {
	var budget *policyv1.PodDisruptionBudget
	err := wait.PollUntilContextTimeout(ctx, PollInterval, e.WaitLimit(timeout), true, func(ctx context.Context) (bool, error) {
		b, err := e.Client.PolicyV1().PodDisruptionBudgets(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		budget = b
		return b.Status.ObservedGeneration >= b.Generation && done(b), nil
	})
	if err != nil {
		return nil, fmt.Errorf("PodDisruptionBudget %s (status %s) not as awaited within %v: %w", name,
			DescribeBudget(budget), timeout, err)
	}
	return budget, nil
}

// DescribeBudget says what the disruption controller wrote in a budget's
// status.
func DescribeBudget(b *policyv1.PodDisruptionBudget) string {
	if b == nil {
		return "unknown"
	}
	s := b.Status
	return fmt.Sprintf("disruptionsAllowed %d, currentHealthy %d, desiredHealthy %d, expectedPods %d",
		s.DisruptionsAllowed, s.CurrentHealthy, s.DesiredHealthy, s.ExpectedPods)
}

// DescribeRefusal says all the apiserver said refusing a request: the
// HTTP code, the message and each cause.
func DescribeRefusal(err error) string {
	var status *apierrors.StatusError
	if !errors.As(err, &status) {
		return err.Error()
	}
	st := status.ErrStatus
	out := fmt.Sprintf("%d %s: %q", st.Code, st.Reason, st.Message)
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			out += fmt.Sprintf("; cause %s: %q", c.Type, c.Message)
		}
	}
	return out
}

// KubeletEvict writes on a running pod what the kubelet's eviction manager
// writes when it evicts it to reclaim memory (pkg/kubelet/eviction's
// evictPod): a Warning event Evicted, then phase Failed with reason Evicted,
// the message, and a DisruptionTarget condition with reason
// TerminationByKubelet. No component here can: KWOK watches no node's
// memory. The story plays the kubelet, and says so.
func (e *Env) KubeletEvict(ctx context.Context, name, message string) error {
	e.Logf("(the story plays the kubelet's eviction manager here: no component of this cluster measures memory)")
	pods := e.Client.CoreV1().Pods(e.Namespace)
	pod, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("evicting pod %s as its kubelet: %w", name, err)
	}
	now := metav1.Now()
	event := &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: name + ".", Namespace: e.Namespace},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: e.Namespace, Name: name, UID: pod.UID, APIVersion: "v1"},
		Reason:         "Evicted", Message: message, Type: v1.EventTypeWarning,
		Source:         v1.EventSource{Component: "kubelet", Host: pod.Spec.NodeName},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if _, err := e.Client.CoreV1().Events(e.Namespace).Create(ctx, event, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("recording the Evicted event of pod %s: %w", name, err)
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Status.Phase, p.Status.Reason, p.Status.Message = v1.PodFailed, "Evicted", message
		p.Status.Conditions = append(slices.DeleteFunc(p.Status.Conditions, func(c v1.PodCondition) bool {
			return c.Type == v1.DisruptionTarget || c.Type == v1.PodReady || c.Type == v1.ContainersReady
		}), v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, LastTransitionTime: now,
			Reason: v1.PodReasonTerminationByKubelet, Message: message},
			v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, LastTransitionTime: now, Reason: "PodFailed"},
			v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, LastTransitionTime: now,
				Reason: "PodFailed"})
		_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
}

// isReady says whether the pod's Ready condition is True.
func isReady(p *v1.Pod) bool {
	c := podstatus.Condition(&p.Status, v1.PodReady)
	return c != nil && c.Status == v1.ConditionTrue
}

// cleanWorkloads deletes every ReplicaSet, Deployment and
// PodDisruptionBudget (cleanCluster).
func cleanWorkloads(ctx context.Context, client kubernetes.Interface, namespaces []v1.Namespace) error {
	var errs []error
	for _, ns := range namespaces {
		errs = append(errs,
			client.AppsV1().Deployments(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}),
			client.AppsV1().ReplicaSets(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}),
			client.PolicyV1().PodDisruptionBudgets(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{},
				metav1.ListOptions{}))
	}
	return errors.Join(errs...)
}

// cleanNodeLeases deletes every node Lease (cleanCluster). KWOK's name the
// node as their owner, but no garbage collector need run: a Lease a
// stopped KWOK held would keep the next KWOK from playing a node of the
// same name for as long as it lasts, and one StopKubelet took over, for an
// hour.
func cleanNodeLeases(ctx context.Context, client kubernetes.Interface) error {
	return client.CoordinationV1().Leases(v1.NamespaceNodeLease).DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{})
}

// RunDescheduler runs the descheduler once with the policy (a
// DeschedulerPolicy, YAML), and returns the lines of its output that say
// what it evicted or could not evict. The story must list the Descheduler
// part.
func (e *Env) RunDescheduler(ctx context.Context, policy string) ([]string, error) {
	if e.environment == nil {
		return nil, errors.New("RunDescheduler in a story that does not list the Descheduler part " +
			"(or runs without the runner's Environment)")
	}
	out, err := e.environment.RunDescheduler(ctx, []byte(policy))
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "Evicted pod") || strings.Contains(l, "Error evicting pod") {
			lines = append(lines, l)
		}
	}
	return lines, nil
}
