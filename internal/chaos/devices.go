// This file holds the run's devices: the example DRA driver publishing two
// GPUs per node, pods whose claims come from a ResourceClaimTemplate or
// are shared with another pod, slices changed (added, removed, tainted) and
// the DeviceClass's selector changed, and what must hold of the claims.

package chaos

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/examples/dradriver"
)

// The run's device class and claim template.
const (
	deviceClass   = "chaos-gpu"
	claimTemplate = "chaos-gpu"
	driverName    = dradriver.DefaultDriverName
)

// classSelectors are the DeviceClass selectors changeDeviceClass draws
// from: none, or the GPU's index. deviceMatches evaluates them.
var classSelectors = []string{"",
	`device.attributes["` + driverName + `"].index == 0`,
	`device.attributes["` + driverName + `"].index >= 1`}

// deviceMatches reports whether selector (one of classSelectors) selects
// the GPU named device (gpu-<index>).
func deviceMatches(selector, device string) bool {
	index, err := strconv.Atoi(strings.TrimPrefix(device, "gpu-"))
	if err != nil {
		return false
	}
	switch selector {
	case classSelectors[1]:
		return index == 0
	case classSelectors[2]:
		return index >= 1
	}
	return true
}

// startDevices creates the run's DeviceClass and ResourceClaimTemplate and
// starts the example driver with two GPUs per node, until ctx ends.
func (r *Run) startDevices(ctx context.Context) error {
	class := dradriver.DeviceClass(deviceClass, driverName)
	if _, err := r.client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating device class %s: %w", deviceClass, err)
	}
	tmpl := builders.MakeResourceClaimTemplate().Namespace(r.cfg.Namespace).Name(claimTemplate).
		Claim(builders.MakeResourceClaim().Request(builders.MakeDeviceRequest("gpu", deviceClass))).Obj()
	if _, err := r.client.ResourceV1().ResourceClaimTemplates(r.cfg.Namespace).Create(ctx, tmpl,
		metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating claim template %s: %w", claimTemplate, err)
	}
	r.driver = dradriver.New(r.client, dradriver.Options{Devices: dradriver.NodeDevices{GPUs: 2}})
	go func() {
		if err := r.driver.Run(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logf("the example DRA driver stopped: %v", err)
		}
	}()
	return nil
}

// deviceOperations are the device operations.
var deviceOperations = []operation{
	{name: "createDevicePod", weight: 5, applies: always, draw: drawCreateDevicePod},
	{name: "changeSlices", weight: 2, applies: moreNodesThan(0), draw: drawChangeSlices},
	{name: "changeDeviceClass", weight: 1, applies: always, draw: drawChangeDeviceClass},
}

// drawCreateDevicePod draws a pod with a claim of its own from the
// template, or a claim shared by two new pods.
func drawCreateDevicePod(r *Run) step {
	small := map[v1.ResourceName]string{v1.ResourceCPU: "100m"}
	if r.rng.IntN(3) != 0 {
		p := podSpec{name: r.newPodName(), requests: small, class: priorityClasses[r.rng.IntN(2)].Name,
			claimTemplate: claimTemplate}
		return r.createStep("create pod "+p.String(), p)
	}
	claim := fmt.Sprintf("claim-%d", r.claimSeq)
	r.claimSeq++
	pods := []podSpec{
		{name: r.newPodName(), requests: small, class: priorityClasses[0].Name, claim: claim},
		{name: r.newPodName(), requests: small, class: priorityClasses[0].Name, claim: claim},
	}
	return step{what: fmt.Sprintf("create claim %s shared by %s and %s", claim, pods[0], pods[1]),
		apply: func(ctx context.Context) (string, error) {
			c := builders.MakeResourceClaim().Namespace(r.cfg.Namespace).Name(claim).
				Request(builders.MakeDeviceRequest("gpu", deviceClass)).Obj()
			if _, err := r.client.ResourceV1().ResourceClaims(r.cfg.Namespace).Create(ctx, c,
				metav1.CreateOptions{}); err != nil {
				return "", fmt.Errorf("creating claim %s: %w", claim, err)
			}
			return "created", r.createPods(ctx, pods)
		}}
}

