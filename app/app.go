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
//	start [--chapter N ...] [--scenario NAME ...]   run the scenarios on an embedded apiserver,
//	    [--scenario-file F.yaml ...] [--config FILE]  a chapter's with the scheduler of that chapter
//	    [--web HOST:PORT [--step]]                  watched live in a browser, or stepped (docs/web.md)
//	run --kubeconfig FILE [--config FILE]         schedule pods of a real cluster, serving
//	    [--metrics-bind-address HOST:PORT]        /metrics and health (default 127.0.0.1:10259; 0: off)
//	    [--web-address HOST:PORT]                 and the live view of the queues (default: off)
//	explain POD [-n NS] [--kubeconfig FILE]       why a pod is pending, or why it went where it did
//	apiserver --kubeconfig-out FILE               start an embedded apiserver to try `run` against
//	annotate --kubeconfig K --policy F --prometheus URL   copy node load from Prometheus (Dynamic)
//
// Each prints its flags and examples on -h.
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
	"sort"
	"strconv"
	"strings"
	"syscall"

	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/chapters"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scenario/scenariofile"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/testenv"
	"github.com/minisched/minisched/web"
)

// Command is a minisched binary: its subcommands and the plugins it has
// beyond the in-tree ones.
type Command struct {
	name     string
	registry framework.Registry
	// err is the first error an Option met; Run reports it.
	err error
	// stdout gets what was asked for (help); stderr, usage errors and
	// subcommands' -h (the flag package's habit).
	stdout, stderr io.Writer
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
	c := &Command{name: filepath.Base(os.Args[0]), registry: framework.Registry{}, stdout: os.Stdout,
		stderr: os.Stderr}
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
		c.usage(c.stderr)
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
		return c.apiserver(ctx, rest)
	case "annotate":
		return c.annotate(ctx, rest)
	case "explain":
		return c.explainPod(ctx, rest)
	case "help", "-h", "--help":
		c.usage(c.stdout)
		return nil
	default:
		fmt.Fprintf(c.stderr, "unknown command %q\n", cmd)
		c.usage(c.stderr)
		return errUsage
	}
}

// everyChapter names all of the tutorial's chapters in the help texts,
// "chapters 1 to N" with N = chapters.LastChapter, so that no help text keeps
// the count by hand (TestHelpCountsChapters checks it against docs/).
var everyChapter = fmt.Sprintf("chapters 1 to %d", chapters.LastChapter)

// usage is the top-level help: every subcommand in a line or two, and
// examples.
func (c *Command) usage(w io.Writer) {
	fmt.Fprintf(w, `usage: %[1]s COMMAND [flags]   (%[1]s COMMAND -h: its flags and examples)

minisched is a Kubernetes scheduler written from scratch after kube-scheduler
v1.37, and a tutorial in %[2]d chapters: each chapter's scenarios run against a
real apiserver, with the scheduler as it stood at that chapter.

Commands:
  %[1]s start [--chapter N ...] [--scenario NAME ...]   run scenarios on an embedded apiserver (envtest)
      [--scenario-file F.yaml ...] [--config FILE]    and scenarios written as YAML (docs/scenarios.md)
      [--web HOST:PORT [--step]]                      watched live in a browser, or stepped (docs/web.md)
  %[1]s run --kubeconfig FILE [--config FILE]         run against any apiserver until SIGINT/SIGTERM, while it leads (run -h)
      [--metrics-bind-address HOST:PORT]              /metrics, /healthz, /readyz, /livez (default 127.0.0.1:10259; 0: off)
      [--web-address HOST:PORT]                       the live view of the queues, read-only (default: off)
  %[1]s apiserver --kubeconfig-out FILE               start an embedded apiserver and wait
  %[1]s annotate --kubeconfig K --policy F --prometheus URL   copy node load from Prometheus to annotations (Dynamic)
  %[1]s explain POD [-n NS] [--kubeconfig F]          why a pod is pending, or why it went where it did (explain -h)
  %[1]s help                                          this text
Each command takes -v N for log verbosity.

Examples:
  %[1]s start                                    # every story, %[3]s
  %[1]s start --chapter 3                        # chapter 3's scenarios, with chapter 3's scheduler
  %[1]s start --scenario ch10-preemption
  %[1]s start --scenario-file scenarios/ch9-labels.yaml
  make start CHAPTER=10                              # build, then start --chapter 10
  make start CHAPTER=7 WEB=127.0.0.1:8080            # chapter 7, watched at http://127.0.0.1:8080/
  %[1]s apiserver --kubeconfig-out /tmp/minisched.kubeconfig
  %[1]s run --kubeconfig /tmp/minisched.kubeconfig
`, c.name, chapters.LastChapter, everyChapter)
	if names := c.registry.Names(); len(names) > 0 {
		fmt.Fprintf(w, "Plugins added to the in-tree ones: %s\n", strings.Join(names, ", "))
	}
}

