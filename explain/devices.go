// This file explains, below the Filter table, why DynamicResources could
// not allocate a pod's devices. The record says only "cannot allocate all
// claims" per node; the device section says, for each of the pod's claims
// and each node DynamicResources rejected, what stands in the way. It keeps
// no rules of the allocator's: every fact comes from the record, from the
// cluster's objects as they are now, or from DynamicResources and its
// allocator asked about those objects.
//
// Where each fact comes from:
//
//   - Which nodes DynamicResources rejected, and what it said: the attempt
//     record (draRejection), which holds the plugin's own verdict per node.
//     It is all the plugin computes: the allocator answers yes or no.
//   - The objects: the client explain already has lists ResourceSlices,
//     DeviceClasses, ResourceClaims and DeviceTaintRules (readDeviceCluster),
//     and dramanager.NewStatic puts them through the scheduler's own claim
//     tracker and slice tracker: DeviceTaintRules applied, taken devices
//     gathered, as the scheduler's informers would.
//   - What DynamicResources says of the pod now, per node, and of each claim
//     alone (it exists, it is the pod's, its classes exist; an allocated
//     claim is usable on the node): the plugin's PreFilter and Filter,
//     through dynamicresources.Check.
//   - Why a request is short of devices on a node (devicecount.go): the
//     allocator the plugin builds (dynamicresources.NewAllocator), asked
//     about each device the node might reach, one question at a time.
//   - Why an allocated claim failed binding: the plugin's own check
//     (dynamicresources.BindingFailure).
//
// The record is of the attempt's moment, the rest of now: where the plugin
// says something else now, the section says so.

package explain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/dynamicresources"
	"github.com/minisched/minisched/plugins/dynamicresources/dramanager"
)

// dynamicResources is the DRA plugin's name in records.
const dynamicResources = dynamicresources.Name

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
	// now is what DynamicResources says of the pod now, on the nodes in
	// question that still exist (nowNodes, in the same order).
	now      dynamicresources.Verdict
	nowNodes []string
	// notes follow the blocks: what was not read, where DynamicResources
	// says something else now, and the nodes where each request fits on
	// its own.
	notes []string
}

// deviceBlock is one claim (already allocated, or that cannot be
// examined) or one request of a claim, with a verdict per node, or a
// problem that holds on every node.
type deviceBlock struct {
	heading string
	// request is "claim/request" for a request's block (the same for
	// each choice of a firstAvailable request), "claim" for a claim's.
	request string
	problem string
	rows    []deviceRow
}

// deviceRow is one node's verdict on a claim or request: text says it; ok
// when the claim is usable there, or the allocator gives the request its
// devices there on its own; failed is the allocator's error there, if any.
type deviceRow struct {
	node, text string
	ok         bool
	failed     string
}

// draRejection says what DynamicResources said in r and on which nodes;
// ok is false when it rejected nothing; aborted when a Filter error ended
// the attempt. It rejects a pod at PreFilter (a claim or class missing: no
// node examined), a node at Filter, or ends the attempt with a Filter error
// (the allocator's, a CEL runtime error say: no node verdicts).
func draRejection(r *attempt.Record) (said, nodes []string, aborted, ok bool) {
	switch {
	case r.PreFilter != nil && r.PreFilter.Plugin == dynamicResources:
		return []string{r.PreFilter.Reason}, nil, false, true
	case r.Result == attempt.SchedulerError && strings.Contains(r.Message, filterErrorPrefix):
		_, err, _ := strings.Cut(r.Message, filterErrorPrefix)
		return []string{err}, nil, true, true
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
	return said, nodes, false, len(nodes) > 0
}

// explainDevices builds the device section of pod, whose last attempt r
// is; nil when DynamicResources rejected nothing in it.
func explainDevices(ctx context.Context, client kubernetes.Interface, pod *v1.Pod, r *attempt.Record) *deviceReport {
	said, nodes, aborted, ok := draRejection(r)
	if !ok {
		return nil
	}
	rep := &deviceReport{said: said, noClaims: len(pod.Spec.ResourceClaims) == 0}
	e, err := newDeviceExplainer(ctx, client, pod, nodes, aborted)
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Cannot explain the pod's devices", "pod", klog.KObj(pod), "err", err)
		rep.failed = err.Error()
		return rep
	}
	defer e.stop()
	rep.notes = e.notes
	for i := range pod.Spec.ResourceClaims {
		rep.blocks = append(rep.blocks, e.claim(&pod.Spec.ResourceClaims[i])...)
	}
	if err := e.checkNow(rep); err != nil {
		rep.notes = append(rep.notes, fmt.Sprintf("What %s says now is not known: %v.", dynamicResources, err))
		return rep
	}
	rep.notes = append(rep.notes, e.nowNotes(rep, r)...)
	return rep
}

