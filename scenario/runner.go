// The runner: a fresh scheduler per story, on a clean cluster, one story
// after another, each opened by a progress line and closed by its verdict.

package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/testenv"
	"github.com/minisched/minisched/web"
)

// Runner runs scenarios one after another against one apiserver, each with
// a fresh scheduler and a clean cluster.
type Runner struct {
	RestConfig *rest.Config
	// BaseConfig is used by scenarios that do not bring their own; nil means
	// the default configuration.
	BaseConfig *configv1.KubeSchedulerConfiguration
	Out        io.Writer
	// Environment is where KWOK is started for scenarios that ask for a
	// lifecycle; such scenarios fail without it.
	Environment *testenv.Environment
	// Registry holds plugins beyond the in-tree ones (app.WithPlugin's), so
	// a --config may enable them; nil means none.
	Registry framework.Registry
	// ChapterHeader, if set, gives the line RunAll opens each chapter's
	// scenarios with: the scheduler's plugins at that chapter
	// (chapters.DescribeChapter). A chapter it has no line for (an error)
	// gets none.
	ChapterHeader func(chapter int) (string, error)
	// View, if set, shows each scenario's scheduler while it runs (the
	// live view of start --web). If it steps (start --step), the stories'
	// waits for the scheduler wait as long as it takes.
	View *web.View

	// progress is the opening line of the scenario RunAll runs now.
	progress string
	// controllerManager is kube-controller-manager, started for the first
	// scenario that needs Storage or DRA and kept until RunAll (or Run,
	// for its one scenario) ends; controllers are the controllers it runs.
	controllerManager *testenv.ControllerManager
	controllers       []string
}

// RunAll runs the scenarios, each opened by a progress line ([i/n]) and
// closed by a PASS/FAIL line, then prints a summary table (in colour on a
// terminal); it returns an error naming the failed ones.
func (r *Runner) RunAll(ctx context.Context, scenarios []Scenario) error {
	var results []Result
	var failed []string
	defer r.stopControllerManager()
	for i, s := range scenarios {
		if r.ChapterHeader != nil && (i == 0 || scenarios[i-1].Chapter != s.Chapter) {
			if line, err := r.ChapterHeader(s.Chapter); err == nil {
				fmt.Fprintf(r.Out, "### Chapter %d's scheduler: %s\n", s.Chapter, line)
			}
		}
		r.progress = progress(i+1, len(scenarios), s)
		start := time.Now()
		err := r.run(ctx, s)
		results = append(results, Result{Name: s.Name, Chapter: s.Chapter, Err: err, Duration: time.Since(start)})
		if err != nil {
			failed = append(failed, s.Name)
		}
	}
	r.progress = ""
	fmt.Fprintln(r.Out)
	writeSummary(r.Out, results, isTerminal(r.Out))
	if len(failed) > 0 {
		return fmt.Errorf("failed scenarios: %s", strings.Join(failed, ", "))
	}
	return nil
}

// Run runs one scenario (see run), then stops what was started for it,
// kube-controller-manager included.
func (r *Runner) Run(ctx context.Context, s Scenario) error {
	defer r.stopControllerManager()
	return r.run(ctx, s)
}

// run runs one scenario between its progress line and its verdict (see
// tell). A scenario that lists OwnSchedulers gets no scheduler from run.
func (r *Runner) run(ctx context.Context, s Scenario) (err error) {
	start := time.Now()
	r.printOpening(s)
	defer func() { r.printVerdict(s, err, time.Since(start)) }()
	return r.tell(ctx, s)
}

// printOpening prints the scenario's progress line: RunAll's [i/n], or [1/1].
func (r *Runner) printOpening(s Scenario) {
	header := r.progress
	if header == "" {
		header = progress(1, 1, s)
	}
	fmt.Fprintln(r.Out, header)
}

