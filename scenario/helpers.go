package scenario

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/explain"
	"github.com/minisched/minisched/minisched"
	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/podstatus"
)

// Env is what a scenario gets: a client, its own namespace, a log of the
// scheduler's attempts, and a place to narrate.
type Env struct {
	Client kubernetes.Interface
	// Namespace is the scenario's own namespace (its name).
	Namespace string
	// SchedulerName is the profile the scenario's pods ask for.
	SchedulerName string
	// Attempts is every scheduling attempt the scheduler reported.
	Attempts *AttemptLog
	// RestConfig reaches the apiserver as an administrator, for a scenario
	// that starts schedulers of its own (Scenario.StartsSchedulers).
	RestConfig *rest.Config
	// MetricsURL is the runner's scheduler's /metrics, in Prometheus' text
	// format; empty for a scenario that starts its own schedulers.
	MetricsURL string
	out        io.Writer
}

// Logf narrates one line of the scenario's story.
func (e *Env) Logf(format string, args ...interface{}) {
	if e.out == nil {
		return
	}
	fmt.Fprintf(e.out, "    "+format+"\n", args...)
}

// AttemptLog records the scheduler's attempts, per pod, in order.
type AttemptLog struct {
	mu    sync.Mutex
	byPod map[string][]minisched.Attempt
}

// NewAttemptLog returns an empty log.
func NewAttemptLog() *AttemptLog { return &AttemptLog{byPod: map[string][]minisched.Attempt{}} }

// Record is a minisched.Observer.
func (l *AttemptLog) Record(a minisched.Attempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := a.Namespace + "/" + a.Name
	l.byPod[key] = append(l.byPod[key], a)
}

// Of returns a copy of the attempts for namespace/name.
func (l *AttemptLog) Of(namespace, name string) []minisched.Attempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]minisched.Attempt(nil), l.byPod[namespace+"/"+name]...)
}

// PodAttempts is a convenience for the scenario's namespace.
func (e *Env) PodAttempts(name string) []minisched.Attempt { return e.Attempts.Of(e.Namespace, name) }

// MakeNode starts a node as the scenarios create it, with the shared
// builders: Ready, labelled with its hostname, with 4 cpu, 16Gi memory,
// 100Gi ephemeral storage and room for 110 pods.
func MakeNode(name string) *builders.NodeWrapper {
	n := builders.MakeNode().Name(name).Label(v1.LabelHostname, name).Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU: "4", v1.ResourceMemory: "16Gi", v1.ResourceEphemeralStorage: "100Gi", v1.ResourcePods: "110",
	})
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	return n
}

// MakePod starts a pod as the scenarios create it, with the shared
// builders: named, and with terminationGracePeriodSeconds 0, since no
// kubelet runs to stop it. CreatePods puts it in the scenario's namespace
// and, if no Req, Image or HostPort gave it a container, adds one.
func MakePod(name string) *builders.PodWrapper {
	return builders.MakePod().Name(name).TerminationGracePeriod(0)
}

// CreateNodes creates nodes, keeping their status (allocatable, conditions).
func (e *Env) CreateNodes(ctx context.Context, nodes ...*v1.Node) error {
	for _, n := range nodes {
		created, err := e.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating node %s: %w", n.Name, err)
		}
		created.Status = n.Status
		if _, err := e.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("setting status of node %s: %w", n.Name, err)
		}
	}
	return nil
}

// CreatePods creates pods in the scenario's namespace with its scheduler
// name (unless the pod names another). A pod built without containers gets
// one running builders.PauseImage that requests nothing: the apiserver
// requires a container.
func (e *Env) CreatePods(ctx context.Context, pods ...*v1.Pod) error {
	for _, p := range pods {
		p.Namespace = e.Namespace
		if p.Spec.SchedulerName == "" {
			p.Spec.SchedulerName = e.SchedulerName
		}
		if len(p.Spec.Containers) == 0 {
			p.Spec.Containers = []v1.Container{{Name: "c0", Image: builders.PauseImage}}
		}
		if _, err := e.Client.CoreV1().Pods(e.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s: %w", p.Name, err)
		}
	}
	return nil
}

