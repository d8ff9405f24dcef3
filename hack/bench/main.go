// Command bench runs minisched and the real kube-scheduler side by side on
// scheduler_perf-like workloads (workloads.go) and compares them:
// throughput, the scheduling-attempt latency each reports on /metrics, the
// share of batchable cycles placed by a batch hint, CPU and peak memory.
//
// Each run gets a fresh envtest apiserver and one scheduler process; both
// schedulers read the same KubeSchedulerConfiguration (schedulerConfig).
// By default every workload but the preemption ones (Preemption,
// GangPreemptionBasic-*) runs on a backlog:
// the nodes, the init pods (created bound, round robin) and every measured
// pod exist before the scheduler starts, so the throughput is the
// scheduler's and not how fast this program creates pods
// (SchedulingWithMixedChurn-1000's churn starts with the scheduler). The
// preemption ones (and all, with --backlog=false) run as upstream's
// scheduler_perf does: the scheduler first, then the nodes, then any init
// pods (scheduled, waited for), then the measured pods, created while it
// runs. The storage workloads also run kube-controller-manager's PV binder
// beside the apiserver, which finishes the volume binding that the
// scheduler starts, and, where volumes are made on demand, the example
// provisioner (storage.go). The device workload runs the resourceclaim
// controller of kube-controller-manager, which makes each pod's claim from
// its template (devices.go).
//
// On every backlog workload where it can make them honestly (one that
// names, for each pod, a node a scheduler could have chosen), a third
// engine runs too: the ceiling (ceiling.go), this program as
// `bench ceiling`, which makes the API writes of scheduling (a binding and
// an event per pod, and a device workload's claim writes) without deciding
// anything. The table gives each scheduler's throughput as a share of it.
//
// In each round every workload runs once on each engine that runs it, in
// an order of engines rotated by one place from round to round
// (engineOrder), so that no engine always goes first. The table shows medians over the rounds (three by default).
// The results go to bench/results (latest.md, throughput.png, and
// growth.png when SchedulingBasic ran at two sizes or more) and, with
// --docs, into a markdown file: `make bench` updates docs/performance.md.
//
//	make bench                                   # every workload, 3 rounds
//	make bench ARGS="--rounds 5 --workloads SchedulingBasic-500"
//	make bench SMOKE=1                           # unit tests, then a few workloads at tiny sizes, 1 round (CI); results in /tmp
//	make bench ARGS=--backlog=false              # pods created while the scheduler runs
//	make bench ARGS="--profile /tmp/prof"        # and profiles: the apiserver's CPU in every run, minisched's CPU and allocations
//	make bench ARGS=--engines=minisched,kube-scheduler   # no ceiling
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"image/color"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/minisched/minisched/testenv"
)

// plotColors are the bars of minisched, kube-scheduler and the ceiling.
var plotColors = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff},
}

// Markers in docs/performance.md between which the latest results go.
const (
	docsBegin = "<!-- bench:begin -->"
	docsEnd   = "<!-- bench:end -->"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "ceiling" {
		if err := ceilingMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench ceiling:", err)
			os.Exit(1)
		}
		return
	}
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// mainErr parses the flags, checks the binaries, runs every round and
// writes the results.
func mainErr() error {
	s := parseFlags()
	// envtest logs through controller-runtime's logger; its complaint that
	// none was set (with a stack trace) would drown the progress lines.
	ctrllog.SetLogger(logr.Discard())
	all := workloads(s.smoke)
	engines, err := parseEngines(s.engineList)
	if err != nil {
		return err
	}
	if s.list {
		listWorkloads(all, engines, s.backlog)
		return nil
	}
	chosen, err := choose(all, s.only, s.smoke)
	if err != nil {
		return err
	}
	if err := s.settle(); err != nil {
		return err
	}
	o, err := s.options(chosen)
	if err != nil {
		return err
	}
	if err := s.makeDirs(&o); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	start := time.Now()
	results, err := runRounds(ctx, o, chosen, engines, s.rounds, s.backlog)
	if err != nil {
		return err
	}
	if err := s.writeResults(results, chosen, start, o.LogDir); err != nil {
		return err
	}
	return failures(results)
}

// settings are the command line's flags.
type settings struct {
	root, only, out, docs, engineList string
	// minisched and kubeScheduler are the binaries' paths, if given.
	minisched, kubeScheduler string
	profileDir               string
	rounds, profileSeconds   int
	ceilingWorkers           int
	smoke, list, backlog     bool
	stall                    time.Duration
}

