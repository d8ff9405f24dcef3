// This file builds the objects of dynamic resource allocation (resource.k8s.io/v1)
// that DynamicResources reads: DeviceClasses, ResourceClaims and their
// templates, ResourceSlices with their devices, DeviceTaintRules; and the
// PodWrapper methods that give a pod claims.

package builders

import (
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// DeviceClassWrapper builds a DeviceClass:
// MakeDeviceClass().Name("gpu").Driver("gpu.example.com").Obj().
type DeviceClassWrapper struct{ resourceapi.DeviceClass }

// MakeDeviceClass starts a class that selects every device of every driver.
func MakeDeviceClass() *DeviceClassWrapper { return &DeviceClassWrapper{} }

// Obj returns a copy of the class built so far.
func (c *DeviceClassWrapper) Obj() *resourceapi.DeviceClass { return c.DeviceClass.DeepCopy() }

// Name sets the class's name.
func (c *DeviceClassWrapper) Name(name string) *DeviceClassWrapper {
	c.DeviceClass.Name = name
	return c
}

// Selector adds a CEL selector; a device must satisfy all of them.
func (c *DeviceClassWrapper) Selector(expression string) *DeviceClassWrapper {
	c.Spec.Selectors = append(c.Spec.Selectors, celSelector(expression))
	return c
}

// Driver adds the selector `device.driver == "<driver>"`, the one most
// classes have: the devices of that driver.
func (c *DeviceClassWrapper) Driver(driver string) *DeviceClassWrapper {
	return c.Selector(driverExpression(driver))
}

// ExtendedResourceName lets pods ask for the class's devices as an
// extended resource (resources.requests[name]) on nodes that have no
// allocatable of that name.
func (c *DeviceClassWrapper) ExtendedResourceName(name string) *DeviceClassWrapper {
	c.Spec.ExtendedResourceName = &name
	return c
}

// Config adds opaque configuration for driver, parameters being JSON; the
// scheduler copies it into the allocation and never reads it.
func (c *DeviceClassWrapper) Config(driver, parameters string) *DeviceClassWrapper {
	c.Spec.Config = append(c.Spec.Config, resourceapi.DeviceClassConfiguration{
		DeviceConfiguration: opaqueConfig(driver, parameters)})
	return c
}

// DeviceRequestWrapper builds one request of a claim (or one subrequest of
// a firstAvailable list): MakeDeviceRequest("gpu", "gpu-class").Count(2).
type DeviceRequestWrapper struct {
	name string
	resourceapi.ExactDeviceRequest
}

// MakeDeviceRequest starts a request named name for one device of class:
// allocation mode ExactCount, count 1, what the apiserver would default.
func MakeDeviceRequest(name, class string) *DeviceRequestWrapper {
	return &DeviceRequestWrapper{name: name, ExactDeviceRequest: resourceapi.ExactDeviceRequest{
		DeviceClassName: class,
		AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
		Count:           1,
	}}
}

// Selector adds a CEL selector; a device must satisfy all of them, and the
// class's too.
func (r *DeviceRequestWrapper) Selector(expression string) *DeviceRequestWrapper {
	r.Selectors = append(r.Selectors, celSelector(expression))
	return r
}

// Count asks for n devices.
func (r *DeviceRequestWrapper) Count(n int64) *DeviceRequestWrapper {
	r.ExactDeviceRequest.Count = n
	return r
}

// All asks for every matching device of one node (allocation mode All).
func (r *DeviceRequestWrapper) All() *DeviceRequestWrapper {
	r.AllocationMode, r.ExactDeviceRequest.Count = resourceapi.DeviceAllocationModeAll, 0
	return r
}

// AdminAccess asks for devices whether or not they are allocated, for
// monitoring; the claim's namespace must carry the label
// resource.kubernetes.io/admin-access=true. Subrequests have no such field:
// SubRequest drops it.
func (r *DeviceRequestWrapper) AdminAccess() *DeviceRequestWrapper {
	r.ExactDeviceRequest.AdminAccess = ptrTo(true)
	return r
}

// Toleration adds a toleration of device taints.
func (r *DeviceRequestWrapper) Toleration(t resourceapi.DeviceToleration) *DeviceRequestWrapper {
	r.Tolerations = append(r.Tolerations, t)
	return r
}

// Capacity asks for the given amounts of each device's capacities
// ({"memory": "8Gi"}): on a device with allowMultipleAllocations, what the
// allocation consumes of it.
func (r *DeviceRequestWrapper) Capacity(req map[resourceapi.QualifiedName]string) *DeviceRequestWrapper {
	r.ExactDeviceRequest.Capacity = &resourceapi.CapacityRequirements{Requests: quantities(req)}
	return r
}

// Exactly returns the request as a claim's request of one kind (exactly).
func (r *DeviceRequestWrapper) Exactly() resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: r.name, Exactly: r.ExactDeviceRequest.DeepCopy()}
}

