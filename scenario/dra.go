// Devices beside a story: the example DRA driver (Scenario.DRADriver), the
// waits a story of claims needs, a claim told in one line, and the
// cleaning of DRA objects between stories.

package scenario

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/examples/dradriver"
)

// podClaimNameAnnotation marks a claim the resourceclaim controller made
// from a pod's template: the name of the pod's entry in
// spec.resourceClaims.
const podClaimNameAnnotation = "resource.kubernetes.io/pod-claim-name"

// startDRADriver runs the example DRA driver with opts until stop is
// called (runQuietly); stop returns what its Run returned.
func startDRADriver(ctx context.Context, client kubernetes.Interface, opts dradriver.Options) (stop func() error) {
	return runQuietly(ctx, "the example DRA driver", dradriver.New(client, opts).Run)
}

// WaitForClaimAllocated polls until the claim of the scenario's namespace
// is allocated (the scheduler wrote status.allocation) and returns it.
func (e *Env) WaitForClaimAllocated(ctx context.Context, name string, timeout time.Duration) (
	*resourceapi.ResourceClaim, error) {
	var claim *resourceapi.ResourceClaim
	err := wait.PollUntilContextTimeout(ctx, PollInterval, e.WaitLimit(timeout), true, func(ctx context.Context) (bool, error) {
		c, err := e.Client.ResourceV1().ResourceClaims(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		claim = c
		return c.Status.Allocation != nil, nil
	})
	if err != nil {
		state := "not found"
		if claim != nil {
			state = DescribeClaim(claim)
		}
		return nil, fmt.Errorf("claim %s was not allocated within %v (%s): %w", name, timeout, state, err)
	}
	return claim, nil
}

// WaitForPodClaim polls until the resourceclaim controller has made the
// claim of the pod's entry podClaim (one with a ResourceClaimTemplate) and
// recorded it in the pod's status.resourceClaimStatuses, and returns the
// claim's name: it is generated (<pod>-<podClaim>-<random>).
func (e *Env) WaitForPodClaim(ctx context.Context, pod, podClaim string, timeout time.Duration) (string, error) {
	var name string
	err := wait.PollUntilContextTimeout(ctx, PollInterval, e.WaitLimit(timeout), true, func(ctx context.Context) (bool, error) {
		p, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, s := range p.Status.ResourceClaimStatuses {
			if s.Name == podClaim && s.ResourceClaimName != nil {
				name = *s.ResourceClaimName
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("pod %s got no claim %s within %v (does the scenario run the DRA controllers?): %w",
			pod, podClaim, timeout, err)
	}
	return name, nil
}

// WaitForSlices polls until driver has published the whole pool of each
// of the nodes (every slice of its newest generation: a pool with shared
// counters has a slice for them before the one with its devices), and
// returns how many devices each has, as "node-1=2 devices" sorted by node.
func (e *Env) WaitForSlices(ctx context.Context, driver string, nodes ...string) (string, error) {
	return waitForNodes(ctx, "driver "+driver+" published no complete pool", nodes,
		func(ctx context.Context) (map[string]string, error) {
			list, err := e.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
				FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + driver})
			if err != nil {
				return nil, err
			}
			type pool struct {
				generation, want, slices int64
				devices                  int
			}
			pools := map[string]*pool{}
			for _, s := range list.Items {
				node := ptr.Deref(s.Spec.NodeName, "")
				p := pools[node]
				if p == nil || s.Spec.Pool.Generation > p.generation {
					p = &pool{generation: s.Spec.Pool.Generation, want: s.Spec.Pool.ResourceSliceCount}
					pools[node] = p
				} else if s.Spec.Pool.Generation < p.generation {
					continue
				}
				p.slices++
				p.devices += len(s.Spec.Devices)
			}
			found := map[string]string{}
			for node, p := range pools {
				if p.slices == p.want {
					found[node] = fmt.Sprintf("%d devices", p.devices)
				}
			}
			return found, nil
		})
}

// DescribeClaim tells a claim in one line: its name (a generated claim's as
// <pod>-<entry>-…, the same in every run), its allocated devices as
// driver/pool/device, the node its allocation is limited to, and the pods
// it is reserved for:
//
//	claim pod-1-gpu-…: gpu.example.com/node-1/gpu-0 on node-1, reserved for pod-1
//	claim shared: not allocated
func DescribeClaim(c *resourceapi.ResourceClaim) string {
	name := c.Name
	if entry, ok := c.Annotations[podClaimNameAnnotation]; ok {
		if owner := metav1.GetControllerOf(c); owner != nil && owner.Kind == "Pod" {
			name = owner.Name + "-" + entry + "-…"
		}
	}
	a := c.Status.Allocation
	if a == nil {
		return fmt.Sprintf("claim %s: not allocated", name)
	}
	devices := make([]string, 0, len(a.Devices.Results))
	for _, r := range a.Devices.Results {
		devices = append(devices, r.Driver+"/"+r.Pool+"/"+r.Device)
	}
	if len(devices) == 0 {
		devices = []string{"no devices"}
	}
	pods := make([]string, 0, len(c.Status.ReservedFor))
	for _, ref := range c.Status.ReservedFor {
		pods = append(pods, ref.Name)
	}
	reserved := "reserved for none"
	if len(pods) > 0 {
		reserved = "reserved for " + strings.Join(pods, ", ")
	}
	return fmt.Sprintf("claim %s: %s on %s, %s", name, strings.Join(devices, ", "), describeNodeSelector(a.NodeSelector),
		reserved)
}

// describeNodeSelector names the nodes an allocation is limited to: a
// node-local device's allocation selects its node by name (matchFields
// metadata.name), which reads as the name; anything else is printed term
// by term.
func describeNodeSelector(ns *v1.NodeSelector) string {
	if ns == nil {
		return "any node"
	}
	var terms []string
	for _, t := range ns.NodeSelectorTerms {
		var reqs []string
		for _, f := range t.MatchFields {
			if f.Key == "metadata.name" && f.Operator == v1.NodeSelectorOpIn && len(ns.NodeSelectorTerms) == 1 &&
				len(t.MatchFields) == 1 && len(t.MatchExpressions) == 0 {
				return strings.Join(f.Values, ", ")
			}
			reqs = append(reqs, fmt.Sprintf("%s %s %v", f.Key, f.Operator, f.Values))
		}
		for _, e := range t.MatchExpressions {
			reqs = append(reqs, fmt.Sprintf("%s %s %v", e.Key, e.Operator, e.Values))
		}
		terms = append(terms, strings.Join(reqs, " and "))
	}
	return "nodes where " + strings.Join(terms, " or ")
}

// claimLines describes each claim of the scenario's namespace
// (DescribeClaim), sorted: what the runner prints after where the pods
// went.
func (e *Env) claimLines(ctx context.Context) ([]string, error) {
	list, err := e.Client.ResourceV1().ResourceClaims(e.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	lines := make([]string, 0, len(list.Items))
	for i := range list.Items {
		lines = append(lines, DescribeClaim(&list.Items[i]))
	}
	sort.Strings(lines)
	return lines, nil
}

// cleanDRA deletes every claim and claim template (in namespaces), every
// ResourceSlice, DeviceClass and DeviceTaintRule. The scheduler puts a
// delete-protection finalizer on every claim it allocates, which only the
// resourceclaim controller lifts once the claim's pods are gone, and it
// may not run: the finalizers are removed first, so that deletion is
// immediate.
func cleanDRA(ctx context.Context, client kubernetes.Interface, namespaces []v1.Namespace) error {
	var errs []error
	all := metav1.ListOptions{}
	resource := client.ResourceV1()
	for _, ns := range namespaces {
		claims := resource.ResourceClaims(ns.Name)
		list, err := claims.List(ctx, all)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, stripFinalizers(ctx, list.Items, claims.Patch),
			claims.DeleteCollection(ctx, metav1.DeleteOptions{}, all),
			resource.ResourceClaimTemplates(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{}, all))
	}
	errs = append(errs,
		resource.ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		resource.DeviceClasses().DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		resource.DeviceTaintRules().DeleteCollection(ctx, metav1.DeleteOptions{}, all))
	return errors.Join(errs...)
}
