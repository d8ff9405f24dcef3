// Package tainttoleration is kube-scheduler's TaintToleration plugin: Filter
// keeps a pod off nodes whose NoSchedule and NoExecute taints it does not
// tolerate, and Score prefers nodes with fewer PreferNoSchedule taints it
// does not tolerate (score.go). enqueue.go says which events can undo a
// rejection.
package tainttoleration