// SubRequest returns the request as one alternative of a firstAvailable
// list; its admin access, if any, is dropped (a subrequest has none).
func (r *DeviceRequestWrapper) SubRequest() resourceapi.DeviceSubRequest {
	e := r.ExactDeviceRequest.DeepCopy()
	return resourceapi.DeviceSubRequest{
		Name:            r.name,
		DeviceClassName: e.DeviceClassName,
		Selectors:       e.Selectors,
		AllocationMode:  e.AllocationMode,
		Count:           e.Count,
		Tolerations:     e.Tolerations,
		Capacity:        e.Capacity,
	}
}

// ResourceClaimWrapper builds a ResourceClaim:
// MakeResourceClaim().Name("gpu").Request(MakeDeviceRequest("gpu", "gpu-class")).Obj().
type ResourceClaimWrapper struct{ resourceapi.ResourceClaim }

// MakeResourceClaim starts a claim in namespace "default" with no request.
func MakeResourceClaim() *ResourceClaimWrapper {
	return &ResourceClaimWrapper{resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault}}}
}

// Obj returns a copy of the claim built so far.
func (c *ResourceClaimWrapper) Obj() *resourceapi.ResourceClaim { return c.ResourceClaim.DeepCopy() }

// Name sets the claim's name.
func (c *ResourceClaimWrapper) Name(name string) *ResourceClaimWrapper {
	c.ResourceClaim.Name = name
	return c
}

// Namespace sets the claim's namespace.
func (c *ResourceClaimWrapper) Namespace(ns string) *ResourceClaimWrapper {
	c.ResourceClaim.Namespace = ns
	return c
}

// UID sets the claim's UID.
func (c *ResourceClaimWrapper) UID(uid string) *ResourceClaimWrapper {
	c.ResourceClaim.UID = types.UID(uid)
	return c
}

// Request adds a request for exactly what r describes.
func (c *ResourceClaimWrapper) Request(r *DeviceRequestWrapper) *ResourceClaimWrapper {
	c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, r.Exactly())
	return c
}

// FirstAvailable adds a request named name that the first of subs that can
// be allocated satisfies (a prioritized list). The allocation names the
// chosen one <name>/<sub>.
func (c *ResourceClaimWrapper) FirstAvailable(name string, subs ...*DeviceRequestWrapper) *ResourceClaimWrapper {
	req := resourceapi.DeviceRequest{Name: name}
	for _, s := range subs {
		req.FirstAvailable = append(req.FirstAvailable, s.SubRequest())
	}
	c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, req)
	return c
}

// MatchAttribute adds a constraint: the devices allocated for the named
// requests (every request of the claim if none is named) must all have the
// same value of attribute (a fully qualified name, "gpu.example.com/model").
func (c *ResourceClaimWrapper) MatchAttribute(attribute string, requests ...string) *ResourceClaimWrapper {
	name := resourceapi.FullyQualifiedName(attribute)
	c.Spec.Devices.Constraints = append(c.Spec.Devices.Constraints, resourceapi.DeviceConstraint{
		Requests: requests, MatchAttribute: &name})
	return c
}

// Allocation sets status.allocation as the scheduler writes it: the
// results, and the node selector of where the devices are (nil for devices
// reachable from every node; NodeNameSelector for one node's).
func (c *ResourceClaimWrapper) Allocation(nodeSelector *v1.NodeSelector,
	results ...resourceapi.DeviceRequestAllocationResult) *ResourceClaimWrapper {
	c.Status.Allocation = &resourceapi.AllocationResult{
		Devices:      resourceapi.DeviceAllocationResult{Results: results},
		NodeSelector: nodeSelector,
	}
	return c
}

// ReservedFor adds a pod to status.reservedFor, as the scheduler's PreBind
// does (resource "pods", no API group).
func (c *ResourceClaimWrapper) ReservedFor(podName string, podUID types.UID) *ResourceClaimWrapper {
	c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{
		Resource: "pods", Name: podName, UID: podUID})
	return c
}

// Finalizer adds the finalizer the scheduler puts on a claim it allocates
// (resource.kubernetes.io/delete-protection), so that the claim outlives
// nobody's knowledge of its devices.
func (c *ResourceClaimWrapper) Finalizer() *ResourceClaimWrapper {
	c.Finalizers = append(c.Finalizers, resourceapi.Finalizer)
	return c
}