// deviceExplainer explains one pod's claims on the nodes in question.
type deviceExplainer struct {
	*deviceCluster
	*allocatorQuestions
	ctx   context.Context
	pod   *v1.Pod
	nodes []string
	// aborted: a Filter error ended the attempt, and no node has a
	// verdict; the requests are searched for the error on every node.
	aborted bool
	// fits says, per node, whether every request (and allocated claim)
	// examined so far is satisfiable there on its own.
	fits map[string]bool
}

// newDeviceExplainer reads the cluster (every node too when aborted) and
// returns the explainer of pod on nodes. Stop it when done.
func newDeviceExplainer(ctx context.Context, client kubernetes.Interface, pod *v1.Pod, nodes []string,
	aborted bool) (*deviceExplainer, error) {
	c, err := readDeviceCluster(ctx, client, pod.Namespace, nodes)
	if err == nil && aborted {
		err = c.readAllNodes(ctx, client)
	}
	if err == nil {
		err = c.takeIn(ctx)
	}
	if err != nil {
		return nil, err
	}
	q, err := newAllocatorQuestions(ctx, c)
	if err != nil {
		c.stop()
		return nil, err
	}
	e := &deviceExplainer{deviceCluster: c, allocatorQuestions: q, ctx: ctx, pod: pod, nodes: nodes,
		aborted: aborted, fits: map[string]bool{}}
	for _, n := range nodes {
		e.fits[n] = true
	}
	return e, nil
}

// existing returns the nodes in question that still exist, as names and
// objects.
func (e *deviceExplainer) existing() ([]string, []*v1.Node) {
	var names []string
	var nodes []*v1.Node
	for _, name := range e.nodes {
		if node := e.deviceCluster.nodes[name]; node != nil {
			names, nodes = append(names, name), append(nodes, node)
		}
	}
	return names, nodes
}

// claim explains one of the pod's claims: a block saying why it cannot be
// examined (DynamicResources' PreFilter of the claim alone), or where its
// allocation is usable, or a block per request.
func (e *deviceExplainer) claim(podClaim *v1.PodResourceClaim) []deviceBlock {
	title, hint, name := e.claimTitle(podClaim)
	v, err := dynamicresources.Check(e.ctx, e.dra, onlyClaim(e.pod, podClaim), nil)
	switch {
	case err != nil:
		e.unknown()
		return []deviceBlock{{heading: title, request: name, problem: err.Error()}}
	case v.PreFilter.IsSkip():
		return nil // nothing to allocate: the claim was deliberately not made
	case !v.PreFilter.IsSuccess():
		e.unknown()
		return []deviceBlock{{heading: title, request: name, problem: v.PreFilter.Message() + hint}}
	}
	claim, err := e.dra.ResourceClaims().Get(e.pod.Namespace, name)
	switch {
	case err != nil:
		e.unknown()
		return []deviceBlock{{heading: title, problem: err.Error()}}
	case claim.Status.Allocation != nil:
		return []deviceBlock{e.allocatedClaim(title, podClaim, claim)}
	}
	return e.requests(title, claim)
}

// claimTitle names the pod's claim as the scheduler does (through the
// pod's status for a template's claim): its heading, a hint to add to a
// problem, and the ResourceClaim's name ("" when there is none).
func (e *deviceExplainer) claimTitle(podClaim *v1.PodResourceClaim) (title, hint, name string) {
	claimName, _, err := resourceclaim.Name(e.pod, podClaim)
	template := ptr.Deref(podClaim.ResourceClaimTemplateName, "")
	switch {
	case errors.Is(err, resourceclaim.ErrClaimNotFound):
		return fmt.Sprintf("the pod's claim %q (template %s)", podClaim.Name, template),
			" (kube-controller-manager's resourceclaim controller makes it)", ""
	case err != nil || claimName == nil:
		return fmt.Sprintf("the pod's claim %q", podClaim.Name), "", ""
	case template != "":
		return "claim " + *claimName + " (from template " + template + ")", "", *claimName
	}
	return "claim " + *claimName, "", *claimName
}