// parseFlags reads the command line.
func parseFlags() settings {
	var s settings
	flag.StringVar(&s.root, "root", "", "minisched's repository root (default: found above the working directory)")
	flag.IntVar(&s.rounds, "rounds", 3, "rounds; in each, every workload runs once per engine, in an order rotated each round")
	flag.StringVar(&s.only, "workloads", "", "comma-separated workloads to run (default: all; with --smoke, "+smokeDefault+")")
	flag.BoolVar(&s.smoke, "smoke", false, "tiny sizes and one round, to check that the program works")
	flag.StringVar(&s.out, "out", "", "directory for the results (default: bench/results, or a temporary directory with --smoke)")
	flag.StringVar(&s.docs, "docs", "", "markdown file whose "+docsBegin+" … "+docsEnd+" part gets the results (none by default)")
	flag.DurationVar(&s.stall, "stall", 60*time.Second, "give up waiting for bindings after this long without one")
	flag.BoolVar(&s.list, "list", false, "list the workloads and exit")
	flag.BoolVar(&s.backlog, "backlog", true, "create the measured pods (and any init pods, already bound) before the scheduler starts, in every workload but the preemption ones; --backlog=false creates them while it runs, as scheduler_perf does")
	flag.StringVar(&s.minisched, "minisched", "", "the minisched binary (default: bin/minisched under --root)")
	flag.StringVar(&s.kubeScheduler, "kube-scheduler", "", "the kube-scheduler binary (default: kube-scheduler in KUBEBUILDER_ASSETS or bin/k8s/<version>)")
	flag.StringVar(&s.profileDir, "profile", "", "directory for a CPU profile of each minisched run and of the apiserver in every run, and an allocation profile of each minisched run (go tool pprof reads them)")
	flag.IntVar(&s.profileSeconds, "profile-seconds", 10, "length of each CPU profile; the run waits for it")
	flag.StringVar(&s.engineList, "engines", "minisched,kube-scheduler,ceiling", "comma-separated engines to run; the ceiling (the API writes of scheduling and nothing else) runs only on the backlog workloads that have one")
	flag.IntVar(&s.ceilingWorkers, "ceiling-workers", ceilingWorkers, "how many pods the ceiling binds at once")
	flag.Parse()
	return s
}

// listWorkloads prints every workload's sizes, and whether the ceiling
// runs it too (--list).
func listWorkloads(all []Workload, engines []Engine, backlog bool) {
	for _, w := range all {
		ceiling := ""
		if slices.Contains(engines, Ceiling) && ceilingFits(w, backlog) {
			ceiling = " + ceiling"
		}
		fmt.Printf("%-40s %5d nodes %5d init pods %5d measured pods%s\n", w.Name, w.Nodes, w.InitPods, w.Pods, ceiling)
	}
}

// settle checks --rounds (one with --smoke) and finds --root if it was
// not given.
func (s *settings) settle() error {
	if s.smoke {
		s.rounds = 1
	}
	if s.rounds < 1 {
		return fmt.Errorf("--rounds must be at least 1, not %d", s.rounds)
	}
	if s.root != "" {
		return nil
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return fmt.Errorf("%w; pass --root", err)
	}
	s.root = root
	return nil
}

// assetsDir is where envtest's binaries and kube-scheduler are:
// KUBEBUILDER_ASSETS, else bin/k8s/<version> under root, which it then
// sets KUBEBUILDER_ASSETS to (testenv.StartEnvironment reads it too).
func assetsDir(root string) (string, error) {
	if assets := os.Getenv("KUBEBUILDER_ASSETS"); assets != "" {
		return assets, nil
	}
	assets := filepath.Join(root, "bin", "k8s", testenv.KubernetesVersion)
	return assets, os.Setenv("KUBEBUILDER_ASSETS", assets)
}

// options are the runs' settings: the binaries, checked (each missing
// one named with the make target that builds it), and whether minisched
// serves /metrics.
func (s settings) options(chosen []Workload) (Options, error) {
	assets, err := assetsDir(s.root)
	if err != nil {
		return Options{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return Options{}, fmt.Errorf("finding this program, which runs the ceiling: %w", err)
	}
	o := Options{
		Self:           self,
		Smoke:          s.smoke,
		CeilingWorkers: s.ceilingWorkers,
		Minisched:      cmp.Or(s.minisched, filepath.Join(s.root, "bin", "minisched")),
		KubeScheduler:  cmp.Or(s.kubeScheduler, filepath.Join(assets, "kube-scheduler")),
		Stall:          s.stall,
		Backlog:        s.backlog,
		ProfileDir:     s.profileDir,
		ProfileSeconds: s.profileSeconds,
		Progress: func(f string, args ...any) {
			fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+f+"\n", args...)
		},
	}
	if err := checkBinaries(needed(o, assets, chosen)); err != nil {
		return Options{}, err
	}
	o.MinischedMetrics = acceptsFlag(o.Minisched, "metrics-bind-address")
	if !o.MinischedMetrics {
		o.Progress("note: %s run has no --metrics-bind-address; its latency will be n/a", o.Minisched)
	}
	return o, nil
}

