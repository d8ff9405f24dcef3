// This file explains, below the Filter table, why DynamicResources could
// not allocate a pod's devices. The record says only "cannot allocate all
// claims" per node; the device section says, for each request of each of
// the pod's claims and each node DynamicResources rejected, how many
// devices the node can reach, how many of them the request's class and
// selectors accept, how many of those other claims hold or untolerated
// taints keep away, against what the request asks for. It reads the
// cluster's objects as they are now, with the client explain already has
// (never the scheduler's internals), and evaluates selectors with the CEL
// library the allocator itself uses.

package explain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/attempt"
)

// dynamicResources is the DRA plugin's name in records (upstream's
// names.DynamicResources). explain reads records, not plugins, so it
// names the plugin rather than import it.
const dynamicResources = "DynamicResources"

// filterErrorPrefix starts the message of an attempt that a Filter
// plugin's error ended (the framework's wrapping): an allocator error,
// such as a CEL runtime error, ends the attempt on the node it met it.
var filterErrorPrefix = fmt.Sprintf("running %q filter plugin: ", dynamicResources)

// deviceReport is the device section: what DynamicResources said, and one
// block per claim or request.
type deviceReport struct {
	// said are DynamicResources' distinct reasons, in node order.
	said []string
	// failed, when set, is why the cluster's objects could not be read:
	// the section says only that.
	failed string
	// noClaims: the pod names no ResourceClaim.
	noClaims bool
	blocks   []deviceBlock
	// notes follow the blocks: what was not read, and the nodes where
	// each request fits on its own.
	notes []string
}

// deviceBlock is one claim (already allocated, or that cannot be
// examined) or one request of a claim, with a verdict per node, or a
// problem that holds on every node.
type deviceBlock struct {
	heading string
	problem string
	rows    []deviceRow
}

// deviceRow is one node's verdict on a claim or request.
type deviceRow struct{ node, text string }

// draRejection says what DynamicResources said in r and on which nodes;
// ok is false when it rejected nothing. It rejects a pod at PreFilter (a
// claim or class missing: no node examined), a node at Filter, or ends the
// attempt with a Filter error (the allocator's, a CEL runtime error say:
// no node verdicts).
func draRejection(r *attempt.Record) (said, nodes []string, ok bool) {
	switch {
	case r.PreFilter != nil && r.PreFilter.Plugin == dynamicResources:
		return []string{r.PreFilter.Reason}, nil, true
	case r.Result == attempt.SchedulerError && strings.Contains(r.Message, filterErrorPrefix):
		_, err, _ := strings.Cut(r.Message, filterErrorPrefix)
		return []string{err}, nil, true
	}
	for _, n := range r.SortedNodes() {
		if n.RejectedBy != dynamicResources {
			continue
		}
		nodes = append(nodes, n.Name)
		if !slices.Contains(said, n.Reason) {
			said = append(said, n.Reason)
		}
	}
	return said, nodes, len(nodes) > 0
}

// explainDevices builds the device section of pod, whose last attempt r
// is; nil when DynamicResources rejected nothing in it.
func explainDevices(ctx context.Context, client kubernetes.Interface, pod *v1.Pod, r *attempt.Record) *deviceReport {
	said, nodes, ok := draRejection(r)
	if !ok {
		return nil
	}
	rep := &deviceReport{said: said, noClaims: len(pod.Spec.ResourceClaims) == 0}
	c, err := readDeviceCluster(ctx, client, pod.Namespace, nodes)
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Cannot explain the pod's devices", "pod", klog.KObj(pod), "err", err)
		rep.failed = err.Error()
		return rep
	}
	rep.notes = c.notes
	// The CEL features are the scheduler's with v1.37.1's default gates
	// (DRAConsumableCapacity on, DRAListTypeAttributes off); ten entries,
	// as its cache, hold any pod's selectors.
	e := &deviceExplainer{deviceCluster: c, ctx: ctx, pod: pod, nodes: nodes,
		cel:   cel.NewCache(10, cel.Features{EnableConsumableCapacity: true}),
		reach: map[string]reach{}, fits: map[string]bool{}}
	for _, n := range nodes {
		e.fits[n] = true
	}
	for i := range pod.Spec.ResourceClaims {
		rep.blocks = append(rep.blocks, e.claim(&pod.Spec.ResourceClaims[i])...)
	}
	if alone := e.fitAlone(); len(alone) > 0 && len(rep.blocks) > 0 {
		rep.notes = append(rep.notes, fmt.Sprintf("On %s each request finds enough devices on its own: what fails is "+
			"their combination (requests wanting the same devices, a matchAttribute constraint, shared counters "+
			"or capacity).", strings.Join(alone, ", ")))
	}
	return rep
}