// drawChangeSlices gives a node a drawn number of GPUs, sometimes with the
// first tainted NoSchedule: the driver adds, removes or changes its slices.
func drawChangeSlices(r *Run) step {
	node := r.drawNode()
	nd := dradriver.NodeDevices{GPUs: r.rng.IntN(4)}
	what := fmt.Sprintf("give node %s %d GPUs", node, nd.GPUs)
	if nd.GPUs > 0 && r.rng.IntN(3) == 0 {
		nd.Taints = map[string][]resourceapi.DeviceTaint{"gpu-0": {{Key: taintKey, Value: "true",
			Effect: resourceapi.DeviceTaintEffectNoSchedule}}}
		what += ", gpu-0 tainted NoSchedule"
	}
	return step{what: what, apply: func(context.Context) (string, error) {
		r.driver.SetNode(node, nd)
		return "the driver publishes them", nil
	}}
}

func drawChangeDeviceClass(r *Run) step {
	selector := classSelectors[r.rng.IntN(len(classSelectors))]
	what := "select every GPU in device class " + deviceClass
	patch := `{"spec":{"selectors":null}}`
	if selector != "" {
		what = fmt.Sprintf("select %s in device class %s", selector, deviceClass)
		patch = fmt.Sprintf(`{"spec":{"selectors":[{"cel":{"expression":%q}}]}}`, selector)
	}
	return step{what: what, apply: func(ctx context.Context) (string, error) {
		_, err := r.client.ResourceV1().DeviceClasses().Patch(ctx, deviceClass, types.MergePatchType, []byte(patch),
			metav1.PatchOptions{})
		if err != nil {
			return "", fmt.Errorf("patching device class %s: %w", deviceClass, err)
		}
		return "done", nil
	}}
}

// devices is the DRA state the invariants read.
type devices struct {
	claims map[string]*resourceapi.ResourceClaim
	// free are the devices of each node (pool) that no claim has, and
	// that the class selects and no NoSchedule or NoExecute taint covers.
	free map[string][]string
	// selector is the DeviceClass's (one of classSelectors).
	selector string
}

// readDevices reads claims, slices and the class.
func (r *Run) readDevices(ctx context.Context) (*devices, error) {
	claims, err := r.client.ResourceV1().ResourceClaims(r.cfg.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing claims: %w", err)
	}
	sl, err := r.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing resource slices: %w", err)
	}
	class, err := r.client.ResourceV1().DeviceClasses().Get(ctx, deviceClass, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading device class %s: %w", deviceClass, err)
	}
	d := &devices{claims: map[string]*resourceapi.ResourceClaim{}, free: map[string][]string{}}
	if len(class.Spec.Selectors) > 0 && class.Spec.Selectors[0].CEL != nil {
		d.selector = class.Spec.Selectors[0].CEL.Expression
	}
	taken := map[string]bool{}
	for i := range claims.Items {
		c := &claims.Items[i]
		d.claims[c.Name] = c
		if c.Status.Allocation != nil {
			for _, res := range c.Status.Allocation.Devices.Results {
				taken[res.Pool+"/"+res.Device] = true
			}
		}
	}
	// Only the newest generation of each pool counts, as for the allocator.
	newest := map[string]int64{}
	for _, s := range sl.Items {
		newest[s.Spec.Pool.Name] = max(newest[s.Spec.Pool.Name], s.Spec.Pool.Generation)
	}
	for _, s := range sl.Items {
		if s.Spec.Driver != driverName || s.Spec.NodeName == nil || s.Spec.Pool.Generation < newest[s.Spec.Pool.Name] {
			continue
		}
		for _, dev := range s.Spec.Devices {
			tainted := slices.ContainsFunc(dev.Taints, func(t resourceapi.DeviceTaint) bool {
				return t.Effect != resourceapi.DeviceTaintEffectNone
			})
			if !taken[s.Spec.Pool.Name+"/"+dev.Name] && !tainted && deviceMatches(d.selector, dev.Name) {
				d.free[*s.Spec.NodeName] = append(d.free[*s.Spec.NodeName], dev.Name)
			}
		}
	}
	return d, nil
}

