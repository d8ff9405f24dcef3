// This file asks DynamicResources' allocator about one request on one
// node, instead of keeping rules of its own. Whether the request gets what
// it asks for is the allocator's answer for the request alone, with
// everything as the scheduler has it. How many devices each stage leaves
// is the allocator's answer for each device the node might reach, on its
// own (the pool's other devices taken out of the slices), to a question
// that drops one input after the other:
//
//	reaches   one device of the class with its selectors dropped, the
//	          request's too, every taint tolerated, nothing taken: does
//	          the node reach it (a complete pool for the node, a device
//	          for the node)?
//	inClass   the class's selectors back
//	matches   the request's selectors back
//	notHeld   the devices other claims hold taken
//	usable    the request's own tolerations: the device is free for it
//
// The inputs are the scheduler's (dramanager.NewStatic); only the
// questions are explain's.

package explain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/dynamic-resource-allocation/structured"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/plugins/dynamicresources"
)

// allocateTimeout bounds the allocator's search for a whole request on one
// node, as the scheduler's Filter is bounded by default (filterTimeout):
// a request it cannot fill makes it try every combination of devices.
const allocateTimeout = configv1.DynamicResourcesFilterTimeoutDefault

// choice is what one exact request, or one choice of a firstAvailable
// request, asks for.
type choice struct {
	name        string // "gpu", or "gpu/big" for a choice
	class       string
	all         bool
	count       int64
	adminAccess bool
	selectors   bool
	tolerations []resourceapi.DeviceToleration
	// claim is the pod's claim with this request or choice alone, and
	// none of the claim's constraints (they concern requests together):
	// what the allocator is asked.
	claim *resourceapi.ResourceClaim
}

// requestChoices returns what req of claim asks for: itself if it is
// exact, its subrequests in order if it is a firstAvailable list.
func requestChoices(claim *resourceapi.ResourceClaim, req resourceapi.DeviceRequest) []choice {
	alone := func(r resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
		c := claim.DeepCopy()
		c.Spec.Devices.Requests = []resourceapi.DeviceRequest{r}
		c.Spec.Devices.Constraints = nil
		return c
	}
	if x := req.Exactly; x != nil {
		return []choice{{name: req.Name, class: x.DeviceClassName, all: x.AllocationMode == resourceapi.DeviceAllocationModeAll,
			count: x.Count, adminAccess: ptr.Deref(x.AdminAccess, false), selectors: len(x.Selectors) > 0,
			tolerations: x.Tolerations, claim: alone(req)}}
	}
	var choices []choice
	for _, sub := range req.FirstAvailable {
		choices = append(choices, choice{name: resourceclaim.CreateSubRequestRef(req.Name, sub.Name),
			class: sub.DeviceClassName, all: sub.AllocationMode == resourceapi.DeviceAllocationModeAll, count: sub.Count,
			selectors: len(sub.Selectors) > 0, tolerations: sub.Tolerations,
			claim: alone(resourceapi.DeviceRequest{Name: req.Name, FirstAvailable: []resourceapi.DeviceSubRequest{sub}})})
	}
	return choices
}

// wanted is how many devices an ExactCount request asks for (the API
// defaults an unset count to one).
func (ch choice) wanted() int { return max(int(ch.count), 1) }

// asks says what the request asks for: its class and how many devices.
func (ch choice) asks() string {
	s := "class " + ch.class + ", "
	if ch.all {
		s += "all matching devices"
	} else {
		s += devices(ch.wanted())
	}
	if ch.adminAccess {
		s += ", admin access"
	}
	return s
}

// stage is one question about a device (see the file's comment); each
// stage asks what the one before asked, with one more input as the
// scheduler has it.
type stage int

// The stages, in order.
const (
	reaches stage = iota
	inClass
	matches
	notHeld
	usable
)

// asked is the claim the allocator is asked at stage st about one device:
// one device of the choice; without the request's selectors before
// matches, tolerating every taint before usable.
func (ch choice) asked(st stage) *resourceapi.ResourceClaim {
	c := ch.claim.DeepCopy()
	req := &c.Spec.Devices.Requests[0]
	if x := req.Exactly; x != nil {
		oneDevice(&x.AllocationMode, &x.Count, &x.Selectors, &x.Tolerations, st)
	} else {
		sub := &req.FirstAvailable[0]
		oneDevice(&sub.AllocationMode, &sub.Count, &sub.Selectors, &sub.Tolerations, st)
	}
	return c
}