// deviceCluster is what the device section reads: the nodes in question,
// every ResourceSlice (with DeviceTaintRules applied, as the scheduler's
// slice tracker does), DeviceClass and ResourceClaim.
type deviceCluster struct {
	// nodes maps each node in question to its object; nil if it is gone.
	nodes map[string]*v1.Node
	// pools holds every slice by pool, in pool order.
	pools   map[poolID][]*resourceapi.ResourceSlice
	poolIDs []poolID
	classes map[string]*resourceapi.DeviceClass
	// claims are by namespace/name.
	claims map[string]*resourceapi.ResourceClaim
	// allocated are the devices claims hold exclusively: the allocation
	// results of every claim, except admin access and shared ones (which
	// leave the device to others, as upstream's allocated-device index).
	allocated sets.Set[deviceID]
	// notes say what could not be read, but did not stop the section.
	notes []string
}

// poolID names a resource pool: the driver's pool.
type poolID struct{ driver, pool string }

// deviceID names a device, as allocation results do.
type deviceID struct{ driver, pool, device string }

func (d deviceID) String() string { return d.driver + "/" + d.pool + "/" + d.device }

// readDeviceCluster reads the nodes named and every slice, class, claim
// and DeviceTaintRule. Claims of other namespaces than the pod's (in
// namespace) and DeviceTaintRules are optional: a user who may not list
// them gets the section without them, and a note.
func readDeviceCluster(ctx context.Context, client kubernetes.Interface, namespace string,
	nodes []string) (*deviceCluster, error) {
	c := &deviceCluster{nodes: map[string]*v1.Node{}, pools: map[poolID][]*resourceapi.ResourceSlice{},
		classes: map[string]*resourceapi.DeviceClass{}, claims: map[string]*resourceapi.ResourceClaim{},
		allocated: sets.New[deviceID]()}
	for _, name := range nodes {
		node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			c.nodes[name] = nil
		case err != nil:
			return nil, fmt.Errorf("reading node %s: %w", name, err)
		default:
			c.nodes[name] = node
		}
	}
	rs := client.ResourceV1()
	sliceList, err := rs.ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ResourceSlices: %w", err)
	}
	classList, err := rs.DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing DeviceClasses: %w", err)
	}
	claimList, err := rs.ResourceClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		// A user who may read only the pod's namespace still learns
		// about the pod's claims, and the devices that namespace holds.
		claimList, err = rs.ResourceClaims(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing ResourceClaims: %w", err)
		}
		c.notes = append(c.notes, fmt.Sprintf("ResourceClaims of namespaces other than %s were not read: "+
			"devices they hold are counted as free.", namespace))
	}
	var rules []resourceapi.DeviceTaintRule
	if ruleList, err := rs.DeviceTaintRules().List(ctx, metav1.ListOptions{}); err != nil {
		c.notes = append(c.notes, fmt.Sprintf("DeviceTaintRules were not read (%v): their taints are not counted.", err))
	} else {
		rules = ruleList.Items
	}
	c.addSlices(sliceList.Items, rules)
	for i := range classList.Items {
		c.classes[classList.Items[i].Name] = &classList.Items[i]
	}
	c.addClaims(claimList.Items)
	return c, nil
}