// onlyClaim is pod with only the claim podClaim and no containers, so no
// extended resource either: what DynamicResources says of that claim
// alone.
func onlyClaim(pod *v1.Pod, podClaim *v1.PodResourceClaim) *v1.Pod {
	p := pod.DeepCopy()
	p.Spec.ResourceClaims = []v1.PodResourceClaim{*podClaim}
	p.Spec.Containers, p.Spec.InitContainers, p.Spec.Resources, p.Spec.Overhead = nil, nil, nil, nil
	return p
}

// unknown notes that a claim or request could not be examined: no node is
// known to satisfy every request.
func (e *deviceExplainer) unknown() {
	for n := range e.fits {
		e.fits[n] = false
	}
}

// allocatedClaim explains an allocated claim: on each node, whether
// DynamicResources' Filter finds it usable there; usable nowhere once a
// device failed binding.
func (e *deviceExplainer) allocatedClaim(title string, podClaim *v1.PodResourceClaim,
	claim *resourceapi.ResourceClaim) deviceBlock {
	a := claim.Status.Allocation
	var devices []string
	for _, res := range a.Devices.Results {
		devices = append(devices, deviceID{res.Driver, res.Pool, res.Device}.String())
	}
	b := deviceBlock{heading: fmt.Sprintf("%s, allocated (%s)", title, strings.Join(devices, ", ")), request: claim.Name}
	if err := dynamicresources.BindingFailure(claim); err != nil {
		e.unknown()
		b.problem = err.Error() + ": not usable on any node until it is deallocated"
		return b
	}
	names, nodes := e.existing()
	v, err := dynamicresources.Check(e.ctx, e.dra, onlyClaim(e.pod, podClaim), nodes)
	if err != nil {
		e.unknown()
		b.problem = err.Error()
		return b
	}
	verdicts := map[string]*framework.Status{}
	for i, name := range names {
		verdicts[name] = v.Nodes[i]
	}
	for _, name := range e.nodes {
		row := allocatedRow(name, verdicts)
		e.fits[name] = e.fits[name] && row.ok
		b.rows = append(b.rows, row)
	}
	return b
}

// allocatedRow is an allocated claim's row on node, from Filter's verdicts.
func allocatedRow(node string, verdicts map[string]*framework.Status) deviceRow {
	status, exists := verdicts[node]
	switch {
	case !exists:
		return deviceRow{node: node, text: "the node no longer exists"}
	case status.IsSuccess():
		return deviceRow{node: node, text: "usable here", ok: true}
	}
	return deviceRow{node: node, text: "not usable here: " + status.Message()}
}

// requests explains each request of claim, titled title: each choice of a
// firstAvailable request in order, for the allocator takes the first
// that fits.
func (e *deviceExplainer) requests(title string, claim *resourceapi.ResourceClaim) []deviceBlock {
	var blocks []deviceBlock
	for _, req := range claim.Spec.Devices.Requests {
		choices := requestChoices(claim, req)
		// A request fits on a node if one of its choices does.
		fits := map[string]bool{}
		for i, ch := range choices {
			heading := fmt.Sprintf("%s, request %s (%s)", title, ch.name, ch.asks())
			if len(choices) > 1 {
				heading = fmt.Sprintf("%s, request %s (choice %d of %d: %s)", title, ch.name, i+1,
					len(choices), ch.asks())
			}
			b := e.request(heading, ch)
			b.request = claim.Name + "/" + req.Name
			for _, row := range b.rows {
				fits[row.node] = fits[row.node] || row.ok
			}
			blocks = append(blocks, b)
		}
		for _, n := range e.nodes {
			e.fits[n] = e.fits[n] && fits[n]
		}
	}
	return blocks
}

