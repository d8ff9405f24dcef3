package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// growthPrefix names the workloads whose sizes the growth chart compares:
// SchedulingBasic at 500, 5,000 and 15,000 nodes are one workload grown.
const growthPrefix = "SchedulingBasic-"

// growthSizes returns the SchedulingBasic workloads among chosen, fewest
// nodes first: the points of the growth chart.
func growthSizes(chosen []Workload) []Workload {
	var sizes []Workload
	for _, w := range chosen {
		if strings.HasPrefix(w.Name, growthPrefix) {
			sizes = append(sizes, w)
		}
	}
	slices.SortFunc(sizes, func(a, b Workload) int { return a.Nodes - b.Nodes })
	return sizes
}

// writeGrowthChart draws, when the run measured SchedulingBasic at two
// sizes or more, how each engine's median throughput and median peak RSS
// change with the number of nodes, side by side, to path (PNG). It says
// whether it drew one.
func writeGrowthChart(path string, results []Result, chosen []Workload) (bool, error) {
	sizes := growthSizes(chosen)
	if len(sizes) < 2 {
		return false, nil
	}
	throughput := growthPlot("Throughput as the cluster grows", "pods/s (median over rounds)")
	memory := growthPlot("Scheduler peak RSS as the cluster grows", "MiB (median over rounds)")
	for i, e := range []Engine{Minisched, KubeScheduler, Ceiling} {
		pods, rss := plotter.XYs{}, plotter.XYs{}
		for _, w := range sizes {
			if !ran(results, w.Name, e) {
				continue
			}
			x := float64(w.Nodes)
			if v := medianOf(results, w.Name, e, func(r Result) float64 { return r.Throughput }); !math.IsNaN(v) {
				pods = append(pods, plotter.XY{X: x, Y: v})
			}
			v := medianOf(results, w.Name, e, func(r Result) float64 { return float64(r.PeakRSSBytes) / (1 << 20) })
			if !math.IsNaN(v) && v > 0 {
				rss = append(rss, plotter.XY{X: x, Y: v})
			}
		}
		for _, p := range []struct {
			plot   *plot.Plot
			points plotter.XYs
		}{{throughput, pods}, {memory, rss}} {
			if len(p.points) == 0 {
				continue
			}
			line, points, err := plotter.NewLinePoints(p.points)
			if err != nil {
				return false, fmt.Errorf("growth chart of %s: %w", e, err)
			}
			line.Color, points.Color = plotColors[i], plotColors[i]
			line.Width = vg.Points(2)
			for _, xy := range p.points {
				// Room above the lines for the legend.
				p.plot.Y.Max = math.Max(p.plot.Y.Max, xy.Y*1.35)
			}
			p.plot.Add(line, points)
			p.plot.Legend.Add(string(e), line, points)
		}
	}
	var ticks []plot.Tick
	for _, w := range sizes {
		ticks = append(ticks, plot.Tick{Value: float64(w.Nodes), Label: fmt.Sprint(w.Nodes)})
	}
	for _, p := range []*plot.Plot{throughput, memory} {
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.X.Min, p.X.Max = float64(sizes[0].Nodes)*0.7, float64(sizes[len(sizes)-1].Nodes)*1.4
	}
	const width, height = 10 * vg.Inch, 4 * vg.Inch
	img := vgimg.New(width, height)
	canvas := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8,
		PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	plots := [][]*plot.Plot{{throughput, memory}}
	for j, c := range plot.Align(plots, tiles, canvas)[0] {
		plots[0][j].Draw(c)
	}
	if err := savePNG(img, path); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	return true, nil
}

// growthPlot is one panel of the growth chart: nodes on a logarithmic x
// axis, the value from zero up.
func growthPlot(title, unit string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "nodes (= pods measured)"
	p.X.Scale = plot.LogScale{}
	p.Y.Label.Text = unit
	p.Y.Min = 0
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

// savePNG writes the image to path as a PNG.
func savePNG(img *vgimg.Canvas, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