// addSlices files slices by pool, DeviceTaintRules applied, in the order
// the allocator goes through them: pools by driver and name, a pool's
// slices by name.
func (c *deviceCluster) addSlices(slices []resourceapi.ResourceSlice, rules []resourceapi.DeviceTaintRule) {
	for i := range slices {
		s := withTaintRules(&slices[i], rules)
		id := poolID{s.Spec.Driver, s.Spec.Pool.Name}
		if _, ok := c.pools[id]; !ok {
			c.poolIDs = append(c.poolIDs, id)
		}
		c.pools[id] = append(c.pools[id], s)
	}
	sort.Slice(c.poolIDs, func(i, j int) bool {
		a, b := c.poolIDs[i], c.poolIDs[j]
		return a.driver < b.driver || (a.driver == b.driver && a.pool < b.pool)
	})
	for _, pool := range c.pools {
		sort.Slice(pool, func(i, j int) bool { return pool[i].Name < pool[j].Name })
	}
}

// addClaims files claims by namespace/name, and the devices their
// allocations hold exclusively.
func (c *deviceCluster) addClaims(claims []resourceapi.ResourceClaim) {
	for i := range claims {
		claim := &claims[i]
		c.claims[claim.Namespace+"/"+claim.Name] = claim
		if claim.Status.Allocation == nil {
			continue
		}
		for _, res := range claim.Status.Allocation.Devices.Results {
			if !ptr.Deref(res.AdminAccess, false) && res.ShareID == nil {
				c.allocated.Insert(deviceID{res.Driver, res.Pool, res.Device})
			}
		}
	}
}

// withTaintRules returns s with the taints of the DeviceTaintRules that
// select its devices added (a copy, if any does), as the scheduler's
// slice tracker does: a rule without a selector selects nothing; a
// selector's unset fields match any driver, pool or device.
func withTaintRules(s *resourceapi.ResourceSlice, rules []resourceapi.DeviceTaintRule) *resourceapi.ResourceSlice {
	out := s
	for _, rule := range rules {
		sel := rule.Spec.DeviceSelector
		if sel == nil || (sel.Driver != nil && *sel.Driver != s.Spec.Driver) ||
			(sel.Pool != nil && *sel.Pool != s.Spec.Pool.Name) {
			continue
		}
		for i, d := range s.Spec.Devices {
			if sel.Device != nil && *sel.Device != d.Name {
				continue
			}
			if out == s {
				out = s.DeepCopy()
			}
			out.Spec.Devices[i].Taints = append(out.Spec.Devices[i].Taints, rule.Spec.Taint)
		}
	}
	return out
}

// deviceExplainer explains one pod's claims on the nodes in question.
type deviceExplainer struct {
	*deviceCluster
	ctx   context.Context
	pod   *v1.Pod
	nodes []string
	cel   *cel.Cache
	// reach caches what each node can reach.
	reach map[string]reach
	// fits says, per node, whether every request (and allocated claim)
	// examined so far is satisfiable there on its own.
	fits map[string]bool
}

// claim explains one of the pod's claims: a block saying why it cannot be
// examined, or where its allocation is usable, or a block per request.
func (e *deviceExplainer) claim(podClaim *v1.PodResourceClaim) []deviceBlock {
	name, mustCheckOwner, err := resourceclaim.Name(e.pod, podClaim)
	switch {
	case errors.Is(err, resourceclaim.ErrClaimNotFound):
		e.unknown()
		return []deviceBlock{{heading: fmt.Sprintf("the pod's claim %q (template %s)", podClaim.Name,
			ptr.Deref(podClaim.ResourceClaimTemplateName, "")),
			problem: "no ResourceClaim made from it yet (kube-controller-manager's resourceclaim controller makes it)"}}
	case err != nil:
		e.unknown()
		return []deviceBlock{{heading: fmt.Sprintf("the pod's claim %q", podClaim.Name), problem: err.Error()}}
	case name == nil:
		return nil // nothing to allocate: the claim was deliberately not made
	}
	key := e.pod.Namespace + "/" + *name
	title := "claim " + *name
	if podClaim.ResourceClaimTemplateName != nil {
		title += " (from template " + *podClaim.ResourceClaimTemplateName + ")"
	}
	claim := e.claims[key]
	problem := ""
	switch {
	case claim == nil:
		problem = fmt.Sprintf("ResourceClaim %s does not exist", key)
	case claim.DeletionTimestamp != nil:
		problem = fmt.Sprintf("ResourceClaim %s is being deleted", key)
	case mustCheckOwner:
		if err := resourceclaim.IsForPod(e.pod, claim, false); err != nil {
			problem = err.Error()
		}
	}
	switch {
	case problem != "":
		e.unknown()
		return []deviceBlock{{heading: title, problem: problem}}
	case claim.Status.Allocation != nil:
		return []deviceBlock{e.allocatedClaim(title, claim)}
	}
	return e.requests(title, claim)
}

