// This file counts, for one request and one node, the devices the
// allocator would consider: the pools the node reaches, the devices the
// request's class and selectors accept, and those other claims hold or
// taints keep away.

package explain

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// deviceRequest is what decides which devices an exact request, or one
// choice of a firstAvailable request, can have.
type deviceRequest struct {
	name        string // "gpu", or "gpu/big" for a choice
	class       string
	selectors   []resourceapi.DeviceSelector
	mode        resourceapi.DeviceAllocationMode
	count       int64
	adminAccess bool
	tolerations []resourceapi.DeviceToleration
}

// requestChoices returns what req asks for: itself if it is exact, its
// subrequests in order if it is a firstAvailable list; none if it is of
// a kind this minisched does not know.
func requestChoices(req resourceapi.DeviceRequest) []deviceRequest {
	if x := req.Exactly; x != nil {
		return []deviceRequest{{name: req.Name, class: x.DeviceClassName, selectors: x.Selectors,
			mode: x.AllocationMode, count: x.Count, adminAccess: ptr.Deref(x.AdminAccess, false),
			tolerations: x.Tolerations}}
	}
	var choices []deviceRequest
	for _, sub := range req.FirstAvailable {
		choices = append(choices, deviceRequest{name: resourceclaim.CreateSubRequestRef(req.Name, sub.Name),
			class: sub.DeviceClassName, selectors: sub.Selectors, mode: sub.AllocationMode, count: sub.Count,
			tolerations: sub.Tolerations})
	}
	return choices
}

// all reports whether the request asks for every matching device.
func (r deviceRequest) all() bool { return r.mode == resourceapi.DeviceAllocationModeAll }

// wanted is how many devices an ExactCount request asks for (the API
// defaults an unset count to one).
func (r deviceRequest) wanted() int { return max(int(r.count), 1) }

// asks says what the request asks for: its class and how many devices.
func (r deviceRequest) asks() string {
	s := "class " + r.class + ", "
	if r.all() {
		s += "all matching devices"
	} else {
		s += devices(r.wanted())
	}
	if r.adminAccess {
		s += ", admin access"
	}
	return s
}

// devices says "1 device" or "n devices".
func devices(n int) string {
	if n == 1 {
		return "1 device"
	}
	return fmt.Sprintf("%d devices", n)
}

// reach is what one node can reach: the devices of the complete pools
// whose slices are meant for it, and the pools it would reach but that
// are incomplete (a driver is publishing them), which the allocator does
// not use.
type reach struct {
	devices    []reachableDevice
	incomplete []string
}

// reachableDevice is one device a node can reach.
type reachableDevice struct {
	id     deviceID
	device *resourceapi.Device
}

// reachable returns what node can reach, as the allocator gathers pools:
// a slice is for the node by its nodeName, allNodes or a nodeSelector
// that matches the node's labels (or, with per-device node selection, by
// its devices'); a pool counts at the newest generation of its slices for
// the node, and only complete, with all resourceSliceCount slices of that
// generation present; a newer generation elsewhere means the driver is
// replacing the pool, which is then left out.
func (e *deviceExplainer) reachable(node *v1.Node) (reach, error) {
	if re, ok := e.reach[node.Name]; ok {
		return re, nil
	}
	var re reach
	for _, id := range e.poolIDs {
		all := e.pools[id]
		var forNode []*resourceapi.ResourceSlice
		for _, s := range all {
			ok, err := sliceForNode(s, node)
			switch {
			case err != nil:
				return reach{}, err
			case !ok:
			case len(forNode) == 0 || s.Spec.Pool.Generation > forNode[0].Spec.Pool.Generation:
				forNode = []*resourceapi.ResourceSlice{s}
			case s.Spec.Pool.Generation == forNode[0].Spec.Pool.Generation:
				forNode = append(forNode, s)
			}
		}
		if len(forNode) == 0 {
			continue
		}
		gen, want := forNode[0].Spec.Pool.Generation, forNode[0].Spec.Pool.ResourceSliceCount
		if int64(len(forNode)) != want {
			atGen, newer := 0, false
			for _, s := range all {
				atGen += boolToInt(s.Spec.Pool.Generation == gen)
				newer = newer || s.Spec.Pool.Generation > gen
			}
			if newer {
				continue
			}
			if int64(atGen) != want {
				re.incomplete = append(re.incomplete, fmt.Sprintf("%s/%s (%d of %d slices)", id.driver, id.pool, atGen, want))
				continue
			}
		}
		for _, s := range forNode {
			for i := range s.Spec.Devices {
				d := &s.Spec.Devices[i]
				if ptr.Deref(s.Spec.PerDeviceNodeSelection, false) {
					ok, err := nodeMatches(node, d.NodeName, d.AllNodes, d.NodeSelector)
					if err != nil {
						return reach{}, fmt.Errorf("device %s in slice %s: %w", d.Name, s.Name, err)
					}
					if !ok {
						continue
					}
				}
				re.devices = append(re.devices, reachableDevice{deviceID{s.Spec.Driver, s.Spec.Pool.Name, d.Name}, d})
			}
		}
	}
	e.reach[node.Name] = re
	return re, nil
}

