package main

// Reading a scheduler's /metrics: one histogram, summed over its labels, and
// its quantiles computed the way Prometheus' histogram_quantile does.

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// attemptHistogram is the histogram both schedulers export for the time of
// one scheduling attempt (algorithm and Reserve/Permit, not binding).
const attemptHistogram = "scheduler_scheduling_attempt_duration_seconds"

// Bucket is one cumulative bucket of a histogram: Count observations were at
// most UpperBound.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// Histogram is a Prometheus histogram's buckets, sorted by upper bound, the
// last one +Inf.
type Histogram []Bucket

// ParseHistogram sums the buckets of the histogram called name over all of
// its label sets in a /metrics page in the Prometheus text format. It
// returns nil if the page has no such histogram.
func ParseHistogram(page io.Reader, name string) (Histogram, error) {
	byBound := map[float64]float64{}
	prefix := name + "_bucket{"
	sc := bufio.NewScanner(page)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		end := strings.LastIndex(line, "}")
		if end < 0 {
			return nil, fmt.Errorf("metric line without closing brace: %q", line)
		}
		le, ok := labelValue(line[len(prefix):end], "le")
		if !ok {
			return nil, fmt.Errorf("bucket without le label: %q", line)
		}
		bound, err := strconv.ParseFloat(le, 64)
		if err != nil {
			return nil, fmt.Errorf("bucket bound %q: %w", le, err)
		}
		fields := strings.Fields(line[end+1:])
		if len(fields) == 0 {
			return nil, fmt.Errorf("bucket without a value: %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("bucket value %q: %w", fields[0], err)
		}
		byBound[bound] += v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading metrics: %w", err)
	}
	if len(byBound) == 0 {
		return nil, nil
	}
	h := make(Histogram, 0, len(byBound))
	for b, c := range byBound {
		h = append(h, Bucket{UpperBound: b, Count: c})
	}
	sort.Slice(h, func(i, j int) bool { return h[i].UpperBound < h[j].UpperBound })
	return h, nil
}

// labelValue finds label="value" in a label list such as
// `profile="default-scheduler",result="scheduled",le="0.001"`.
func labelValue(labels, name string) (string, bool) {
	key := name + `="`
	i := 0
	for i < len(labels) {
		rest := labels[i:]
		if strings.HasPrefix(rest, key) {
			v := rest[len(key):]
			if j := strings.IndexByte(v, '"'); j >= 0 {
				return v[:j], true
			}
			return "", false
		}
		// Skip to the next label: past this one's closing quote and comma.
		open := strings.IndexByte(rest, '"')
		if open < 0 {
			return "", false
		}
		closing := strings.IndexByte(rest[open+1:], '"')
		if closing < 0 {
			return "", false
		}
		i += open + 1 + closing + 1
		if i < len(labels) && labels[i] == ',' {
			i++
		}
	}
	return "", false
}

// Sub returns h minus an earlier scrape of the same histogram, bucket by
// bucket: the observations made in between. A nil before counts as empty.
func (h Histogram) Sub(before Histogram) Histogram {
	if h == nil {
		return nil
	}
	prev := map[float64]float64{}
	for _, b := range before {
		prev[b.UpperBound] = b.Count
	}
	out := make(Histogram, len(h))
	for i, b := range h {
		out[i] = Bucket{UpperBound: b.UpperBound, Count: b.Count - prev[b.UpperBound]}
	}
	return out
}

// Quantile is Prometheus' histogram_quantile(q, h): it finds the bucket the
// q-th observation falls into and interpolates linearly inside it, assuming
// the lowest bucket starts at 0 (if its bound is positive); a rank in the
// +Inf bucket gives the highest finite bound. It returns NaN for an empty
// histogram or one without a +Inf bucket.
func (h Histogram) Quantile(q float64) float64 {
	switch {
	case math.IsNaN(q):
		return math.NaN()
	case q < 0:
		return math.Inf(-1)
	case q > 1:
		return math.Inf(1)
	}
	if len(h) < 2 || !math.IsInf(h[len(h)-1].UpperBound, 1) {
		return math.NaN()
	}
	// Counts from a scrape can be slightly non-monotonic (buckets are read
	// one by one while observations go on); Prometheus smooths them upward.
	buckets := make(Histogram, len(h))
	copy(buckets, h)
	for i := 1; i < len(buckets); i++ {
		if buckets[i].Count < buckets[i-1].Count {
			buckets[i].Count = buckets[i-1].Count
		}
	}
	total := buckets[len(buckets)-1].Count
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	b := sort.Search(len(buckets)-1, func(i int) bool { return buckets[i].Count >= rank })
	switch {
	case b == len(buckets)-1:
		return buckets[len(buckets)-2].UpperBound
	case b == 0 && buckets[0].UpperBound <= 0:
		return buckets[0].UpperBound
	}
	start, end, count := 0.0, buckets[b].UpperBound, buckets[b].Count
	if b > 0 {
		start = buckets[b-1].UpperBound
		count -= buckets[b-1].Count
		rank -= buckets[b-1].Count
	}
	return start + (end-start)*(rank/count)
}