// requests explains each request of claim, titled title: each choice of a
// firstAvailable request in order, for the allocator takes the first
// that fits.
func (e *deviceExplainer) requests(title string, claim *resourceapi.ResourceClaim) []deviceBlock {
	var blocks []deviceBlock
	for _, req := range claim.Spec.Devices.Requests {
		choices := requestChoices(req)
		if len(choices) == 0 {
			e.unknown()
			blocks = append(blocks, deviceBlock{heading: fmt.Sprintf("%s, request %s", title, req.Name),
				problem: "unknown request type"})
			continue
		}
		// A request fits on a node if one of its choices does.
		fits := map[string]bool{}
		for i, choice := range choices {
			heading := fmt.Sprintf("%s, request %s (%s)", title, choice.name, choice.asks())
			if len(choices) > 1 {
				heading = fmt.Sprintf("%s, request %s (choice %d of %d: %s)", title, choice.name, i+1,
					len(choices), choice.asks())
			}
			blocks = append(blocks, e.request(heading, claim, choice, fits))
		}
		for _, n := range e.nodes {
			e.fits[n] = e.fits[n] && fits[n]
		}
	}
	return blocks
}

// fitAlone returns the nodes where every request finds enough devices on
// its own.
func (e *deviceExplainer) fitAlone() []string {
	var alone []string
	for _, n := range e.nodes {
		if e.fits[n] {
			alone = append(alone, n)
		}
	}
	return alone
}

// unknown notes that a claim or request could not be examined: no node is
// known to satisfy every request.
func (e *deviceExplainer) unknown() {
	for n := range e.fits {
		e.fits[n] = false
	}
}

// allocatedClaim explains an allocated claim: it is usable only on the
// nodes its allocation's node selector matches, and nowhere once a
// device's binding failed ("resourceclaim not available on the node"
// elsewhere).
func (e *deviceExplainer) allocatedClaim(heading string, claim *resourceapi.ResourceClaim) deviceBlock {
	a := claim.Status.Allocation
	var devices []string
	for _, res := range a.Devices.Results {
		devices = append(devices, deviceID{res.Driver, res.Pool, res.Device}.String())
	}
	b := deviceBlock{heading: fmt.Sprintf("%s, allocated (%s)", heading, strings.Join(devices, ", "))}
	if failed := bindingFailure(claim); failed != "" {
		e.unknown()
		b.problem = failed + ": not usable on any node until it is deallocated"
		return b
	}
	var sel *nodeaffinity.NodeSelector
	if a.NodeSelector != nil {
		var err error
		if sel, err = nodeaffinity.NewNodeSelector(a.NodeSelector); err != nil {
			e.unknown()
			b.problem = fmt.Sprintf("its allocation's node selector is invalid: %v", err)
			return b
		}
	}
	for _, name := range e.nodes {
		node := e.deviceCluster.nodes[name]
		switch {
		case node == nil:
			e.fits[name] = false
			b.rows = append(b.rows, deviceRow{name, "the node no longer exists"})
		case sel == nil:
			b.rows = append(b.rows, deviceRow{name, "usable here (the allocation is usable on every node)"})
		case sel.Match(node):
			b.rows = append(b.rows, deviceRow{name, "usable here (the allocation's node selector matches)"})
		default:
			e.fits[name] = false
			b.rows = append(b.rows, deviceRow{name, "not usable here: the allocation's node selector does not match"})
		}
	}
	return b
}

