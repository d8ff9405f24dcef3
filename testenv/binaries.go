// Where the embedded cluster's binaries are: the control plane that `make
// envtest` (and `make kube-controller-manager`) build, the helpers (KWOK)
// that `make kwok` installs, and the repository root they are found from.

package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// KubernetesVersion is the version of the control plane built by hack/tools.
const KubernetesVersion = "1.37.1"

// AssetsDir is where the control plane's binaries are: KUBEBUILDER_ASSETS,
// else bin/k8s/<version> at the repository root, which `make envtest` (and
// `make kube-scheduler`, `make kube-controller-manager`) fill.
func AssetsDir() (string, error) {
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

// binary is the path of a helper binary: $envVar if set, else name in the
// directory dir returns, where `make target` puts it.
func binary(envVar, name, target string, dir func() (string, error)) (string, error) {
	bin := os.Getenv(envVar)
	if bin == "" {
		d, err := dir()
		if err != nil {
			return "", err
		}
		bin = filepath.Join(d, name)
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("no %s binary at %s: run `make %s` (or set %s)", name, bin, target, envVar)
	}
	return bin, nil
}

// binDir is bin/ at the repository root, where make installs the helpers
// that are not part of the control plane (KWOK).
func binDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin"), nil
}