// claimsOf returns the names of p's claims; ok is false when a claim from
// a template has not been made yet.
func claimsOf(p *v1.Pod) (names []string, ok bool) {
	for _, pc := range p.Spec.ResourceClaims {
		if pc.ResourceClaimName != nil {
			names = append(names, *pc.ResourceClaimName)
			continue
		}
		i := slices.IndexFunc(p.Status.ResourceClaimStatuses, func(s v1.PodResourceClaimStatus) bool {
			return s.Name == pc.Name && s.ResourceClaimName != nil
		})
		if i < 0 {
			return nil, false
		}
		names = append(names, *p.Status.ResourceClaimStatuses[i].ResourceClaimName)
	}
	return names, true
}

// allocatedNode is the node a claim's allocation is for ("" when it has
// none, or is not for one node).
func allocatedNode(c *resourceapi.ResourceClaim) string {
	a := c.Status.Allocation
	if a == nil || a.NodeSelector == nil || len(a.NodeSelector.NodeSelectorTerms) != 1 {
		return ""
	}
	for _, f := range a.NodeSelector.NodeSelectorTerms[0].MatchFields {
		if f.Key == "metadata.name" && len(f.Values) == 1 {
			return f.Values[0]
		}
	}
	return ""
}

// devicesFit reports whether p's claims can be had on node: each claim
// allocated there already, or a free device there for each one that is
// not (the run's claims ask for one device each).
func (d *devices) devicesFit(p *v1.Pod, node string) (bool, string) {
	names, ok := claimsOf(p)
	if !ok {
		return false, "its claim is not made yet"
	}
	need := 0
	for _, name := range names {
		c, ok := d.claims[name]
		switch {
		case !ok:
			return false, "claim " + name + " does not exist"
		case c.DeletionTimestamp != nil:
			return false, "claim " + name + " is being deleted"
		case c.Status.Allocation != nil:
			if n := allocatedNode(c); n != node {
				return false, "claim " + name + " is allocated on " + n
			}
		default:
			need++
		}
	}
	if need > len(d.free[node]) {
		return false, fmt.Sprintf("needs %d devices, %d free", need, len(d.free[node]))
	}
	return true, ""
}

// checkDevices lists what is broken of the claims: a device allocated to
// two claims; and, once settled, an allocated claim reserved for no pod
// where kube-scheduler would not leave it so (leftAllocated), or reserved
// for a pod that is gone, or unbound while it fits on the claim's node (the
// scheduler would have bound it).
func (r *Run) checkDevices(c *cluster, settled bool) []string {
	var out []string
	owner := map[string]string{}
	for _, name := range sortedKeys(c.devices.claims) {
		claim := c.devices.claims[name]
		if claim.Status.Allocation == nil {
			continue
		}
		for _, res := range claim.Status.Allocation.Devices.Results {
			key := res.Driver + "/" + res.Pool + "/" + res.Device
			if other, ok := owner[key]; ok {
				out = append(out, fmt.Sprintf("device %s is allocated to claims %s and %s", key, other, name))
			}
			owner[key] = name
		}
	}
	if !settled {
		return out
	}
	pods := c.podsByUID()
	for _, name := range sortedKeys(c.devices.claims) {
		claim := c.devices.claims[name]
		if claim.Status.Allocation != nil && len(claim.Status.ReservedFor) == 0 {
			if why := c.leftAllocated(name, claim); why != "" {
				r.cfg.Logf("claim %s is allocated (on %s) and reserved for no pod, as kube-scheduler leaves it: %s",
					name, allocatedNode(claim), why)
			} else {
				out = append(out, fmt.Sprintf("claim %s is allocated (on %s) and reserved for no pod", name,
					allocatedNode(claim)))
			}
		}
		for _, ref := range claim.Status.ReservedFor {
			p, ok := pods[ref.UID]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("claim %s is reserved for pod %s, which is gone", name, ref.Name))
			case p.Spec.NodeName == "":
				if fits, _ := c.fits(p, allocatedNode(claim)); fits {
					out = append(out, fmt.Sprintf("claim %s is reserved for pod %s, which is not bound though it fits on %s",
						name, ref.Name, allocatedNode(claim)))
				}
			}
		}
	}
	return out
}