// bindingFailure says which of claim's devices failed binding: a device
// result with binding failure conditions, one of which is True in the
// device's status ("" if none). A failed claim waits for PostFilter (or
// its owner) to deallocate it.
func bindingFailure(claim *resourceapi.ResourceClaim) string {
	for _, res := range claim.Status.Allocation.Devices.Results {
		for _, st := range claim.Status.Devices {
			if st.Driver != res.Driver || st.Pool != res.Pool || st.Device != res.Device {
				continue
			}
			for _, cond := range res.BindingFailureConditions {
				if c := apimeta.FindStatusCondition(st.Conditions, cond); c != nil && c.Status == metav1.ConditionTrue {
					return fmt.Sprintf("device %s failed binding (%s: %s)",
						deviceID{res.Driver, res.Pool, res.Device}, cond, c.Message)
				}
			}
		}
	}
	return ""
}

// request explains one request (or choice) of claim on each node, and
// marks in fits the nodes where it finds enough devices on its own.
func (e *deviceExplainer) request(heading string, claim *resourceapi.ResourceClaim, r deviceRequest,
	fits map[string]bool) deviceBlock {
	b := deviceBlock{heading: heading}
	class := e.classes[r.class]
	if class == nil {
		e.unknown()
		b.problem = fmt.Sprintf("DeviceClass %s does not exist", r.class)
		return b
	}
	m := &matcher{ctx: e.ctx, cel: e.cel, class: class, claim: claim, request: r, memo: map[deviceID]verdict{}}
	if len(e.nodes) == 0 {
		// No node was examined: a selector that cannot be evaluated is
		// all there is to say, on whichever device shows it.
		for _, id := range e.poolIDs {
			for _, s := range e.pools[id] {
				for i := range s.Spec.Devices {
					if _, err := m.matches(deviceID{s.Spec.Driver, s.Spec.Pool.Name, s.Spec.Devices[i].Name},
						&s.Spec.Devices[i]); err != nil {
						b.problem = err.Error()
						return b
					}
				}
			}
		}
		return b
	}
	for _, name := range e.nodes {
		node := e.deviceCluster.nodes[name]
		if node == nil {
			b.rows = append(b.rows, deviceRow{name, "the node no longer exists"})
			continue
		}
		re, err := e.reachable(node)
		if err != nil {
			e.unknown()
			return deviceBlock{heading: heading, problem: err.Error()}
		}
		f, err := e.count(m, re)
		if err != nil {
			e.unknown()
			return deviceBlock{heading: heading, problem: err.Error()}
		}
		b.rows = append(b.rows, deviceRow{name, f.text(r)})
		if f.enough(r) {
			fits[name] = true
		}
	}
	return b
}

// renderDevices writes the device section.
func renderDevices(w io.Writer, rep *deviceReport) {
	fmt.Fprintln(w)
	said := make([]string, len(rep.said))
	for i, s := range rep.said {
		said[i] = `"` + s + `"`
	}
	fmt.Fprintf(w, "Devices, as the cluster is now (%s said %s):\n", dynamicResources, strings.Join(said, "; "))
	if rep.failed != "" {
		fmt.Fprintf(w, "  cannot tell: %s\n", rep.failed)
		return
	}
	shown := 0
	for _, b := range rep.blocks {
		switch {
		case b.problem != "":
			fmt.Fprintf(w, "  %s: %s\n", b.heading, b.problem)
		case len(b.rows) > 0:
			fmt.Fprintf(w, "  %s:\n", b.heading)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			for _, r := range b.rows {
				fmt.Fprintf(tw, "    %s\t%s\n", r.node, r.text)
			}
			_ = tw.Flush()
		default:
			continue
		}
		shown++
	}
	switch {
	case rep.noClaims:
		fmt.Fprintln(w, "  the pod has no ResourceClaims: its devices are extended resources backed by a "+
			"DeviceClass, which this section does not examine")
	case shown == 0:
		fmt.Fprintln(w, "  every claim and class the pod names exists now, and their selectors evaluate")
	}
	for _, n := range rep.notes {
		fmt.Fprintln(w, n)
	}
}
