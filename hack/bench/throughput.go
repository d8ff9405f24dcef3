// This file computes a run's throughput three ways from the same bindings,
// so that this program's figure can be set beside scheduler_perf's and a
// steady-state one (docs/performance.md, "Why this bench and an
// independent one differed").

package main

import (
	"math"
	"slices"
	"sort"
	"time"
)

// sampleInterval is scheduler_perf's throughputSampleInterval.
const sampleInterval = time.Second

// Throughputs are one run's throughputs, in pods per second, each over the
// measured pods' bindings as the tracker saw them.
type Throughputs struct {
	// Span is the pods over the time from the first binding to the last:
	// the table's throughput.
	Span float64
	// Sampled is scheduler_perf's SchedulingThroughput Average: bindings
	// counted at ticks every sampleInterval from the phase's start; the
	// first tick that has seen a binding starts the sampling and gives no
	// sample, an interval with no new binding is folded into the next one
	// (and counted as many times as it spans), and the part after the last
	// tick is not sampled. NaN when no full interval follows the first.
	Sampled float64
	// Steady is the middle 80 % of the bindings (from the one at 10 % to
	// the one at 90 %) over the time they took: a rate with neither the
	// start nor the tail in it.
	Steady float64
}

// computeThroughputs returns the throughputs of bindings at the given
// times (any order), for a phase that began at start. It returns NaNs where
// there are too few bindings for a figure.
func computeThroughputs(times []time.Time, start time.Time) Throughputs {
	t := Throughputs{Span: math.NaN(), Sampled: math.NaN(), Steady: math.NaN()}
	if len(times) < 2 {
		return t
	}
	sorted := slices.Clone(times)
	slices.SortFunc(sorted, func(a, b time.Time) int { return a.Compare(b) })
	first, last := sorted[0], sorted[len(sorted)-1]
	if last.After(first) {
		t.Span = float64(len(sorted)) / last.Sub(first).Seconds()
	}
	lo, hi := len(sorted)/10, len(sorted)*9/10
	if hi > lo && sorted[hi-1].After(sorted[lo]) {
		t.Steady = float64(hi-1-lo) / sorted[hi-1].Sub(sorted[lo]).Seconds()
	}
	t.Sampled = sampled(sorted, start)
	return t
}

// sampled is Throughputs.Sampled over sorted binding times.
func sampled(sorted []time.Time, start time.Time) float64 {
	// boundBy is the number of bindings at or before at.
	boundBy := func(at time.Time) int {
		return sort.Search(len(sorted), func(i int) bool { return sorted[i].After(at) })
	}
	last := sorted[len(sorted)-1]
	var samples []float64
	started, lastCount, skipped := false, 0, 0
	for tick := start.Add(sampleInterval); !tick.After(last); tick = tick.Add(sampleInterval) {
		n := boundBy(tick)
		switch {
		case n == 0:
			continue
		case !started:
			started, lastCount = true, n
			continue
		case n == lastCount:
			skipped++
			continue
		}
		rate := float64(n-lastCount) / (sampleInterval * time.Duration(skipped+1)).Seconds()
		for range skipped + 1 {
			samples = append(samples, rate)
		}
		lastCount, skipped = n, 0
	}
	if len(samples) == 0 {
		return math.NaN()
	}
	sum := 0.0
	for _, s := range samples {
		sum += s
	}
	return sum / float64(len(samples))
}
