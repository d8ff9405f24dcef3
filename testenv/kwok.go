// KWOK (sigs.k8s.io/kwok) gives the embedded cluster a node and pod
// lifecycle without kubelets: it watches the nodes and their pods and plays
// the kubelet's part, so pods become Running with a start time, and a pod
// deleted with a grace period goes away instead of staying Terminating for
// ever. Preemption needs both: victims must leave, and the node choice
// looks at start times.

package testenv

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// KWOKVersion is the KWOK release hack/tools installs (`make kwok`).
const KWOKVersion = "v0.8.0"

// kwokStages are the stage files KWOK runs with, from its own module:
// nodes become Ready and keep a heartbeat; pods become Ready and Running
// with a start time, complete if they have an end, and are deleted once a
// deletion was asked for (finalizers still hold them). KWOK also runs
// minisched's memory-pressure stage (MemoryPressureLabel).
var kwokStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/node/heartbeat/node-heartbeat.yaml",
	"kustomize/stage/pod/fast/pod-ready.yaml",
	"kustomize/stage/pod/fast/pod-complete.yaml",
	"kustomize/stage/pod/fast/pod-delete.yaml",
}

// MemoryPressureLabel, set to "true" on a node, makes KWOK report
// MemoryPressure on it, as a kubelet short of memory does
// (kwokstages/node-memory-pressure.yaml, a stage of minisched's own that
// KWOK always runs with). Removing the label does not lift the condition.
const MemoryPressureLabel = "kwok.minisched.example/memory-pressure"

// memoryPressureStage is the stage MemoryPressureLabel triggers.
//
//go:embed kwokstages/node-memory-pressure.yaml
var memoryPressureStage []byte

// KWOK is a running kwok process managing every node of an environment.
type KWOK struct {
	proc *process
}

// KWOKOptions are how a story wants KWOK to play the kubelets.
type KWOKOptions struct {
	// NodeLeaseDuration, if not zero, makes KWOK hold a Lease in
	// kube-node-lease for each node, renewed every quarter of this
	// duration, as a kubelet does. The node lifecycle controller takes a
	// renewed Lease as the node's heartbeat; without Leases it sees none
	// (KWOK renews no condition of the scenarios' nodes, which it did not
	// initialize) and marks every node Unknown after its grace period.
	// KWOK also plays a node, and its pods, only while it holds the node's
	// Lease: a Lease taken over by someone else stops that node's kubelet
	// (scenario.Env.StopKubelet).
	NodeLeaseDuration time.Duration
}

// StartKWOK starts kwok against the environment's apiserver, managing all
// nodes, without node Leases. The binary is $KWOK, or bin/kwok at the
// repository root (where `make kwok` installs it); its stage files come
// from KWOK's module in the Go module cache, which that install fills.
func (e *Environment) StartKWOK() (*KWOK, error) {
	return e.StartKWOKWith(KWOKOptions{})
}

// StartKWOKWith is StartKWOK with options.
func (e *Environment) StartKWOKWith(opts KWOKOptions) (*KWOK, error) {
	bin, err := binary("KWOK", "kwok", "kwok", binDir)
	if err != nil {
		return nil, err
	}
	stages, err := kwokStageFiles()
	if err != nil {
		return nil, err
	}
	var stageErr error
	proc, err := e.startProcess("kwok", bin, func(kubeconfig string) []string {
		// The process's own directory, which stop removes, holds our stage.
		ours := filepath.Join(filepath.Dir(kubeconfig), "node-memory-pressure.yaml")
		stageErr = os.WriteFile(ours, memoryPressureStage, 0o600)
		args := []string{
			"--kubeconfig=" + kubeconfig,
			"--manage-all-nodes=true",
			// No kubelet API server and no metrics: nothing here talks to them.
			"--server-address=",
			"--node-ip=10.0.0.1",
		}
		if opts.NodeLeaseDuration > 0 {
			args = append(args, "--node-lease-duration-seconds="+
				strconv.Itoa(int(opts.NodeLeaseDuration.Round(time.Second).Seconds())))
		}
		for _, s := range append(stages, ours) {
			args = append(args, "-c", s)
		}
		return args
	})
	if err != nil {
		return nil, err
	}
	if stageErr != nil {
		_ = proc.stop()
		return nil, fmt.Errorf("writing KWOK's memory-pressure stage: %w", stageErr)
	}
	return &KWOK{proc: proc}, nil
}

// Stop ends kwok and removes its files. Pods and nodes keep their last
// state. The error says so if kwok had exited on its own, with its output.
func (k *KWOK) Stop() error { return k.proc.stop() }

// kwokStageFiles locates KWOK's stage files in the Go module cache.
func kwokStageFiles() ([]string, error) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return nil, fmt.Errorf("finding the Go module cache for KWOK's stages: %w", err)
	}
	module := filepath.Join(strings.TrimSpace(string(out)), "sigs.k8s.io", "kwok@"+KWOKVersion)
	var stages []string
	for _, s := range kwokStages {
		p := filepath.Join(module, filepath.FromSlash(s))
		if _, err := os.Stat(p); err != nil {
			return nil, errors.Join(fmt.Errorf("KWOK stage %s is missing: run `make kwok`", s), err)
		}
		stages = append(stages, p)
	}
	return stages, nil
}
