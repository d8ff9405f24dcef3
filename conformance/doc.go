// Package conformance compares minisched with the real kube-scheduler: each
// case runs twice on fresh apiservers, once with `minisched run` and once
// with kube-scheduler v1.37.1, given the same KubeSchedulerConfiguration, and
// fails when the outcomes differ — a pod bound by one and pending in the
// other, a different node, or a different FailedScheduling message.
//
// The tests carry the build tag "conformance"; run them with
// `make conformance`, which builds both schedulers first.
package conformance
