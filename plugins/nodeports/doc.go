// Package nodeports is kube-scheduler's NodePorts plugin: it rejects a node
// where a host port the pod asks for is already taken by a pod on the node.
// enqueue.go says which events can free a port.
package nodeports
