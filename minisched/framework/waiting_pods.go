// This file is the pods that a Permit plugin asked to wait: each with one
// timer per waiting plugin, allowed, rejected or preempted from any
// goroutine while its binding cycle waits.

package framework

import (
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// MaxPermitTimeout caps the wait a Permit plugin may ask for, as in
// kube-scheduler.
const MaxPermitTimeout = 15 * time.Minute

// waitingPodsMap holds the pods parked by Permit, keyed by UID. Permit adds,
// the binding goroutine removes, and any goroutine may Allow or Reject.
type waitingPodsMap struct {
	mu   sync.RWMutex
	pods map[types.UID]*waitingPod
}

func newWaitingPodsMap() *waitingPodsMap {
	return &waitingPodsMap{pods: map[types.UID]*waitingPod{}}
}

func (m *waitingPodsMap) add(wp *waitingPod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pods[wp.pod.UID] = wp
}

func (m *waitingPodsMap) remove(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pods, uid)
}

func (m *waitingPodsMap) get(uid types.UID) *waitingPod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.pods[uid]
}

func (m *waitingPodsMap) iterate(fn func(WaitingPod)) {
	m.mu.RLock()
	list := make([]*waitingPod, 0, len(m.pods))
	for _, wp := range m.pods {
		list = append(list, wp)
	}
	m.mu.RUnlock()
	for _, wp := range list {
		fn(wp)
	}
}

// waitingPod is one pod waiting on Permit. Each waiting plugin has a timer
// that rejects the pod when it fires; the verdict is sent once on s.
type waitingPod struct {
	pod *v1.Pod

	mu             sync.Mutex
	pendingPlugins map[string]clock.Timer
	decided        bool
	s              chan *Status
}

var _ WaitingPod = &waitingPod{}

func newWaitingPod(clk clock.WithDelayedExecution, pod *v1.Pod, waits map[string]time.Duration) *waitingPod {
	wp := &waitingPod{
		pod:            pod,
		pendingPlugins: make(map[string]clock.Timer, len(waits)),
		// Buffered: the verdict is delivered even if nobody is receiving yet.
		s: make(chan *Status, 1),
	}
	// Hold the lock while starting timers so that a timer firing at once
	// cannot see a half-filled map.
	wp.mu.Lock()
	defer wp.mu.Unlock()
	for plugin, d := range waits {
		plugin, d := plugin, d
		wp.pendingPlugins[plugin] = clk.AfterFunc(d, func() {
			// Reject stops the other timers; a fake clock runs this callback
			// under its own lock, so do it on a fresh goroutine.
			go wp.Reject(plugin, fmt.Sprintf("rejected due to timeout after waiting %v at plugin %v", d, plugin))
		})
	}
	return wp
}

func (w *waitingPod) GetPod() *v1.Pod { return w.pod }

func (w *waitingPod) GetPendingPlugins() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.pendingPlugins))
	for p := range w.pendingPlugins {
		out = append(out, p)
	}
	return out
}

func (w *waitingPod) Allow(pluginName string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t, ok := w.pendingPlugins[pluginName]; ok {
		t.Stop()
		delete(w.pendingPlugins, pluginName)
	}
	if len(w.pendingPlugins) > 0 || w.decided {
		return
	}
	w.decided = true
	w.s <- NewStatus(Success, "")
}

func (w *waitingPod) Reject(pluginName, msg string) {
	w.stop(NewStatus(Unschedulable, msg).WithPlugin(pluginName))
}

func (w *waitingPod) Preempt(pluginName, msg string) bool {
	return w.stop(NewStatus(Error, msg).WithPlugin(pluginName))
}

// stop ends the wait with s, unless it already ended; it reports whether s
// was the verdict.
func (w *waitingPod) stop(s *Status) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.pendingPlugins {
		t.Stop()
	}
	if w.decided {
		return false
	}
	w.decided = true
	w.s <- s
	return true
}
