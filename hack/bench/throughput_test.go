package main

import (
	"math"
	"testing"
	"time"
)

func TestComputeThroughputs(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	// at returns bindings at the given offsets in milliseconds.
	at := func(ms ...int) []time.Time {
		out := make([]time.Time, len(ms))
		for i, m := range ms {
			out[i] = t0.Add(time.Duration(m) * time.Millisecond)
		}
		return out
	}
	// every returns n bindings, one each step from the offset from (ms).
	every := func(n int, from, step time.Duration) []time.Time {
		out := make([]time.Time, n)
		for i := range out {
			out[i] = t0.Add(from + time.Duration(i)*step)
		}
		return out
	}
	nan := math.NaN()
	for _, tc := range []struct {
		name                  string
		times                 []time.Time
		span, sampled, steady float64
	}{
		{"none", nil, nan, nan, nan},
		{"one", at(100), nan, nan, nan},
		// 100 bindings every 10 ms from 0.5 s: ticks at 1 s (51 bound,
		// sampling starts) and 1 s later the last binding (1.49 s) is
		// before the 2 s tick, so no sample.
		{"shorter than two ticks", every(100, 500*time.Millisecond, 10*time.Millisecond), 100 / 0.99, nan, 79 / 0.79},
		// 400 bindings every 10 ms from 0.5 s (last at 4.49 s): ticks at
		// 1 s (51), 2 s (151), 3 s (251), 4 s (351): three samples of 100.
		{"steady", every(400, 500*time.Millisecond, 10*time.Millisecond), 400 / 3.99, 100, 319 / 3.19},
		// A gap: nothing between the ticks at 2 s and 3 s; the 3 s tick's
		// interval is folded into the 4 s one and counted twice. The middle
		// 80 % of five bindings is the first four.
		{"a gap", append(at(900, 1100, 1500), at(3500, 4200)...), 5 / 3.3, (2.0 + 0.5 + 0.5) / 3, 3 / 2.6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := computeThroughputs(tc.times, t0)
			for _, c := range []struct {
				what      string
				got, want float64
			}{{"span", got.Span, tc.span}, {"sampled", got.Sampled, tc.sampled}, {"steady", got.Steady, tc.steady}} {
				if math.IsNaN(c.want) != math.IsNaN(c.got) || (!math.IsNaN(c.want) && math.Abs(c.got-c.want) > 1e-6) {
					t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
				}
			}
		})
	}
}
