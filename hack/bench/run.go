package main

// One run's parts: the engines, what a run measured and the settings it
// shares, creating nodes and pods, the tracker of bindings, and the
// scheduler's process and its profiles (measure.go puts them in order).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/minisched/minisched/scenario"
)

// Engine is what a run measures: one of the two schedulers under
// comparison, or the ceiling (ceiling.go).
type Engine string

const (
	// Minisched is bin/minisched.
	Minisched Engine = "minisched"
	// KubeScheduler is the real kube-scheduler, built by `make kube-scheduler`.
	KubeScheduler Engine = "kube-scheduler"
)

// Result is what one run measured.
type Result struct {
	Workload string
	Engine   Engine
	Round    int
	// Bound of Total measured pods were bound.
	Bound, Total int
	// Throughput is Bound over the time from the first to the last binding
	// of a measured pod, in pods per second.
	Throughput float64
	// Sampled and Steady are the same bindings' throughput measured as
	// scheduler_perf does and over their middle 80 % (see Throughputs).
	Sampled, Steady float64
	// ToFirst is the seconds from the phase's start (the engine's start on
	// a backlog) to the first binding of a measured pod.
	ToFirst float64
	// P50 and P99 are scheduling-attempt latencies in seconds over the
	// measured phase; NaN when the scheduler's /metrics lacks the histogram.
	P50, P99 float64
	// BatchHinted is the percentage of the measured phase's batchable
	// cycles that placed their pod by OpportunisticBatching's hint; NaN
	// when the scheduler's /metrics has no scheduler_batch_attempts_total
	// (or it counted nothing).
	BatchHinted float64
	// CPUPer1000 is the scheduler's CPU seconds during the measured phase
	// per 1000 measured pods bound.
	CPUPer1000 float64
	// PeakRSSBytes is the scheduler's VmHWM just before it was stopped.
	PeakRSSBytes int64
	// Notes say why a value is missing; Err, if set, ended the run.
	Notes []string
	Err   error
}

// Options are the program's settings shared by every run.
type Options struct {
	// Self is this program, which `ceiling` makes the ceiling; Smoke is
	// whether the workloads are at their smoke sizes (the ceiling makes
	// its workload from its name and that).
	Self  string
	Smoke bool
	// CeilingWorkers is how many pods the ceiling binds at once.
	CeilingWorkers int
	// Minisched and KubeScheduler are the two binaries.
	Minisched, KubeScheduler string
	// MinischedMetrics is whether minisched accepts --metrics-bind-address.
	MinischedMetrics bool
	// Backlog creates the measured pods (and the init pods, bound) before
	// the scheduler starts, in the workloads backlogFits allows.
	Backlog bool
	// ProfileDir, if set, receives a CPU profile of ProfileSeconds of every
	// minisched run, taken from the start of its measured phase, and one of
	// the apiserver over the same seconds of every run, whatever the
	// engine: with it on the same cores, where the apiserver's time goes
	// is half of where a run's goes. It also receives each minisched
	// run's allocation profile, taken when the run ends.
	ProfileDir     string
	ProfileSeconds int
	// Stall ends the wait for bindings when none came for this long.
	Stall time.Duration
	// LogDir receives each scheduler's log.
	LogDir string
	// Progress prints a progress line (to stderr).
	Progress func(format string, args ...any)
}

// runOne measures one engine on one workload on a fresh apiserver.
func runOne(ctx context.Context, o Options, w Workload, engine Engine, round int, label string) Result {
	res := Result{Workload: w.Name, Engine: engine, Round: round, Total: w.Pods, P50: math.NaN(), P99: math.NaN(),
		BatchHinted: math.NaN()}
	res.Err = measure(ctx, o, w, engine, label, &res)
	return res
}

// backlogFits reports whether w can run as a backlog: not with preemption,
// whose preemptors are all
// bound in a burst once their victims are gone, so that on a backlog the
// span from the first to the last binding times that burst and not the
// scheduler.
func backlogFits(w Workload) bool {
	return !w.PriorityClasses
}

