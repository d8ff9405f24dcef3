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
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

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
	// live view of start --web).
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

// run runs one scenario: start a scheduler with its configuration (leader
// election and profiling turned off) serving /metrics on a free loopback
// port, with KWOK, kube-controller-manager and the example provisioner if
// the scenario asks for them (and the example DRA driver), run the
// scenario, print where each pod went (and each claim's devices),
// stop the scheduler and clean up. kube-controller-manager is left running
// for the next scenario (RunAll and Run stop it). A scenario that
// StartsSchedulers gets no scheduler from run.
func (r *Runner) run(ctx context.Context, s Scenario) (err error) {
	start := time.Now()
	header := r.progress
	if header == "" {
		header = progress(1, 1, s)
	}
	fmt.Fprintln(r.Out, header)
	defer func() {
		if err != nil {
			fmt.Fprintf(r.Out, "    error: %v\n", err)
		}
		fmt.Fprintf(r.Out, "--- %s %s (%.1fs)\n", verdict(err, isTerminal(r.Out)), s.Name, time.Since(start).Seconds())
	}()

	cfg, err := r.config(s)
	if err != nil {
		return err
	}
	// One scheduler per scenario, one after another, on a private
	// apiserver: there is no one to elect against, and waiting for a Lease a
	// previous scenario held would only slow the story down. Nor does it
	// profile: contention profiling, once on, would slow down every later
	// scenario of the process.
	cfg = cfg.DeepCopy()
	cfg.LeaderElection.LeaderElect = ptr.To(false)
	cfg.EnableProfiling = ptr.To(false)
	client, err := kubernetes.NewForConfig(r.RestConfig)
	if err != nil {
		return err
	}
	if err := cleanCluster(ctx, client); err != nil {
		return err
	}
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.Name}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", s.Name, err)
	}

	if s.Lifecycle {
		if r.Environment == nil {
			return errors.New("this scenario needs KWOK, which needs the runner's Environment")
		}
		kwok, err := r.Environment.StartKWOK()
		if err != nil {
			return err
		}
		defer func() { _ = kwok.Stop() }()
	}
	var controllers []string
	if s.Storage || s.Provisioner != nil {
		controllers = append(controllers, testenv.StorageControllers...)
	}
	if s.DRA || s.DRADriver != nil {
		controllers = append(controllers, testenv.DRAControllers...)
	}
	if len(controllers) > 0 {
		if err := r.startControllerManager(controllers...); err != nil {
			return err
		}
	}
	if s.Provisioner != nil {
		stopProvisioner, err := startProvisioner(ctx, client, s.Provisioner)
		if err != nil {
			return err
		}
		defer func() {
			if stopErr := stopProvisioner(); stopErr != nil && err == nil {
				err = stopErr
			}
		}()
	}
	if s.DRADriver != nil {
		stopDriver := startDRADriver(ctx, client, *s.DRADriver)
		defer func() {
			if stopErr := stopDriver(); stopErr != nil && err == nil {
				err = stopErr
			}
		}()
	}

	if s.StartsSchedulers {
		env := &Env{Client: client, Namespace: s.Name, SchedulerName: *cfg.Profiles[0].SchedulerName,
			Attempts: NewAttemptLog(), RestConfig: r.RestConfig, out: r.Out}
		return r.runScenario(ctx, s, env)
	}

	if s.Extender {
		var stopExtender func()
		cfg, stopExtender = startExtender(client, cfg)
		defer stopExtender()
	}

	log := NewAttemptLog()
	opts := []scheduler.Option{scheduler.WithObserver(log.Record), scheduler.WithSeed(42),
		scheduler.WithOutOfTreeRegistry(r.Registry), scheduler.WithAttemptRecords()}
	if r.View != nil {
		opts = append(opts, scheduler.WithLiveView(r.View))
	}
	svc, err := scheduler.New(ctx, cfg, r.RestConfig, opts...)
	if err != nil {
		return fmt.Errorf("configuring the scheduler: %w", err)
	}
	// The scheduler's own log lines are one verbosity level quieter here, so
	// the scenario's story stays readable; -v 1 brings them back.
	schedCtx, stop := context.WithCancel(klog.NewContext(ctx, klog.Background().V(1)))
	done := make(chan error, 1)
	go func() { done <- svc.Run(schedCtx) }()
	defer func() {
		stop()
		if runErr := <-done; runErr != nil && err == nil {
			err = runErr
		}
	}()

	addr, err := svc.Serve(schedCtx, "127.0.0.1:0")
	if err != nil {
		return err
	}
	env := &Env{Client: client, Namespace: s.Name, SchedulerName: *cfg.Profiles[0].SchedulerName,
		Attempts: log, RestConfig: r.RestConfig, MetricsURL: "http://" + addr.String() + "/metrics", out: r.Out}
	return r.runScenario(ctx, s, env)
}

// config is the configuration the scenario runs with: its own, else the
// runner's base configuration, else the default profile.
func (r *Runner) config(s Scenario) (*configv1.KubeSchedulerConfiguration, error) {
	if s.Config != nil {
		cfg, err := s.Config()
		if err != nil {
			return nil, fmt.Errorf("the scenario's configuration: %w", err)
		}
		return cfg, nil
	}
	if r.BaseConfig != nil {
		return r.BaseConfig, nil
	}
	return scheduler.DefaultConfig(), nil
}

// runScenario runs the scenario's story, then prints where each of its pods
// went, and what each of its claims was given (none in most stories).
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
	return runErr
}

// cleanCluster deletes every node and every pod, every storage object
// (cleanStorage) and every DRA object (cleanDRA), so scenarios do not see
// each other's leftovers. Without a
// kubelet, deletion with grace period 0 is immediate.
func cleanCluster(ctx context.Context, client kubernetes.Interface) error {
	nss, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var errs []error
	for _, ns := range nss.Items {
		errs = append(errs, client.CoreV1().Pods(ns.Name).DeleteCollection(ctx,
			metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}))
	}
	errs = append(errs, client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	errs = append(errs, cleanStorage(ctx, client, nss.Items), cleanDRA(ctx, client, nss.Items))
	return errors.Join(errs...)
}
