// A helper process of the embedded cluster: a binary run beside the
// apiserver with an administrator's kubeconfig of its own, its output kept
// (in memory and in a log file) for when it fails, stopped with an
// interrupt. KWOK and kube-controller-manager run as one.

package testenv

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// stopGrace is how long a helper process has to exit after an
	// interrupt before it is killed.
	stopGrace = 10 * time.Second
	// tailLines is how much of a failed process's output an error quotes;
	// the rest is in its log file, which the error names.
	tailLines = 20
	// readyPoll is how often waitReady reads a starting process's output.
	readyPoll = 50 * time.Millisecond
)

// process is a running helper process and the files it was given.
type process struct {
	name string
	cmd  *exec.Cmd
	// dir holds its kubeconfig (and whatever else it is given); stop
	// removes it.
	dir string
	// logPath is a file under os.TempDir() that receives the same output
	// as logs. It is outside dir so that it outlives a process that
	// failed: the errors that say so name it. A clean stop removes it,
	// unless keepLog was set (by a test that failed, to read it after).
	logPath string
	keepLog atomic.Bool
	logs    *lockedBuffer
	// exited is closed once the process has exited and its output is
	// flushed; waitErr is then what Wait returned.
	exited  chan struct{}
	waitErr error
}

// startProcess writes the environment's kubeconfig into a new temporary
// directory and starts bin with the arguments args returns for that
// kubeconfig's path; name names it in errors and in its log file's name.
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
	logFile, err := os.CreateTemp("", "minisched-"+name+"-*.log")
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	p := &process{name: name, cmd: exec.Command(bin, args(kubeconfig)...), dir: dir, logPath: logFile.Name(),
		logs: &lockedBuffer{}, exited: make(chan struct{})}
	out := io.MultiWriter(p.logs, logFile)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w; its log: %s", name, bin, err, p.logPath)
	}
	go func() {
		// Wait returns once the output is copied, so the file is complete
		// when it is closed.
		p.waitErr = p.cmd.Wait()
		_ = logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// waitReady polls the process's output until ready holds for it. It fails
// if the process exits first or timeout passes; both errors name the log
// file and quote its end, and leave the process ended but its log in place.
func (p *process) waitReady(timeout time.Duration, ready func(output string) bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for !ready(p.logs.String()) {
		select {
		case <-p.exited:
			p.end()
			return p.exitedError()
		case <-deadline.C:
			p.end()
			return fmt.Errorf("%s did not become ready within %v; its log: %s; it ends:\n%s",
				p.name, timeout, p.logPath, p.tail())
		case <-tick.C:
		}
	}
	return nil
}

// stop ends the process and removes its files, its log included unless
// keepLog is set. If the process had already exited on its own, the error
// says how, names the log (which is then kept) and quotes its end.
func (p *process) stop() error {
	if p.end() {
		return p.exitedError()
	}
	if p.keepLog.Load() {
		return nil
	}
	return os.Remove(p.logPath)
}

// end interrupts the process, kills it if it has not exited within
// stopGrace, and removes its directory (not its log). It reports whether
// the process had exited on its own before.
func (p *process) end() (exitedBefore bool) {
	defer os.RemoveAll(p.dir)
	select {
	case <-p.exited:
		return true
	default:
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	return false
}

// exitedError says that the process exited on its own, how, where its log
// is, and how the log ends. Call it only once exited is closed.
func (p *process) exitedError() error {
	return fmt.Errorf("%s had exited on its own (%v); its log: %s; it ends:\n%s", p.name, p.waitErr, p.logPath, p.tail())
}

// tail is the last tailLines lines of the process's output.
func (p *process) tail() string {
	lines := strings.Split(strings.TrimRight(p.logs.String(), "\n"), "\n")
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	return strings.Join(lines, "\n")
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
