// The devices a node has: fake GPUs with attributes and a memory capacity,
// optionally split into partitions that share the GPU's memory, shared
// between claims, bound by conditions or tainted, laid out as the
// ResourceSlices of one pool per node.

package dradriver

import (
	"fmt"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"
)

// The attributes and capacities of every device, as a DeviceClass or a
// request selects them in CEL: device.attributes["gpu.example.com"].model,
// device.capacity["gpu.example.com"].memory (with the driver's name as
// the domain).
const (
	// AttrModel (a string) is the GPU's model, NodeDevices.Model.
	AttrModel = "model"
	// AttrIndex (an int) is the GPU's index on its node: gpu-<index>, and
	// the partitions of that GPU.
	AttrIndex = "index"
	// AttrType (a string) is TypeGPU or TypePartition.
	AttrType = "type"
	// AttrDriverVersion (a version) is DriverVersion.
	AttrDriverVersion = "driverVersion"
	// CapMemory is the device's memory: the GPU's, or a partition's share
	// of it.
	CapMemory = "memory"
)

// The values of AttrType.
const (
	// TypeGPU is a whole GPU.
	TypeGPU = "gpu"
	// TypePartition is a partition of a GPU (NodeDevices.Partitions).
	TypePartition = "partition"
)

// Defaults of NodeDevices, and the version every device reports.
const (
	DefaultModel  = "example-gpu"
	DefaultMemory = "16Gi"
	DriverVersion = "1.0.0"
)

// maxDevicesPerSlice is how many devices one ResourceSlice holds: the API
// allows 128, or 64 if any device has taints or consumes counters; 64
// always keeps the layout one rule.
const maxDevicesPerSlice = 64

// NodeDevices describes the devices of a node. The zero value is a node
// without devices (it still publishes an empty pool, which says that the
// driver runs there and has nothing). The JSON names are those of a
// scenario file's draDriver field (docs/scenarios.md).
type NodeDevices struct {
	// GPUs is how many GPUs the node has: gpu-0, gpu-1, ...
	GPUs int `json:"gpus,omitempty"`
	// Model is every GPU's model; "" means DefaultModel.
	Model string `json:"model,omitempty"`
	// Memory is every GPU's memory; zero means DefaultMemory.
	Memory resource.Quantity `json:"memory,omitempty"`
	// Partitions, if 2 or more, makes each GPU partitionable: beside
	// gpu-<i>, devices gpu-<i>-part-<j> (j < Partitions) each with an
	// equal share of its memory, all drawing on one counter set (gpu-<i>)
	// that holds the GPU's memory. Allocating the whole GPU then leaves no
	// partition, and one partition leaves the others but not the whole.
	Partitions int `json:"partitions,omitempty"`
	// Shared marks every device allowMultipleAllocations: several claims
	// (or requests) may have it at once, each consuming part of its
	// memory capacity, as MemoryPolicy says.
	Shared bool `json:"shared,omitempty"`
	// MemoryPolicy is the memory capacity's requestPolicy on a Shared
	// device: how much a request that names no amount consumes, and which
	// amounts are valid. Nil means none: a request consumes what it asks,
	// or all of it if it asks nothing.
	MemoryPolicy *resourceapi.CapacityRequestPolicy `json:"memoryPolicy,omitempty"`
	// BindsToNode marks every device bindsToNode: an allocation of it
	// holds only for the node it was made for.
	BindsToNode bool `json:"bindsToNode,omitempty"`
	// BindingConditions and BindingFailureConditions, on every device,
	// make the scheduler's PreBind wait until the driver reports the
	// former True in the claim's status.devices (SetDeviceCondition), or
	// fail if it reports one of the latter True. Give both or neither: the
	// apiserver rejects one without the other.
	BindingConditions        []string `json:"bindingConditions,omitempty"`
	BindingFailureConditions []string `json:"bindingFailureConditions,omitempty"`
	// Taints are device taints by device name (gpu-1, gpu-0-part-1).
	Taints map[string][]resourceapi.DeviceTaint `json:"taints,omitempty"`
}