// intList is a repeatable flag of numbers that also splits on commas.
type intList []int

func (l *intList) String() string {
	parts := make([]string, len(*l))
	for i, n := range *l {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

func (l *intList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return fmt.Errorf("%q is not a number", p)
		}
		*l = append(*l, n)
	}
	return nil
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

// loadConfig is the configuration in the file at path, or the default one
// without a path, defaulted for gates.
func loadConfig(path string, gates features.Gates) (*configv1.KubeSchedulerConfiguration, error) {
	if path == "" {
		return scheduler.DefaultConfigFor(gates), nil
	}
	return scheduler.LoadConfigFileFor(path, gates)
}

// scenarioDir is where start looks for YAML scenario files, relative to the
// working directory (the repository's root, under make).
const scenarioDir = chapters.FilesDir

// startHelp is `start -h`'s text.
var startHelp = help{
	usage: "%[1]s start [--chapter N ...] [--scenario NAME ...] [--scenario-file F.yaml ...] [--config FILE] [--web HOST:PORT [--step]]",
	// The chapter numbers are package chapters'; the binary's name is
	// %%[1]s here, since this text goes through Sprintf first.
	about: fmt.Sprintf(`
Starts etcd and kube-apiserver (envtest: bin/k8s/1.37.1, built by make
envtest, or $KUBEBUILDER_ASSETS), then runs scenarios against them one after
another, each with a fresh scheduler on a clean cluster, and prints each
scenario's story, where its pods went, and a summary. With no flag it runs
every story once, in chapter order: the Go ones and the YAML scenario files
in ./scenarios/.

--chapter N runs chapter N's Go scenarios and the YAML scenario files in
./scenarios/ whose chapter: is N (none if there is no such directory), with
the scheduler as it stood at that chapter: chapter 1 has no Filter or Score
plugin, chapters %[3]s each add a plugin (chapters.ChapterPlugins), and
from chapter %[1]d on it is the default profile. A line at the start of each
chapter names its plugins. --chapter, --scenario and --scenario-file add up.

--web HOST:PORT serves the live view of the queues there (docs/web.md): the
scenarios start once a page is open, and the page stays up after the last
one until Ctrl-C. :PORT means 127.0.0.1:PORT.

--step (with --web) is step mode (docs/web.md): each scheduling and binding
cycle stops before each extension point until you press Next in the page;
Cycle lets the pod's attempt finish, Run stops stepping. The stories wait
for you.

A scenario with a configuration of its own runs with it; any other, with
--config if given, else with the default profile. The Go scenarios of
chapters 1 to %[2]d and the YAML files in scenarios/ of those chapters bring
their chapter's.`, chapters.DefaultProfileChapter, chapters.DefaultProfileChapter-1,
		listInProse(chapters.ChaptersAddingPlugins())),
	examples: []string{
		"%[1]s start                                    # every story, " + everyChapter,
		"%[1]s start --chapter 3                        # chapter 3: NodeNumber's Score",
		"%[1]s start --chapter 1,2 --chapter 10         # three chapters",
		"%[1]s start --scenario ch10-preemption         # one scenario, by name",
		"%[1]s start --scenario ch11-profiles --scenario ch14-leader-election",
		"%[1]s start --scenario-file scenarios/ch9-labels.yaml",
		"%[1]s start --chapter 15 -v 1                  # with the scheduler's own log lines",
		"make start CHAPTER=10                              # build, then start --chapter 10",
		"%[1]s start --chapter 7 --web 127.0.0.1:8080     # watch chapter 7 at http://127.0.0.1:8080/",
		"make start CHAPTER=7 WEB=127.0.0.1:8080            # the same, built first",
		"make start CHAPTER=2 WEB=127.0.0.1:8080 STEP=1     # step through each cycle in the page",
		`make start ARGS="--scenario ch6-assume"`,
	},
}

// startFlags is what start's command line asks for.
type startFlags struct {
	names, files stringList
	chapters     intList
	configPath   string
	// web is where to serve the live view ("": nowhere).
	web string
	// step: step mode in the live view.
	step bool
}

// parseStart parses start's command line.
func (c *Command) parseStart(args []string) (*startFlags, error) {
	fs := c.flagSet("start", startHelp)
	f := &startFlags{}
	fs.Var(&f.chapters, "chapter",
		"run chapter `N`'s scenarios, Go and YAML, with the scheduler of that chapter (repeatable, or 1,2,3)")
	fs.Var(&f.names, "scenario", "run the scenario `NAME`, Go or a file of ./scenarios/ (repeatable, or a,b; "+
		"default: every story, unless --chapter or --scenario-file is given)")
	fs.Var(&f.files, "scenario-file", "run the YAML scenario file `F.yaml` (repeatable; see docs/scenarios.md)")
	fs.StringVar(&f.configPath, "config", "",
		"KubeSchedulerConfiguration `FILE` for the scenarios that bring none of their own")
	fs.StringVar(&f.web, "web", "", "serve the live view of the queues on `HOST:PORT` (:PORT is 127.0.0.1:PORT; "+
		"docs/web.md); the scenarios start once a page is open, and it is served until Ctrl-C")
	fs.BoolVar(&f.step, "step", false, "step mode: stop each cycle before each extension point until Next "+
		"is pressed in the live view (needs --web; docs/web.md)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("start takes no arguments, got %q (--scenario NAME?)", fs.Args())
	}
	if f.step && f.web == "" {
		return nil, fmt.Errorf("--step needs --web HOST:PORT: the cycles are stepped in the live view's page")
	}
	if f.web != "" {
		if _, err := web.ListenAddress(f.web); err != nil {
			return nil, fmt.Errorf("--web: %w", err)
		}
	}
	return f, nil
}

// selectScenarios returns the scenarios f names, each once: those of
// --scenario (Go stories, or files of dir, by name), then those of each
// --chapter (its Go stories and the files in dir of that chapter), then those
// of --scenario-file; when f names none, every story (chapters.Stories: the
// Go ones and the files in dir). With --chapter, or with no flag, they run in
// chapter order. Files are read here, before any apiserver starts, so that a
// typo fails at once.
func selectScenarios(f *startFlags, dir string) ([]scenario.Scenario, error) {
	stories, err := chapters.Stories(dir)
	if err != nil {
		return nil, err
	}
	var out []scenario.Scenario
	seen := map[string]bool{}
	add := func(s scenario.Scenario) {
		if !seen[s.Name] {
			seen[s.Name] = true
			out = append(out, s)
		}
	}
	if len(f.names) > 0 || (len(f.chapters) == 0 && len(f.files) == 0) {
		named, err := scenario.Select(stories, f.names)
		if err != nil {
			return nil, err
		}
		for _, s := range named {
			add(s)
		}
	}
	if len(f.chapters) > 0 {
		wanted := map[int]bool{}
		for _, n := range f.chapters {
			if _, err := chapters.ChapterPlugins(n); err != nil {
				return nil, fmt.Errorf("--chapter: %w", err)
			}
			wanted[n] = true
		}
		for _, s := range stories {
			if wanted[s.Chapter] {
				add(s)
			}
		}
	}
	for _, file := range f.files {
		s, err := scenariofile.ParseFile(file)
		if err != nil {
			return nil, err
		}
		add(s)
	}
	if len(f.chapters) > 0 {
		sort.SliceStable(out, func(i, j int) bool { return out[i].Chapter < out[j].Chapter })
	}
	return out, nil
}

// start runs scenarios against an embedded apiserver.
func (c *Command) start(ctx context.Context, args []string) error {
	f, err := c.parseStart(args)
	if err != nil {
		return err
	}
	scenarios, err := selectScenarios(f, scenarioDir)
	if err != nil {
		return err
	}
	var base *configv1.KubeSchedulerConfiguration
	if f.configPath != "" {
		if base, err = loadConfig(f.configPath, features.Gates{}); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.stdout, "Starting kube-apiserver v%s and etcd (envtest)...\n", testenv.KubernetesVersion)
	env, err := testenv.StartEnvironment()
	if err != nil {
		return err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(c.stderr, "stopping envtest:", err)
		}
	}()
	r := &scenario.Runner{RestConfig: env.Config, BaseConfig: base, Out: c.stdout, Environment: env,
		Registry: c.registry}
	if len(f.chapters) > 0 {
		r.ChapterHeader = chapters.DescribeChapter
	}
	if f.web == "" {
		return r.RunAll(ctx, scenarios)
	}
	r.View = web.New()
	if f.step {
		r.View.EnableStepping()
	}
	addr, err := r.View.Serve(ctx, f.web)
	if err != nil {
		return fmt.Errorf("--web %s: %w", f.web, err)
	}
	fmt.Fprintf(c.stdout, "The live view is at http://%s/ : open it, and the scenarios start.\n", addr)
	if err := r.View.WaitForWatcher(ctx); err != nil {
		return nil // interrupted before anyone looked
	}
	runErr := r.RunAll(ctx, scenarios)
	fmt.Fprintf(c.stdout, "The scenarios are done; the live view stays at http://%s/ until Ctrl-C.\n", addr)
	<-ctx.Done()
	return runErr
}