// needed maps each binary the runs of chosen need to the make target that
// builds it: kube-controller-manager only for storage and devices.
func needed(o Options, assets string, chosen []Workload) map[string]string {
	need := map[string]string{
		o.Minisched:                             "make build",
		o.KubeScheduler:                         "make kube-scheduler",
		filepath.Join(assets, "etcd"):           "make envtest",
		filepath.Join(assets, "kube-apiserver"): "make envtest",
	}
	if needsControllerManager(chosen) {
		// Where testenv.StartControllerManager looks for it.
		kcm := cmp.Or(os.Getenv("KUBE_CONTROLLER_MANAGER"), filepath.Join(assets, "kube-controller-manager"))
		need[kcm] = "make kube-controller-manager"
	}
	return need
}

// makeDirs creates the directory of --profile, the results directory (--out;
// by default bench/results, or a temporary one with --smoke) and a
// temporary directory for the schedulers' logs (o.LogDir): logs stay out
// of the results, which are committed.
func (s *settings) makeDirs(o *Options) error {
	if s.profileDir != "" {
		if err := os.MkdirAll(s.profileDir, 0o755); err != nil {
			return err
		}
	}
	var err error
	switch {
	case s.out != "":
	case s.smoke:
		if s.out, err = os.MkdirTemp("", "minisched-bench-smoke-"); err != nil {
			return err
		}
	default:
		s.out = filepath.Join(s.root, "bench", "results")
	}
	if err := os.MkdirAll(s.out, 0o755); err != nil {
		return err
	}
	o.LogDir, err = os.MkdirTemp("", "minisched-bench-logs-")
	return err
}

// runRounds runs every round: in each, every chosen workload once per
// engine that runs it (enginesFor), in the round's order (engineOrder).
// A run's failure is in its Result; an interrupt ends all with an error.
func runRounds(ctx context.Context, o Options, chosen []Workload, engines []Engine, rounds int, backlog bool) (
	[]Result, error) {
	var results []Result
	for round := 1; round <= rounds; round++ {
		for _, w := range chosen {
			for _, e := range engineOrder(round, enginesFor(engines, w, backlog)) {
				label := fmt.Sprintf("round %d/%d %s %s", round, rounds, e, w.Name)
				r := runOne(ctx, o, w, e, round, label)
				if r.Err != nil {
					o.Progress("%s: FAILED: %v", label, r.Err)
				}
				results = append(results, r)
				if ctx.Err() != nil {
					return nil, fmt.Errorf("interrupted: %w", ctx.Err())
				}
			}
		}
	}
	return results, nil
}

// writeResults prints the table of medians, and writes it with every run
// and a chart to latest.md and throughput.png in the results directory
// (with growth.png when SchedulingBasic ran at several sizes),
// and, with --docs, between the markers of that file.
func (s settings) writeResults(results []Result, chosen []Workload, start time.Time, logDir string) error {
	var names []string
	for _, w := range chosen {
		names = append(names, w.Name)
	}
	rows := summarize(results, names)
	if err := printTable(os.Stdout, rows); err != nil {
		return err
	}
	machine := thisMachine(start)
	chart := filepath.Join(s.out, "throughput.png")
	if err := writeChart(chart, results, names); err != nil {
		return err
	}
	growth := ""
	drawn, err := writeGrowthChart(filepath.Join(s.out, "growth.png"), results, chosen)
	if err != nil {
		return err
	}
	if drawn {
		growth = "![growth](growth.png)\n\n"
	}
	report := fmt.Sprintf("Measured %s by `make bench` (%d round(s), %s; %s).\n\n%s\n![throughput](throughput.png)\n\n%s"+
		"Every run:\n\n%s", machine, s.rounds, time.Since(start).Round(time.Second), s.mode(), markdownTable(rows),
		growth, runsTable(results))
	latest := filepath.Join(s.out, "latest.md")
	if err := os.WriteFile(latest, []byte("# Latest `make bench` results\n\n"+report), 0o644); err != nil {
		return err
	}
	fmt.Printf("\nwrote %s and %s (scheduler logs in %s)\n", latest, chart, logDir)
	if s.docs == "" {
		return nil
	}
	return s.writeDocs(machine, rows, chart)
}

// mode says in the report how the measured pods were made (--backlog).
func (s settings) mode() string {
	if s.backlog {
		return "a backlog: pods created before the scheduler starts, where the workload allows"
	}
	return "pods created while the scheduler runs"
}

