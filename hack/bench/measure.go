package main

// The steps of one run, from a fresh apiserver to a filled Result: measure
// reads as their table of contents.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/minisched/minisched/testenv"
)

// measure does runOne's work, filling res as it goes: apiserver, namespace,
// the controllers a storage or device workload needs, pod informer, then
// either nodes, init pods (bound) and the measured pods before the
// scheduler (a backlog, see backlogFits), or the scheduler, the nodes, the
// init pods (scheduled) and the measured phase.
func measure(ctx context.Context, o Options, w Workload, engine Engine, label string, res *Result) error {
	env, client, err := startAPIServer()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	dir, kubeconfig, cfgPath, err := writeConfigs(env.Kubeconfig, w)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := prepareNamespace(ctx, client, w); err != nil {
		return err
	}
	r := &run{o: o, w: w, engine: engine, label: label, client: client, tr: newTracker(), res: res}
	stopControllers, err := r.startControllers(ctx, env)
	if err != nil {
		return err
	}
	defer stopControllers()
	stopInformer, err := r.tr.start(ctx, client)
	if err != nil {
		return err
	}
	defer stopInformer()
	// A backlog: every measured pod is pending before the scheduler starts,
	// so its throughput is not bounded by how fast the pods are created.
	backlog := o.Backlog && backlogFits(w)
	if backlog {
		if err := r.createBacklog(ctx); err != nil {
			return err
		}
	}
	if err := r.startEngine(ctx, kubeconfig, cfgPath); err != nil {
		return err
	}
	defer r.proc.stop()
	if backlog {
		// Deferred after proc.stop, so it runs before it: the allocation
		// profile needs the process.
		defer r.startProfiles(ctx)()
		stopChurn := r.startChurn(ctx)
		err := r.measureBacklog(ctx)
		return errors.Join(err, stopChurn())
	}
	return r.measureLive(ctx)
}

// startChurn starts a MixedChurn workload's churn (none for the others);
// the function returned stops it and returns what failed.
func (r *run) startChurn(ctx context.Context) (stop func() error) {
	if !r.w.MixedChurn {
		return func() error { return nil }
	}
	churnCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- runMixedChurn(churnCtx, churnObjects(r.client), mixedChurnInterval) }()
	return func() error { cancel(); return <-done }
}

// run is one run in progress: what measure's steps share.
type run struct {
	o      Options
	w      Workload
	engine Engine
	// label names the run in progress lines.
	label  string
	client kubernetes.Interface
	tr     *tracker
	// proc is the engine's process, once startEngine has started it, at
	// started.
	proc    *schedulerProcess
	started time.Time
	// res is the run's Result, filled as the steps go.
	res *Result
}

// phase is what a run's measured phase counted: how many measured pods were
// bound, and the scheduler's /metrics and usage when the phase began (zero
// on a backlog, where everything the scheduler did counts).
type phase struct {
	bound int
	// start is when the phase began: the engine's start on a backlog,
	// just before the first measured pod was created otherwise.
	start       time.Time
	before      Scraped
	usageBefore ProcUsage
}

// note adds a note to the run's result.
func (r *run) note(format string, args ...any) {
	r.res.Notes = append(r.res.Notes, fmt.Sprintf(format, args...))
}

// noteErr notes "what: err" unless err is nil.
func (r *run) noteErr(what string, err error) {
	if err != nil {
		r.note("%s: %v", what, err)
	}
}

// startAPIServer starts a fresh envtest apiserver and returns it with a
// client of its own, allowed 5000 requests a second.
func startAPIServer() (*testenv.Environment, kubernetes.Interface, error) {
	env, err := testenv.StartEnvironment()
	if err != nil {
		return nil, nil, err
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 5000, 5000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		_ = env.Stop()
		return nil, nil, fmt.Errorf("client for the apiserver: %w", err)
	}
	return env, client, nil
}