// NodeNameSelector is the node selector the allocator writes for devices
// local to node: metadata.name In [node].
func NodeNameSelector(node string) *v1.NodeSelector {
	return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{
		Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}
}

// ResourceClaimTemplateWrapper builds a ResourceClaimTemplate:
// MakeResourceClaimTemplate().Name("gpu").Claim(MakeResourceClaim().Request(...)).Obj().
type ResourceClaimTemplateWrapper struct {
	resourceapi.ResourceClaimTemplate
}

// MakeResourceClaimTemplate starts a template in namespace "default" whose
// claims request nothing.
func MakeResourceClaimTemplate() *ResourceClaimTemplateWrapper {
	return &ResourceClaimTemplateWrapper{resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault}}}
}

// Obj returns a copy of the template built so far.
func (t *ResourceClaimTemplateWrapper) Obj() *resourceapi.ResourceClaimTemplate {
	return t.ResourceClaimTemplate.DeepCopy()
}

// Name sets the template's name.
func (t *ResourceClaimTemplateWrapper) Name(name string) *ResourceClaimTemplateWrapper {
	t.ResourceClaimTemplate.Name = name
	return t
}

// Namespace sets the template's namespace (a pod can use templates of its
// own namespace only).
func (t *ResourceClaimTemplateWrapper) Namespace(ns string) *ResourceClaimTemplateWrapper {
	t.ResourceClaimTemplate.Namespace = ns
	return t
}

// Claim makes the claims of the template be like claim: a copy of its spec
// (its name, namespace and status are not the template's business).
func (t *ResourceClaimTemplateWrapper) Claim(claim *ResourceClaimWrapper) *ResourceClaimTemplateWrapper {
	t.Spec.Spec = *claim.Spec.DeepCopy()
	return t
}

// ResourceSliceWrapper builds a ResourceSlice, as a driver publishes it:
// MakeResourceSlice().Name("n1-gpu").Driver("gpu.example.com").Node("n1").Device(MakeDevice("gpu-0")).Obj().
type ResourceSliceWrapper struct{ resourceapi.ResourceSlice }

// MakeResourceSlice starts a slice that is the whole of its pool (pool
// generation 1, one slice), with no driver, no devices and no place: Node,
// NodeSelector or AllNodes must say where its devices are.
func MakeResourceSlice() *ResourceSliceWrapper {
	return &ResourceSliceWrapper{resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{
		Pool: resourceapi.ResourcePool{Generation: 1, ResourceSliceCount: 1}}}}
}

// Obj returns a copy of the slice built so far.
func (s *ResourceSliceWrapper) Obj() *resourceapi.ResourceSlice { return s.ResourceSlice.DeepCopy() }

// Name sets the slice's name.
func (s *ResourceSliceWrapper) Name(name string) *ResourceSliceWrapper {
	s.ResourceSlice.Name = name
	return s
}

// Driver sets the driver publishing the slice.
func (s *ResourceSliceWrapper) Driver(driver string) *ResourceSliceWrapper {
	s.Spec.Driver = driver
	return s
}

// Pool sets the pool's name.
func (s *ResourceSliceWrapper) Pool(name string) *ResourceSliceWrapper {
	s.Spec.Pool.Name = name
	return s
}

// SliceCount sets how many slices the pool has (in its current
// generation): the allocator uses a pool only once it has seen them all.
func (s *ResourceSliceWrapper) SliceCount(n int64) *ResourceSliceWrapper {
	s.Spec.Pool.ResourceSliceCount = n
	return s
}

// Node makes the devices local to node (spec.nodeName). The pool, unless
// Pool names another, is named after the node, as a driver on that node's
// kubelet names it.
func (s *ResourceSliceWrapper) Node(node string) *ResourceSliceWrapper {
	s.Spec.NodeName = &node
	if s.Spec.Pool.Name == "" {
		s.Spec.Pool.Name = node
	}
	return s
}

// NodeSelector makes the devices reachable from the nodes sel selects
// (network-attached devices); sel must have exactly one term.
func (s *ResourceSliceWrapper) NodeSelector(sel *v1.NodeSelector) *ResourceSliceWrapper {
	s.Spec.NodeSelector = sel
	return s
}

// AllNodes makes the devices reachable from every node.
func (s *ResourceSliceWrapper) AllNodes() *ResourceSliceWrapper {
	s.Spec.AllNodes = ptrTo(true)
	return s
}

