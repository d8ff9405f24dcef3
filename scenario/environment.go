// Package scenario holds minisched's scenarios — one or more per chapter of
// the tutorial — and what they need: a real apiserver (envtest), builders,
// waits, and a runner that starts a scheduler per scenario and reports where
// each pod went and why.
//
// Scenarios talk to the apiserver only; the one window into the scheduler is
// the stream of scheduling attempts it reports (to see retries and scores).
package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// KubernetesVersion is the version of the control plane built by hack/tools.
const KubernetesVersion = "1.37.1"

// Environment is a real etcd + kube-apiserver started for scenarios and
// tests. No controller-manager or kubelet runs: nodes are API objects, pods
// are never started, and whoever binds a pod is the only one to touch it.
type Environment struct {
	// Config reaches the apiserver as an administrator.
	Config *rest.Config
	// Kubeconfig is the same access as a kubeconfig file's contents.
	Kubeconfig []byte
	env        *envtest.Environment
}

// StartEnvironment starts etcd and kube-apiserver from KUBEBUILDER_ASSETS or,
// failing that, bin/k8s/<version> at the repository root (where `make
// envtest` builds them).
//
// Two admission plugins are disabled: TaintNodesByCondition, because no node
// controller runs to lift the not-ready taint new nodes are born with (as in
// upstream's scheduler_perf), and ServiceAccount, because no controller
// creates default service accounts.
func StartEnvironment() (*Environment, error) {
	assets, err := findAssets()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	env.ControlPlane.GetAPIServer().Configure().Set("disable-admission-plugins", "ServiceAccount", "TaintNodesByCondition")
	cfg, err := env.Start()
	if err != nil {
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
	return &Environment{Config: cfg, Kubeconfig: kubeconfig, env: env}, nil
}

// Stop stops the apiserver and etcd and removes their data.
func (e *Environment) Stop() error { return e.env.Stop() }

func findAssets() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("%w; set KUBEBUILDER_ASSETS", err)
	}
	dir := filepath.Join(root, "bin", "k8s", KubernetesVersion)
	if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); err != nil {
		return "", fmt.Errorf("no kube-apiserver in %s: run `make envtest` (or set KUBEBUILDER_ASSETS)", dir)
	}
	return dir, nil
}

// RepoRoot walks up from the working directory to minisched's go.mod and
// returns that directory: where bin/ and the envtest binaries live.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			strings.Contains(string(b), "module github.com/minisched/minisched\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find minisched's repository root (go.mod) above the working directory")
		}
		dir = parent
	}
}
