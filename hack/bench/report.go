package main

// From runs to a table: medians over rounds, the ratio minisched /
// kube-scheduler, as text, markdown and a chart.

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// metric is one row of the table for each workload.
type metric struct {
	name  string
	value func(Result) float64
	// format prints a median; NaN is printed as n/a.
	format string
}

// metrics are the rows of each workload, in order.
var metrics = []metric{
	{"pods bound", func(r Result) float64 { return float64(r.Bound) }, "%.0f"},
	{"throughput (pods/s)", func(r Result) float64 { return r.Throughput }, "%.1f"},
	{"scheduler_perf's throughput (pods/s)", func(r Result) float64 { return r.Sampled }, "%.1f"},
	{"middle 80 % throughput (pods/s)", func(r Result) float64 { return r.Steady }, "%.1f"},
	{"start to first binding (s)", func(r Result) float64 { return r.ToFirst }, "%.2f"},
	{"attempt p50 (ms)", func(r Result) float64 { return r.P50 * 1000 }, "%.2f"},
	{"attempt p99 (ms)", func(r Result) float64 { return r.P99 * 1000 }, "%.2f"},
	{"batch hints used (%)", func(r Result) float64 { return r.BatchHinted }, "%.1f"},
	{"CPU s / 1000 pods", func(r Result) float64 { return r.CPUPer1000 }, "%.2f"},
	{"peak RSS (MiB)", func(r Result) float64 { return float64(r.PeakRSSBytes) / (1 << 20) }, "%.0f"},
}

// Row is one line of the summary table.
type Row struct {
	Workload, Metric string
	// Minisched, KubeScheduler and Ceiling are medians over the rounds
	// that finished (Ceiling is "–" where the ceiling did not run); Ratio
	// is minisched / kube-scheduler.
	Minisched, KubeScheduler, Ceiling, Ratio string
}

// shareMetric names the row with each scheduler's share of the ceiling.
const shareMetric = "share of ceiling"

// notRun fills the ceiling's cells of a workload it did not run.
const notRun = "–"

// median is the median of the values that are not NaN, or NaN if none is.
func median(values []float64) float64 {
	var v []float64
	for _, x := range values {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// ratio is a / b, NaN when either is unknown or b is zero.
func ratio(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return math.NaN()
	}
	return a / b
}

// format prints v with f, or n/a if it is unknown.
func format(f string, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return fmt.Sprintf(f, v)
}

// medianOf is the median of one metric over the runs of a workload and
// engine that finished without error.
func medianOf(results []Result, workload string, engine Engine, value func(Result) float64) float64 {
	var v []float64
	for _, r := range results {
		if r.Workload == workload && r.Engine == engine && r.Err == nil {
			v = append(v, value(r))
		}
	}
	return median(v)
}

// summarize turns the runs into rows, workloads in the given order. A
// workload the ceiling ran gets one more row: each scheduler's share of
// the ceiling, its median throughput over the ceiling's.
func summarize(results []Result, workloads []string) []Row {
	var rows []Row
	for _, w := range workloads {
		withCeiling := ran(results, w, Ceiling)
		for _, m := range metrics {
			a := medianOf(results, w, Minisched, m.value)
			b := medianOf(results, w, KubeScheduler, m.value)
			c := medianOf(results, w, Ceiling, m.value)
			row := Row{Workload: w, Metric: m.name,
				Minisched: format(m.format, a), KubeScheduler: format(m.format, b), Ceiling: format(m.format, c),
				Ratio: format("%.2f", ratio(a, b))}
			if m.name == "pods bound" {
				total := totalOf(results, w)
				row.Minisched = fmt.Sprintf("%s/%d", row.Minisched, total)
				row.KubeScheduler = fmt.Sprintf("%s/%d", row.KubeScheduler, total)
				row.Ceiling = fmt.Sprintf("%s/%d", row.Ceiling, total)
			}
			if !withCeiling {
				row.Ceiling = notRun
			}
			rows = append(rows, row)
		}
		if paired := roundRatios(results, w); len(paired) > 0 {
			rows = append(rows, Row{Workload: w, Metric: pairedMetric, Minisched: "", KubeScheduler: "",
				Ceiling: notRun, Ratio: fmt.Sprintf("%.2f (%.2f–%.2f)", median(paired), slices.Min(paired), slices.Max(paired))})
			if withCeiling {
				rows[len(rows)-1].Ceiling = ""
			}
		}
		if withCeiling {
			tput := func(r Result) float64 { return r.Throughput }
			c := medianOf(results, w, Ceiling, tput)
			rows = append(rows, Row{Workload: w, Metric: shareMetric,
				Minisched:     format("%.2f", share(medianOf(results, w, Minisched, tput), c)),
				KubeScheduler: format("%.2f", share(medianOf(results, w, KubeScheduler, tput), c)),
			})
		}
	}
	return rows
}

// pairedMetric names the row of throughput ratios taken round by round.
const pairedMetric = "throughput ratio, round by round: median (range)"

// roundRatios are minisched's throughput over kube-scheduler's in each
// round both finished: runs of one round are minutes apart, runs of
// different rounds may be an hour apart on a machine whose pace drifts, so
// the ratio of two runs side by side says more than the ratio of two
// medians taken apart (which may come from different rounds).
func roundRatios(results []Result, workload string) []float64 {
	byRound := map[int]map[Engine]float64{}
	for _, r := range results {
		if r.Workload != workload || r.Err != nil || math.IsNaN(r.Throughput) || r.Throughput == 0 {
			continue
		}
		if byRound[r.Round] == nil {
			byRound[r.Round] = map[Engine]float64{}
		}
		byRound[r.Round][r.Engine] = r.Throughput
	}
	var out []float64
	for _, round := range slices.Sorted(maps.Keys(byRound)) {
		m, k := byRound[round][Minisched], byRound[round][KubeScheduler]
		if m > 0 && k > 0 {
			out = append(out, m/k)
		}
	}
	return out
}

// share is a scheduler's share of the ceiling: its throughput over the
// ceiling's, NaN when either is unknown or the ceiling's is zero. It may
// exceed 1: the ceiling is measured in runs of its own, on a machine
// whose load varies.
func share(scheduler, ceiling float64) float64 { return ratio(scheduler, ceiling) }

// ran reports whether engine ran workload at all (finished or not).
func ran(results []Result, workload string, engine Engine) bool {
	for _, r := range results {
		if r.Workload == workload && r.Engine == engine {
			return true
		}
	}
	return false
}

// totalOf is how many pods a workload measures.
func totalOf(results []Result, workload string) int {
	for _, r := range results {
		if r.Workload == workload {
			return r.Total
		}
	}
	return 0
}

// header names the columns of the summary table.
var header = []string{"workload", "metric", "minisched", "kube-scheduler", "ceiling", "minisched / kube-scheduler"}

// cells returns the rows' cells in header order, the workload named only on
// its first row.
func cells(rows []Row) [][]string {
	out := make([][]string, 0, len(rows))
	last := ""
	for _, r := range rows {
		w := r.Workload
		if w == last {
			w = ""
		}
		last = r.Workload
		out = append(out, []string{w, r.Metric, r.Minisched, r.KubeScheduler, r.Ceiling, r.Ratio})
	}
	return out
}

// printTable writes the rows as an aligned text table.
func printTable(out io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, c := range cells(rows) {
		fmt.Fprintln(tw, strings.Join(c, "\t"))
	}
	return tw.Flush()
}

// markdownTable is the rows as a markdown table.
func markdownTable(rows []Row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat("---|", len(header)))
	for _, c := range cells(rows) {
		fmt.Fprintf(&b, "| %s |\n", strings.Join(c, " | "))
	}
	return b.String()
}