// batchCounter is kube-scheduler's count of OpportunisticBatching's
// outcomes, one per scheduling cycle of a pod that could be batched, by
// result: hint_used (the pod went to the node the previous cycle's
// scores named, without Filter and Score over the cluster), hint_not_used,
// no_hint.
const batchCounter = "scheduler_batch_attempts_total"

// hintUsed is batchCounter's result for a pod placed by a batch hint.
const hintUsed = "hint_used"

// flushCounter is kube-scheduler's count of the times OpportunisticBatching
// threw its batch away, by reason (pod_incompatible: another signature;
// expired: the batch was older than 500 ms; pod_skipped: another cycle
// came in between; ...).
const flushCounter = "scheduler_batch_cache_flushed_total"

// counterDiff is after minus before, key by key, without the keys that
// did not grow; nil if after is nil.
func counterDiff(before, after map[string]float64) map[string]float64 {
	if after == nil {
		return nil
	}
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// formatCounts is "k1 n1, k2 n2" in key order.
func formatCounts(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.0f", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// ParseCounter sums the counter called name in a /metrics page by the
// value of one of its labels, over its other labels. It returns nil if the
// page has no such counter.
func ParseCounter(page io.Reader, name, label string) (map[string]float64, error) {
	var out map[string]float64
	sc := bufio.NewScanner(page)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok {
			continue
		}
		var labels string
		switch {
		case strings.HasPrefix(rest, "{"):
			end := strings.LastIndex(rest, "}")
			if end < 0 {
				return nil, fmt.Errorf("metric line without closing brace: %q", line)
			}
			labels, rest = rest[1:end], rest[end+1:]
		case strings.HasPrefix(rest, " "):
		default:
			continue // another metric whose name starts with name
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("counter without a value: %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("counter value %q: %w", fields[0], err)
		}
		key, _ := labelValue(labels, label)
		if out == nil {
			out = map[string]float64{}
		}
		out[key] += v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading metrics: %w", err)
	}
	return out, nil
}

// HintShare is the percentage of batchable cycles between two scrapes of
// batchCounter (before nil: from the start) that placed their pod by a
// batch hint, NaN if after is nil (no batching metric) or no cycle was
// counted.
func HintShare(before, after map[string]float64) float64 {
	if after == nil {
		return math.NaN()
	}
	total := 0.0
	for k, v := range after {
		total += v - before[k]
	}
	if total <= 0 {
		return math.NaN()
	}
	return 100 * (after[hintUsed] - before[hintUsed]) / total
}

// Scraped is what the bench reads from a scheduler's /metrics: the
// attempt histogram and the batching counters, each nil if the page lacks
// it.
type Scraped struct {
	Attempts Histogram
	Batch    map[string]float64
	// Flushes is flushCounter by reason.
	Flushes map[string]float64
}

// parseScrape reads them from a page.
func parseScrape(page []byte) (Scraped, error) {
	h, err := ParseHistogram(bytes.NewReader(page), attemptHistogram)
	if err != nil {
		return Scraped{}, err
	}
	b, err := ParseCounter(bytes.NewReader(page), batchCounter, "result")
	if err != nil {
		return Scraped{}, err
	}
	f, err := ParseCounter(bytes.NewReader(page), flushCounter, "reason")
	if err != nil {
		return Scraped{}, err
	}
	return Scraped{Attempts: h, Batch: b, Flushes: f}, nil
}

// scrape fetches a /metrics page and reads it. HTTPS is accepted
// unverified: kube-scheduler serves /metrics with a self-signed
// certificate it makes in memory.
func scrape(url string) (Scraped, error) {
	client := &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a local, self-signed server
		},
	}
	resp, err := client.Get(url)
	if err != nil {
		return Scraped{}, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Scraped{}, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	page, err := io.ReadAll(resp.Body)
	if err != nil {
		return Scraped{}, fmt.Errorf("scraping %s: %w", url, err)
	}
	sc, err := parseScrape(page)
	if err != nil {
		return Scraped{}, fmt.Errorf("scraping %s: %w", url, err)
	}
	return sc, nil
}
