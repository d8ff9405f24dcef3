// Package nodedeclaredfeatures is the PreFilter/Filter plugin that keeps pods
// off nodes whose kubelet does not declare the features the pod needs, as
// kube-scheduler's NodeDeclaredFeatures does.
//
// A kubelet lists in node.status.declaredFeatures the features it supports
// (RestartAllContainersOnContainerExits, UserNamespacesHostNetworkSupport,
// ...). The shared library k8s.io/component-helpers/nodedeclaredfeatures
// knows every such feature: which pod specs need it, and up to which
// Kubernetes version it still matters for scheduling. This plugin asks the
// library what the pod needs once per cycle, then checks each node for it.
package nodedeclaredfeatures
