// Command minisched is a small Kubernetes scheduler, built from scratch to
// show how kube-scheduler works inside.
//
//	minisched start [--scenario NAME ...] [--config FILE]   run the scenarios on an embedded apiserver
//	minisched run --kubeconfig FILE [--config FILE]         schedule pods of a real cluster
//	minisched apiserver --kubeconfig-out FILE               start an embedded apiserver to try `run` against
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "start":
		err = start(ctx, args)
	case "run":
		err = run(ctx, args)
	case "apiserver":
		err = apiserver(ctx, args)
	case "help", "-h", "--help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", cmd)
		usage()
		os.Exit(2)
	}
	klog.Flush()
	if err != nil {
		fmt.Fprintln(os.Stderr, "minisched:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  minisched start [--scenario NAME ...] [--config FILE]   run scenarios on an embedded apiserver (envtest)
  minisched run --kubeconfig FILE [--config FILE]         run against any apiserver until SIGINT/SIGTERM
  minisched apiserver --kubeconfig-out FILE               start an embedded apiserver and wait
Each command takes -v N for log verbosity.
`)
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
func start(ctx context.Context, args []string) error {
	fs := newFlagSet("start")
	var names stringList
	fs.Var(&names, "scenario", "scenario to run (repeatable; default: all)")
	configPath := fs.String("config", "", "KubeSchedulerConfiguration for scenarios that do not bring their own")
	if err := fs.Parse(args); err != nil {
		return err
	}
	scenarios, err := scenario.Select(names)
	if err != nil {
		return err
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
	r := &scenario.Runner{RestConfig: env.Config, BaseConfig: base, Out: os.Stdout, Environment: env}
	return r.RunAll(ctx, scenarios)
}

// run schedules the pods of a real cluster until a signal arrives.
func run(ctx context.Context, args []string) error {
	fs := newFlagSet("run")
	kubeconfig := fs.String("kubeconfig", "",
		"kubeconfig of the cluster (default: clientConnection.kubeconfig, else in-cluster)")
	configPath := fs.String("config", "", "KubeSchedulerConfiguration file")
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
	svc, err := scheduler.New(ctx, cfg, rc)
	if err != nil {
		return err
	}
	if err := svc.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// apiserver starts envtest, writes a kubeconfig and waits for a signal.
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
