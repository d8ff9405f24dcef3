package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGrowthChart draws the growth chart from results of SchedulingBasic
// at several sizes, and none from one size.
func TestGrowthChart(t *testing.T) {
	basic500 := Workload{Name: "SchedulingBasic-500", Nodes: 500}
	basic5000 := Workload{Name: "SchedulingBasic-5000", Nodes: 5000}
	other := Workload{Name: "HostPortConflict", Nodes: 10000}
	results := []Result{
		{Workload: basic500.Name, Engine: Minisched, Throughput: 400, PeakRSSBytes: 90 << 20},
		{Workload: basic500.Name, Engine: KubeScheduler, Throughput: 300, PeakRSSBytes: 100 << 20},
		{Workload: basic5000.Name, Engine: Minisched, Throughput: 280, PeakRSSBytes: 170 << 20},
		{Workload: basic5000.Name, Engine: KubeScheduler, Throughput: 160, PeakRSSBytes: 200 << 20},
		{Workload: other.Name, Engine: Minisched, Throughput: 350},
	}
	tests := []struct {
		name   string
		chosen []Workload
		want   bool
	}{
		{name: "two sizes, in any order", chosen: []Workload{basic5000, other, basic500}, want: true},
		{name: "one size", chosen: []Workload{basic500, other}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "growth.png")
			drawn, err := writeGrowthChart(path, results, tc.chosen)
			if err != nil {
				t.Fatal(err)
			}
			if drawn != tc.want {
				t.Fatalf("drawn = %v, want %v", drawn, tc.want)
			}
			data, err := os.ReadFile(path)
			switch {
			case !tc.want && !os.IsNotExist(err):
				t.Errorf("a chart was written: %v", err)
			case tc.want && (err != nil || !bytes.HasPrefix(data, []byte("\x89PNG"))):
				t.Errorf("no PNG written: %v", err)
			}
			if got := growthSizes(tc.chosen); tc.want && (len(got) != 2 || got[0].Nodes != 500) {
				t.Errorf("sizes %v, want 500 then 5000", got)
			}
		})
	}
}