// printVerdict prints the scenario's error, if any, and its verdict line.
func (r *Runner) printVerdict(s Scenario, err error, took time.Duration) {
	if err != nil {
		fmt.Fprintf(r.Out, "    error: %v\n", err)
	}
	fmt.Fprintf(r.Out, "--- %s %s (%.1fs)\n", verdict(err, isTerminal(r.Out)), s.Name, took.Seconds())
}

// tell tells the story: refuse it if its Controllers could not run as
// meant (checkControllers), clean the cluster and make the scenario's
// namespace, start the parts it needs (KWOK, kube-controller-manager, the
// example provisioner and DRA driver), then, unless it starts its own,
// the extender and a scheduler with its configuration; run the story,
// print where each pod went (and each claim's devices), then stop what was
// started for it. kube-controller-manager is left running for the next
// scenario (RunAll and Run stop it). The story's error is the one
// returned; a stop's error only if the story had none.
func (r *Runner) tell(ctx context.Context, s Scenario) (err error) {
	if err := checkControllers(s); err != nil {
		return err
	}
	cfg, err := r.config(s)
	if err != nil {
		return err
	}
	client, err := r.freshNamespace(ctx, s.Name)
	if err != nil {
		return err
	}
	stopParts, err := r.startParts(ctx, client, s)
	if err != nil {
		return err
	}
	defer keepFirst(&err, stopParts)
	if s.Parts.Has(OwnSchedulers) {
		return r.runScenario(ctx, s, r.env(s, client, cfg, NewAttemptLog(), ""))
	}
	if s.Parts.Has(Extender) {
		var stopExtender func()
		cfg, stopExtender = startExtender(client, cfg)
		defer stopExtender()
	}
	env, stopScheduler, err := r.startScheduler(ctx, s, client, cfg)
	if err != nil {
		return err
	}
	defer keepFirst(&err, stopScheduler)
	return r.runScenario(ctx, s, env)
}

// config is the configuration the scenario runs with: its own, else the
// default profile of its feature gates if it sets any (the runner's base
// configuration was defaulted without them), else the runner's base
// configuration, else the default profile; always with
// leader election and profiling turned off. One scheduler per scenario,
// one after another, on a private apiserver: there is no one to elect
// against, and waiting for a Lease a previous scenario held would only
// slow the story down. Nor does it profile: contention profiling, once
// on, would slow down every later scenario of the process.
func (r *Runner) config(s Scenario) (*configv1.KubeSchedulerConfiguration, error) {
	var cfg *configv1.KubeSchedulerConfiguration
	switch {
	case s.Config != nil:
		var err error
		if cfg, err = s.Config(); err != nil {
			return nil, fmt.Errorf("the scenario's configuration: %w", err)
		}
	case s.FeatureGates != (features.Gates{}):
		cfg = scheduler.DefaultConfigFor(s.FeatureGates)
	case r.BaseConfig != nil:
		cfg = r.BaseConfig
	default:
		cfg = scheduler.DefaultConfig()
	}
	cfg = cfg.DeepCopy()
	cfg.LeaderElection.LeaderElect = ptr.To(false)
	cfg.EnableProfiling = ptr.To(false)
	return cfg, nil
}

// freshNamespace cleans the cluster (cleanCluster) and creates the
// scenario's namespace, returning a client of the apiserver.
func (r *Runner) freshNamespace(ctx context.Context, name string) (kubernetes.Interface, error) {
	client, err := kubernetes.NewForConfig(r.RestConfig)
	if err != nil {
		return nil, err
	}
	if err := cleanCluster(ctx, client); err != nil {
		return nil, err
	}
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return client, nil
}