// writeConfigs writes, in a new temporary directory dir, the apiserver's
// kubeconfig and the schedulers' configuration for w (schedulerConfig),
// and returns their paths.
func writeConfigs(kubeconfigData []byte, w Workload) (dir, kubeconfig, cfgPath string, err error) {
	if dir, err = os.MkdirTemp("", "minisched-bench-"); err != nil {
		return "", "", "", err
	}
	kubeconfig = filepath.Join(dir, "kubeconfig")
	cfgPath = filepath.Join(dir, "config.yaml")
	err = errors.Join(os.WriteFile(kubeconfig, kubeconfigData, 0o600),
		os.WriteFile(cfgPath, []byte(schedulerConfig(kubeconfig, w)), 0o600))
	if err != nil {
		os.RemoveAll(dir)
		return "", "", "", err
	}
	return dir, kubeconfig, cfgPath, nil
}

// startControllers starts what a storage or device workload needs beside
// the scheduler (startStorage, startDevices). stop stops them, the last
// first, noting any error in the result.
func (r *run) startControllers(ctx context.Context, env *testenv.Environment) (stop func(), err error) {
	var stops []func()
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if r.w.Storage != nil {
		stopStorage, err := startStorage(ctx, env, r.client, r.w.Storage)
		if err != nil {
			return nil, err
		}
		stops = append(stops, func() { r.noteErr("stopping the storage controllers", stopStorage()) })
	}
	if r.w.Devices != nil {
		stopDevices, err := startDevices(ctx, env, r.client)
		if err != nil {
			stopAll()
			return nil, err
		}
		stops = append(stops, func() { r.noteErr("stopping the resourceclaim controller", stopDevices()) })
	}
	return stopAll, nil
}

// createBacklog makes everything before the scheduler starts: the nodes,
// a storage workload's claims, the init pods (bound, placeInitPods), a
// gang workload's PodGroups and the measured pods, then waits for a device workload's claims.
func (r *run) createBacklog(ctx context.Context) error {
	w := r.w
	if w.InitPods > 0 {
		r.o.Progress("%s: creating %d nodes, %d init pods on them and a backlog of %d pods", r.label, w.Nodes, w.InitPods, w.Pods)
	} else {
		r.o.Progress("%s: creating %d nodes and a backlog of %d pods", r.label, w.Nodes, w.Pods)
	}
	if err := createNodes(ctx, r.client, w); err != nil {
		return err
	}
	if err := createVolumes(ctx, r.client, w); err != nil {
		return err
	}
	if err := placeInitPods(ctx, r.client, w); err != nil {
		return err
	}
	if err := createPodGroups(ctx, r.client, w); err != nil {
		return err
	}
	if err := createPods(ctx, r.client, w.Pods, "pod", w.Pod); err != nil {
		return err
	}
	if w.Devices == nil {
		return nil
	}
	return waitForClaims(ctx, r.client, w.Pods)
}

// startEngine starts the run's engine (startScheduler), its log in
// Options.LogDir, and waits for its /metrics. Without them its latency is
// n/a, which a note says (but for the ceiling, which serves none).
func (r *run) startEngine(ctx context.Context, kubeconfig, cfgPath string) error {
	logPath := filepath.Join(r.o.LogDir, fmt.Sprintf("%s-%s-round%d.log", r.w.Name, r.engine, r.res.Round))
	r.started = time.Now()
	proc, err := startScheduler(ctx, r.o, r.engine, r.w, kubeconfig, cfgPath, logPath)
	if err != nil {
		return err
	}
	r.proc = proc
	if proc.metricsURL == "" {
		if r.engine != Ceiling {
			r.note("%s has no --metrics-bind-address: latency n/a", r.engine)
		}
	} else if err := proc.waitServing(ctx); err != nil {
		r.noteErr("latency n/a", err)
		proc.metricsURL = ""
	}
	return nil
}