// boolToInt counts a true as one.
func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sliceForNode reports whether slice s offers devices to node.
func sliceForNode(s *resourceapi.ResourceSlice, node *v1.Node) (bool, error) {
	if ptr.Deref(s.Spec.PerDeviceNodeSelection, false) {
		for _, d := range s.Spec.Devices {
			ok, err := nodeMatches(node, d.NodeName, d.AllNodes, d.NodeSelector)
			if err != nil {
				return false, fmt.Errorf("device %s in slice %s: %w", d.Name, s.Name, err)
			}
			if ok {
				return true, nil
			}
		}
		return false, nil
	}
	ok, err := nodeMatches(node, s.Spec.NodeName, s.Spec.AllNodes, s.Spec.NodeSelector)
	if err != nil {
		return false, fmt.Errorf("slice %s: %w", s.Name, err)
	}
	return ok, nil
}

// nodeMatches reports whether node is the one named, or all nodes are
// meant, or the selector matches its labels (and fields).
func nodeMatches(node *v1.Node, name *string, all *bool, selector *v1.NodeSelector) (bool, error) {
	switch {
	case ptr.Deref(name, "") != "":
		return node.Name == *name, nil
	case ptr.Deref(all, false):
		return true, nil
	case selector != nil:
		sel, err := nodeaffinity.NewNodeSelector(selector)
		if err != nil {
			return false, fmt.Errorf("invalid node selector: %w", err)
		}
		return sel.Match(node), nil
	}
	return false, nil
}

// funnel counts one request's devices on one node, each stage among the
// survivors of the one before: reachable, in the class (its selectors
// accept them), matching (the request's selectors accept them too), not
// allocated to another claim, and without an untolerated taint. What is
// left is free for the request.
type funnel struct {
	reachable, inClass, matching, allocated, tainted int
	// drivers are the reachable devices' drivers, said when none is in
	// the class.
	drivers []string
	// taints are the untolerated taints met, as key=value:Effect.
	taints []string
	// incomplete are the pools being published, not used.
	incomplete []string
}

// count runs the devices re holds through the funnel of m's request.
func (e *deviceExplainer) count(m *matcher, re reach) (funnel, error) {
	f := funnel{incomplete: re.incomplete}
	for _, d := range re.devices {
		f.reachable++
		if !slices.Contains(f.drivers, d.id.driver) {
			f.drivers = append(f.drivers, d.id.driver)
		}
		v, err := m.matches(d.id, d.device)
		if err != nil {
			return funnel{}, err
		}
		f.inClass += boolToInt(v.inClass)
		if !v.matches {
			continue
		}
		f.matching++
		// Admin access may use a device others hold.
		if !m.request.adminAccess && e.allocated.Has(d.id) {
			f.allocated++
			continue
		}
		if t := untolerated(d.device, m.request.tolerations); t != "" {
			f.tainted++
			if !slices.Contains(f.taints, t) {
				f.taints = append(f.taints, t)
			}
		}
	}
	return f, nil
}

// untolerated returns the first taint of d that keeps it from a request
// with tolerations (NoSchedule or NoExecute, and none of them tolerates
// it), as key=value:Effect; "" if none does.
func untolerated(d *resourceapi.Device, tolerations []resourceapi.DeviceToleration) string {
	for _, taint := range d.Taints {
		if taint.Effect != resourceapi.DeviceTaintEffectNoSchedule && taint.Effect != resourceapi.DeviceTaintEffectNoExecute {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(t resourceapi.DeviceToleration) bool {
			return resourceclaim.ToleratesTaint(t, taint)
		}) {
			return fmt.Sprintf("%s=%s:%s", taint.Key, taint.Value, taint.Effect)
		}
	}
	return ""
}