// request explains one request (or choice) on each node. When no node was
// examined because an error ended the attempt, it looks for the error on
// every node instead.
func (e *deviceExplainer) request(heading string, ch choice) deviceBlock {
	b := deviceBlock{heading: heading}
	if e.aborted {
		if err := e.firstError(ch); err != nil {
			b.problem = err.Error()
		}
		return b
	}
	for _, name := range e.nodes {
		row := deviceRow{node: name, text: "the node no longer exists"}
		if node := e.deviceCluster.nodes[name]; node != nil {
			row = e.requestRow(node, ch)
		}
		b.rows = append(b.rows, row)
	}
	return b.collapse()
}

// requestRow is ch's row on node.
func (e *deviceExplainer) requestRow(node *v1.Node, ch choice) deviceRow {
	f, err := e.count(e.ctx, node, ch)
	if err != nil {
		return deviceRow{node: node.Name, text: "the allocator fails: " + err.Error(), failed: err.Error()}
	}
	return deviceRow{node: node.Name, text: f.text(ch), ok: f.fits}
}

// collapse turns a block whose every row is the same error of the
// allocator's into that error.
func (b deviceBlock) collapse() deviceBlock {
	if len(b.rows) == 0 || b.rows[0].failed == "" {
		return b
	}
	for _, r := range b.rows {
		if r.failed != b.rows[0].failed {
			return b
		}
	}
	b.problem, b.rows = b.rows[0].failed, nil
	return b
}

// firstError returns the first error the allocator meets with ch on any
// node of the cluster, nil if none.
func (e *deviceExplainer) firstError(ch choice) error {
	for _, node := range e.allNodes {
		if err := e.selectorError(e.ctx, node, ch); err != nil {
			return err
		}
	}
	return nil
}

// checkNow asks DynamicResources about the whole pod now, on the nodes in
// question that still exist.
func (e *deviceExplainer) checkNow(rep *deviceReport) error {
	names, nodes := e.existing()
	v, err := dynamicresources.Check(e.ctx, e.dra, e.pod, nodes)
	rep.now, rep.nowNodes = v, names
	return err
}

// nowNotes are the notes that compare what DynamicResources says now
// (rep.now) with what it said in the attempt (r).
func (e *deviceExplainer) nowNotes(rep *deviceReport, r *attempt.Record) []string {
	notes, passed := preFilterNotes(rep, r)
	if !passed {
		return notes
	}
	return append(notes, e.nodeNotes(rep, r)...)
}

// preFilterNotes say where PreFilter's verdict now differs from the
// attempt's (unless a block says it already); passed is whether PreFilter
// lets the pod through now.
func preFilterNotes(rep *deviceReport, r *attempt.Record) (notes []string, passed bool) {
	pre, was := rep.now.PreFilter, ""
	if r.PreFilter != nil && r.PreFilter.Plugin == dynamicResources {
		was = r.PreFilter.Reason
	}
	switch {
	case pre.IsRejected() || pre.Code() == framework.Error:
		if pre.Message() != was && !rep.shows(pre.Message()) {
			notes = append(notes, fmt.Sprintf("Now %s rejects the pod before any node is examined: %s.",
				dynamicResources, pre.Message()))
		}
		return notes, false
	case was != "":
		notes = append(notes, fmt.Sprintf("Now %s's PreFilter lets the pod through: the cluster changed since "+
			"the attempt.", dynamicResources))
	}
	return notes, true
}

// nodeNotes say which nodes Filter accepts now, where it gives another
// reason than in the attempt (unless a block says it already), and where
// it rejects a node although each request finds its devices there on its
// own.
func (e *deviceExplainer) nodeNotes(rep *deviceReport, r *attempt.Record) []string {
	said := map[string]string{}
	for _, n := range r.Nodes {
		if n.RejectedBy == dynamicResources {
			said[n.Name] = n.Reason
		}
	}
	var notes, accepted, alone []string
	for i, name := range rep.nowNodes {
		status := rep.now.Nodes[i]
		if status.IsSuccess() {
			accepted = append(accepted, name)
			continue
		}
		if status.Message() != said[name] && !rep.shows(status.Message()) {
			notes = append(notes, fmt.Sprintf("Now %s says on %s: %s.", dynamicResources, name, status.Message()))
		}
		if status.IsRejected() && e.fits[name] && len(rep.blocks) > 0 {
			alone = append(alone, name)
		}
	}
	if len(accepted) > 0 {
		notes = append(notes, fmt.Sprintf("Now %s accepts %s: the cluster changed since the attempt.",
			dynamicResources, strings.Join(accepted, ", ")))
	}
	if len(alone) > 0 {
		notes = append(notes, fmt.Sprintf("On %s each request finds enough devices on its own: what fails is "+
			"their combination (requests wanting the same devices, a matchAttribute constraint, shared counters "+
			"or capacity).", strings.Join(alone, ", ")))
	}
	return notes
}