// startProfiles starts the CPU profiles --profile asks for
// (Options.ProfileDir): minisched's, when it serves them, and the
// apiserver's, whatever the engine. The returned function waits for them,
// then saves minisched's allocation profile (every allocation since the
// process started, the run's included); each failure is a note.
func (r *run) startProfiles(ctx context.Context) (finish func()) {
	if r.o.ProfileDir == "" {
		return func() {}
	}
	path := func(format string, args ...any) string {
		return filepath.Join(r.o.ProfileDir, fmt.Sprintf(format, args...))
	}
	minisched := r.engine == Minisched && r.proc.metricsURL != ""
	var cpu <-chan error
	if minisched {
		cpu = startProfile(ctx, r.o, r.proc, path("%s-round%d.cpu.pprof", r.w.Name, r.res.Round))
	}
	apiserver := startAPIServerProfile(ctx, r.o, r.client,
		path("%s-%s-round%d.apiserver.pprof", r.w.Name, r.engine, r.res.Round))
	return func() {
		r.noteErr("no apiserver CPU profile", <-apiserver)
		if !minisched {
			return
		}
		r.noteErr("no CPU profile", <-cpu)
		r.noteErr("no allocation profile", fetchAllocs(ctx, r.proc, path("%s-round%d.allocs.pprof", r.w.Name, r.res.Round)))
	}
}

// measureBacklog measures a scheduler started with every measured pod
// already pending: its whole /metrics and CPU time count.
func (r *run) measureBacklog(ctx context.Context) error {
	bound, err := r.waitMeasured(ctx)
	if err != nil {
		return err
	}
	return r.finish(phase{bound: bound, start: r.started})
}

// measureLive measures as scheduler_perf does, with the scheduler running:
// the nodes, the init pods (scheduled, waited for), then the measured
// phase, whose pods are created while it runs; what the scheduler did
// before that phase is subtracted.
func (r *run) measureLive(ctx context.Context) error {
	if err := r.createCluster(ctx); err != nil {
		return err
	}
	p, err := r.startPhase()
	if err != nil {
		return err
	}
	// The profiles cover the measured phase, not the cluster's making
	// (the init pods are scheduled first, and would fill them).
	defer r.startProfiles(ctx)()
	if p.bound, err = r.createMeasured(ctx); err != nil {
		return err
	}
	return r.finish(p)
}

// createCluster creates the nodes (and a storage workload's claims), then
// the init pods, waits until the scheduler has bound every init pod, and
// creates a gang workload's PodGroups.
func (r *run) createCluster(ctx context.Context) error {
	w := r.w
	r.o.Progress("%s: creating %d nodes", r.label, w.Nodes)
	if err := createNodes(ctx, r.client, w); err != nil {
		return err
	}
	if err := createVolumes(ctx, r.client, w); err != nil {
		return err
	}
	if w.InitPods == 0 {
		return createPodGroups(ctx, r.client, w)
	}
	r.o.Progress("%s: creating %d init pods", r.label, w.InitPods)
	if err := createPods(ctx, r.client, w.InitPods, "init", w.InitPod); err != nil {
		return err
	}
	n, err := r.tr.wait(ctx, roleInit, w.InitPods, r.o.Stall, func(n int) {
		r.o.Progress("%s: %d/%d init pods bound", r.label, n, w.InitPods)
	})
	if err != nil {
		return err
	}
	if n < w.InitPods {
		return fmt.Errorf("only %d of %d init pods were bound (none for %s); log: %s", n, w.InitPods, r.o.Stall, r.proc.logPath)
	}
	return createPodGroups(ctx, r.client, w)
}

// startPhase begins the measured phase: it takes what the scheduler did
// so far (its /metrics and CPU time), to be subtracted at the end. If
// /metrics cannot be read, the latency is n/a.
func (r *run) startPhase() (phase, error) {
	var p phase
	if r.proc.metricsURL != "" {
		var err error
		if p.before, err = scrape(r.proc.metricsURL); err != nil {
			r.noteErr("latency n/a", err)
			r.proc.metricsURL = ""
		}
	}
	usage, err := readProcUsage(r.proc.cmd.Process.Pid)
	if err != nil {
		return p, fmt.Errorf("%s's usage: %w", r.engine, err)
	}
	p.usageBefore = usage
	p.start = time.Now()
	return p, nil
}

// createMeasured creates the measured pods while the scheduler runs, with
// churn beside them if the workload has it, and waits until they are bound
// (or the wait gives up); it returns how many were.
func (r *run) createMeasured(ctx context.Context) (bound int, err error) {
	stopChurn := r.startChurn(ctx)
	created := make(chan error, 1)
	go func() { created <- createPods(ctx, r.client, r.w.Pods, "pod", r.w.Pod) }()
	bound, waitErr := r.waitMeasured(ctx)
	return bound, errors.Join(waitErr, <-created, stopChurn())
}

