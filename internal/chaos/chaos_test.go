// TestChaos runs a seeded chaos run against envtest and an in-process
// scheduler.Service.

package chaos_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/internal/chaos"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/testenv"
)

var (
	seedFlag = flag.Uint64("chaos.seed", 0, "the run's seed (default: $CHAOS_SEED, else 1)")
	opsFlag  = flag.Int("chaos.ops", 0, "how many operations to apply (default: $CHAOS_OPS, else 150)")
	timeFlag = flag.Duration("chaos.time", 0,
		"stop applying operations after this long (default: $CHAOS_TIME, else 90s)")
)

// TestMain registers klog's flags, so that the scheduler's logs can be
// turned up for a failing seed: go test ./chaos/ -args -v=4.
func TestMain(m *testing.M) {
	klog.InitFlags(nil)
	os.Exit(m.Run())
}

// Defaults: a short run, for `go test ./...` and CI.
const (
	defaultSeed = 1
	defaultOps  = 150
	defaultTime = 90 * time.Second
)

// setting returns the flag's value if it was set, else the environment
// variable's, else def.
func setting[T comparable](t *testing.T, flagValue T, env string, def T, parse func(string) (T, error)) T {
	var zero T
	if flagValue != zero {
		return flagValue
	}
	if s := os.Getenv(env); s != "" {
		v, err := parse(s)
		if err != nil {
			t.Fatalf("%s=%q: %v", env, s, err)
		}
		return v
	}
	return def
}

// gates are the scheduler's feature gates: kube-scheduler v1.37.1's
// defaults and GenericWorkload, so that pod groups are scheduled as gangs.
var gates = features.Gates{GenericWorkload: true}

// schedulerConfig is the scheduler under test's configuration: its own
// profile, short backoffs so that retries come quickly, and no leader
// election (the run has one scheduler).
func schedulerConfig(name string) string {
	return `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 2
profiles:
- schedulerName: ` + name + `
`
}

// TestChaos applies a seeded random sequence of operations to a cluster
// scheduled by minisched and checks the invariants along the way and once
// the scheduler has settled (see package chaos). A failure names its seed:
// rerun it with CHAOS_SEED=<seed> (and the same CHAOS_OPS) to get the same
// operations again; the scheduler's timing, and so some outcomes, may
// differ.
func TestChaos(t *testing.T) {
	seed := setting(t, *seedFlag, "CHAOS_SEED", defaultSeed, func(s string) (uint64, error) {
		return strconv.ParseUint(s, 10, 64)
	})
	ops := setting(t, *opsFlag, "CHAOS_OPS", defaultOps, strconv.Atoi)
	limit := setting(t, *timeFlag, "CHAOS_TIME", defaultTime, time.ParseDuration)
	var only []string
	if s := os.Getenv("CHAOS_ONLY"); s != "" {
		only = strings.Split(s, ",")
		for _, name := range only {
			if !slices.Contains(chaos.OperationNames(), name) {
				t.Fatalf("CHAOS_ONLY names %q, which is no operation; the operations are %v", name, chaos.OperationNames())
			}
		}
	}
	t.Logf("chaos run: seed %d, %d operations, time limit %v (reproduce with CHAOS_SEED=%d CHAOS_OPS=%d)",
		seed, ops, limit, seed, ops)

	env, err := testenv.StartEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	client, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	// The PV binder and the protection controllers for the volumes, the
	// resourceclaim controller for the devices. At -v=5 its log says what
	// the resourceclaim controller did of each claim's reservations; a
	// failed run keeps it.
	kcm, err := env.StartControllerManagerWithFlags([]string{"--v=5"},
		slices.Concat(testenv.StorageControllers, testenv.DRAControllers)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kube-controller-manager's log is kept: %s", kcm.KeepLog())
		}
		if err := kcm.Stop(); err != nil {
			t.Errorf("stopping kube-controller-manager: %v", err)
		}
	})

	const name = "chaos"
	cfg, err := scheduler.DecodeConfigFor([]byte(schedulerConfig(name)), gates)
	if err != nil {
		t.Fatal(err)
	}
	run := chaos.New(chaos.Config{
		Seed: seed, Ops: ops, TimeLimit: limit, CheckEvery: 10, InitialNodes: 3,
		Namespace: name, SchedulerName: name,
		Logf:      t.Logf,
		Scheduler: cfg, RestConfig: env.Config, Env: env, Faults: true, Only: only,
		SchedulerOptions: []scheduler.Option{scheduler.WithFeatureGates(gates)},
	}, client)
	ctx, cancel := context.WithCancel(context.Background())
	// Cleanups run last in, first out: the scheduler stops before envtest.
	t.Cleanup(func() {
		cancel()
		if err := run.Close(); err != nil {
			t.Error(err)
		}
	})

	// Without -v, go test prints a test's log after its last line, and a
	// CI summary that keeps the ends of the output loses what failed in the
	// middle: the failure goes to stderr at once as well.
	fail := func(err error) {
		t.Helper()
		fmt.Fprintf(os.Stderr, "TestChaos failed: seed %d: %v\n", seed, err)
		t.Fatalf("seed %d: %v\nreproduce the operations with CHAOS_SEED=%d CHAOS_OPS=%d", seed, err, seed, ops)
	}
	if err := run.Start(ctx); err != nil {
		fail(fmt.Errorf("setting up: %w", err))
	}
	if err := run.Apply(ctx); err != nil {
		fail(err)
	}
	if err := run.Finish(ctx); err != nil {
		fail(err)
	}
}
