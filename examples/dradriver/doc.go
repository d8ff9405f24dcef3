// Package dradriver is an example DRA driver: what publishes the devices
// that the scheduler's DynamicResources plugin allocates, in tests and
// scenarios where no real driver runs. Its devices are fake GPUs, Options
// says how many each node has and what they can do, and it publishes them
// the way a real driver's kubelet plugins do: one pool per node, named
// after the node, in ResourceSlices owned by the node (so that the garbage
// collector deletes them with it), kept as Options says by
// k8s.io/dynamic-resource-allocation/resourceslice's controller, one per
// node.
//
// Each device (gpu-<i>, and gpu-<i>-part-<j> for partitions) has the
// attributes model, index, type (gpu or partition) and driverVersion, and
// a memory capacity; in CEL, device.attributes["gpu.example.com"].model
// and device.capacity["gpu.example.com"].memory. NodeDevices adds what
// the scheduler's less common paths need: partitions sharing a GPU's
// memory through a counter set (partitionable devices), devices several
// claims share (allowMultipleAllocations, with consumable memory), binding
// conditions and device taints.
//
// Who does what, in a pod's life with a device:
//
//  1. The driver publishes each node's devices (this package).
//  2. A pod names a ResourceClaim, or a ResourceClaimTemplate from which
//     kube-controller-manager's resourceclaim controller makes one
//     (testenv.DRAControllers); the claim asks for devices of a
//     DeviceClass (DeviceClass and ExtendedResourceClass build them).
//  3. The scheduler allocates devices on the node it picks, writes the
//     allocation into the claim's status and reserves the claim for the
//     pod. If the devices have binding conditions, PreBind waits until
//     the driver reports them (SetDeviceCondition, which a story calls
//     when it wants the devices ready; no kubelet prepares them here).
//  4. When the pod is gone, the resourceclaim controller releases the
//     claim and the devices are free again.
//
// Why not the kubeletplugin package, which real drivers use? It serves
// gRPC to a kubelet, and none runs here; the slices are all the scheduler
// sees of a driver. Like examples/provisioner, it is a plain client-go
// controller that leaves client-go's global scheme alone, so that it can
// run in-process beside a scheduler and tests under `go test -race`.
//
// Use it in-process:
//
//	d := dradriver.New(client, dradriver.Options{Devices: dradriver.NodeDevices{GPUs: 2}})
//	go d.Run(ctx)
package dradriver
