package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-helpers/storage/volume"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/scenario"
)

// buckets builds a histogram from bound, count pairs.
func buckets(pairs ...float64) Histogram {
	var h Histogram
	for i := 0; i+1 < len(pairs); i += 2 {
		h = append(h, Bucket{UpperBound: pairs[i], Count: pairs[i+1]})
	}
	return h
}

var inf = math.Inf(1)

func TestQuantile(t *testing.T) {
	tests := []struct {
		name string
		h    Histogram
		q    float64
		want float64
	}{
		// 100 observations: 10 ≤ 0.1, 60 ≤ 0.2, 90 ≤ 0.4, 100 ≤ +Inf.
		{"median interpolates in its bucket", buckets(0.1, 10, 0.2, 60, 0.4, 90, inf, 100), 0.5, 0.1 + 0.1*40.0/50},
		{"first bucket starts at zero", buckets(0.1, 10, 0.2, 60, 0.4, 90, inf, 100), 0.05, 0.05},
		{"rank on a bucket's edge", buckets(0.1, 10, 0.2, 60, 0.4, 90, inf, 100), 0.9, 0.4},
		{"rank in +Inf gives the highest finite bound", buckets(0.1, 10, 0.2, 60, 0.4, 90, inf, 100), 0.99, 0.4},
		{"q 0 is the lowest bucket's start", buckets(0.1, 10, 0.2, 60, inf, 100), 0, 0},
		{"q 1 is the highest finite bound", buckets(0.1, 10, 0.2, 60, inf, 60), 1, 0.2},
		// Unsmoothed, bucket 0.2 would hold 8 and the answer be 0.2+0.2*7/12.
		{"non-monotonic counts are smoothed", buckets(0.1, 10, 0.2, 8, 0.4, 20, inf, 20), 0.75, 0.3},
		{"negative first bound is returned as is", buckets(-1, 5, 1, 10, inf, 10), 0.2, -1},
		{"q above 1", buckets(0.1, 1, inf, 1), 1.5, inf},
		{"q below 0", buckets(0.1, 1, inf, 1), -0.5, math.Inf(-1)},
		{"empty histogram", buckets(0.1, 0, inf, 0), 0.5, math.NaN()},
		{"no +Inf bucket", buckets(0.1, 1, 0.2, 2), 0.5, math.NaN()},
		{"one bucket", buckets(inf, 3), 0.5, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.h.Quantile(tt.q)
			if !(got == tt.want || math.IsNaN(got) && math.IsNaN(tt.want) || math.Abs(got-tt.want) < 1e-12) {
				t.Errorf("Quantile(%v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

func TestParseHistogram(t *testing.T) {
	const page = `# HELP scheduler_scheduling_attempt_duration_seconds [STABLE] Scheduling attempt latency in seconds
# TYPE scheduler_scheduling_attempt_duration_seconds histogram
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="0.001"} 3
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="0.002"} 5
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="+Inf"} 6
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="unschedulable",le="0.001"} 1
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="unschedulable",le="0.002"} 1
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="unschedulable",le="+Inf"} 2
scheduler_scheduling_attempt_duration_seconds_sum{profile="default-scheduler",result="scheduled"} 0.01
scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="scheduled"} 6
scheduler_scheduling_attempt_duration_seconds_other_bucket{le="1"} 100
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="1",le="0.001"} 7
`
	tests := []struct {
		name    string
		page    string
		want    Histogram
		wantErr string
	}{
		{"summed over label sets", page, buckets(0.001, 4, 0.002, 6, inf, 8), ""},
		{"le not last, with a timestamp", `scheduler_scheduling_attempt_duration_seconds_bucket{le="0.5",result="x,y"} 2 1700000000
scheduler_scheduling_attempt_duration_seconds_bucket{le="+Inf",result="x,y"} 3`, buckets(0.5, 2, inf, 3), ""},
		{"absent", "scheduler_e2e_scheduling_duration_seconds_bucket{le=\"1\"} 3\n", nil, ""},
		{"bad value", `scheduler_scheduling_attempt_duration_seconds_bucket{le="1"} many`, nil, "bucket value"},
		{"no le", `scheduler_scheduling_attempt_duration_seconds_bucket{result="x"} 1`, nil, "without le"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseHistogram(strings.NewReader(tt.page), attemptHistogram)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestHistogramSub(t *testing.T) {
	after := buckets(0.1, 10, 0.2, 30, inf, 40)
	before := buckets(0.1, 4, 0.2, 10, inf, 12)
	want := buckets(0.1, 6, 0.2, 20, inf, 28)
	if diff := cmp.Diff(want, after.Sub(before)); diff != "" {
		t.Errorf("Sub (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff(after, after.Sub(nil)); diff != "" {
		t.Errorf("Sub(nil) (-want +got)\n%s", diff)
	}
	if got := Histogram(nil).Sub(before); got != nil {
		t.Errorf("nil.Sub = %v, want nil", got)
	}
}

func TestParseStatCPU(t *testing.T) {
	// Fields 14 and 15 (utime, stime) are 250 and 50 ticks below.
	tail := " S 1 100 100 0 -1 4194560 5000 0 0 0 250 50 0 0 20 0 12 0 123456 1000000 5000 18446744073709551615"
	tests := []struct {
		name    string
		stat    string
		want    float64
		wantErr string
	}{
		{"plain name", "4242 (kube-scheduler)" + tail, 3, ""},
		{"name with spaces and parentheses", "4242 (a) b (c)" + tail, 3, ""},
		{"no closing parenthesis", "4242 (kube-scheduler" + tail, 0, "no ')'"},
		{"too short", "4242 (x) S 1 100", 0, "only 3 fields"},
		{"not a number", "4242 (x) S 1 100 100 0 -1 4194560 5000 0 0 0 lots 50", 0, "utime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStatCPU(tt.stat)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("CPU = %v s, want %v s", got, tt.want)
			}
		})
	}
}

func TestParseStatusHWM(t *testing.T) {
	tests := []struct {
		name    string
		status  string
		want    int64
		wantErr string
	}{
		{"present", "Name:\tkube-scheduler\nVmPeak:\t 1000 kB\nVmHWM:\t   73728 kB\nVmRSS:\t 70000 kB\n", 73728 * 1024, ""},
		{"absent", "Name:\tkthreadd\nState:\tS (sleeping)\n", 0, "no VmHWM"},
		{"odd unit", "VmHWM:\t 12 MB\n", 0, "unexpected VmHWM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStatusHWM(tt.status)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("VmHWM = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestMedianAndRatio(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		values []float64
		want   float64
	}{
		{"odd", []float64{3, 1, 2}, 2},
		{"even", []float64{4, 1, 3, 2}, 2.5},
		{"NaN ignored", []float64{nan, 5, 1, nan, 3}, 3},
		{"all NaN", []float64{nan, nan}, nan},
		{"none", nil, nan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := median(tt.values)
			if !(got == tt.want || math.IsNaN(got) && math.IsNaN(tt.want)) {
				t.Errorf("median(%v) = %v, want %v", tt.values, got, tt.want)
			}
		})
	}
	for _, c := range []struct{ a, b, want float64 }{{3, 2, 1.5}, {1, 0, nan}, {nan, 2, nan}, {2, nan, nan}} {
		if got := ratio(c.a, c.b); !(got == c.want || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("ratio(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	nan := math.NaN()
	run := func(w string, e Engine, round int, tput, p50, p99, cpu float64, rss int64) Result {
		hinted := nan
		if e == KubeScheduler {
			hinted = 90 + float64(round)
		}
		return Result{Workload: w, Engine: e, Round: round, Bound: 10, Total: 10,
			Throughput: tput, Sampled: tput - 10, Steady: tput + 10, ToFirst: tput / 100, P50: p50, P99: p99, BatchHinted: hinted, CPUPer1000: cpu, PeakRSSBytes: rss}
	}
	schedulers := func(w string) []Result {
		return []Result{
			// minisched serves no histogram: its latency is n/a.
			run(w, Minisched, 1, 100, nan, nan, 2, 40<<20),
			run(w, Minisched, 2, 300, nan, nan, 4, 60<<20),
			run(w, Minisched, 3, 200, nan, nan, 3, 50<<20),
			run(w, KubeScheduler, 1, 50, 0.002, 0.010, 6, 80<<20),
			run(w, KubeScheduler, 2, 100, 0.004, 0.030, 6, 100<<20),
			run(w, KubeScheduler, 3, 150, 0.003, 0.020, 6, 90<<20),
			// A failed run counts in no median.
			{Workload: w, Engine: KubeScheduler, Round: 4, Total: 10, Throughput: 1e6, Err: errors.New("boom")},
		}
	}
	// The ceiling has no attempts: its latency is n/a.
	ceilingRuns := []Result{
		run("C", Ceiling, 1, 400, nan, nan, 1, 30<<20),
		run("C", Ceiling, 2, 500, nan, nan, 1.5, 30<<20),
		run("C", Ceiling, 3, 450, nan, nan, 2, 30<<20),
	}
	failedCeiling := []Result{{Workload: "F", Engine: Ceiling, Round: 1, Total: 10, Err: errors.New("boom")}}
	tests := []struct {
		name     string
		workload string
		results  []Result
		want     []Row
	}{
		{"without the ceiling", "W", schedulers("W"), []Row{
			{"W", "pods bound", "10/10", "10/10", notRun, "1.00"},
			{"W", "throughput (pods/s)", "200.0", "100.0", notRun, "2.00"},
			{"W", "scheduler_perf's throughput (pods/s)", "190.0", "90.0", notRun, "2.11"},
			{"W", "middle 80 % throughput (pods/s)", "210.0", "110.0", notRun, "1.91"},
			{"W", "start to first binding (s)", "2.00", "1.00", notRun, "2.00"},
			{"W", "attempt p50 (ms)", "n/a", "3.00", notRun, "n/a"},
			{"W", "attempt p99 (ms)", "n/a", "20.00", notRun, "n/a"},
			{"W", "batch hints used (%)", "n/a", "92.0", notRun, "n/a"},
			{"W", "CPU s / 1000 pods", "3.00", "6.00", notRun, "0.50"},
			{"W", "peak RSS (MiB)", "50", "90", notRun, "0.56"},
			// Rounds 1 to 3: 100/50, 300/100, 200/150.
			{"W", pairedMetric, "", "", notRun, "2.00 (1.33–3.00)"},
		}},
		{"with the ceiling: a share row", "C", append(schedulers("C"), ceilingRuns...), []Row{
			{"C", "pods bound", "10/10", "10/10", "10/10", "1.00"},
			{"C", "throughput (pods/s)", "200.0", "100.0", "450.0", "2.00"},
			{"C", "scheduler_perf's throughput (pods/s)", "190.0", "90.0", "440.0", "2.11"},
			{"C", "middle 80 % throughput (pods/s)", "210.0", "110.0", "460.0", "1.91"},
			{"C", "start to first binding (s)", "2.00", "1.00", "4.50", "2.00"},
			{"C", "attempt p50 (ms)", "n/a", "3.00", "n/a", "n/a"},
			{"C", "attempt p99 (ms)", "n/a", "20.00", "n/a", "n/a"},
			{"C", "batch hints used (%)", "n/a", "92.0", "n/a", "n/a"},
			{"C", "CPU s / 1000 pods", "3.00", "6.00", "1.50", "0.50"},
			{"C", "peak RSS (MiB)", "50", "90", "30", "0.56"},
			// Rounds 1 to 3: 100/50, 300/100, 200/150.
			{"C", pairedMetric, "", "", "", "2.00 (1.33–3.00)"},
			// 200 / 450 and 100 / 450.
			{"C", shareMetric, "0.44", "0.22", "", ""},
		}},
		{"the ceiling failed: shares n/a", "F", append(schedulers("F"), failedCeiling...), []Row{
			{"F", "pods bound", "10/10", "10/10", "n/a/10", "1.00"},
			{"F", "throughput (pods/s)", "200.0", "100.0", "n/a", "2.00"},
			{"F", "scheduler_perf's throughput (pods/s)", "190.0", "90.0", "n/a", "2.11"},
			{"F", "middle 80 % throughput (pods/s)", "210.0", "110.0", "n/a", "1.91"},
			{"F", "start to first binding (s)", "2.00", "1.00", "n/a", "2.00"},
			{"F", "attempt p50 (ms)", "n/a", "3.00", "n/a", "n/a"},
			{"F", "attempt p99 (ms)", "n/a", "20.00", "n/a", "n/a"},
			{"F", "batch hints used (%)", "n/a", "92.0", "n/a", "n/a"},
			{"F", "CPU s / 1000 pods", "3.00", "6.00", "n/a", "0.50"},
			{"F", "peak RSS (MiB)", "50", "90", "n/a", "0.56"},
			// Rounds 1 to 3: 100/50, 300/100, 200/150.
			{"F", pairedMetric, "", "", "", "2.00 (1.33–3.00)"},
			{"F", shareMetric, "n/a", "n/a", "", ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summarize(tt.results, []string{tt.workload})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("summarize (-want +got)\n%s", diff)
			}
		})
	}
	md := markdownTable(summarize(schedulers("W"), []string{"W"}))
	if !strings.Contains(md, "| W | pods bound | 10/10 | 10/10 | – | 1.00 |\n|  | throughput (pods/s) | 200.0 | 100.0 | – | 2.00 |") {
		t.Errorf("markdown table names the workload on every row or lost a row:\n%s", md)
	}
}

func TestShare(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name               string
		scheduler, ceiling float64
		want               float64
	}{
		{"half", 100, 200, 0.5},
		{"at the ceiling", 300, 300, 1},
		// Separate runs on a loaded machine: a scheduler may come out above.
		{"above, from noise", 330, 300, 1.1},
		{"nothing bound", 0, 300, 0},
		{"ceiling unknown", 100, nan, nan},
		{"scheduler unknown", nan, 300, nan},
		{"ceiling zero", 100, 0, nan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := share(tt.scheduler, tt.ceiling)
			if !(math.Abs(got-tt.want) < 1e-12 || math.IsNaN(got) && math.IsNaN(tt.want)) {
				t.Errorf("share(%v, %v) = %v, want %v", tt.scheduler, tt.ceiling, got, tt.want)
			}
		})
	}
}

// TestEngineOrder checks that the engines take turns: over as many rounds
// as there are engines, each runs in each place once.
func TestEngineOrder(t *testing.T) {
	tests := []struct {
		name    string
		engines []Engine
		want    [][]Engine
	}{
		{"two schedulers alternate", []Engine{Minisched, KubeScheduler},
			[][]Engine{{Minisched, KubeScheduler}, {KubeScheduler, Minisched}, {Minisched, KubeScheduler}}},
		{"three rotate", []Engine{Minisched, KubeScheduler, Ceiling}, [][]Engine{
			{Minisched, KubeScheduler, Ceiling}, {KubeScheduler, Ceiling, Minisched},
			{Ceiling, Minisched, KubeScheduler}, {Minisched, KubeScheduler, Ceiling},
		}},
		{"one", []Engine{Ceiling}, [][]Engine{{Ceiling}, {Ceiling}}},
		{"none", nil, [][]Engine{nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got [][]Engine
			for round := 1; round <= len(tt.want); round++ {
				got = append(got, engineOrder(round, tt.engines))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestParseEngines(t *testing.T) {
	all := []Engine{Minisched, KubeScheduler, Ceiling}
	tests := []struct {
		list    string
		want    []Engine
		wantErr string
	}{
		{"minisched,kube-scheduler,ceiling", all, ""},
		{"ceiling, minisched", []Engine{Minisched, Ceiling}, ""},
		{"kube-scheduler,kube-scheduler", []Engine{KubeScheduler}, ""},
		{"minisched,volcano", nil, `unknown engine "volcano"`},
		{"", nil, `unknown engine ""`},
	}
	for _, tt := range tests {
		t.Run(tt.list, func(t *testing.T) {
			got, err := parseEngines(tt.list)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
	// The ceiling is left out where it does not fit, and never added.
	w := workloads(true)
	byName := map[string]Workload{}
	for _, x := range w {
		byName[x.Name] = x
	}
	if got := enginesFor(all, byName["SchedulingWithMixedChurn-1000"], true); !cmp.Equal(got, []Engine{Minisched, KubeScheduler}) {
		t.Errorf("SchedulingWithMixedChurn-1000 runs %v", got)
	}
	if got := enginesFor(all, byName["HostPortConflict"], true); !cmp.Equal(got, all) {
		t.Errorf("HostPortConflict runs %v", got)
	}
	if got := enginesFor([]Engine{Minisched}, byName["HostPortConflict"], true); !cmp.Equal(got, []Engine{Minisched}) {
		t.Errorf("HostPortConflict with minisched alone runs %v", got)
	}
}

func TestChoose(t *testing.T) {
	all := workloads(true)
	got, err := choose(all, "", true)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range got {
		names = append(names, w.Name)
	}
	if diff := cmp.Diff(strings.Split(smokeDefault, ","), names); diff != "" {
		t.Errorf("smoke workloads (-want +got)\n%s", diff)
	}
	// Every workload but those that run only when named.
	onlyNamed := []string{"SchedulingBasic-15000", "HostPortConflict-2000", "ResourceSaturation-2000"}
	if got, _ := choose(all, "", false); len(got) != len(all)-len(onlyNamed) || slices.ContainsFunc(got, func(w Workload) bool {
		return slices.Contains(onlyNamed, w.Name)
	}) {
		t.Errorf("default chose %d of %d workloads: %v", len(got), len(all), got)
	}
	for _, name := range onlyNamed {
		if got, err := choose(all, name, false); err != nil || len(got) != 1 {
			t.Errorf("choosing %s by name gave %v, %v", name, got, err)
		}
	}
	if _, err := choose(all, "Nope", false); err == nil || !strings.Contains(err.Error(), "unknown workload \"Nope\"") {
		t.Errorf("error = %v, want one naming the unknown workload", err)
	}
}

func TestCheckBinaries(t *testing.T) {
	err := checkBinaries(map[string]string{"/nonexistent/minisched": "make build"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/minisched (run `make build`)") {
		t.Errorf("error = %v, want one naming the missing binary and its make target", err)
	}
}

// TestBacklogPlacesInitPods checks which workloads run on a backlog and that
// their init pods are created bound, round robin over the nodes.
func TestBacklogPlacesInitPods(t *testing.T) {
	for _, w := range workloads(true) {
		t.Run(w.Name, func(t *testing.T) {
			if got, want := backlogFits(w), w.Name != "Preemption" &&
				!strings.HasPrefix(w.Name, "GangPreemptionBasic"); got != want {
				t.Fatalf("backlogFits = %v, want %v", got, want)
			}
			client := fake.NewClientset()
			if err := placeInitPods(context.Background(), client, w); err != nil {
				t.Fatal(err)
			}
			pods, err := client.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) != w.InitPods {
				t.Fatalf("%d init pods created, want %d", len(pods.Items), w.InitPods)
			}
			perNode := map[string]int{}
			for _, p := range pods.Items {
				perNode[p.Spec.NodeName]++
			}
			for node, n := range perNode {
				if !strings.HasPrefix(node, "node-") || n > (w.InitPods+w.Nodes-1)/w.Nodes {
					t.Errorf("%d init pods on %q; want at most %d on each of the workload's nodes",
						n, node, (w.InitPods+w.Nodes-1)/w.Nodes)
				}
			}
		})
	}
}

// TestStorageWorkloads checks what a storage workload creates on a fake
// apiserver: a CSINode per node listing the driver with its attach limit, a
// claim per measured pod, of a WaitForFirstConsumer class, that the pod
// mounts, and for static volumes a PV per claim, not bound to it, that
// VolumeBinding's matching (component-helpers' FindMatchingVolume, as both
// schedulers call it) gives any claim on any node once the PV binder has
// made it Available; then that waitForStorage sees the volumes ready.
func TestStorageWorkloads(t *testing.T) {
	var names []string
	for _, w := range workloads(true) {
		if w.Storage == nil {
			continue
		}
		names = append(names, w.Name)
		t.Run(w.Name, func(t *testing.T) {
			ctx := context.Background()
			s := w.Storage
			client := fake.NewClientset()
			if err := createNodes(ctx, client, w); err != nil {
				t.Fatal(err)
			}
			if err := createClaims(ctx, client, s, w.Pods, "pod"); err != nil {
				t.Fatal(err)
			}

			if m := s.Class.VolumeBindingMode; m == nil || *m != storagev1.VolumeBindingWaitForFirstConsumer {
				t.Errorf("class %s binds %v, want WaitForFirstConsumer", s.Class.Name, m)
			}
			csiNodes, err := client.StorageV1().CSINodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(csiNodes.Items) != w.Nodes {
				t.Errorf("%d CSINodes, want one per node: %d", len(csiNodes.Items), w.Nodes)
			}
			for _, n := range csiNodes.Items {
				d := n.Spec.Drivers
				if len(d) != 1 || d[0].Name != s.Driver || d[0].Allocatable == nil || *d[0].Allocatable.Count != s.AttachLimit {
					t.Errorf("CSINode %s lists %+v, want %s with a count of %d", n.Name, d, s.Driver, s.AttachLimit)
				}
			}

			claims, err := client.CoreV1().PersistentVolumeClaims(namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(claims.Items) != w.Pods {
				t.Fatalf("%d claims, want one per measured pod: %d", len(claims.Items), w.Pods)
			}
			pod := w.Pod("pod-0")
			if v := pod.Spec.Volumes; len(v) != 1 || v[0].PersistentVolumeClaim == nil || v[0].PersistentVolumeClaim.ClaimName != "pod-0" {
				t.Errorf("pod-0's volumes are %+v, want its claim pod-0", v)
			}

			pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if s.StaticPV == nil {
				if len(pvs.Items) != 0 {
					t.Errorf("%d PVs made beforehand for provisioned claims, want none", len(pvs.Items))
				}
				for i := range w.Nodes {
					c := builders.MakeCSIStorageCapacity(fmt.Sprintf("c-%d", i), s.Class.Name, fmt.Sprintf("node-%d", i), "10Gi")
					if _, err := client.StorageV1().CSIStorageCapacities(c.Namespace).Create(ctx, c, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				if len(pvs.Items) != w.Pods {
					t.Fatalf("%d PVs, want one per claim: %d", len(pvs.Items), w.Pods)
				}
				var available []*v1.PersistentVolume
				for i := range pvs.Items {
					pv := &pvs.Items[i]
					if pv.Spec.ClaimRef != nil || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != s.Driver {
						t.Errorf("PV %s: claimRef %v, csi %+v; want no claimRef and driver %s", pv.Name, pv.Spec.ClaimRef, pv.Spec.CSI, s.Driver)
					}
					pv.Status.Phase = v1.VolumeAvailable
					if _, err := client.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
					available = append(available, pv)
				}
				node := scenario.MakeNode(fmt.Sprintf("node-%d", w.Nodes-1)).Obj()
				for i := range claims.Items {
					got, err := volume.FindMatchingVolume(&claims.Items[i], available, node, nil, true, true)
					if err != nil || got == nil {
						t.Errorf("claim %s matches %v on %s (%v), want a volume", claims.Items[i].Name, got, node.Name, err)
					}
				}
			}
			if err := waitForStorage(ctx, client, s, w.Nodes, w.Pods); err != nil {
				t.Error(err)
			}
		})
	}
	if diff := cmp.Diff([]string{"SchedulingCSIPVs-500", "SchedulingProvisionedPVs-500"}, names); diff != "" {
		t.Errorf("storage workloads (-want +got)\n%s", diff)
	}
	if !needsControllerManager(workloads(true)) || needsControllerManager(workloads(true)[:1]) {
		t.Error("needsControllerManager should be true for every workload, false for SchedulingBasic-500 alone")
	}
}

func TestParseCounter(t *testing.T) {
	const page = `# HELP scheduler_batch_attempts_total [ALPHA] Counts of results when we attempt to use batching.
# TYPE scheduler_batch_attempts_total counter
scheduler_batch_attempts_total{profile="default-scheduler",result="hint_used"} 4900
scheduler_batch_attempts_total{profile="default-scheduler",result="no_hint"} 95
scheduler_batch_attempts_total{profile="other",result="no_hint"} 5
scheduler_batch_attempts_total_other{result="no_hint"} 1000
scheduler_batch_attempts_totally 7
`
	tests := []struct {
		name    string
		page    string
		want    map[string]float64
		wantErr string
	}{
		{"summed over profiles", page, map[string]float64{"hint_used": 4900, "no_hint": 100}, ""},
		{"without labels", "scheduler_batch_attempts_total 3\n", map[string]float64{"": 3}, ""},
		{"absent", "scheduler_pending_pods{queue=\"active\"} 3\n", nil, ""},
		{"bad value", `scheduler_batch_attempts_total{result="no_hint"} lots`, nil, "counter value"},
		{"no value", `scheduler_batch_attempts_total{result="no_hint"}`, nil, "without a value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCounter(strings.NewReader(tt.page), batchCounter, "result")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestHintShare(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name          string
		before, after map[string]float64
		want          float64
	}{
		{"from the start", nil, map[string]float64{"hint_used": 90, "no_hint": 10}, 90},
		{"between scrapes", map[string]float64{"hint_used": 50, "no_hint": 50},
			map[string]float64{"hint_used": 140, "no_hint": 60}, 90},
		{"a result seen only after", map[string]float64{"no_hint": 10},
			map[string]float64{"no_hint": 10, "hint_not_used": 2, "hint_used": 2}, 50},
		{"never hinted", nil, map[string]float64{"no_hint": 10}, 0},
		{"no metric", nil, nil, nan},
		{"nothing counted in between", map[string]float64{"no_hint": 10}, map[string]float64{"no_hint": 10}, nan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HintShare(tt.before, tt.after)
			if !(math.Abs(got-tt.want) < 1e-9 || math.IsNaN(got) && math.IsNaN(tt.want)) {
				t.Errorf("HintShare = %v, want %v", got, tt.want)
			}
		})
	}
}
