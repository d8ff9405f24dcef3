// This file is Resource, the compact sum of cpu, memory, storage, pods and
// extended resources that pods request and nodes offer.

package framework

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Resource is a compact sum of resources: cpu in millicores, memory and
// ephemeral storage in bytes, a pod count, and extended resources by name.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// AllowedPodNumber is only meaningful in a node's allocatable.
	AllowedPodNumber int64
	// ScalarResources holds extended resources (example.com/gpu), hugepages
	// and the other names IsScalarResourceName accepts.
	ScalarResources map[v1.ResourceName]int64
}

// NewResource sums a ResourceList into a Resource.
func NewResource(rl v1.ResourceList) *Resource {
	r := &Resource{}
	r.Add(rl)
	return r
}

// Add adds every quantity in rl.
func (r *Resource) Add(rl v1.ResourceList) {
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.Memory += q.Value()
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case v1.ResourcePods:
			r.AllowedPodNumber += q.Value()
		default:
			if IsScalarResourceName(name) {
				r.AddScalar(name, q.Value())
			}
		}
	}
}

// AddScalar adds quantity to a resource of ScalarResources.
func (r *Resource) AddScalar(name v1.ResourceName, quantity int64) {
	if r.ScalarResources == nil {
		r.ScalarResources = map[v1.ResourceName]int64{}
	}
	r.ScalarResources[name] += quantity
}

// AddResource adds another Resource; with sign -1 it subtracts.
func (r *Resource) AddResource(o *Resource, sign int64) {
	r.MilliCPU += sign * o.MilliCPU
	r.Memory += sign * o.Memory
	r.EphemeralStorage += sign * o.EphemeralStorage
	r.AllowedPodNumber += sign * o.AllowedPodNumber
	for name, q := range o.ScalarResources {
		r.AddScalar(name, sign*q)
	}
}

// Clone returns a deep copy.
func (r *Resource) Clone() *Resource {
	c := *r
	if r.ScalarResources != nil {
		c.ScalarResources = make(map[v1.ResourceName]int64, len(r.ScalarResources))
		for k, v := range r.ScalarResources {
			c.ScalarResources[k] = v
		}
	}
	return &c
}

// IsScalarResourceName reports whether name is counted in ScalarResources:
// extended resources, hugepages, attachable-volume counts and prefixed
// native resources (any "*kubernetes.io/" name, such as a DeviceClass's
// implicit extended resource deviceclass.resource.kubernetes.io/<class>),
// as kube-scheduler counts them.
func IsScalarResourceName(name v1.ResourceName) bool {
	return IsExtendedResourceName(name) ||
		strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) ||
		strings.Contains(string(name), v1.ResourceDefaultNamespacePrefix) ||
		strings.HasPrefix(string(name), "attachable-volumes-")
}

// IsDRAExtendedResourceName reports whether a DeviceClass can back name:
// an extended resource name, or an implicit one,
// deviceclass.resource.kubernetes.io/<class> (kube-scheduler's
// util.IsDRAExtendedResourceName). NodeResourcesFit leaves such a request
// to DynamicResources on a node that has none of it.
func IsDRAExtendedResourceName(name v1.ResourceName) bool {
	return IsExtendedResourceName(name) || strings.HasPrefix(string(name), resourceapi.ResourceDeviceClassPrefix)
}

// IsExtendedResourceName reports whether name is an extended resource: one
// with a domain prefix outside kubernetes.io (example.com/gpu) that would be a
// valid quota name.
func IsExtendedResourceName(name v1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/") ||
		strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+s)) == 0
}

func resourceQuantityMilli(milli int64) *resource.Quantity {
	return resource.NewMilliQuantity(milli, resource.DecimalSI)
}

func resourceQuantity(v int64) *resource.Quantity {
	return resource.NewQuantity(v, resource.BinarySI)
}
