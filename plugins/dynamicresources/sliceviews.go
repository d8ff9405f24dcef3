// What PreFilter hands the allocator: where it can, not every device with
// everything it says of itself, but only the devices the claims' one
// DeviceClass selects, with the class's selectors already answered.
//
// The allocator (k8s.io/dynamic-resource-allocation, the library
// kube-scheduler runs) is given every ResourceSlice, and on every node of
// every cycle it converts that node's slices to its own types and
// evaluates the class's CEL selectors on the devices it reaches. A
// selector's answer depends only on the device and the class, so it holds
// until either changes: sliceViews evaluates each selector once per device
// and class version, keeps the answers, and gives the allocator views of
// the slices holding only the devices the class selects, and the class
// without its selectors. When no request has selectors of its own and no
// claim has constraints, nothing reads a device's attributes any more, and
// the views leave them out as well.
//
// The views are taken only where they cannot change what the allocator
// decides: every unallocated claim asks for devices of one class, which
// exists and whose selectors compile and evaluate without error on every
// device, and no slice has devices that consume shared counters, carry
// binding conditions or choose their nodes one by one, or shares a device
// name with another of its pool. Otherwise the allocator gets everything,
// as kube-scheduler's does. TestSliceViewsAllocateAlike checks the two
// against each other, node by node.

package dynamicresources

