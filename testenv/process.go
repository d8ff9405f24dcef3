// A helper process of the embedded cluster: a binary run beside the
// apiserver with an administrator's kubeconfig of its own, its output kept
// for when it fails, stopped with an interrupt. KWOK runs as one; so will
// kube-controller-manager.

package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// stopGrace is how long a helper process has to exit after an interrupt
// before it is killed.
const stopGrace = 10 * time.Second

// process is a running helper process and the directory of its files.
type process struct {
	name string
	cmd  *exec.Cmd
	// dir holds its kubeconfig (and whatever else it is given); Stop
	// removes it.
	dir  string
	logs *lockedBuffer
	// done receives what Wait returned, once.
	done chan error
}

// startProcess writes the environment's kubeconfig into a new temporary
// directory and starts bin with the arguments args returns for that
// kubeconfig's path; name names it in errors.
func (e *Environment) startProcess(name, bin string, args func(kubeconfig string) []string) (*process, error) {
	dir, err := os.MkdirTemp("", "minisched-"+name+"-")
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, e.Kubeconfig, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	p := &process{name: name, cmd: exec.Command(bin, args(kubeconfig)...), dir: dir, logs: &lockedBuffer{},
		done: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	return p, nil
}

// stop interrupts the process, kills it if it has not exited within
// stopGrace, and removes its files. If the process had already exited on its
// own, the error says how, with its output.
func (p *process) stop() error {
	defer os.RemoveAll(p.dir)
	select {
	case err := <-p.done:
		return fmt.Errorf("%s had exited on its own (%v):\n%s", p.name, err, p.logs.String())
	default:
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	return nil
}

// lockedBuffer is a bytes.Buffer safe for a process's output and a reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends to the buffer.
func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
