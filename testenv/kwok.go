// This file gives scenarios a node and pod lifecycle without kubelets: KWOK
// (sigs.k8s.io/kwok) watches the nodes and their pods and plays the
// kubelet's part, so pods become Running with a start time, and a pod
// deleted with a grace period goes away instead of staying Terminating for
// ever. Preemption needs both: victims must leave, and the node choice
// looks at start times.

package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// KWOKVersion is the KWOK release hack/tools installs (`make kwok`).
const KWOKVersion = "v0.8.0"

// kwokStages are the stage files KWOK runs with, from its own module:
// nodes become Ready and keep a heartbeat; pods become Ready and Running
// with a start time, complete if they have an end, and are deleted once a
// deletion was asked for (finalizers still hold them).
var kwokStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/node/heartbeat/node-heartbeat.yaml",
	"kustomize/stage/pod/fast/pod-ready.yaml",
	"kustomize/stage/pod/fast/pod-complete.yaml",
	"kustomize/stage/pod/fast/pod-delete.yaml",
}

// KWOK is a running kwok process managing every node of an environment.
type KWOK struct {
	cmd  *exec.Cmd
	dir  string
	logs *lockedBuffer
	done chan error
}

// StartKWOK starts kwok against the environment's apiserver, managing all
// nodes. The binary is $KWOK, or bin/kwok at the repository root (where
// `make kwok` installs it); its stage files come from KWOK's module in the
// Go module cache, which that install fills.
func (e *Environment) StartKWOK() (*KWOK, error) {
	bin, stages, err := findKWOK()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "minisched-kwok-")
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, e.Kubeconfig, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--manage-all-nodes=true",
		// No kubelet API server and no metrics: nothing here talks to them.
		"--server-address=",
		"--node-ip=10.0.0.1",
	}
	for _, s := range stages {
		args = append(args, "-c", s)
	}
	k := &KWOK{cmd: exec.Command(bin, args...), dir: dir, logs: &lockedBuffer{}, done: make(chan error, 1)}
	k.cmd.Stdout, k.cmd.Stderr = k.logs, k.logs
	if err := k.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() { k.done <- k.cmd.Wait() }()
	return k, nil
}

// Stop ends kwok and removes its files. Pods and nodes keep their last state.
func (k *KWOK) Stop() error {
	defer os.RemoveAll(k.dir)
	_ = k.cmd.Process.Signal(os.Interrupt)
	select {
	case <-k.done:
	case <-time.After(10 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.done
	}
	return nil
}

// Exited reports whether kwok has stopped on its own, with its output.
func (k *KWOK) Exited() (bool, string) {
	select {
	case err := <-k.done:
		k.done <- err
		return true, fmt.Sprintf("%v\n%s", err, k.logs.String())
	default:
		return false, ""
	}
}

// findKWOK locates the kwok binary and its stage files.
func findKWOK() (string, []string, error) {
	bin := os.Getenv("KWOK")
	if bin == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", nil, err
		}
		bin = filepath.Join(root, "bin", "kwok")
	}
	if _, err := os.Stat(bin); err != nil {
		return "", nil, fmt.Errorf("no kwok binary at %s: run `make kwok` (or set KWOK)", bin)
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", nil, fmt.Errorf("finding the Go module cache for KWOK's stages: %w", err)
	}
	module := filepath.Join(strings.TrimSpace(string(out)), "sigs.k8s.io", "kwok@"+KWOKVersion)
	var stages []string
	for _, s := range kwokStages {
		p := filepath.Join(module, filepath.FromSlash(s))
		if _, err := os.Stat(p); err != nil {
			return "", nil, errors.Join(fmt.Errorf("KWOK stage %s is missing: run `make kwok`", s), err)
		}
		stages = append(stages, p)
	}
	return bin, stages, nil
}

// lockedBuffer is a bytes.Buffer safe for a process's output and a reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