// oneDevice makes a request's fields ask for one device at stage st.
func oneDevice(mode *resourceapi.DeviceAllocationMode, count *int64, selectors *[]resourceapi.DeviceSelector,
	tolerations *[]resourceapi.DeviceToleration, st stage) {
	*mode, *count = resourceapi.DeviceAllocationModeExactCount, 1
	if st < matches {
		*selectors = nil
	}
	if st < usable {
		// An empty key with Exists tolerates every taint.
		*tolerations = append(*tolerations, resourceapi.DeviceToleration{Operator: resourceapi.DeviceTolerationOpExists})
	}
}

// allocatorQuestions asks the allocator, over the scheduler's view of the
// objects, about requests and devices.
type allocatorQuestions struct {
	classes structured.DeviceClassLister
	// slices are every ResourceSlice with DeviceTaintRules applied, in
	// the order of pools (driver, pool) and names; pools holds them by
	// pool.
	slices []*resourceapi.ResourceSlice
	pools  map[poolID][]*resourceapi.ResourceSlice
	// taken is what the allocator treats as taken: other claims'
	// devices.
	taken structured.AllocatedState
	cel   *cel.Cache
	// whole is the allocator as PreFilter builds it.
	whole structured.Allocator
}

// poolID names a resource pool: the driver's pool.
type poolID struct{ driver, pool string }

// newAllocatorQuestions reads the scheduler's view of the objects out of
// dra and builds the allocator over it, as PreFilter does.
func newAllocatorQuestions(ctx context.Context, c *deviceCluster) (*allocatorQuestions, error) {
	q := &allocatorQuestions{classes: c.dra.DeviceClasses(), pools: map[poolID][]*resourceapi.ResourceSlice{},
		cel: dynamicresources.NewCELCache()}
	var err error
	if q.slices, err = c.dra.ResourceSlices().ListWithDeviceTaintRules(); err != nil {
		return nil, err
	}
	sort.Slice(q.slices, func(i, j int) bool {
		a, b := q.slices[i].Spec, q.slices[j].Spec
		return a.Driver < b.Driver || (a.Driver == b.Driver && (a.Pool.Name < b.Pool.Name ||
			(a.Pool.Name == b.Pool.Name && q.slices[i].Name < q.slices[j].Name)))
	})
	for _, s := range q.slices {
		id := poolID{s.Spec.Driver, s.Spec.Pool.Name}
		q.pools[id] = append(q.pools[id], s)
	}
	taken, err := c.dra.ResourceClaims().GatherAllocatedState()
	if err != nil {
		return nil, err
	}
	q.taken = *taken
	q.whole, err = dynamicresources.NewAllocator(ctx, q.taken, q.classes, q.slices, q.cel)
	return q, err
}

// candidate is a device a node might reach: one of a slice for that node
// by name, or of a slice not bound to one node.
type candidate struct {
	id     deviceID
	device *resourceapi.Device
	slice  *resourceapi.ResourceSlice
}

// candidates returns the devices node might reach, in slice order.
func (q *allocatorQuestions) candidates(node *v1.Node) []candidate {
	var out []candidate
	for _, s := range q.slices {
		if name := ptr.Deref(s.Spec.NodeName, ""); name != "" && name != node.Name {
			continue
		}
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			out = append(out, candidate{deviceID{s.Spec.Driver, s.Spec.Pool.Name, d.Name}, d, s})
		}
	}
	return out
}

// alone returns the slices of d's pool with every device but d taken out:
// the pool stays whole (its slices, its counters), with d its only device.
func (q *allocatorQuestions) alone(d candidate) []*resourceapi.ResourceSlice {
	pool := q.pools[poolID{d.id.driver, d.id.pool}]
	out := make([]*resourceapi.ResourceSlice, len(pool))
	for i, s := range pool {
		c := *s
		c.Spec.Devices = nil
		if s == d.slice {
			c.Spec.Devices = []resourceapi.Device{*d.device}
		}
		out[i] = &c
	}
	return out
}

