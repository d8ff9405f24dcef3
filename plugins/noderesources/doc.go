// Package noderesources holds NodeResourcesFit, the plugin that checks a node
// has room for a pod's resource requests, as kube-scheduler's does (the pod
// count, cpu, memory, ephemeral storage and extended resources), and scores
// nodes by how much room they have left or would use (score.go). The package
// also holds NodeResourcesBalancedAllocation (balanced_allocation.go), which
// shares Fit's per-resource scoring arithmetic (resource_allocation.go). An
// extended resource a DeviceClass backs is left to DynamicResources on nodes
// that do not advertise it, and scored by the class's devices (dra.go).
// With TopologyAwareWorkloadScheduling, Fit also scores a pod group's
// placements, packing groups into few domains (placement_score.go).
package noderesources
