// Package podtopologyspread holds PodTopologySpread, the plugin that spreads
// pods over topology domains (zones, nodes, any node label) as
// kube-scheduler v1.37's does: DoNotSchedule constraints filter nodes where
// the pod would make the skew exceed maxSkew (filtering.go), ScheduleAnyway
// constraints rank nodes by how few matching pods their domains hold
// (scoring.go). Pods without constraints of their own get the default
// constraints, with a selector deduced from the Services and controllers
// that select them (constraints.go).
package podtopologyspread