// answer asks the allocator the question of stage st about device d of
// node, for ch.
func (q *allocatorQuestions) answer(ctx context.Context, node *v1.Node, ch choice, d candidate,
	st stage) (bool, error) {
	classes, taken := q.classes, q.taken
	if st == reaches {
		classes = anyClass{q.classes}
	}
	if st < notHeld {
		taken = nothingTaken()
	}
	a, err := dynamicresources.NewAllocator(ctx, taken, classes, q.alone(d), q.cel)
	if err != nil {
		return false, err
	}
	return granted(a.Allocate(ctx, node, []*resourceapi.ResourceClaim{ch.asked(st)}))
}

// granted reads an allocator's answer for one claim: a failure
// particular to the node is a no, as Filter takes it.
func granted(results []resourceapi.AllocationResult, err error) (bool, error) {
	if errors.Is(err, structured.ErrFailedAllocationOnNode) {
		return false, nil
	}
	return len(results) > 0, err
}

// passes returns how many stages, from reaches up to last, d passes in a
// row.
func (q *allocatorQuestions) passes(ctx context.Context, node *v1.Node, ch choice, d candidate,
	last stage) (int, error) {
	for st := reaches; st <= last; st++ {
		ok, err := q.answer(ctx, node, ch, d, st)
		if err != nil || !ok {
			return int(st), err
		}
	}
	return int(last) + 1, nil
}

// fits asks the allocator whether ch gets what it asks for on node, on its
// own, with everything as the scheduler has it.
func (q *allocatorQuestions) fits(ctx context.Context, node *v1.Node, ch choice) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, allocateTimeout)
	defer cancel()
	ok, err := granted(q.whole.Allocate(ctx, node, []*resourceapi.ResourceClaim{ch.claim}))
	if errors.Is(err, context.DeadlineExceeded) {
		return false, fmt.Errorf("on node %s the allocator found no answer within %v", node.Name, allocateTimeout)
	}
	return ok, err
}

// count runs the devices node might reach through the stages for ch, and
// asks whether ch fits. An error of the allocator's for the whole request
// is the error; one met asking about a single device (a selector that
// fails on it) leaves the device at the stage it failed, and is kept.
func (q *allocatorQuestions) count(ctx context.Context, node *v1.Node, ch choice) (funnel, error) {
	var f funnel
	for _, d := range q.candidates(node) {
		passed, err := q.passes(ctx, node, ch, d, usable)
		if err != nil && f.failed == "" {
			f.failed = err.Error()
		}
		f.add(d, passed, ch)
	}
	var err error
	f.fits, err = q.fits(ctx, node, ch)
	return f, err
}

// selectorError returns the first error the allocator meets evaluating
// the selectors of ch's class and of ch on the devices node might reach.
func (q *allocatorQuestions) selectorError(ctx context.Context, node *v1.Node, ch choice) error {
	for _, d := range q.candidates(node) {
		if _, err := q.passes(ctx, node, ch, d, matches); err != nil {
			return err
		}
	}
	return nil
}

// anyClass lists the classes with their selectors dropped.
type anyClass struct{ structured.DeviceClassLister }

// Get returns the class of that name without its selectors.
func (l anyClass) Get(name string) (*resourceapi.DeviceClass, error) {
	class, err := l.DeviceClassLister.Get(name)
	if err != nil {
		return nil, err
	}
	class = class.DeepCopy()
	class.Spec.Selectors = nil
	return class, nil
}

// nothingTaken is an allocated state in which no device is taken.
func nothingTaken() structured.AllocatedState {
	return structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection()}
}

// funnel counts one request's devices on one node, each stage among the
// survivors of the one before: reachable, in the class, matching (the
// request's selectors accept them too), not allocated to another claim,
// and without an untolerated taint. What is left is free for the request;
// fits is whether the allocator gives the request what it asks for.
type funnel struct {
	reachable, inClass, matching, allocated, tainted int
	// drivers are the reachable devices' drivers, said when none is in
	// the class.
	drivers []string
	// taints are the taints of the devices only taints keep away, that
	// the request does not tolerate, as key=value:Effect.
	taints []string
	fits   bool
	// failed is the first error the allocator met asking about one
	// device.
	failed string
}