// Device adds a device (a copy of what d built).
func (s *ResourceSliceWrapper) Device(d *DeviceWrapper) *ResourceSliceWrapper {
	s.Spec.Devices = append(s.Spec.Devices, *d.Device.DeepCopy())
	return s
}

// SharedCounters adds a counter set named name ({"memory": "40Gi"}) that
// the pool's devices consume (ConsumesCounters). The apiserver wants it in
// a slice of its own, without devices, in the same pool.
func (s *ResourceSliceWrapper) SharedCounters(name string, counters map[string]string) *ResourceSliceWrapper {
	s.Spec.SharedCounters = append(s.Spec.SharedCounters, resourceapi.CounterSet{Name: name, Counters: counterMap(counters)})
	return s
}

// DeviceWrapper builds one device of a ResourceSlice:
// MakeDevice("gpu-0").StringAttr("gpu.example.com/model", "a100").Capacity("gpu.example.com/memory", "40Gi").
type DeviceWrapper struct{ resourceapi.Device }

// MakeDevice starts a device named name, with no attributes or capacity.
func MakeDevice(name string) *DeviceWrapper { return &DeviceWrapper{resourceapi.Device{Name: name}} }

// StringAttr sets a string attribute.
func (d *DeviceWrapper) StringAttr(name, value string) *DeviceWrapper {
	return d.attr(name, resourceapi.DeviceAttribute{StringValue: &value})
}

// IntAttr sets an integer attribute.
func (d *DeviceWrapper) IntAttr(name string, value int64) *DeviceWrapper {
	return d.attr(name, resourceapi.DeviceAttribute{IntValue: &value})
}

// BoolAttr sets a boolean attribute.
func (d *DeviceWrapper) BoolAttr(name string, value bool) *DeviceWrapper {
	return d.attr(name, resourceapi.DeviceAttribute{BoolValue: &value})
}

// VersionAttr sets a semantic-version attribute ("1.2.3").
func (d *DeviceWrapper) VersionAttr(name, value string) *DeviceWrapper {
	return d.attr(name, resourceapi.DeviceAttribute{VersionValue: &value})
}

// attr sets attribute name to a.
func (d *DeviceWrapper) attr(name string, a resourceapi.DeviceAttribute) *DeviceWrapper {
	if d.Attributes == nil {
		d.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
	}
	d.Attributes[resourceapi.QualifiedName(name)] = a
	return d
}

// Capacity sets a capacity of the device. With no request policy, an
// allocation that does not ask for an amount of it consumes all of it.
func (d *DeviceWrapper) Capacity(name, value string) *DeviceWrapper {
	if d.Device.Capacity == nil {
		d.Device.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
	}
	d.Device.Capacity[resourceapi.QualifiedName(name)] = resourceapi.DeviceCapacity{Value: resource.MustParse(value)}
	return d
}

// AllowMultipleAllocations lets several claims share the device, each
// consuming a part of its capacities.
func (d *DeviceWrapper) AllowMultipleAllocations() *DeviceWrapper {
	d.Device.AllowMultipleAllocations = ptrTo(true)
	return d
}

// Taint adds a taint; only requests that tolerate it may get the device
// (effect NoSchedule or NoExecute).
func (d *DeviceWrapper) Taint(key, value string, effect resourceapi.DeviceTaintEffect) *DeviceWrapper {
	d.Taints = append(d.Taints, resourceapi.DeviceTaint{Key: key, Value: value, Effect: effect})
	return d
}

// BindingConditions makes the scheduler wait in PreBind until the driver
// sets each of conditions true in the claim's status.devices, and give up
// if one of failureConditions becomes true.
func (d *DeviceWrapper) BindingConditions(conditions, failureConditions []string) *DeviceWrapper {
	d.Device.BindingConditions = conditions
	d.Device.BindingFailureConditions = failureConditions
	return d
}

// BindsToNode pins an allocation of the device to the node chosen for it:
// the allocation's node selector names that node even when the slice
// reaches several (a device that must be attached to a node first).
func (d *DeviceWrapper) BindsToNode() *DeviceWrapper {
	d.Device.BindsToNode = ptrTo(true)
	return d
}

// ConsumesCounters makes the device use up counters ({"memory": "10Gi"})
// of the pool's counter set named set while it is allocated.
func (d *DeviceWrapper) ConsumesCounters(set string, counters map[string]string) *DeviceWrapper {
	d.Device.ConsumesCounters = append(d.Device.ConsumesCounters, resourceapi.DeviceCounterConsumption{
		CounterSet: set, Counters: counterMap(counters)})
	return d
}