// DeletePod deletes a pod at once (no kubelet runs to wait for).
func (e *Env) DeletePod(ctx context.Context, name string) error {
	err := e.Client.CoreV1().Pods(e.Namespace).Delete(ctx, name,
		metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting pod %s: %w", name, err)
	}
	return nil
}

// SetUnschedulable cordons or uncordons a node.
func (e *Env) SetUnschedulable(ctx context.Context, node string, unschedulable bool) error {
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, unschedulable)
	_, err := e.Client.CoreV1().Nodes().Patch(ctx, node, "application/merge-patch+json", []byte(patch),
		metav1.PatchOptions{})
	return err
}

// DefaultWait bounds every wait in the scenarios.
const DefaultWait = 30 * time.Second

// pollInterval is how often waits look again.
const pollInterval = 50 * time.Millisecond

// WaitForPodBound polls until the pod has a node and returns it.
func (e *Env) WaitForPodBound(ctx context.Context, name string, timeout time.Duration) (*v1.Pod, error) {
	var pod *v1.Pod
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return p.Spec.NodeName != "", nil
	})
	if err != nil {
		return nil, fmt.Errorf("pod %s was not bound within %v: %w (%s)", name, timeout, err, describePending(pod))
	}
	return pod, nil
}

// expectBound waits for each named pod to be bound and checks its node.
func (e *Env) expectBound(ctx context.Context, want map[string]string, names ...string) error {
	for _, name := range names {
		p, err := e.WaitForPodBound(ctx, name, DefaultWait)
		if err != nil {
			return err
		}
		e.Logf("%s → %s", name, p.Spec.NodeName)
		if p.Spec.NodeName != want[name] {
			return fmt.Errorf("%s bound to %s, want %s", name, p.Spec.NodeName, want[name])
		}
	}
	return nil
}

// WaitForPodUnschedulable polls until the pod carries PodScheduled=False
// with reason Unschedulable, and returns the condition's message.
func (e *Env) WaitForPodUnschedulable(ctx context.Context, name string, timeout time.Duration) (string, error) {
	var msg string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("pod %s was bound to %s, but should be unschedulable", name, p.Spec.NodeName)
		}
		if c := podstatus.Condition(&p.Status, v1.PodScheduled); c != nil && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			msg = c.Message
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("pod %s did not become unschedulable within %v: %w", name, timeout, err)
	}
	return msg, nil
}

// WaitForAttempts polls the attempt log until the pod has at least n attempts.
func (e *Env) WaitForAttempts(ctx context.Context, name string, n int,
	timeout time.Duration) ([]minisched.Attempt, error) {
	var got []minisched.Attempt
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(context.Context) (bool, error) {
		got = e.PodAttempts(name)
		return len(got) >= n, nil
	})
	if err != nil {
		return got, fmt.Errorf("pod %s had %d scheduling attempts, want %d within %v", name, len(got), n, timeout)
	}
	return got, nil
}

// ExpectNoNewAttempts checks, for the whole duration, that the pod is not
// tried again: the "consistently" counterpart of WaitForAttempts.
func (e *Env) ExpectNoNewAttempts(ctx context.Context, name string, duration time.Duration) error {
	before := len(e.PodAttempts(name))
	err := wait.PollUntilContextTimeout(ctx, pollInterval, duration, true, func(context.Context) (bool, error) {
		if n := len(e.PodAttempts(name)); n != before {
			return false, fmt.Errorf("pod %s was retried (%d attempts, had %d)", name, n, before)
		}
		return false, nil
	})
	if wait.Interrupted(err) {
		return nil
	}
	return err
}