// add counts device d, which passed the first passed stages, for ch.
func (f *funnel) add(d candidate, passed int, ch choice) {
	if passed > int(reaches) {
		f.reachable++
		if !slices.Contains(f.drivers, d.id.driver) {
			f.drivers = append(f.drivers, d.id.driver)
		}
	}
	f.inClass += boolToInt(passed > int(inClass))
	f.matching += boolToInt(passed > int(matches))
	f.allocated += boolToInt(passed == int(notHeld))
	if passed == int(usable) {
		f.tainted++
		for _, t := range untolerated(d.device, ch.tolerations) {
			if !slices.Contains(f.taints, t) {
				f.taints = append(f.taints, t)
			}
		}
	}
}

// boolToInt counts a true as one.
func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// untolerated returns the taints of d that none of tolerations tolerates,
// as key=value:Effect, leaving out those of effect None, which are
// information only.
func untolerated(d *resourceapi.Device, tolerations []resourceapi.DeviceToleration) []string {
	var out []string
	for _, taint := range d.Taints {
		if taint.Effect == resourceapi.DeviceTaintEffectNone || slices.ContainsFunc(tolerations,
			func(t resourceapi.DeviceToleration) bool { return resourceclaim.ToleratesTaint(t, taint) }) {
			continue
		}
		out = append(out, fmt.Sprintf("%s=%s:%s", taint.Key, taint.Value, taint.Effect))
	}
	return out
}

// devices says "1 device" or "n devices".
func devices(n int) string {
	if n == 1 {
		return "1 device"
	}
	return fmt.Sprintf("%d devices", n)
}

// free is how many devices are left for the request.
func (f funnel) free() int { return f.matching - f.allocated - f.tainted }

// text is the node's row: the funnel's stages, then the verdict.
func (f funnel) text(ch choice) string {
	s := f.stages(ch)
	if f.matching > 0 {
		s += " → " + f.verdict(ch)
	}
	if f.failed != "" {
		s += "; on a device the allocator fails: " + f.failed
	}
	return s
}

// stages says how many devices each stage of the funnel kept.
func (f funnel) stages(ch choice) string {
	var parts []string
	switch {
	case f.reachable == 0:
		return "no devices"
	case f.inClass == 0:
		return fmt.Sprintf("%s (of %s), none in the class", devices(f.reachable), strings.Join(f.drivers, ", "))
	case !ch.selectors:
		parts = append(parts, devices(f.reachable), matching(f.matching, ""))
	case f.matching == 0:
		return fmt.Sprintf("%s, %d in the class, none match the request's selectors", devices(f.reachable), f.inClass)
	default:
		parts = append(parts, devices(f.reachable), fmt.Sprintf("%d in the class", f.inClass),
			matching(f.matching, " the request's selectors"))
	}
	if f.allocated > 0 {
		parts = append(parts, fmt.Sprintf("%d allocated to other claims", f.allocated))
	}
	if f.tainted > 0 {
		parts = append(parts, fmt.Sprintf("%d tainted without a toleration (%s)", f.tainted, strings.Join(f.taints, ", ")))
	}
	return strings.Join(parts, ", ")
}

// verdict says whether the allocator gives the request its devices, with
// the free devices against what it asks for.
func (f funnel) verdict(ch choice) string {
	free := f.free()
	switch {
	case f.fits:
		return fmt.Sprintf("%d free, enough for this request on its own", free)
	case ch.all && free == f.matching:
		return fmt.Sprintf("all %d free, but the allocator cannot give them together (shared counters or capacity)", free)
	case ch.all:
		return fmt.Sprintf("%d of %d free, all wanted", free, f.matching)
	case free == 0:
		return "none free"
	case free >= ch.wanted():
		return fmt.Sprintf("%d free, but the allocator finds no %d of them together (shared counters or capacity)",
			free, ch.wanted())
	}
	return fmt.Sprintf("%d free, %d wanted", free, ch.wanted())
}

// matching says "1 matches" or "n match", and what.
func matching(n int, what string) string {
	if n == 1 {
		return "1 matches" + what
	}
	return fmt.Sprintf("%d match%s", n, what)
}