// DeviceTaintRuleWrapper builds a DeviceTaintRule, which taints the devices
// it selects as if their slices said so:
// MakeDeviceTaintRule().Name("maintenance").Driver("gpu.example.com").Taint("maintenance", "", NoSchedule).Obj().
type DeviceTaintRuleWrapper struct{ resourceapi.DeviceTaintRule }

// MakeDeviceTaintRule starts a rule that selects every device and taints
// nothing.
func MakeDeviceTaintRule() *DeviceTaintRuleWrapper { return &DeviceTaintRuleWrapper{} }

// Obj returns a copy of the rule built so far.
func (r *DeviceTaintRuleWrapper) Obj() *resourceapi.DeviceTaintRule {
	return r.DeviceTaintRule.DeepCopy()
}

// Name sets the rule's name.
func (r *DeviceTaintRuleWrapper) Name(name string) *DeviceTaintRuleWrapper {
	r.DeviceTaintRule.Name = name
	return r
}

// Driver selects the devices of driver only.
func (r *DeviceTaintRuleWrapper) Driver(driver string) *DeviceTaintRuleWrapper {
	r.selector().Driver = &driver
	return r
}

// Pool selects the devices of pools named pool only.
func (r *DeviceTaintRuleWrapper) Pool(pool string) *DeviceTaintRuleWrapper {
	r.selector().Pool = &pool
	return r
}

// Device selects the devices named device only.
func (r *DeviceTaintRuleWrapper) Device(device string) *DeviceTaintRuleWrapper {
	r.selector().Device = &device
	return r
}

// selector returns the rule's device selector, creating it.
func (r *DeviceTaintRuleWrapper) selector() *resourceapi.DeviceTaintSelector {
	if r.Spec.DeviceSelector == nil {
		r.Spec.DeviceSelector = &resourceapi.DeviceTaintSelector{}
	}
	return r.Spec.DeviceSelector
}

// Taint sets the taint the rule puts on the devices.
func (r *DeviceTaintRuleWrapper) Taint(key, value string, effect resourceapi.DeviceTaintEffect) *DeviceTaintRuleWrapper {
	r.Spec.Taint = resourceapi.DeviceTaint{Key: key, Value: value, Effect: effect}
	return r
}

// ResourceClaim adds a pod claim named name that uses the existing
// ResourceClaim claimName (which several pods may share).
func (p *PodWrapper) ResourceClaim(name, claimName string) *PodWrapper {
	p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: name, ResourceClaimName: &claimName})
	return p
}

// ResourceClaimTemplate adds a pod claim named name for which the
// resourceclaim controller creates a claim of its own from the template
// templateName: <pod>-<name>-<random suffix>, owned by the pod, named in
// status.resourceClaimStatuses.
func (p *PodWrapper) ResourceClaimTemplate(name, templateName string) *PodWrapper {
	p.Spec.ResourceClaims = append(p.Spec.ResourceClaims,
		v1.PodResourceClaim{Name: name, ResourceClaimTemplateName: &templateName})
	return p
}

// ClaimContainer adds a container that uses the pod claims named claims
// (resources.claims): what tells the kubelet which container gets the
// devices. The scheduler reads the pod's claims only.
func (p *PodWrapper) ClaimContainer(claims ...string) *PodWrapper {
	c := container(PauseImage, nil)
	for _, name := range claims {
		c.Resources.Claims = append(c.Resources.Claims, v1.ResourceClaim{Name: name})
	}
	return p.addContainer(c)
}

// celSelector is a device selector of one CEL expression.
func celSelector(expression string) resourceapi.DeviceSelector {
	return resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: expression}}
}

// driverExpression is the CEL expression selecting the devices of driver.
func driverExpression(driver string) string { return `device.driver == "` + driver + `"` }

// opaqueConfig is driver's configuration with JSON parameters.
func opaqueConfig(driver, parameters string) resourceapi.DeviceConfiguration {
	return resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
		Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(parameters)}}}
}

// quantities parses {"memory": "8Gi"} into capacity requests.
func quantities(m map[resourceapi.QualifiedName]string) map[resourceapi.QualifiedName]resource.Quantity {
	out := make(map[resourceapi.QualifiedName]resource.Quantity, len(m))
	for k, v := range m {
		out[k] = resource.MustParse(v)
	}
	return out
}

// counterMap parses {"memory": "10Gi"} into counters.
func counterMap(m map[string]string) map[string]resourceapi.Counter {
	out := make(map[string]resourceapi.Counter, len(m))
	for k, v := range m {
		out[k] = resourceapi.Counter{Value: resource.MustParse(v)}
	}
	return out
}