import (
	"context"
	"errors"
	"fmt"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	draapi "k8s.io/dynamic-resource-allocation/api"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// sliceViews keeps, per ResourceSlice version, what the views need: whether
// the slice may be narrowed at all, and which of its devices each class
// selects. PreFilter calls it, one cycle at a time (each profile, and each
// reader such as explain, has a plugin of its own); the mutex keeps that
// an assumption of speed, not of safety. The views it returns are
// read-only and shared by Filter's goroutines.
type sliceViews struct {
	mu sync.Mutex
	// slices are the entries by slice version; entries of slices no longer
	// listed are dropped at the end of each call.
	slices map[sliceVersion]*sliceEntry
	// classes are each class's last version, without its selectors.
	classes map[string]strippedClass
	// pass counts the calls, to find the entries a call did not touch.
	pass uint64
	// last is the last views made, given again while the slices listed are
	// the same objects, and the class and keepAttributes the same.
	last struct {
		class          *resourceapi.DeviceClass
		keepAttributes bool
		sources        sets.Set[*resourceapi.ResourceSlice]
		views          []*resourceapi.ResourceSlice
		stripped       *resourceapi.DeviceClass
	}
}

// sliceVersion names one version of a slice: its UID and resourceVersion.
// A slice with no resourceVersion (one never stored, as in tests) has no
// version and is examined afresh each time.
type sliceVersion struct {
	uid             types.UID
	resourceVersion string
}

// classVersion names one version of a DeviceClass, like sliceVersion.
type classVersion struct {
	uid             types.UID
	resourceVersion string
}

// sliceEntry is what is known of one slice version.
type sliceEntry struct {
	// narrowable says no device of the slice consumes shared counters,
	// carries binding conditions or uses per-device node selection, the
	// slice declares no counters, and no two of its devices share a name:
	// dropping a device cannot change the pool's validity, its counters or
	// its order among the pools.
	narrowable bool
	// selected is, for the class version last asked about, whether it
	// selects each device, in order; errored says a selector failed on
	// some device (the allocator reports such errors itself).
	class    classVersion
	selected []bool
	errored  bool
	// view is the last view made, of source, for class, with or without
	// the devices' attributes.
	view struct {
		source      *resourceapi.ResourceSlice
		class       classVersion
		noAttribute bool
		slice       *resourceapi.ResourceSlice
	}
	// pass is the last call that used the entry.
	pass uint64
}

// strippedClass is a class version and its copy without selectors.
type strippedClass struct {
	version classVersion
	class   *resourceapi.DeviceClass
}

// allocatorInput returns the classes and slices to build the allocator
// over, for the claims it is to allocate: views, when the rules above
// allow them, else classes and slices unchanged. narrowed says which.
func (v *sliceViews) allocatorInput(ctx context.Context, celCache *cel.Cache, classes structured.DeviceClassLister,
	slices []*resourceapi.ResourceSlice, claims []*resourceapi.ResourceClaim) (_ structured.DeviceClassLister, _ []*resourceapi.ResourceSlice, narrowed bool) {
	className, keepAttributes, ok := oneClass(claims)
	if !ok {
		return classes, slices, false
	}
	class, err := classes.Get(className)
	if err != nil || !selectorsSet(class) {
		return classes, slices, false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if last := &v.last; last.views != nil && last.class == class && last.keepAttributes == keepAttributes &&
		sameObjects(slices, last.sources) {
		return classWithoutSelectors{DeviceClassLister: classes, class: last.stripped}, last.views, true
	}
	v.last.views = nil
	if v.slices == nil {
		v.slices = map[sliceVersion]*sliceEntry{}
		v.classes = map[string]strippedClass{}
	}
	v.pass++
	defer v.sweep(len(slices))
	version := classVersion{uid: class.UID, resourceVersion: class.ResourceVersion}
	views := make([]*resourceapi.ResourceSlice, len(slices))
	for i, slice := range slices {
		entry := v.entry(slice)
		if !entry.narrowable {
			return classes, slices, false
		}
		if entry.classify(ctx, celCache, class, version, slice); entry.errored {
			return classes, slices, false
		}
		views[i] = entry.viewOf(slice, version, !keepAttributes)
	}
	if duplicateInPool(slices) {
		return classes, slices, false
	}
	stripped := v.stripped(class, version)
	v.last.class, v.last.keepAttributes, v.last.sources, v.last.views, v.last.stripped =
		class, keepAttributes, sets.New(slices...), views, stripped
	return classWithoutSelectors{DeviceClassLister: classes, class: stripped}, views, true
}

// sameObjects says the list holds the objects of the set, in any order
// (the lister's order is a map's).
func sameObjects(list []*resourceapi.ResourceSlice, set sets.Set[*resourceapi.ResourceSlice]) bool {
	if len(list) != len(set) {
		return false
	}
	for _, slice := range list {
		if !set.Has(slice) {
			return false
		}
	}
	return true
}

// oneClass returns the one class every request and subrequest of the
// claims names, and whether anything reads the devices' attributes besides
// the class's selectors (a request's own selectors, a claim's
// constraints). ok is false when there are no claims, or several classes,
// or a request the allocator refuses (no class, derived attributes): the
// allocator then gets everything and says what is wrong.
func oneClass(claims []*resourceapi.ResourceClaim) (className string, keepAttributes, ok bool) {
	same := func(name string) bool {
		if name == "" || (className != "" && name != className) {
			return false
		}
		className = name
		return true
	}
	for _, claim := range claims {
		keepAttributes = keepAttributes || len(claim.Spec.Devices.Constraints) > 0
		for _, request := range claim.Spec.Devices.Requests {
			switch {
			case request.Exactly != nil:
				if !same(request.Exactly.DeviceClassName) || len(request.Exactly.DerivedAttributes) > 0 {
					return "", false, false
				}
				keepAttributes = keepAttributes || len(request.Exactly.Selectors) > 0
			case len(request.FirstAvailable) > 0:
				for _, sub := range request.FirstAvailable {
					if !same(sub.DeviceClassName) || len(sub.DerivedAttributes) > 0 {
						return "", false, false
					}
					keepAttributes = keepAttributes || len(sub.Selectors) > 0
				}
			default:
				return "", false, false
			}
		}
	}
	return className, keepAttributes, className != ""
}

// selectorsSet says every selector of the class is a CEL expression (the
// allocator reads each selector's CEL without asking).
func selectorsSet(class *resourceapi.DeviceClass) bool {
	for _, selector := range class.Spec.Selectors {
		if selector.CEL == nil {
			return false
		}
	}
	return true
}

// entry returns the entry of the slice's version, made now if there is
// none (a slice without resourceVersion gets a new one each time).
func (v *sliceViews) entry(slice *resourceapi.ResourceSlice) *sliceEntry {
	key := sliceVersion{uid: slice.UID, resourceVersion: slice.ResourceVersion}
	entry := v.slices[key]
	if entry == nil {
		entry = &sliceEntry{narrowable: narrowable(slice)}
		if key.resourceVersion != "" {
			v.slices[key] = entry
		}
	}
	entry.pass = v.pass
	return entry
}

// sweep drops the entries the call did not use, once there are more
// entries than the slices listed.
func (v *sliceViews) sweep(listed int) {
	if len(v.slices) <= listed {
		return
	}
	for key, entry := range v.slices {
		if entry.pass != v.pass {
			delete(v.slices, key)
		}
	}
}

// stripped returns the class without its selectors, made once per version.
func (v *sliceViews) stripped(class *resourceapi.DeviceClass, version classVersion) *resourceapi.DeviceClass {
	if s, ok := v.classes[class.Name]; ok && s.version == version && version.resourceVersion != "" {
		return s.class
	}
	copied := *class
	copied.Spec.Selectors = nil
	v.classes[class.Name] = strippedClass{version: version, class: &copied}
	return &copied
}

// narrowable is sliceEntry.narrowable of one slice.
func narrowable(slice *resourceapi.ResourceSlice) bool {
	if len(slice.Spec.SharedCounters) > 0 || ptr.Deref(slice.Spec.PerDeviceNodeSelection, false) {
		return false
	}
	names := make(map[string]bool, len(slice.Spec.Devices))
	for _, device := range slice.Spec.Devices {
		if len(device.ConsumesCounters) > 0 || len(device.BindingConditions) > 0 ||
			len(device.BindingFailureConditions) > 0 || names[device.Name] {
			return false
		}
		names[device.Name] = true
	}
	return true
}

// duplicateInPool says two slices of one pool (driver and pool name) have
// a device of the same name: the allocator finds such a pool invalid, and
// a view could hide the second device. Only pools listed with more than
// one slice are looked into (narrowable has looked into each slice).
func duplicateInPool(slices []*resourceapi.ResourceSlice) bool {
	type pool struct{ driver, name string }
	listed := make(map[pool]int, len(slices))
	for _, slice := range slices {
		listed[pool{slice.Spec.Driver, slice.Spec.Pool.Name}]++
	}
	type device struct {
		pool
		name string
	}
	seen := map[device]bool{}
	for _, slice := range slices {
		p := pool{slice.Spec.Driver, slice.Spec.Pool.Name}
		if listed[p] < 2 {
			continue
		}
		for _, d := range slice.Spec.Devices {
			key := device{p, d.Name}
			if seen[key] {
				return true
			}
			seen[key] = true
		}
	}
	return false
}

// classify makes sure the entry knows which devices the class version
// selects, evaluating its selectors on each device as the allocator would:
// on the device converted to the allocator's types and back. A selector
// that fails on some device sets errored.
func (e *sliceEntry) classify(ctx context.Context, celCache *cel.Cache, class *resourceapi.DeviceClass,
	version classVersion, slice *resourceapi.ResourceSlice) {
	if e.selected != nil && e.class == version && version.resourceVersion != "" {
		return
	}
	e.class, e.selected, e.errored = version, make([]bool, len(slice.Spec.Devices)), false
	for i := range slice.Spec.Devices {
		selected, err := classSelects(ctx, celCache, class, slice.Spec.Driver, &slice.Spec.Devices[i])
		if err != nil {
			e.errored = true
			return
		}
		e.selected[i] = selected
	}
}

// errSelector is a selector that does not compile or fails on a device:
// the views are not used, and the allocator reports it.
var errSelector = errors.New("selector does not compile or evaluate")

// classSelects evaluates the class's selectors on one device, as the
// allocator's selectorsMatch does.
func classSelects(ctx context.Context, celCache *cel.Cache, class *resourceapi.DeviceClass, driver string,
	device *resourceapi.Device) (bool, error) {
	if len(class.Spec.Selectors) == 0 {
		return true, nil
	}
	var internal draapi.Device
	if err := draapi.Convert_v1_Device_To_api_Device(device, &internal, nil); err != nil {
		return false, fmt.Errorf("convert device %s: %w", device.Name, err)
	}
	var seen resourceapi.Device
	if err := draapi.Convert_api_Device_To_v1_Device(&internal, &seen, nil); err != nil {
		return false, fmt.Errorf("convert device %s: %w", device.Name, err)
	}
	for _, selector := range class.Spec.Selectors {
		expr := celCache.GetOrCompile(selector.CEL.Expression)
		if expr.Error != nil {
			return false, errSelector
		}
		matches, _, err := expr.DeviceMatches(ctx, cel.Device{Driver: driver,
			AllowMultipleAllocations: seen.AllowMultipleAllocations, Attributes: seen.Attributes, Capacity: seen.Capacity})
		if err != nil {
			return false, errSelector
		}
		if !matches {
			return false, nil
		}
	}
	return true, nil
}

// viewOf returns the slice with only the devices the class selects, and
// without their attributes when noAttribute. The view made last is kept
// while the slice object, the class version and noAttribute stay the same
// (a slice with DeviceTaintRules applied is a new object with the same
// version, and gets a new view with its taints).
func (e *sliceEntry) viewOf(slice *resourceapi.ResourceSlice, class classVersion, noAttribute bool) *resourceapi.ResourceSlice {
	if e.view.slice != nil && e.view.source == slice && e.view.class == class && class.resourceVersion != "" &&
		e.view.noAttribute == noAttribute {
		return e.view.slice
	}
	view := *slice
	view.Spec.Devices = make([]resourceapi.Device, 0, len(slice.Spec.Devices))
	for i, device := range slice.Spec.Devices {
		if !e.selected[i] {
			continue
		}
		if noAttribute {
			device.Attributes = nil
		}
		view.Spec.Devices = append(view.Spec.Devices, device)
	}
	e.view.source, e.view.class, e.view.noAttribute, e.view.slice = slice, class, noAttribute, &view
	return &view
}

// classWithoutSelectors lists the classes as the lister does, except the
// one the views were made for, which it returns without its selectors:
// the views hold only devices they select.
type classWithoutSelectors struct {
	structured.DeviceClassLister
	class *resourceapi.DeviceClass
}

// Get returns the stripped class by its name, any other from the lister.
func (l classWithoutSelectors) Get(name string) (*resourceapi.DeviceClass, error) {
	if name == l.class.Name {
		return l.class, nil
	}
	return l.DeviceClassLister.Get(name)
}
