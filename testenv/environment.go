// The embedded control plane: etcd and kube-apiserver started by envtest,
// and the crash and restart of the apiserver that fault tests need.

package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Environment is a real etcd + kube-apiserver started for scenarios and
// tests. No kubelet and no controller runs unless started beside it
// (StartKWOK plays the kubelets, StartControllerManager runs the named
// controllers): without them nodes are API objects, pods are never started,
// whoever binds a pod is the only one to touch it, and PVCs stay unbound.
type Environment struct {
	// Config reaches the apiserver as an administrator.
	Config *rest.Config
	// Kubeconfig is the same access as a kubeconfig file's contents.
	Kubeconfig []byte
	// Workloads reports whether the apiserver serves the workload API
	// (WorkloadAPIServerFlags).
	Workloads bool
	env       *envtest.Environment
	// certDir holds the apiserver's serving certificate and client CA. It
	// is ours, not envtest's, so that they survive CrashAPIServer: a
	// restarted apiserver must be the same server to its clients.
	certDir string
}

// WorkloadFeatureGates are the feature gates that make kube-apiserver
// (and kube-controller-manager) serve and keep pod groups: GenericWorkload
// keeps a pod's spec.schedulingGroup (dropped on create without it) and
// stores Workloads and PodGroups; TopologyAwareWorkloadScheduling allows a
// PodGroup's spec.schedulingConstraints (a topology key).
const WorkloadFeatureGates = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"

// WorkloadRuntimeConfig turns on scheduling.k8s.io/v1beta1, the version
// PodGroups are served in: a beta API group version is off by default.
const WorkloadRuntimeConfig = "scheduling.k8s.io/v1beta1=true"

// Options change how StartEnvironmentWith starts the control plane.
type Options struct {
	// WithoutWorkloads starts kube-apiserver without the workload API
	// (WorkloadFeatureGates, WorkloadRuntimeConfig), as it starts by
	// default: PodGroups are not served.
	WithoutWorkloads bool
}

// StartEnvironment starts etcd and kube-apiserver from KUBEBUILDER_ASSETS or,
// failing that, bin/k8s/<version> at the repository root (where `make
// envtest` builds them).
//
// Two admission plugins are disabled: TaintNodesByCondition, because no node
// controller runs to lift the not-ready taint new nodes are born with (as in
// upstream's scheduler_perf), and ServiceAccount, because no controller
// creates default service accounts.
//
// The apiserver serves the workload API (PodGroups, chapter 19): a cluster
// serving an API no story uses schedules every other pod the same, and a
// story can then show one pod group both with the scheduler's
// GenericWorkload gate on and with it off.
func StartEnvironment() (*Environment, error) {
	return StartEnvironmentWith(Options{})
}

// StartEnvironmentWith is StartEnvironment with options.
func StartEnvironmentWith(opts Options) (*Environment, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	// envtest logs through controller-runtime's logger: to klog, like the
	// rest of minisched (unset, it complains with a stack trace).
	ctrllog.SetLogger(klog.Background())
	certDir, err := os.MkdirTemp("", "minisched-apiserver-")
	if err != nil {
		return nil, err
	}
	apiserver := env.ControlPlane.GetAPIServer()
	apiserver.CertDir = certDir
	apiserver.Configure().Set("disable-admission-plugins", "ServiceAccount", "TaintNodesByCondition")
	if !opts.WithoutWorkloads {
		apiserver.Configure().Set("feature-gates", WorkloadFeatureGates)
		apiserver.Configure().Set("runtime-config", WorkloadRuntimeConfig)
	}
	cfg, err := env.Start()
	if err != nil {
		_ = os.RemoveAll(certDir)
		return nil, fmt.Errorf("starting envtest with binaries from %s: %w", assets, err)
	}
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "minisched-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating an admin user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("writing a kubeconfig: %w", err)
	}
	return &Environment{Config: cfg, Kubeconfig: kubeconfig, Workloads: !opts.WithoutWorkloads, env: env,
		certDir: certDir}, nil
}

// RunWithEnvironment is a test package's TestMain against one shared
// apiserver: it starts an Environment, stores it in *env, runs setup (if
// not nil) and then run (m.Run), stops the Environment, and returns the
// exit code for os.Exit: run's, or 1 if the Environment did not start or
// setup failed (each said on stderr).
func RunWithEnvironment(run func() int, env **Environment, setup func(*Environment) error) int {
	e, err := StartEnvironment()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*env = e
	code := 1
	if setup == nil {
		code = run()
	} else if err := setup(e); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = run()
	}
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	return code
}

// Stop stops the apiserver and etcd and removes their data.
func (e *Environment) Stop() error {
	err := e.env.Stop()
	return errors.Join(err, os.RemoveAll(e.certDir))
}

// CrashAPIServer kills kube-apiserver (SIGKILL) and leaves etcd running:
// clients see their connections reset and every request fail, as when a
// control-plane node dies. StartAPIServer brings it back. (A graceful stop
// is no quicker: kube-apiserver waits up to a minute for the connections of
// open watches to close.) It finds the process by its certificate
// directory, which is unique to this environment, in /proc: Linux only,
// like envtest's binaries here.
func (e *Environment) CrashAPIServer() error {
	pid, err := e.apiserverPID()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing kube-apiserver (pid %d): %w", pid, err)
	}
	// envtest reaps its child; Stop then finds it exited and tidies up.
	if err := e.env.ControlPlane.APIServer.Stop(); err != nil {
		return fmt.Errorf("after killing kube-apiserver: %w", err)
	}
	return nil
}

// apiserverPID finds the kube-apiserver started with this environment's
// certificate directory.
func (e *Environment) apiserverPID() (int, error) {
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		return 0, err
	}
	want := "--cert-dir=" + e.certDir
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the process is gone
		}
		args := strings.Split(string(b), "\x00")
		if len(args) == 0 || filepath.Base(args[0]) != "kube-apiserver" {
			continue
		}
		for _, a := range args[1:] {
			if a == want {
				return strconv.Atoi(filepath.Base(filepath.Dir(f)))
			}
		}
	}
	return 0, fmt.Errorf("no kube-apiserver with %s is running", want)
}

// StartAPIServer starts kube-apiserver again after CrashAPIServer, on the
// same port, with the same certificates and the same etcd, and returns once
// it is healthy: the clients of Config and Kubeconfig work again unchanged.
func (e *Environment) StartAPIServer() error {
	if err := e.env.ControlPlane.APIServer.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return nil
}