// waitMeasured waits until the measured pods are bound, or none was bound
// for Options.Stall, printing the progress; it returns how many were.
func (r *run) waitMeasured(ctx context.Context) (int, error) {
	return r.tr.wait(ctx, roleMeasured, r.w.Pods, r.o.Stall, func(n int) {
		r.o.Progress("%s: %d/%d bound", r.label, n, r.w.Pods)
	})
}

// finish fills the result once the measured pods are bound (or the wait
// gave up): throughput from the bindings the tracker saw, latency and
// batching from /metrics minus p.before (readMetrics), CPU minus
// p.usageBefore, and the peak memory. A scheduler that exited during the
// run fails it.
func (r *run) finish(p phase) error {
	w, res := r.w, r.res
	r.o.Progress("%s: %d/%d bound", r.label, p.bound, w.Pods)
	select {
	case <-r.proc.exited:
		return fmt.Errorf("%s exited during the run (%v); log: %s", r.engine, r.proc.err, r.proc.logPath)
	default:
	}
	if p.bound < w.Pods {
		r.note("gave up with %d of %d bound: none for %s", p.bound, w.Pods, r.o.Stall)
	}
	res.Bound = p.bound
	r.throughput(p)
	if r.proc.metricsURL != "" {
		r.readMetrics(p.before)
	}
	usage, err := readProcUsage(r.proc.cmd.Process.Pid)
	if err != nil {
		return fmt.Errorf("%s's usage: %w", r.engine, err)
	}
	if p.bound > 0 {
		res.CPUPer1000 = (usage.CPUSeconds - p.usageBefore.CPUSeconds) / float64(p.bound) * 1000
	}
	res.PeakRSSBytes = usage.PeakRSSBytes
	return nil
}

// throughput fills the result's throughput: the measured pods bound over
// the span from the first binding of one to the last (or, with
// Workload.ThroughputFromStart, from the phase's start), and the same
// bindings' Sampled and Steady throughputs and the time to the first of
// them (ToFirst). A gang workload notes the
// other of the first two.
func (r *run) throughput(p phase) {
	first, last := r.tr.span(roleMeasured)
	if p.bound < 2 || !last.After(first) {
		return
	}
	fromFirst := float64(p.bound) / last.Sub(first).Seconds()
	fromStart := float64(p.bound) / last.Sub(p.start).Seconds()
	r.res.Throughput = fromFirst
	alt := computeThroughputs(r.tr.times(roleMeasured), p.start)
	r.res.Sampled, r.res.Steady = alt.Sampled, alt.Steady
	r.res.ToFirst = first.Sub(p.start).Seconds()
	if r.w.ThroughputFromStart {
		r.res.Throughput = fromStart
	}
	if r.w.Gangs == nil {
		return
	}
	if r.w.ThroughputFromStart {
		r.note("from the first binding: %.1f pods/s", fromFirst)
	} else {
		r.note("from the scheduler's start: %.1f pods/s", fromStart)
	}
}

// readMetrics fills the result's latency quantiles and share of batch
// hints from the scheduler's /metrics minus before, and notes its batch
// attempts and flushes.
func (r *run) readMetrics(before Scraped) {
	after, err := scrape(r.proc.metricsURL)
	switch {
	case err != nil:
		r.noteErr("latency n/a", err)
		return
	case after.Attempts == nil:
		r.note("latency n/a: %s's /metrics has no %s", r.engine, attemptHistogram)
	default:
		d := after.Attempts.Sub(before.Attempts)
		r.res.P50, r.res.P99 = d.Quantile(0.5), d.Quantile(0.99)
	}
	r.res.BatchHinted = HintShare(before.Batch, after.Batch)
	if b := counterDiff(before.Batch, after.Batch); len(b) > 0 {
		r.note("batch attempts: %s", formatCounts(b))
	}
	if f := counterDiff(before.Flushes, after.Flushes); len(f) > 0 {
		r.note("batches flushed: %s", formatCounts(f))
	}
}
