// A scheduler's /metrics read as Prometheus scrapes it, and what a dashboard
// would show from it: a counter's value, a histogram's quantile.

package testenv

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is one scrape of /metrics: the metric families by name.
type Metrics map[string]*dto.MetricFamily

// Scrape reads url (a scheduler's /metrics) in Prometheus' text format.
func Scrape(ctx context.Context, url string) (Metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return families, nil
}

// matching returns the samples of family that carry all the given labels.
func (m Metrics) matching(family string, labels map[string]string) []*dto.Metric {
	f := m[family]
	if f == nil {
		return nil
	}
	var out []*dto.Metric
	for _, s := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range s.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range labels {
			match = match && have[k] == v
		}
		if match {
			out = append(out, s)
		}
	}
	return out
}

// Value is the sum over the samples of family that carry the labels: a
// counter's or a gauge's value, a histogram's count of observations; 0
// when there is none.
func (m Metrics) Value(family string, labels map[string]string) float64 {
	var sum float64
	for _, s := range m.matching(family, labels) {
		switch {
		case s.Counter != nil:
			sum += s.GetCounter().GetValue()
		case s.Gauge != nil:
			sum += s.GetGauge().GetValue()
		case s.Histogram != nil:
			sum += float64(s.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// Quantile estimates the q-quantile (0 < q < 1) of the histogram family
// over the samples that carry the labels, as PromQL's histogram_quantile
// does: find the bucket the q-th observation falls in, and interpolate
// linearly within it. It is NaN when there is no observation; when the
// quantile falls in the last, unbounded bucket, it is the highest bound.
func (m Metrics) Quantile(q float64, family string, labels map[string]string) float64 {
	counts := map[float64]uint64{} // cumulative count by upper bound, summed over samples
	var total uint64
	for _, s := range m.matching(family, labels) {
		h := s.GetHistogram()
		if h == nil {
			continue
		}
		total += h.GetSampleCount()
		for _, b := range h.GetBucket() {
			counts[b.GetUpperBound()] += b.GetCumulativeCount()
		}
	}
	if total == 0 {
		return math.NaN()
	}
	bounds := make([]float64, 0, len(counts))
	for b := range counts {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	rank := q * float64(total)
	lower, below := 0.0, uint64(0)
	for _, upper := range bounds {
		if math.IsInf(upper, 1) {
			break
		}
		if c := counts[upper]; float64(c) >= rank && c > below {
			return lower + (upper-lower)*(rank-float64(below))/float64(c-below)
		}
		lower, below = upper, counts[upper]
	}
	return lower // in the +Inf bucket
}