// runsTable lists every run, with its notes and errors.
func runsTable(results []Result) string {
	var b strings.Builder
	b.WriteString("| round | workload | engine | bound | pods/s | perf's pods/s | middle pods/s | to first s | p50 ms | p99 ms | hinted % | CPU s/1000 | peak RSS MiB | notes |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		notes := strings.Join(r.Notes, "; ")
		if r.Err != nil {
			notes = strings.TrimPrefix(notes+"; error: "+r.Err.Error(), "; ")
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %d/%d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Round, r.Workload, r.Engine,
			r.Bound, r.Total, format("%.1f", r.Throughput), format("%.1f", r.Sampled), format("%.1f", r.Steady),
			format("%.2f", r.ToFirst),
			format("%.2f", r.P50*1000), format("%.2f", r.P99*1000),
			format("%.1f", r.BatchHinted), format("%.2f", r.CPUPer1000), format("%.0f", float64(r.PeakRSSBytes)/(1<<20)),
			strings.ReplaceAll(notes, "|", `\|`))
	}
	return b.String()
}

// Machine describes where the numbers came from.
type Machine struct {
	CPU      string
	Cores    int
	MemoryGB float64
	Go       string
	Date     time.Time
}

// thisMachine describes the machine from runtime and /proc.
func thisMachine(now time.Time) Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), Date: now, CPU: "unknown CPU"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				var kb float64
				if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%f kB", &kb); err == nil {
					m.MemoryGB = kb / (1 << 20)
				}
			}
		}
	}
	return m
}

// String is one line: CPU, cores, memory, Go version, date.
func (m Machine) String() string {
	return fmt.Sprintf("%s, %d cores, %.0f GiB of memory, %s, %s", m.CPU, m.Cores, m.MemoryGB, m.Go,
		m.Date.UTC().Format("2006-01-02 15:04 MST"))
}

// writeChart draws the median throughput of each workload, both schedulers
// and the ceiling side by side, to path (PNG or SVG by its extension).
func writeChart(path string, results []Result, workloads []string) error {
	p := plot.New()
	p.Title.Text = "Scheduling throughput (median over rounds)"
	p.Y.Label.Text = "pods/s"
	p.Y.Min = 0
	width := vg.Points(14)
	highest := 0.0
	for i, e := range []Engine{Minisched, KubeScheduler, Ceiling} {
		values := make(plotter.Values, len(workloads))
		for j, w := range workloads {
			v := medianOf(results, w, e, func(r Result) float64 { return r.Throughput })
			if math.IsNaN(v) {
				v = 0
			}
			values[j] = v
			highest = math.Max(highest, v)
		}
		bars, err := plotter.NewBarChart(values, width)
		if err != nil {
			return fmt.Errorf("chart of %s: %w", e, err)
		}
		bars.LineStyle.Width = 0
		bars.Color = plotColors[i]
		bars.Offset = vg.Length(i-1) * width
		p.Add(bars)
		p.Legend.Add(string(e), bars)
	}
	// Room above the bars for the legend (rounded up to a number the
	// ticks can name), and beside the outer bars.
	if highest > 0 {
		step := math.Pow(10, math.Floor(math.Log10(highest)))
		p.Y.Max = math.Ceil(highest*1.3/step) * step
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.NominalX(workloads...)
	p.X.Min, p.X.Max = -0.7, float64(len(workloads))-0.3
	p.X.Tick.Label.Rotation = 0.35
	p.X.Tick.Label.XAlign = -0.9
	if err := p.Save(vg.Length(2+1.2*float64(len(workloads)))*vg.Inch, 4*vg.Inch, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
