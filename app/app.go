// Package app is minisched's command line as a library, so that you can
// build your own scheduler binary with plugins of your own, as
// kube-scheduler's app.NewSchedulerCommand(app.WithPlugin(...)) allows:
//
//	func main() {
//		app.NewCommand(app.WithPlugin("MyPlugin", myplugin.New)).Main()
//	}
//
// The binary has every subcommand of minisched:
//
//	start [--scenario NAME ...] [--config FILE]   run the scenarios on an embedded apiserver
//	    [--scenario-file F.yaml ...]              and scenarios written as YAML (docs/scenarios.md)
//	run --kubeconfig FILE [--config FILE]         schedule pods of a real cluster, serving
//	    [--metrics-bind-address HOST:PORT]        /metrics and health (default 127.0.0.1:10259; 0: off)
//	apiserver --kubeconfig-out FILE               start an embedded apiserver to try `run` against
//
// A configuration may enable the added plugins in any profile, and give them
// args in pluginConfig; each plugin decodes its own args (see
// framework.DecodeArgs, which rejects unknown fields).
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
)

// Command is a minisched binary: its subcommands and the plugins it has
// beyond the in-tree ones.
type Command struct {
	name     string
	registry framework.Registry
	// err is the first error an Option met; Run reports it.
	err error
}

// Option adds to a Command.
type Option func(*Command)

// WithPlugin adds an out-of-tree plugin under name. A name already taken
// (by an in-tree plugin or an earlier WithPlugin) makes every subcommand
// fail with an error naming it.
func WithPlugin(name string, factory framework.PluginFactory) Option {
	return func(c *Command) {
		err := c.registry.Register(name, factory)
		if _, inTree := plugins.NewInTreeRegistry()[name]; inTree {
			err = errors.New("an in-tree plugin has that name")
		}
		if err != nil && c.err == nil {
			c.err = fmt.Errorf("WithPlugin(%q): %w", name, err)
		}
	}
}

// NewCommand returns the command with the given options; it is named after
// the running binary in its usage text.
func NewCommand(opts ...Option) *Command {
	c := &Command{name: filepath.Base(os.Args[0]), registry: framework.Registry{}}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// errUsage marks a command line that names no known subcommand.
var errUsage = errors.New("usage")

// Main runs the subcommand named by os.Args until SIGINT or SIGTERM, and
// exits: 0 on success (and after -h), 1 on an error, 2 on a bad command
// line. A `run` that lost its leader election Lease exits 1 too, so that
// its supervisor restarts it with a fresh cache, as kube-scheduler does.
func (c *Command) Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := c.Run(ctx, os.Args[1:])
	stop()
	klog.Flush()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	case errors.Is(err, scheduler.ErrLostLease):
		fmt.Fprintf(os.Stderr, "%s: %v; exiting so that a supervisor restarts it\n", c.name, err)
		os.Exit(1)
	case err != nil:
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.name, err)
		os.Exit(1)
	}
}

// Run runs the subcommand args[0] with the flags that follow.
func (c *Command) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		c.usage(os.Stderr)
		return errUsage
	}
	if c.err != nil {
		return c.err
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "start":
		return c.start(ctx, rest)
	case "run":
		return c.run(ctx, rest)
	case "apiserver":
		return apiserver(ctx, rest)
	case "annotate":
		return annotate(ctx, rest)
	case "help", "-h", "--help":
		c.usage(os.Stdout)
		return nil
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", cmd)
		c.usage(os.Stderr)
		return errUsage
	}
}

func (c *Command) usage(w io.Writer) {
	fmt.Fprintf(w, `usage:
  %[1]s start [--scenario NAME ...] [--config FILE]   run scenarios on an embedded apiserver (envtest)
      [--scenario-file F.yaml ...]                    and scenarios written as YAML (docs/scenarios.md)
  %[1]s run --kubeconfig FILE [--config FILE]         run against any apiserver until SIGINT/SIGTERM, while it leads (run -h)
      [--metrics-bind-address HOST:PORT]              /metrics, /healthz, /readyz, /livez (default 127.0.0.1:10259; 0: off)
  %[1]s apiserver --kubeconfig-out FILE               start an embedded apiserver and wait
  %[1]s annotate --kubeconfig K --policy F --prometheus URL   copy node load from Prometheus to annotations (Dynamic)
Each command takes -v N for log verbosity.
`, c.name)
	if names := c.registry.Names(); len(names) > 0 {
		fmt.Fprintf(w, "Plugins added to the in-tree ones: %s\n", strings.Join(names, ", "))
	}
}

// stringList is a repeatable flag that also splits on commas.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*s = append(*s, p)
		}
	}
	return nil
}