// leftAllocated says why kube-scheduler v1.37.1 leaves claim allocated
// and reserved for no pod, or "" when it would not. Only the resourceclaim
// controller deallocates a claim once its pods are gone, and only when it
// removes the last reservation itself (pkg/controller/resourceclaim,
// syncClaim); DynamicResources' Unreserve, after a failed binding, removes
// the pod's reservation and keeps the allocation for its next attempt. That
// attempt either binds the pod where the claim is allocated, or has
// DynamicResources' PostFilter deallocate the claim, but only if its Filter
// found the claim unavailable on some node, which it is asked about only
// once the filters before it passed there. So the claim stays allocated
// when no pod that uses it is pending, or when each one that is fits
// nowhere: not on the claim's node (where it would be bound), and on no
// other node past the filters before DynamicResources'.
func (c *cluster) leftAllocated(name string, claim *resourceapi.ResourceClaim) string {
	uses := func(p *v1.Pod) bool {
		names, _ := claimsOf(p)
		return slices.Contains(names, name)
	}
	for _, pods := range c.bound {
		if slices.ContainsFunc(pods, uses) {
			return ""
		}
	}
	at := allocatedNode(claim)
	var users []string
	for _, p := range c.pending {
		if !uses(p) {
			continue
		}
		if fits, _ := c.fits(p, at); fits {
			return ""
		}
		for _, node := range c.nodeNames() {
			if node == at {
				continue
			}
			if ok, _ := c.fitsBeforeDevices(p, node); ok {
				return ""
			}
		}
		users = append(users, p.Name)
	}
	if len(users) == 0 {
		return "no pod that uses it is pending, and no bound pod uses it"
	}
	return fmt.Sprintf("pods %v use it and fit nowhere, neither on its node nor past the filters before "+
		"DynamicResources' on another, so no PostFilter deallocates it", users)
}

// writers says, of each claim that a line of broken names, who wrote it
// and when (its managed fields: each manager's last write, by operation
// and subresource), so that a broken claim tells whether the scheduler or
// the resourceclaim controller wrote it last.
func (d *devices) writers(broken []string) string {
	var b strings.Builder
	for _, name := range sortedKeys(d.claims) {
		if !slices.ContainsFunc(broken, func(line string) bool { return strings.Contains(line, "claim "+name+" ") }) {
			continue
		}
		claim := d.claims[name]
		fmt.Fprintf(&b, "\n\tclaim %s (resource version %s) was written by:", name, claim.ResourceVersion)
		for _, mf := range claim.ManagedFields {
			when := "?"
			if mf.Time != nil {
				when = mf.Time.UTC().Format("15:04:05")
			}
			op := string(mf.Operation)
			if mf.Subresource != "" {
				op += " " + mf.Subresource
			}
			fmt.Fprintf(&b, " %s (%s at %s);", mf.Manager, op, when)
		}
	}
	return b.String()
}

// sortedKeys returns m's keys, sorted.
func sortedKeys[T any](m map[string]T) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