// writeDocs puts the table and the chart, linked relative to the file,
// between the markers of the --docs file.
func (s settings) writeDocs(machine Machine, rows []Row, chart string) error {
	docsDir, err := filepath.Abs(filepath.Dir(s.docs))
	if err != nil {
		return err
	}
	absChart, err := filepath.Abs(chart)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(docsDir, absChart)
	if err != nil {
		return err
	}
	section := fmt.Sprintf("Measured %s, %d round(s), %s.\n\n%s\n![throughput per workload](%s)\n",
		machine, s.rounds, s.mode(), markdownTable(rows), filepath.ToSlash(rel))
	if err := replaceSection(s.docs, section); err != nil {
		return err
	}
	fmt.Printf("updated %s\n", s.docs)
	return nil
}

// failures is an error listing the runs that failed, or nil.
func failures(results []Result) error {
	var failed []string
	for _, r := range results {
		if r.Err != nil {
			failed = append(failed, fmt.Sprintf("round %d %s %s: %v", r.Round, r.Engine, r.Workload, r.Err))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d run(s) failed:\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return nil
}

// parseEngines reads --engines: known engines, each once, in the order
// minisched, kube-scheduler, ceiling whatever the list's.
func parseEngines(list string) ([]Engine, error) {
	all := []Engine{Minisched, KubeScheduler, Ceiling}
	var out []Engine
	for _, e := range all {
		for _, n := range strings.Split(list, ",") {
			if Engine(strings.TrimSpace(n)) == e {
				out = append(out, e)
				break
			}
		}
	}
	for _, n := range strings.Split(list, ",") {
		if !slices.Contains(all, Engine(strings.TrimSpace(n))) {
			return nil, fmt.Errorf("unknown engine %q; known: minisched, kube-scheduler, ceiling", n)
		}
	}
	return out, nil
}

// enginesFor is the engines that run w: the ceiling only where it fits.
func enginesFor(engines []Engine, w Workload, backlog bool) []Engine {
	return slices.DeleteFunc(slices.Clone(engines), func(e Engine) bool { return e == Ceiling && !ceilingFits(w, backlog) })
}

// engineOrder is the order in which the engines run a workload in round
// (from 1): rotated by one place each round, so that over as many rounds
// as engines each runs first, second (and third) once. With two engines
// that alternates.
func engineOrder(round int, engines []Engine) []Engine {
	if len(engines) == 0 {
		return nil
	}
	k := (round - 1) % len(engines)
	return slices.Concat(engines[k:], engines[:k])
}

// choose picks the workloads named in a comma-separated list, or the
// default set: every workload but those marked OnlyWhenNamed (with smoke,
// those of smokeDefault).
func choose(all []Workload, only string, smoke bool) ([]Workload, error) {
	if only == "" {
		var out []Workload
		for _, w := range all {
			if !w.OnlyWhenNamed && (!smoke || strings.Contains(","+smokeDefault+",", ","+w.Name+",")) {
				out = append(out, w)
			}
		}
		return out, nil
	}
	byName := map[string]Workload{}
	var known []string
	for _, w := range all {
		byName[w.Name] = w
		known = append(known, w.Name)
	}
	var out []Workload
	for _, n := range strings.Split(only, ",") {
		w, ok := byName[strings.TrimSpace(n)]
		if !ok {
			return nil, fmt.Errorf("unknown workload %q; known: %s", n, strings.Join(known, ", "))
		}
		out = append(out, w)
	}
	return out, nil
}

// needsControllerManager says whether any of the workloads has storage,
// whose claims kube-controller-manager's PV binder binds, or devices, whose
// claims its resourceclaim controller makes.
func needsControllerManager(chosen []Workload) bool {
	for _, w := range chosen {
		if w.Storage != nil || w.Devices != nil {
			return true
		}
	}
	return false
}

// checkBinaries names every missing binary and the make target that builds it.
func checkBinaries(need map[string]string) error {
	var missing []string
	for path, target := range need {
		if st, err := os.Stat(path); err != nil || st.IsDir() {
			missing = append(missing, fmt.Sprintf("%s (run `%s`)", path, target))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("missing binaries:\n  %s", strings.Join(missing, "\n  "))
	}
	return nil
}

// acceptsFlag says whether `bin run --help` mentions the flag.
func acceptsFlag(bin, name string) bool {
	out, _ := exec.Command(bin, "run", "--help").CombinedOutput()
	return strings.Contains(string(out), "-"+name)
}

// replaceSection puts section between the markers in the file at path.
func replaceSection(path, section string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, docsBegin), strings.Index(s, docsEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s … %s section for the results", path, docsBegin, docsEnd)
	}
	s = s[:i+len(docsBegin)] + "\n" + section + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}