// newFlagSet returns a flag set with klog's flags (-v and friends).
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "true")
	_ = fs.Set("v", "0")
	return fs
}

func loadConfig(path string) (*configv1.KubeSchedulerConfiguration, error) {
	if path == "" {
		return scheduler.DefaultConfig(), nil
	}
	return scheduler.LoadConfigFile(path)
}

// start runs scenarios against an embedded apiserver.
func (c *Command) start(ctx context.Context, args []string) error {
	fs := newFlagSet("start")
	var names, files stringList
	fs.Var(&names, "scenario", "scenario to run (repeatable; default: all, unless --scenario-file is given)")
	fs.Var(&files, "scenario-file", "YAML scenario file to run (repeatable; see docs/scenarios.md)")
	configPath := fs.String("config", "", "KubeSchedulerConfiguration for scenarios that do not bring their own")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var scenarios []scenario.Scenario
	var err error
	if len(names) > 0 || len(files) == 0 {
		if scenarios, err = scenario.Select(names); err != nil {
			return err
		}
	}
	// Files are read before the apiserver starts: a typo fails at once.
	for _, f := range files {
		s, err := scenario.ParseFile(f)
		if err != nil {
			return err
		}
		scenarios = append(scenarios, s)
	}
	var base *configv1.KubeSchedulerConfiguration
	if *configPath != "" {
		if base, err = loadConfig(*configPath); err != nil {
			return err
		}
	}
	fmt.Printf("Starting kube-apiserver v%s and etcd (envtest)...\n", scenario.KubernetesVersion)
	env, err := scenario.StartEnvironment()
	if err != nil {
		return err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
	}()
	r := &scenario.Runner{RestConfig: env.Config, BaseConfig: base, Out: os.Stdout, Environment: env,
		Registry: c.registry}
	return r.RunAll(ctx, scenarios)
}

// run schedules the pods of a real cluster until ctx ends.
func (c *Command) run(ctx context.Context, args []string) error {
	fs := newFlagSet("run")
	kubeconfig := fs.String("kubeconfig", "",
		"kubeconfig of the cluster (default: clientConnection.kubeconfig, else in-cluster)")
	configPath := fs.String("config", "", "KubeSchedulerConfiguration file")
	metricsAddr := fs.String("metrics-bind-address", scheduler.DefaultMetricsBindAddress,
		"HOST:PORT to serve /metrics, /healthz, /readyz and /livez on, over plain HTTP (0 turns it off)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), runUsage, c.name)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := loadConfig(*configPath)
	if err != nil {
		return err
	}
	rc, err := scheduler.RestConfigFromKubeconfig(*kubeconfig, cfg)
	if err != nil {
		return err
	}
	ctx = klog.NewContext(ctx, klog.Background())
	svc, err := scheduler.New(ctx, cfg, rc, scheduler.WithOutOfTreeRegistry(c.registry))
	if err != nil {
		return err
	}
	if *metricsAddr != "0" {
		if _, err := svc.Serve(ctx, *metricsAddr); err != nil {
			return err
		}
	}
	if err := svc.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// runUsage is `run -h`'s text before the flags; %[1]s is the binary.
const runUsage = `usage: %[1]s run --kubeconfig FILE [--config FILE] [--metrics-bind-address HOST:PORT]

Schedules the pods whose spec.schedulerName names one of the configuration's
profiles, until SIGINT or SIGTERM.

Leader election is on unless the configuration sets leaderElection.leaderElect
to false, as in kube-scheduler: every replica keeps its cache warm, and only
the one holding the Lease leaderElection.resourceNamespace/resourceName
schedules (defaults: kube-system/kube-scheduler, kube-scheduler's own Lease, so
beside kube-scheduler name another; leaseDuration 15s, renewDeadline 10s,
retryPeriod 2s). On SIGINT or SIGTERM the leader finishes its binding cycles,
then releases the Lease. A replica that loses the Lease stops scheduling and
exits with status 1, for its supervisor to restart it.

Flags:
`

// apiserver starts envtest, writes a kubeconfig and waits until ctx ends.
func apiserver(ctx context.Context, args []string) error {
	fs := newFlagSet("apiserver")
	out := fs.String("kubeconfig-out", "", "where to write the kubeconfig (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("--kubeconfig-out is required")
	}
	env, err := scenario.StartEnvironment()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	if err := os.WriteFile(*out, env.Kubeconfig, 0o600); err != nil {
		return err
	}
	fmt.Printf("kube-apiserver v%s is serving at %s; kubeconfig written to %s. Ctrl-C stops it.\n",
		scenario.KubernetesVersion, env.Config.Host, *out)
	<-ctx.Done()
	return nil
}