// run schedules the pods of a real cluster until ctx ends.
func (c *Command) run(ctx context.Context, args []string) error {
	fs := c.flagSet("run", runHelp)
	kubeconfig := fs.String("kubeconfig", "",
		"kubeconfig `FILE` of the cluster (default: clientConnection.kubeconfig, else in-cluster)")
	configPath := fs.String("config", "", "KubeSchedulerConfiguration `FILE` (default: the default profile)")
	recordAttempts := fs.Bool("record-attempts", false, recordAttemptsHelp)
	metricsAddr := fs.String("metrics-bind-address", scheduler.DefaultMetricsBindAddress,
		"`HOST:PORT` to serve /metrics, /healthz, /readyz and /livez on, over plain HTTP (0 turns it off)")
	webAddr := fs.String("web-address", "", "`HOST:PORT` to serve the live view of the queues on, read-only "+
		"(:PORT is 127.0.0.1:PORT; default: off; docs/web.md says what to put in front of it)")
	step := fs.Bool("step", false, "step mode in the live view: every cycle stops before each extension point "+
		"until someone presses Next (needs --web-address and --step-on-a-real-cluster; docs/web.md)")
	stepMeant := fs.Bool("step-on-a-real-cluster", false, "say that --step is meant: scheduling of the whole "+
		"cluster stops at each step until someone presses Next in the page")
	gateFlag := fs.String("feature-gates", "", "kube-scheduler's feature gates, `A=true,B=false`: "+
		"GenericWorkload and TopologyAwareWorkloadScheduling either way, any other gate kube-scheduler "+
		"v1.37.1 reads at its default (default: kube-scheduler's defaults)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	gates, err := features.Parse(*gateFlag)
	if err != nil {
		return err
	}
	if *webAddr != "" {
		if _, err := web.ListenAddress(*webAddr); err != nil {
			return fmt.Errorf("--web-address: %w", err)
		}
	}
	if err := checkRunStep(*step, *stepMeant, *webAddr); err != nil {
		return err
	}
	cfg, err := loadConfig(*configPath, gates)
	if err != nil {
		return err
	}
	rc, err := scheduler.RestConfigFromKubeconfig(*kubeconfig, cfg)
	if err != nil {
		return err
	}
	ctx = klog.NewContext(ctx, klog.Background())
	opts := []scheduler.Option{scheduler.WithOutOfTreeRegistry(c.registry), scheduler.WithFeatureGates(gates)}
	if *recordAttempts {
		opts = append(opts, scheduler.WithAttemptRecords())
	}
	var view *web.View
	if *webAddr != "" {
		view = web.New()
		if *step {
			view.EnableStepping()
		}
		opts = append(opts, scheduler.WithLiveView(view))
	}
	svc, err := scheduler.New(ctx, cfg, rc, opts...)
	if err != nil {
		return err
	}
	if *metricsAddr != "0" {
		if _, err := svc.Serve(ctx, *metricsAddr); err != nil {
			return err
		}
	}
	if view != nil {
		if _, err := view.Serve(ctx, *webAddr); err != nil {
			return fmt.Errorf("--web-address %s: %w", *webAddr, err)
		}
	}
	// SIGINT or SIGTERM cancels ctx: a clean stop, for which Run returns
	// nil even before the scheduler has started.
	return svc.Run(ctx)
}

// checkRunStep refuses run's --step unless --step-on-a-real-cluster says
// it is meant (every pod of the cluster would wait for someone to press
// Next), and --step without the page to step in.
func checkRunStep(step, meant bool, webAddr string) error {
	switch {
	case meant && !step:
		return fmt.Errorf("--step-on-a-real-cluster is only for --step")
	case !step:
		return nil
	case webAddr == "":
		return fmt.Errorf("--step needs --web-address HOST:PORT: the cycles are stepped in the live view's page")
	case !meant:
		return fmt.Errorf("--step stops every scheduling and binding cycle of this cluster before each extension " +
			"point until someone presses Next in the live view: no pod of this scheduler's profiles is scheduled " +
			"meanwhile. On a cluster of your own, add --step-on-a-real-cluster to say you mean it; to learn, use " +
			"minisched start --web HOST:PORT --step, which steps an embedded cluster")
	}
	return nil
}

// runHelp is `run -h`'s text.
var runHelp = help{
	usage: "%[1]s run --kubeconfig FILE [--config FILE] [--feature-gates A=true,B=false] [--metrics-bind-address HOST:PORT] [--record-attempts] [--web-address HOST:PORT [--step --step-on-a-real-cluster]]",
	about: `
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

--web-address HOST:PORT serves the live view of the queues (docs/web.md):
read-only, only what kubectl get pods shows, nothing recorded while no page
is open, and no authentication of its own: keep it on loopback (:PORT means
127.0.0.1:PORT) and reach it through kubectl port-forward or an SSH tunnel,
or put an authenticating proxy in front of it.

--step (with --web-address) is step mode: every cycle stops before each
extension point until someone presses Next in the page, so nothing else is
scheduled meanwhile. It is refused unless --step-on-a-real-cluster says you
mean it; minisched start --web HOST:PORT --step steps an embedded cluster.`,
	examples: []string{
		"%[1]s apiserver --kubeconfig-out /tmp/minisched.kubeconfig &   # an apiserver to try it on",
		"%[1]s run --kubeconfig /tmp/minisched.kubeconfig",
		"curl -s 127.0.0.1:10259/metrics | grep scheduler_schedule_attempts_total",
		"%[1]s run --kubeconfig ~/.kube/config --metrics-bind-address 127.0.0.1:10260 -v 2",
		"%[1]s run --kubeconfig ~/.kube/config --web-address 127.0.0.1:8080   # the live view (docs/web.md)",
	},
}

// apiserverHelp is `apiserver -h`'s text.
var apiserverHelp = help{
	usage: "%[1]s apiserver --kubeconfig-out FILE",
	about: `
Starts etcd and kube-apiserver (envtest, as start does), writes an
administrator's kubeconfig to FILE and waits until SIGINT or SIGTERM. No
controller or kubelet runs: nodes are only API objects, and pods stay where
a scheduler binds them. Try run, explain or kubectl against it.`,
	examples: []string{
		"%[1]s apiserver --kubeconfig-out /tmp/minisched.kubeconfig",
		"kubectl --kubeconfig /tmp/minisched.kubeconfig get namespaces   # from another terminal",
		"%[1]s run --kubeconfig /tmp/minisched.kubeconfig                # from another terminal",
	},
}

// apiserver starts envtest, writes a kubeconfig and waits until ctx ends.
func (c *Command) apiserver(ctx context.Context, args []string) error {
	fs := c.flagSet("apiserver", apiserverHelp)
	out := fs.String("kubeconfig-out", "", "`FILE` to write the kubeconfig to (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("--kubeconfig-out is required")
	}
	env, err := testenv.StartEnvironment()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	if err := os.WriteFile(*out, env.Kubeconfig, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "kube-apiserver v%s is serving at %s; kubeconfig written to %s. Ctrl-C stops it.\n",
		testenv.KubernetesVersion, env.Config.Host, *out)
	<-ctx.Done()
	return nil
}

// listInProse writes numbers as prose: "2", "2 and 3", "2, 3, 5 and 6".
func listInProse(numbers []int) string {
	words := make([]string, len(numbers))
	for i, n := range numbers {
		words[i] = strconv.Itoa(n)
	}
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