// EventMessages lists the notes of events.k8s.io events about a pod with
// the given reason.
func (e *Env) EventMessages(ctx context.Context, pod, reason string) ([]string, error) {
	sel := fields.Set{"regarding.name": pod, "reason": reason}.AsSelector().String()
	list, err := e.Client.EventsV1().Events(e.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ev := range list.Items {
		out = append(out, ev.Note)
	}
	return out, nil
}

// WaitForEvent polls until at least one event with reason is recorded about
// the pod (events are written asynchronously) and returns their notes. The
// scheduler's failure tests use it.
func (e *Env) WaitForEvent(ctx context.Context, pod, reason string, timeout time.Duration) ([]string, error) {
	var notes []string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		notes, err = e.EventMessages(ctx, pod, reason)
		return len(notes) > 0, err
	})
	if err != nil {
		return nil, fmt.Errorf("no %s event about pod %s within %v: %w", reason, pod, timeout, err)
	}
	return notes, nil
}

// describePending says why a pod is pending, from its PodScheduled condition.
func describePending(p *v1.Pod) string {
	if p == nil {
		return "pod not found"
	}
	if c := podstatus.Condition(&p.Status, v1.PodScheduled); c != nil && c.Status == v1.ConditionFalse {
		return fmt.Sprintf("%s: %s", c.Reason, c.Message)
	}
	return "not tried yet"
}

// maxPlacementLines is how many pods placement lists one by one; beyond
// that, it counts them by node and lists only the pending ones.
const maxPlacementLines = 30

// placement lists the scenario's pods: where each went, or why it waits.
// Many pods are summed up: how many went to how many nodes, and the first
// few pending ones.
func (e *Env) placement(ctx context.Context) ([]string, error) {
	list, err := e.Client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	many := len(list.Items) > maxPlacementLines
	var lines []string
	nodes := map[string]bool{}
	bound := 0
	for i := range list.Items {
		p := &list.Items[i]
		switch {
		case p.Spec.NodeName != "" && many:
			bound++
			nodes[p.Spec.NodeName] = true
		case p.Spec.NodeName != "":
			lines = append(lines, fmt.Sprintf("%s → %s", p.Name, p.Spec.NodeName))
		case !many || len(lines) < maxPlacementLines/3:
			lines = append(lines, fmt.Sprintf("%s pending (%s)", p.Name, describePending(p)))
		}
	}
	if many {
		lines = append([]string{fmt.Sprintf("%d pods: %d bound on %d nodes, %d pending", len(list.Items), bound,
			len(nodes), len(list.Items)-bound)}, lines...)
	}
	return lines, nil
}

// Explain narrates the pod's last attempt as `minisched explain` shows it:
// the Filter and Score tables of its record, then where it went or why not.
func (e *Env) Explain(name string) {
	attempts := e.PodAttempts(name)
	if len(attempts) == 0 {
		e.Logf("%s: not tried", name)
		return
	}
	a := attempts[len(attempts)-1]
	var b strings.Builder
	explain.Render(&b, e.Namespace+"/"+name, a.Record, explain.Options{})
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		e.Logf("  %s", line)
	}
}

// scoreSummary renders the three best weighted scores of an attempt:
// "node1=10 (NodeNumber=10)".
func scoreSummary(a minisched.Attempt) string {
	var parts []string
	for _, n := range a.TopScores(3) {
		var per []string
		for _, sc := range a.Scorers {
			w, _ := a.Weighted(n, sc.Name)
			per = append(per, fmt.Sprintf("%s=%d", sc.Name, w))
		}
		sort.Strings(per)
		parts = append(parts, fmt.Sprintf("%s=%d (%s)", n.Name, n.Total, strings.Join(per, ", ")))
	}
	return strings.Join(parts, ", ")
}

// weighted is the weighted score scorer gave node in attempt a (0 if it
// gave none).
func weighted(a minisched.Attempt, node attempt.NodeRecord, scorer string) int64 {
	w, _ := a.Weighted(node, scorer)
	return w
}