// startScheduler starts the scenario's scheduler with cfg, its attempts
// recorded and its /metrics served on a free loopback port, and returns
// the Env the story gets; stop stops the scheduler and returns what its
// Run returned.
func (r *Runner) startScheduler(ctx context.Context, s Scenario, client kubernetes.Interface,
	cfg *configv1.KubeSchedulerConfiguration) (env *Env, stop func() error, err error) {
	log := NewAttemptLog()
	opts := []scheduler.Option{scheduler.WithObserver(log.Record), scheduler.WithSeed(42),
		scheduler.WithOutOfTreeRegistry(r.Registry), scheduler.WithAttemptRecords(),
		scheduler.WithFeatureGates(s.FeatureGates)}
	if r.View != nil {
		opts = append(opts, scheduler.WithLiveView(r.View))
	}
	svc, err := scheduler.New(ctx, cfg, r.RestConfig, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("configuring the scheduler: %w", err)
	}
	// The scheduler's own log lines are one verbosity level quieter here, so
	// the scenario's story stays readable; -v 1 brings them back.
	schedCtx, cancel := context.WithCancel(quieter(ctx))
	done := make(chan error, 1)
	go func() { done <- svc.Run(schedCtx) }()
	stop = func() error {
		cancel()
		return <-done
	}
	addr, err := svc.Serve(schedCtx, "127.0.0.1:0")
	if err != nil {
		_ = stop()
		return nil, nil, err
	}
	return r.env(s, client, cfg, log, "http://"+addr.String()+"/metrics"), stop, nil
}

// env is the Env a story of s gets, with the scheduler's attempts in log
// and its /metrics at metricsURL ("" for a story with OwnSchedulers).
func (r *Runner) env(s Scenario, client kubernetes.Interface, cfg *configv1.KubeSchedulerConfiguration,
	log *AttemptLog, metricsURL string) *Env {
	env := &Env{Client: client, Namespace: s.Name, SchedulerName: *cfg.Profiles[0].SchedulerName,
		Attempts: log, RestConfig: r.RestConfig, MetricsURL: metricsURL, out: r.Out, controllers: s.Controllers,
		featureGates: s.FeatureGates, patient: r.View != nil && r.View.Stepper() != nil}
	if s.Parts.Has(Descheduler) {
		env.environment = r.Environment
	}
	return env
}

// keepFirst calls stop and puts its error in *err unless *err holds one
// already: deferred, it stops a part of a story and keeps the story's own
// error, the one worth reporting.
func keepFirst(err *error, stop func() error) {
	if stopErr := stop(); stopErr != nil && *err == nil {
		*err = stopErr
	}
}

// runScenario runs the scenario's story, then prints where each of its pods
// went, what each of its claims was given and what became of each of its
// PodGroups (none in most stories).
func (r *Runner) runScenario(ctx context.Context, s Scenario, env *Env) error {
	runErr := s.Run(ctx, env)
	if lines, perr := env.placement(ctx); perr == nil {
		for _, l := range lines {
			fmt.Fprintf(r.Out, "    %s\n", l)
		}
	}
	if lines, cerr := env.claimLines(ctx); cerr == nil {
		for _, l := range lines {
			fmt.Fprintf(r.Out, "    %s\n", l)
		}
	}
	if lines, gerr := env.podGroupLines(ctx); gerr == nil {
		for _, l := range lines {
			fmt.Fprintf(r.Out, "    %s\n", l)
		}
	}
	return runErr
}

// cleanCluster deletes every ReplicaSet, Deployment and
// PodDisruptionBudget (cleanWorkloads) first, so that no controller a
// later story runs makes their pods again, then every node and every pod,
// every node Lease, every storage object (cleanStorage), every DRA
// object (cleanDRA) and every PodGroup (cleanPodGroups), so scenarios do
// not see each other's leftovers.
// Without a kubelet, deletion with grace period 0 is immediate.
func cleanCluster(ctx context.Context, client kubernetes.Interface) error {
	nss, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	errs := []error{cleanWorkloads(ctx, client, nss.Items)}
	for _, ns := range nss.Items {
		errs = append(errs, client.CoreV1().Pods(ns.Name).DeleteCollection(ctx,
			metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}))
	}
	errs = append(errs, client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	errs = append(errs, cleanNodeLeases(ctx, client), cleanStorage(ctx, client, nss.Items),
		cleanDRA(ctx, client, nss.Items), cleanPodGroups(ctx, client, nss.Items))
	return errors.Join(errs...)
}
