// This file is the scenarios' side of pod groups (chapter 19, the
// GenericWorkload gate): creating PodGroups, waiting for the scheduler's
// PodGroupInitiallyScheduled condition, and cleaning PodGroups between
// stories.

package scenario

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// CreatePodGroups creates PodGroups, each in the scenario's namespace
// unless it names one. The apiserver must serve scheduling.k8s.io/v1beta1
// (testenv's does, with the GenericWorkload gate on).
func (e *Env) CreatePodGroups(ctx context.Context, pgs ...*schedulingv1beta1.PodGroup) error {
	for _, pg := range pgs {
		if pg.Namespace == "" {
			pg.Namespace = e.Namespace
		}
		if _, err := e.Client.SchedulingV1beta1().PodGroups(pg.Namespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating PodGroup %s: %w", pg.Name, err)
		}
	}
	return nil
}

// DescribePodGroupPolicy says a PodGroup's policy in a few words: "gang,
// minCount 3" or "basic", with its topology key if it has one.
func DescribePodGroupPolicy(pg *schedulingv1beta1.PodGroup) string {
	s := "basic"
	if g := pg.Spec.SchedulingPolicy.Gang; g != nil {
		s = fmt.Sprintf("gang, minCount %d", g.MinCount)
	}
	if c := pg.Spec.SchedulingConstraints; c != nil && len(c.Topology) > 0 {
		s += ", one domain of " + c.Topology[0].Key
	}
	return s
}

// PodGroupCondition is the scheduler's PodGroupInitiallyScheduled condition
// on the named PodGroup of the scenario's namespace, nil while it has none.
func (e *Env) PodGroupCondition(ctx context.Context, name string) (*metav1.Condition, error) {
	pg, err := e.Client.SchedulingV1beta1().PodGroups(e.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return apimeta.FindStatusCondition(pg.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled), nil
}

// WaitForPodGroupCondition polls until the named PodGroup's
// PodGroupInitiallyScheduled condition has status, and returns it.
func (e *Env) WaitForPodGroupCondition(ctx context.Context, name string, status metav1.ConditionStatus,
	timeout time.Duration) (*metav1.Condition, error) {
	var last *metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, PollInterval, e.WaitLimit(timeout), true, func(ctx context.Context) (bool, error) {
		c, err := e.PodGroupCondition(ctx, name)
		if err != nil {
			return false, err
		}
		last = c
		return c != nil && c.Status == status, nil
	})
	if err != nil {
		seen := "none"
		if last != nil {
			seen = fmt.Sprintf("%s %s %q", last.Status, last.Reason, last.Message)
		}
		return nil, fmt.Errorf("PodGroup %s: no PodGroupInitiallyScheduled=%s within %v (last seen: %s): %w",
			name, status, timeout, seen, err)
	}
	return last, nil
}

// podGroupLines says, for the summary after a story, each PodGroup of the
// scenario's namespace and its condition: "PodGroup g (gang, minCount 3):
// Scheduled" or "PodGroup g (…): Unschedulable: <message>". An apiserver
// that serves no PodGroups has none.
func (e *Env) podGroupLines(ctx context.Context) ([]string, error) {
	list, err := e.Client.SchedulingV1beta1().PodGroups(e.Namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for i := range list.Items {
		pg := &list.Items[i]
		line := fmt.Sprintf("PodGroup %s (%s): ", pg.Name, DescribePodGroupPolicy(pg))
		switch c := apimeta.FindStatusCondition(pg.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled); {
		case c == nil:
			line += "not tried"
		case c.Message == "":
			line += c.Reason
		default:
			line += c.Reason + ": " + c.Message
		}
		out = append(out, line)
	}
	return out, nil
}

// podGroupFinalizer is what the apiserver's PodGroupProtection admission
// puts on every PodGroup; kube-controller-manager's
// podgroup-protection-controller lifts it once no pod names the group.
const podGroupFinalizer = "scheduling.k8s.io/podgroup-protection"

// cleanPodGroups deletes every PodGroup, once the pods are gone. The
// protection controller, which would lift each one's finalizer, may not
// run (only gang stories start it): the finalizers are removed first, so
// that deletion is immediate. An apiserver that serves no PodGroups has
// none to clean.
func cleanPodGroups(ctx context.Context, client kubernetes.Interface, namespaces []v1.Namespace) error {
	var errs []error
	all := metav1.ListOptions{}
	for _, ns := range namespaces {
		groups := client.SchedulingV1beta1().PodGroups(ns.Name)
		list, err := groups.List(ctx, all)
		if apierrors.IsNotFound(err) {
			return nil // not served
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, stripFinalizers(ctx, list.Items, groups.Patch),
			groups.DeleteCollection(ctx, metav1.DeleteOptions{}, all))
	}
	return errors.Join(errs...)
}