// placeInitPods creates w's init pods already bound, init pod i on node
// i mod Nodes, for a backlog run: the scheduler starts only after the
// measured pods exist, so it cannot place the init pods first. Round robin
// is where any scheduler puts them, up to the nodes' names, in the one
// backlog workload that has init pods: PodAntiAffinity, one per node.
func placeInitPods(ctx context.Context, client kubernetes.Interface, w Workload) error {
	return parallel(ctx, w.InitPods, func(ctx context.Context, i int) error {
		p := w.InitPod(podName("init", i))
		p.Spec.NodeName = fmt.Sprintf("node-%d", i%w.Nodes)
		if _, err := client.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating init pod %s: %w", p.Name, err)
		}
		return nil
	})
}

// Client settings of both schedulers (clientConnection), which the
// ceiling's clients take too.
const (
	clientQPS   = 5000
	clientBurst = 5000
)

// schedulerConfig is the configuration both schedulers read for w: a fast
// client, no leader election, and the default profile, or upstream's
// batching profile (noTopologyProfile) if w asks for it.
func schedulerConfig(kubeconfig string, w Workload) string {
	cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: %s
  qps: %d
  burst: %d
`, kubeconfig, clientQPS, clientBurst)
	if w.NoTopologyDefaults {
		cfg += noTopologyProfile
	}
	return cfg
}

// noTopologyProfile is the profile of upstream's batching benchmark
// (scheduler_perf/batching/scheduler-config-no-topology.yaml):
// PodTopologySpread's defaulting type List with no default constraints.
// With the System defaults, kube-scheduler's PodTopologySpread signs no
// pod at all (it has default constraints), and nothing is batched.
const noTopologyProfile = `profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints: []
`

// prepareNamespace creates the namespace and, if the workload needs them,
// the priority classes.
func prepareNamespace(ctx context.Context, client kubernetes.Interface, w Workload) error {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	if w.MixedChurn {
		if err := createChurnPriorityClass(ctx, client); err != nil {
			return err
		}
	}
	if !w.PriorityClasses {
		return nil
	}
	for name, value := range map[string]int32{lowPriority: 1, highPriority: 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if _, err := client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating priority class %s: %w", name, err)
		}
	}
	return nil
}

// workers is how many requests the program has in flight when it creates
// nodes and pods.
const workers = 16

// parallel runs do(i) for i in [0, n) on workers goroutines and returns the
// first error.
func parallel(ctx context.Context, n int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(ctx, i); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

// makeNode is w's node i: node-<i>, as scenario.MakeNode makes it, with
// the workload's labels and memory.
func makeNode(w Workload, i int) *v1.Node {
	b := scenario.MakeNode(fmt.Sprintf("node-%d", i))
	if w.NodeLabels != nil {
		for k, v := range w.NodeLabels(i) {
			b.Label(k, v)
		}
	}
	if w.NodeMemory != "" {
		b.Capacity(map[v1.ResourceName]string{v1.ResourceMemory: w.NodeMemory})
	}
	return b.Obj()
}

// createNodes creates the workload's nodes with their status (capacity,
// Ready), in parallel.
func createNodes(ctx context.Context, client kubernetes.Interface, w Workload) error {
	return parallel(ctx, w.Nodes, func(ctx context.Context, i int) error {
		n := makeNode(w, i)
		created, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating node %s: %w", n.Name, err)
		}
		// The apiserver keeps a node's status on create (scheduler_perf
		// creates its nodes that way); should it not, a second write sets it.
		if len(created.Status.Conditions) == 0 {
			created.Status = n.Status
			if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("setting status of node %s: %w", n.Name, err)
			}
		}
		if w.Storage != nil {
			return createCSINode(ctx, client, w.Storage, n.Name)
		}
		if w.Devices != nil {
			return createSlice(ctx, client, w.Devices, n.Name)
		}
		return nil
	})
}

// createVolumes creates a storage workload's claims (and static PVs) for
// the measured pods and waits until volumes can be had. Other workloads
// have none.
func createVolumes(ctx context.Context, client kubernetes.Interface, w Workload) error {
	if w.Storage == nil {
		return nil
	}
	if err := createClaims(ctx, client, w.Storage, w.Pods, "pod"); err != nil {
		return err
	}
	return waitForStorage(ctx, client, w.Storage, w.Nodes, w.Pods)
}

// createPods creates n pods named by podName, made by newPod, in parallel.
func createPods(ctx context.Context, client kubernetes.Interface, n int, prefix string, newPod func(string) *v1.Pod) error {
	return parallel(ctx, n, func(ctx context.Context, i int) error {
		p := newPod(podName(prefix, i))
		if _, err := client.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s: %w", p.Name, err)
		}
		return nil
	})
}

// tracker records when each pod was first seen bound, from an informer on
// the namespace's pods.
type tracker struct {
	mu sync.Mutex
	// boundAt is the first time each pod (by role, then name) had a node.
	boundAt map[string]map[string]time.Time
	// changed is signalled (without blocking) whenever a pod is bound.
	changed chan struct{}
}

// newTracker returns a tracker that has seen no binding.
func newTracker() *tracker {
	return &tracker{boundAt: map[string]map[string]time.Time{}, changed: make(chan struct{}, 1)}
}

// start runs an informer on the namespace's pods until the returned stop.
func (t *tracker) start(ctx context.Context, client kubernetes.Interface) (func(), error) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	inf := factory.Core().V1().Pods().Informer()
	see := func(obj any) {
		if p, ok := obj.(*v1.Pod); ok && p.Spec.NodeName != "" {
			t.bound(p.Labels[roleLabel], p.Name)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    see,
		UpdateFunc: func(_, obj any) { see(obj) },
	}); err != nil {
		return nil, fmt.Errorf("watching pods: %w", err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		close(stop)
		return nil, errors.New("the pod informer did not sync within a minute")
	}
	return func() { close(stop); factory.Shutdown() }, nil
}

// bound records a pod seen with a node, the first time only.
func (t *tracker) bound(role, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.boundAt[role]
	if m == nil {
		m = map[string]time.Time{}
		t.boundAt[role] = m
	}
	if _, ok := m[name]; ok {
		return
	}
	m[name] = time.Now()
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// count is how many pods of role have been seen bound.
func (t *tracker) count(role string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.boundAt[role])
}

// times are when each of a role's pods was first seen bound, in no order.
func (t *tracker) times(role string) []time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]time.Time, 0, len(t.boundAt[role]))
	for _, at := range t.boundAt[role] {
		out = append(out, at)
	}
	return out
}

// span is the first and last binding of a role's pods.
func (t *tracker) span(role string) (first, last time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, at := range t.boundAt[role] {
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	return first, last
}

// progressEvery is how often a waiting run prints its progress.
const progressEvery = 2 * time.Second

// wait returns once want pods of role are bound, or no pod of role was
// bound for stall, with the number bound; it calls progress now and then.
func (t *tracker) wait(ctx context.Context, role string, want int, stall time.Duration, progress func(int)) (int, error) {
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	quiet := time.NewTimer(stall)
	defer quiet.Stop()
	for {
		n := t.count(role)
		if n >= want {
			return n, nil
		}
		select {
		case <-ctx.Done():
			return n, fmt.Errorf("waiting for %s pods: %d of %d bound: %w", role, n, want, ctx.Err())
		case <-t.changed:
			quiet.Reset(stall)
		case <-tick.C:
			progress(n)
		case <-quiet.C:
			return n, nil
		}
	}
}

// schedulerProcess is a running scheduler.
type schedulerProcess struct {
	cmd *exec.Cmd
	// metricsURL is its /metrics; empty if it serves none.
	metricsURL string
	logPath    string
	// exited is closed when the process has ended; err is then its end.
	exited chan struct{}
	err    error
}

// startScheduler starts engine for w with the configuration at cfgPath,
// its output going to logPath. The ceiling reads no configuration and
// serves no /metrics.
func startScheduler(ctx context.Context, o Options, engine Engine, w Workload, kubeconfig, cfgPath, logPath string) (*schedulerProcess, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p := &schedulerProcess{logPath: logPath, exited: make(chan struct{})}
	switch engine {
	case Minisched:
		args := []string{"run", "--kubeconfig", kubeconfig, "--config", cfgPath}
		if w.FeatureGates != "" {
			args = append(args, "--feature-gates", w.FeatureGates)
		}
		if o.MinischedMetrics {
			args = append(args, "--metrics-bind-address", addr)
			p.metricsURL = "http://" + addr + "/metrics"
		}
		p.cmd = exec.Command(o.Minisched, args...)
	case KubeScheduler:
		// kube-scheduler serves /metrics only over HTTPS, with a certificate
		// it makes in memory. Without --authentication-kubeconfig and
		// --authorization-kubeconfig it cannot ask the apiserver about
		// callers, so it treats everyone as system:anonymous (the delegating
		// authenticator allows anonymous requests by default) and denies
		// every path except those always allowed.
		args := []string{"--config", cfgPath,
			"--secure-port", strconv.Itoa(port), "--bind-address", "127.0.0.1",
			"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"}
		if w.FeatureGates != "" {
			args = append(args, "--feature-gates", w.FeatureGates)
		}
		p.cmd = exec.Command(o.KubeScheduler, args...)
		p.metricsURL = "https://" + addr + "/metrics"
	case Ceiling:
		args := []string{"ceiling", "--kubeconfig", kubeconfig, "--workload", w.Name,
			"--workers", strconv.Itoa(o.CeilingWorkers)}
		if o.Smoke {
			args = append(args, "--smoke")
		}
		p.cmd = exec.Command(o.Self, args...)
	default:
		return nil, fmt.Errorf("unknown scheduler %q", engine)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating %s's log: %w", engine, err)
	}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", engine, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// waitServing polls /metrics until it answers, for up to a minute.
func (p *schedulerProcess) waitServing(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		select {
		case <-p.exited:
			return false, fmt.Errorf("the scheduler exited (%v); log: %s", p.err, p.logPath)
		default:
		}
		_, last = scrape(p.metricsURL)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%s never answered: %w (last: %v)", p.metricsURL, err, last)
	}
	return nil
}

// stop interrupts the scheduler and waits for it, killing it after 30s.
func (p *schedulerProcess) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// startAPIServerProfile records a CPU profile of the apiserver for
// o.ProfileSeconds from its /debug/pprof/profile (kube-apiserver serves it
// by default, --profiling, to a client allowed nonResourceURLs: envtest's
// admin is) into path; the channel gets the outcome.
func startAPIServerProfile(ctx context.Context, o Options, client kubernetes.Interface, path string) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			data, err := client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
				Param("seconds", fmt.Sprint(o.ProfileSeconds)).DoRaw(ctx)
			if err != nil {
				return err
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				return err
			}
			o.Progress("apiserver CPU profile of %ds in %s", o.ProfileSeconds, path)
			return nil
		}()
	}()
	return done
}

// startProfile records a CPU profile of the scheduler for o.ProfileSeconds
// from its /debug/pprof/profile into path; the channel gets the outcome.
func startProfile(ctx context.Context, o Options, proc *schedulerProcess, path string) <-chan error {
	done := make(chan error, 1)
	go func() {
		err := savePprof(ctx, proc, fmt.Sprintf("profile?seconds=%d", o.ProfileSeconds), path)
		if err == nil {
			o.Progress("CPU profile of %ds in %s", o.ProfileSeconds, path)
		}
		done <- err
	}()
	return done
}

// fetchAllocs saves minisched's allocation profile (every allocation
// since the process started, sampled by the runtime) to path.
func fetchAllocs(ctx context.Context, proc *schedulerProcess, path string) error {
	return savePprof(ctx, proc, "allocs", path)
}

// savePprof saves the scheduler's /debug/pprof/<profile> (served beside
// its /metrics) to path.
func savePprof(ctx context.Context, proc *schedulerProcess, profile, path string) error {
	url := strings.TrimSuffix(proc.metricsURL, "/metrics") + "/debug/pprof/" + profile
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("reading %s: %w", url, err)
	}
	return f.Close()
}

// freePort asks the kernel for a free TCP port on the loopback address.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