// Pool is what the driver publishes for node: one pool named after the
// node. With partitions, its first slice holds the counter sets and the
// rest the devices (the API keeps the two apart); each slice holds at most
// 64 devices. Devices come GPU by GPU, the whole one before its
// partitions, which is also the order the scheduler's allocator tries them
// in.
func (o Options) Pool(node string) resourceslice.Pool {
	nd := o.devicesOf(node)
	devices, counters := nd.devices()
	var pool resourceslice.Pool
	if len(counters) > 0 {
		pool.Slices = append(pool.Slices, resourceslice.Slice{SharedCounters: counters})
	}
	for chunk := range slices.Chunk(devices, maxDevicesPerSlice) {
		pool.Slices = append(pool.Slices, resourceslice.Slice{Devices: chunk})
	}
	if len(pool.Slices) == 0 {
		pool.Slices = []resourceslice.Slice{{}}
	}
	return pool
}

// devices lists the node's devices, and the counter sets its partitions
// draw on.
func (nd NodeDevices) devices() ([]resourceapi.Device, []resourceapi.CounterSet) {
	model := nd.Model
	if model == "" {
		model = DefaultModel
	}
	memory := nd.Memory
	if memory.IsZero() {
		memory = resource.MustParse(DefaultMemory)
	}
	var devices []resourceapi.Device
	var counters []resourceapi.CounterSet
	for i := range nd.GPUs {
		name := fmt.Sprintf("gpu-%d", i)
		gpu := nd.device(name, model, i, TypeGPU, memory)
		if nd.Partitions < 2 {
			devices = append(devices, gpu)
			continue
		}
		// The counter set holds the GPU's memory; the whole GPU consumes
		// all of it, each partition its share.
		counters = append(counters, resourceapi.CounterSet{Name: name,
			Counters: map[string]resourceapi.Counter{CapMemory: {Value: memory}}})
		gpu.ConsumesCounters = consumes(name, memory)
		devices = append(devices, gpu)
		share := *resource.NewQuantity(memory.Value()/int64(nd.Partitions), resource.BinarySI)
		for j := range nd.Partitions {
			part := nd.device(fmt.Sprintf("%s-part-%d", name, j), model, i, TypePartition, share)
			part.ConsumesCounters = consumes(name, share)
			devices = append(devices, part)
		}
	}
	return devices, counters
}

// device is one device with the node's attributes and options.
func (nd NodeDevices) device(name, model string, index int, typ string, memory resource.Quantity) resourceapi.Device {
	d := resourceapi.Device{
		Name: name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			AttrModel:         {StringValue: ptr.To(model)},
			AttrIndex:         {IntValue: ptr.To(int64(index))},
			AttrType:          {StringValue: ptr.To(typ)},
			AttrDriverVersion: {VersionValue: ptr.To(DriverVersion)},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{CapMemory: {Value: memory}},
		Taints:   slices.Clone(nd.Taints[name]),
	}
	if nd.Shared {
		d.AllowMultipleAllocations = ptr.To(true)
		d.Capacity[CapMemory] = resourceapi.DeviceCapacity{Value: memory, RequestPolicy: nd.MemoryPolicy.DeepCopy()}
	}
	if nd.BindsToNode {
		d.BindsToNode = ptr.To(true)
	}
	d.BindingConditions = slices.Clone(nd.BindingConditions)
	d.BindingFailureConditions = slices.Clone(nd.BindingFailureConditions)
	return d
}

// consumes says that a device draws amount of memory from counter set set.
func consumes(set string, amount resource.Quantity) []resourceapi.DeviceCounterConsumption {
	return []resourceapi.DeviceCounterConsumption{{CounterSet: set,
		Counters: map[string]resourceapi.Counter{CapMemory: {Value: amount}}}}
}