// free is how many devices are left for the request.
func (f funnel) free() int { return f.matching - f.allocated - f.tainted }

// enough reports whether the request, alone, would get its devices: All
// wants every matching device free (at least one, and no pool that is
// still being published); ExactCount wants its count.
func (f funnel) enough(r deviceRequest) bool {
	if r.all() {
		return f.matching > 0 && f.free() == f.matching && len(f.incomplete) == 0
	}
	return f.free() >= r.wanted()
}

// text is the node's row: the funnel's stages, then the verdict.
func (f funnel) text(r deviceRequest) string {
	s := f.stages(r)
	if len(f.incomplete) > 0 {
		s += "; not used until complete: pool " + strings.Join(f.incomplete, ", pool ")
	}
	if f.matching == 0 {
		return s
	}
	return s + " → " + f.verdict(r)
}

// stages says how many devices each stage of the funnel kept.
func (f funnel) stages(r deviceRequest) string {
	var parts []string
	switch {
	case f.reachable == 0:
		return "no devices"
	case f.inClass == 0:
		return fmt.Sprintf("%s (of %s), none in the class", devices(f.reachable), strings.Join(f.drivers, ", "))
	case len(r.selectors) == 0:
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

// verdict weighs the free devices against what the request asks for.
func (f funnel) verdict(r deviceRequest) string {
	free := f.free()
	switch {
	case f.enough(r):
		return fmt.Sprintf("%d free, enough for this request on its own", free)
	case r.all() && len(f.incomplete) > 0:
		return "all cannot be allocated while a pool is incomplete"
	case r.all():
		return fmt.Sprintf("%d of %d free, all wanted", free, f.matching)
	case free == 0:
		return "none free"
	}
	return fmt.Sprintf("%d free, %d wanted", free, r.wanted())
}

// matching says "1 matches" or "n match", and what.
func matching(n int, what string) string {
	if n == 1 {
		return "1 matches" + what
	}
	return fmt.Sprintf("%d match%s", n, what)
}

// matcher evaluates a request's selectors on devices: the class's first,
// then the request's own, each a CEL expression compiled by the
// allocator's CEL library. An error names the class or the claim, and
// the device, in the allocator's words.
type matcher struct {
	ctx     context.Context
	cel     *cel.Cache
	class   *resourceapi.DeviceClass
	claim   *resourceapi.ResourceClaim
	request deviceRequest
	// memo holds each device's verdict: a device reaches several nodes.
	memo map[deviceID]verdict
}

// verdict is what a request's selectors say of a device: whether the
// class's accept it, and whether the request's do too.
type verdict struct{ inClass, matches bool }

// matches evaluates the class's and the request's selectors on device d
// (id).
func (m *matcher) matches(id deviceID, d *resourceapi.Device) (verdict, error) {
	if v, seen := m.memo[id]; seen {
		return v, nil
	}
	var v verdict
	var err error
	v.inClass, err = m.selectorsMatch("class "+m.class.Name, m.class.Spec.Selectors, id, d)
	if err == nil && v.inClass {
		v.matches, err = m.selectorsMatch("claim "+klog.KObj(m.claim).String(), m.request.selectors, id, d)
	}
	if err != nil {
		return verdict{}, err
	}
	m.memo[id] = v
	return v, nil
}

// selectorsMatch evaluates selectors (of owner: "class x" or "claim
// ns/y") on device d.
func (m *matcher) selectorsMatch(owner string, selectors []resourceapi.DeviceSelector, id deviceID,
	d *resourceapi.Device) (bool, error) {
	for i, sel := range selectors {
		if sel.CEL == nil {
			return false, fmt.Errorf("%s: selector #%d: CEL expression empty (unsupported selector type?)", owner, i)
		}
		expr := m.cel.GetOrCompile(sel.CEL.Expression)
		if expr.Error != nil {
			return false, fmt.Errorf("%s: selector #%d: CEL compile error: %w", owner, i, expr.Error)
		}
		ok, _, err := expr.DeviceMatches(m.ctx, cel.Device{Driver: id.driver,
			AllowMultipleAllocations: d.AllowMultipleAllocations, Attributes: d.Attributes, Capacity: d.Capacity})
		if err != nil {
			return false, fmt.Errorf("%s: selector #%d on device %s: CEL runtime error: %w", owner, i, id,
				cel.EnhanceRuntimeError(err))
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}
