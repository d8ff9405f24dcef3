// The descheduler (sigs.k8s.io/descheduler), run once against the
// embedded apiserver: it evicts, through the Eviction API, pods its policy
// says are misplaced, so that the scheduler places them again.

package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// DeschedulerVersion is the descheduler release `make descheduler` builds
// (hack/descheduler, against k8s.io v0.37.1).
const DeschedulerVersion = "v0.36.0"

// RunDescheduler runs the descheduler once with the policy (a
// DeschedulerPolicy, YAML) and returns its output once it exits. The
// binary is $DESCHEDULER, or bin/descheduler at the repository root (where
// `make descheduler` builds it). It serves nothing (--secure-port=0) and
// makes one pass (--descheduling-interval=0). An error (it could not start,
// or exited with a failure, or ctx ended first) quotes its output.
func (e *Environment) RunDescheduler(ctx context.Context, policy []byte) (string, error) {
	bin, err := binary("DESCHEDULER", "descheduler", "descheduler", binDir)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "minisched-descheduler-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	kubeconfig, policyFile := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(kubeconfig, e.Kubeconfig, 0o600); err != nil {
		return "", err
	}
	if err := os.WriteFile(policyFile, policy, 0o600); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, bin, "--kubeconfig="+kubeconfig, "--policy-config-file="+policyFile,
		"--descheduling-interval=0", "--secure-port=0", "--disable-metrics", "--v=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("descheduler %s: %w; its output:\n%s", DeschedulerVersion, err,
			strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