// shows reports whether a block of the section says msg already.
func (rep *deviceReport) shows(msg string) bool {
	return slices.ContainsFunc(rep.blocks, func(b deviceBlock) bool { return strings.Contains(b.problem, msg) })
}

// deviceCluster is what the device section reads: the nodes in question
// and the DRA objects, taken in by the scheduler's own trackers.
type deviceCluster struct {
	// nodes maps each node in question to its object; nil if it is gone.
	nodes map[string]*v1.Node
	// allNodes are every node of the cluster, read only when an error
	// ended the attempt (readAllNodes).
	allNodes []*v1.Node
	// objs are the DRA objects as listed; takeIn puts them in dra, which
	// holds them as the scheduler's informers would, until stop.
	objs dramanager.Objects
	dra  *dramanager.Manager
	stop func()
	// notes say what could not be read, but did not stop the section.
	notes []string
}

// deviceID names a device, as allocation results do.
type deviceID struct{ driver, pool, device string }

// String writes the device as driver/pool/device.
func (d deviceID) String() string { return d.driver + "/" + d.pool + "/" + d.device }

// readDeviceCluster reads the nodes named and every slice, class, claim
// and DeviceTaintRule. Claims of other namespaces than the pod's (in
// namespace) and DeviceTaintRules are optional: a user who may not list
// them gets the section without them, and a note.
func readDeviceCluster(ctx context.Context, client kubernetes.Interface, namespace string,
	nodes []string) (*deviceCluster, error) {
	c := &deviceCluster{nodes: map[string]*v1.Node{}}
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
	var err error
	c.objs, err = c.listObjects(ctx, client, namespace)
	return c, err
}

// takeIn puts the DRA objects through the scheduler's trackers
// (dramanager.NewStatic).
func (c *deviceCluster) takeIn(ctx context.Context) error {
	var err error
	c.dra, c.stop, err = dramanager.NewStatic(ctx, c.objs)
	return err
}

// listObjects lists the DRA objects: the slices and classes, the claims
// (of the pod's namespace only, with a note, when the user may not list
// them all) and the DeviceTaintRules (none, with a note, when the user may
// not list them).
func (c *deviceCluster) listObjects(ctx context.Context, client kubernetes.Interface,
	namespace string) (dramanager.Objects, error) {
	rs := client.ResourceV1()
	sliceList, err := rs.ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return dramanager.Objects{}, fmt.Errorf("listing ResourceSlices: %w", err)
	}
	classList, err := rs.DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return dramanager.Objects{}, fmt.Errorf("listing DeviceClasses: %w", err)
	}
	claimList, err := rs.ResourceClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		// A user who may read only the pod's namespace still learns
		// about the pod's claims, and the devices that namespace holds.
		claimList, err = rs.ResourceClaims(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return dramanager.Objects{}, fmt.Errorf("listing ResourceClaims: %w", err)
		}
		c.notes = append(c.notes, fmt.Sprintf("ResourceClaims of namespaces other than %s were not read: "+
			"devices they hold are counted as free.", namespace))
	}
	objs := dramanager.Objects{Slices: sliceList.Items, Classes: classList.Items, Claims: claimList.Items}
	if ruleList, err := rs.DeviceTaintRules().List(ctx, metav1.ListOptions{}); err != nil {
		c.notes = append(c.notes, fmt.Sprintf("DeviceTaintRules were not read (%v): their taints are not counted.", err))
	} else {
		objs.TaintRules = ruleList.Items
	}
	return objs, nil
}

// readAllNodes reads every node of the cluster.
func (c *deviceCluster) readAllNodes(ctx context.Context, client kubernetes.Interface) error {
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	for i := range list.Items {
		c.allNodes = append(c.allNodes, &list.Items[i])
	}
	return nil
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
