// This file is how the framework times itself for the metrics: each
// extension point's duration and status (observe), and, in the cycles
// sampled for it (CycleState.RecordPluginMetrics), each plugin call's, kept
// cheap enough for Filter and Score, which are called once per node.

package framework

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Extension point names, as the extension_point label of the metrics.
const (
	preFilterPoint  = "PreFilter"
	filterPoint     = "Filter"
	postFilterPoint = "PostFilter"
	signPoint       = "Sign"
	preScorePoint   = "PreScore"
	scorePoint      = "Score"
	reservePoint    = "Reserve"
	unreservePoint  = "Unreserve"
	permitPoint     = "Permit"
	preBindPoint    = "PreBind"
	bindPoint       = "Bind"
	postBindPoint   = "PostBind"
	// The pod-group extension points (run_podgroup.go).
	placementGeneratePoint  = "PlacementGenerate"
	placementFeasiblePoint  = "PlacementFeasible"
	placementScorePoint     = "PlacementScore"
	podGroupPostFilterPoint = "PodGroupPostFilter"
)

// observe records, when a Run function returns, how long its extension
// point took and the status it returned. Use it as
// `defer f.observe(point, time.Now(), &status)` with a named result.
func (f *Framework) observe(point string, start time.Time, status **Status) {
	if f.metrics == nil {
		return
	}
	f.metrics.ExtensionPoint(point, (*status).Code().String(), f.profileName, time.Since(start))
}

// ObserveFilter records the Filter extension point's duration over all
// nodes: the scheduler's search runs the plugins node by node, so it times
// the whole.
func (f *Framework) ObserveFilter(start time.Time, status *Status) {
	f.observe(filterPoint, start, &status)
}

// clockOrigin is what sampled plugin timings count from: time.Since of it
// reads only the monotonic clock, where time.Now reads the wall clock too,
// and a sampled cycle times thousands of calls. It is a second before the
// package was initialised, so that a sampled start is never 0.
var clockOrigin = time.Now().Add(-time.Second)

// sampleStart starts timing a plugin call in a sampled cycle (the time since
// clockOrigin); in other cycles it returns 0 and costs no clock read.
func (f *Framework) sampleStart(state *CycleState) time.Duration {
	if f.metrics == nil || state == nil || !state.RecordPluginMetrics {
		return 0
	}
	return time.Since(clockOrigin)
}

// recordPlugin records a plugin call that sampleStart timed.
func (f *Framework) recordPlugin(plugin, point string, start time.Duration, s *Status) {
	if start == 0 {
		return
	}
	f.metrics.PluginExecution(plugin, point, s.Code().String(), time.Since(clockOrigin)-start)
}

// successObservers returns, when the cycle records plugin timings, the
// series each of plugins' successful calls at point is observed in (nil
// otherwise): Filter and Score are called on every node, and looking the
// series up by its three labels on each call of a sampled cycle came to
// 4 % of the scheduler's CPU per pod (BenchmarkSchedulingBasic).
func successObservers[P Plugin](f *Framework, state *CycleState, plugins []P, point string) []prometheus.Observer {
	if f.metrics == nil || !state.RecordPluginMetrics {
		return nil
	}
	observers := make([]prometheus.Observer, len(plugins))
	for i, pl := range plugins {
		observers[i] = f.metrics.PluginObserver(pl.Name(), point, Success.String())
	}
	return observers
}

// recordCall records a call of the i-th plugin of a list that sampleStart
// timed: a success in observers[i] (successObservers of the list), any
// other outcome, or one without observers, by its labels.
func (f *Framework) recordCall(observers []prometheus.Observer, i int, plugin, point string, start time.Duration, s *Status) {
	if start == 0 {
		return
	}
	if observers != nil && s.IsSuccess() {
		observers[i].Observe((time.Since(clockOrigin) - start).Seconds())
		return
	}
	f.recordPlugin(plugin, point, start, s)
}
