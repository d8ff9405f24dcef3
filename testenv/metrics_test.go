package testenv

import (
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsQuantile checks the quantile estimate against histograms whose
// answer is known.
func TestMetricsQuantile(t *testing.T) {
	tests := []struct {
		name         string
		observations []float64
		q            float64
		want         float64
	}{
		{name: "no observation", q: 0.5, want: math.NaN()},
		{name: "all in the first bucket", observations: []float64{0.5, 0.5}, q: 0.5, want: 0.5},
		{name: "interpolated in the second bucket", observations: []float64{0.5, 1.5, 1.5, 1.5}, q: 0.5,
			want: 1 + 1*(2-1)/3.0},
		{name: "beyond the last bound", observations: []float64{10, 10}, q: 0.99, want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "latency_seconds",
				Buckets: []float64{1, 2, 4}}, []string{"result"})
			reg.MustRegister(h)
			for _, o := range tt.observations {
				h.WithLabelValues("scheduled").Observe(o)
			}
			h.WithLabelValues("error").Observe(3) // not counted: another label
			families, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			m := Metrics{}
			for _, f := range families {
				m[f.GetName()] = f
			}
			got := m.Quantile(tt.q, "latency_seconds", map[string]string{"result": "scheduled"})
			if math.IsNaN(tt.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tt.want) > 1e-9) {
				t.Errorf("Quantile(%v) = %v, want %v", tt.q, got, tt.want)
			}
			if n := m.Value("latency_seconds", map[string]string{"result": "scheduled"}); n != float64(len(tt.observations)) {
				t.Errorf("Value = %v, want %d observations", n, len(tt.observations))
			}
		})
	}
}
