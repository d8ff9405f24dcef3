// This file runs the extension points from the chosen node to the binding,
// in the order the scheduler calls them: Reserve (and Unreserve, on any
// later failure) and Permit, which end the scheduling cycle; then, in the
// binding cycle, PreBind's pre-flight, the wait on Permit, PreBind, Bind and
// PostBind.

package framework

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
)

// RunReservePluginsReserve runs Reserve in order; the first failure is
// returned (the caller then runs Unreserve on all of them).
func (f *Framework) RunReservePluginsReserve(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodeName string) (status *Status) {
	defer f.observe(reservePoint, time.Now(), &status)
	for _, pl := range f.reservePlugins {
		start := f.sampleStart(state)
		s := pl.Reserve(ctx, state, pod, nodeName)
		f.recordPlugin(pl.Name(), reservePoint, start, s)
		if s.IsSuccess() {
			continue
		}
		if s.IsRejected() {
			return s.WithPlugin(pl.Name())
		}
		return pluginError("Reserve", pl, s)
	}
	return nil
}

// RunReservePluginsUnreserve runs Unreserve in reverse order of Reserve.
func (f *Framework) RunReservePluginsUnreserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) {
	var status *Status // Unreserve cannot fail
	defer f.observe(unreservePoint, time.Now(), &status)
	for i := len(f.reservePlugins) - 1; i >= 0; i-- {
		f.reservePlugins[i].Unreserve(ctx, state, pod, nodeName)
	}
}

// RunPermitPlugins runs Permit in order. A rejection stops at once. If any
// plugin asked to wait (and none rejected), the pod joins the waiting pods
// with one timer per waiting plugin and Wait is returned; WaitOnPermit then
// blocks the binding goroutine until the verdict.
func (f *Framework) RunPermitPlugins(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodeName string) (status *Status) {
	defer f.observe(permitPoint, time.Now(), &status)
	waits := map[string]time.Duration{}
	for _, pl := range f.permitPlugins {
		start := f.sampleStart(state)
		s, timeout := pl.Permit(ctx, state, pod, nodeName)
		f.recordPlugin(pl.Name(), permitPoint, start, s)
		switch {
		case s.IsSuccess():
		case s.IsRejected():
			klog.FromContext(ctx).V(4).Info("Pod rejected by Permit plugin", "pod", klog.KObj(pod),
				"plugin", pl.Name(), "status", s.Message())
			return s.WithPlugin(pl.Name())
		case s.IsWait():
			waits[pl.Name()] = min(timeout, MaxPermitTimeout)
		default:
			return pluginError("Permit", pl, s)
		}
	}
	if len(waits) > 0 {
		f.waitingPods.add(newWaitingPod(f.clock, pod, waits))
		return NewStatus(Wait, fmt.Sprintf("one or more plugins asked to wait and no plugin rejected pod %q", pod.Name))
	}
	return nil
}

// RunPreBindPreFlights asks every PreBind plugin whether it has work to do
// for the pod: Success if any has, Skip if none has (or there are none), an
// Error if any fails or answers something else. Plugins that skip are
// recorded in state.SkipPreBindPlugins, and RunPreBindPlugins passes them by.
func (f *Framework) RunPreBindPreFlights(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodeName string) *Status {
	result := NewStatus(Skip)
	skip := sets.New[string]()
	for _, pl := range f.preBindPlugins {
		s := pl.PreBindPreFlight(ctx, state, pod, nodeName)
		switch {
		case s.IsSuccess():
			result = nil
		case s.IsSkip():
			skip.Insert(pl.Name())
		case s.Code() == Error:
			return pluginError("PreBindPreFlight", pl, s)
		default:
			return AsStatus(fmt.Errorf("PreBindPreFlight %s returned %q; it may return Success, Skip or Error",
				pl.Name(), s.Code()))
		}
	}
	state.SkipPreBindPlugins = skip
	return result
}

// WillWaitOnPermit reports whether a Permit plugin made the pod wait.
func (f *Framework) WillWaitOnPermit(pod *v1.Pod) bool {
	return f.waitingPods.get(pod.UID) != nil
}

// WaitOnPermit blocks until the waiting pod is allowed (nil), rejected (the
// rejecting plugin's status) or preempted (an Error). A pod that is not
// waiting returns at once. A cancelled ctx ends the wait (its timers are
// stopped) and returns ctx's error as an Error.
func (f *Framework) WaitOnPermit(ctx context.Context, pod *v1.Pod) *Status {
	wp := f.waitingPods.get(pod.UID)
	if wp == nil {
		return nil
	}
	defer f.waitingPods.remove(pod.UID)
	select {
	case s := <-wp.s:
		if s.IsSuccess() || s.IsRejected() {
			if s.IsSuccess() {
				return nil
			}
			return s
		}
		return AsStatus(fmt.Errorf("waiting on permit for pod: %w", s.AsError())).WithPlugin(s.Plugin())
	case <-ctx.Done():
		wp.Reject("", "scheduler is shutting down")
		return AsStatus(ctx.Err())
	}
}

// RunPreBindPlugins runs PreBind in order; the first failure aborts binding.
func (f *Framework) RunPreBindPlugins(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodeName string) (status *Status) {
	defer f.observe(preBindPoint, time.Now(), &status)
	for _, pl := range f.preBindPlugins {
		if state.SkipPreBindPlugins.Has(pl.Name()) {
			continue
		}
		start := f.sampleStart(state)
		s := pl.PreBind(ctx, state, pod, nodeName)
		f.recordPlugin(pl.Name(), preBindPoint, start, s)
		if s.IsSuccess() {
			continue
		}
		if s.IsRejected() {
			return s.WithPlugin(pl.Name())
		}
		return pluginError("PreBind", pl, s)
	}
	return nil
}

// RunBindPlugins tries Bind plugins in order until one does not Skip. If all
// skip, the status is Skip (the caller treats that as an error: nobody bound
// the pod).
func (f *Framework) RunBindPlugins(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodeName string) (status *Status) {
	defer f.observe(bindPoint, time.Now(), &status)
	s := NewStatus(Skip)
	for _, pl := range f.bindPlugins {
		start := f.sampleStart(state)
		s = pl.Bind(ctx, state, pod, nodeName)
		f.recordPlugin(pl.Name(), bindPoint, start, s)
		if s.IsSkip() {
			continue
		}
		if s.IsSuccess() {
			return nil
		}
		if s.IsRejected() {
			return s.WithPlugin(pl.Name())
		}
		return pluginError("Bind", pl, s)
	}
	return s
}

// RunPostBindPlugins informs PostBind plugins of a successful bind.
func (f *Framework) RunPostBindPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) {
	var status *Status // PostBind cannot fail
	defer f.observe(postBindPoint, time.Now(), &status)
	for _, pl := range f.postBindPlugins {
		pl.PostBind(ctx, state, pod, nodeName)
	}
}
