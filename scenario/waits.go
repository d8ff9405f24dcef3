// Waiting for the scheduler's decisions as the apiserver shows them (a
// node, a PodScheduled condition, an event, a pod gone) and checking them.

package scenario

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/minisched/minisched/podstatus"
)

// WaitForPodBound polls until the pod has a node and returns it.
func (e *Env) WaitForPodBound(ctx context.Context, name string, timeout time.Duration) (*v1.Pod, error) {
	var pod *v1.Pod
	err := wait.PollUntilContextTimeout(ctx, PollInterval, e.WaitLimit(timeout), true, func(ctx context.Context) (bool, error) {
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

// WaitForPodsBound waits for each pod to be bound and returns their nodes,
// in the pods' order.
func (e *Env) WaitForPodsBound(ctx context.Context, pods []string) ([]string, error) {
	out := make([]string, len(pods))
	for i, name := range pods {
		p, err := e.WaitForPodBound(ctx, name, DefaultWait)
		if err != nil {
			return nil, err
		}
		out[i] = p.Spec.NodeName
	}
	return out, nil
}

// ExpectBound waits for each named pod to be bound, says where, and checks
// its node against want.
func (e *Env) ExpectBound(ctx context.Context, want map[string]string, names ...string) error {
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

// PlaceAndCheck creates pods one by one, waits for each to be bound, shows
// the attempt that placed it (ShowAttempt), and checks the nodes in want.
func (e *Env) PlaceAndCheck(ctx context.Context, want map[string]string, pods ...*v1.Pod) error {
	for _, p := range pods {
		if err := e.CreatePods(ctx, p); err != nil {
			return err
		}
		bound, err := e.WaitForPodBound(ctx, p.Name, DefaultWait)
		if err != nil {
			return err
		}
		if _, err := e.WaitForAttempts(ctx, p.Name, 1, DefaultWait); err != nil {
			return err
		}
		e.ShowAttempt(p.Name)
		if w, ok := want[p.Name]; ok && bound.Spec.NodeName != w {
			return fmt.Errorf("%s went to %s, want %s", p.Name, bound.Spec.NodeName, w)
		}
	}
	return nil
}

// WaitForPodUnschedulable polls until the pod carries PodScheduled=False
// with reason Unschedulable, and returns the condition's message.
func (e *Env) WaitForPodUnschedulable(ctx context.Context, name string, timeout time.Duration) (string, error) {
	var msg string
	err := wait.PollUntilContextTimeout(ctx, PollInterval, e.WaitLimit(timeout), true, func(ctx context.Context) (bool, error) {
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

// WaitForPodGone polls until the pod no longer exists (a preemption
// victim, say).
func (e *Env) WaitForPodGone(ctx context.Context, name string, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, PollInterval, e.WaitLimit(timeout), true, func(ctx context.Context) (bool, error) {
		_, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("pod %s still exists after %v: %w", name, timeout, err)
	}
	return nil
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
	err := wait.PollUntilContextTimeout(ctx, PollInterval, e.WaitLimit(timeout), true, func(ctx context.Context) (bool, error) {
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
