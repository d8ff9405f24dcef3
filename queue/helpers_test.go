// This file holds what the queue tests share: pod and node starting points
// for the shared builders, a fake Profile, a PrioritySort-like less, and
// helpers that drive a pod through a failed attempt and report where every
// pod is.

package queue

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
)

// testProfile is the schedulerName every test pod uses unless told otherwise.
const testProfile = "default-scheduler"

// Plugin names used in the tests.
const (
	fooPlugin   = "Foo"             // a Filter-like plugin
	barPlugin   = "Bar"             // another one
	waitPlugin  = "Wait"            // a plugin that returns Pending
	gatesPlugin = "SchedulingGates" // the PreEnqueue plugin of fakeProfile
)

var startTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// makePod starts a pod of testProfile in namespace "default" whose UID is
// its name: makePod("p").Priority(10).Req(cpu("500m")).Obj().
func makePod(name string) *st.PodWrapper {
	return st.MakePod().Name(name).UID(name).SchedulerName(testProfile)
}

// cpu is a cpu request for PodWrapper.Req.
func cpu(quantity string) map[v1.ResourceName]string {
	return map[v1.ResourceName]string{v1.ResourceCPU: quantity}
}

// makeNode returns a node named name.
func makeNode(name string) *v1.Node { return st.MakeNode().Name(name).Obj() }

// fakeProfile is a Profile whose PreEnqueue is the scheduling-gates check
// (plus an optional extra gate) and whose registrations are given per test.
type fakeProfile struct {
	hints map[string][]framework.ClusterEventWithHint
	// extraGate, if set, runs after the gates check; a non-nil status gates.
	extraGate func(*v1.Pod) *framework.Status
	// preEnqueueCalls counts RunPreEnqueuePlugins calls. The queue calls it
	// under its lock, so tests read it between queue calls only.
	preEnqueueCalls int
}

func (f *fakeProfile) RunPreEnqueuePlugins(_ context.Context, pod *v1.Pod) *framework.Status {
	f.preEnqueueCalls++
	if len(pod.Spec.SchedulingGates) > 0 {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable,
			"waiting for scheduling gates").WithPlugin(gatesPlugin)
	}
	if f.extraGate != nil {
		return f.extraGate(pod)
	}
	return nil
}

func (f *fakeProfile) QueueingHints() map[string][]framework.ClusterEventWithHint {
	return f.hints
}

// signatureLabel is the label whose value fakeProfile.SignPod returns as the
// pod's signature (none: the pod is not signed).
const signatureLabel = "signature"

func (f *fakeProfile) SignPod(_ context.Context, pod *v1.Pod) framework.PodSignature {
	if sig, ok := pod.Labels[signatureLabel]; ok {
		return framework.PodSignature(sig)
	}
	return nil
}

// gatesHint is what the scheduling-gates plugin registers.
var gatesHint = framework.ClusterEventWithHint{Event: framework.ClusterEvent{
	Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodSchedulingGatesEliminated}}

// newProfile returns a fakeProfile with the given registrations plus the
// scheduling-gates plugin's.
func newProfile(hints map[string][]framework.ClusterEventWithHint) *fakeProfile {
	all := map[string][]framework.ClusterEventWithHint{gatesPlugin: {gatesHint}}
	for k, v := range hints {
		all[k] = v
	}
	return &fakeProfile{hints: all}
}

// on registers an event without a hint function.
func on(e framework.ClusterEvent) framework.ClusterEventWithHint {
	return framework.ClusterEventWithHint{Event: e}
}

// onWithHint registers an event with a hint function.
func onWithHint(e framework.ClusterEvent, fn framework.QueueingHintFn) framework.ClusterEventWithHint {
	return framework.ClusterEventWithHint{Event: e, QueueingHintFn: fn}
}

func podPriority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// prioritySort orders like the PrioritySort plugin: higher priority first,
// then earlier timestamp.
func prioritySort(a, b framework.QueuedEntity) bool {
	pa, pb := a.Priority(), b.Priority()
	return pa > pb || (pa == pb && a.Params().Timestamp.Before(b.Params().Timestamp))
}

// newTestQueue returns a queue over profile with a fake clock at startTime.
func newTestQueue(profile Profile, opts ...Option) (*PriorityQueue, *testingclock.FakeClock) {
	clk := testingclock.NewFakeClock(startTime)
	opts = append([]Option{WithClock(clk)}, opts...)
	return New(prioritySort, map[string]Profile{testProfile: profile}, opts...), clk
}

func testLogger(t *testing.T) klog.Logger {
	logger, _ := ktesting.NewTestContext(t)
	return logger
}

// mustPop pops without risking a hang: activeQ must not be empty.
func mustPop(t *testing.T, q *PriorityQueue, logger klog.Logger) *framework.QueuedPodInfo {
	t.Helper()
	if n := q.activeLen(); n == 0 {
		t.Fatalf("Pop on an empty activeQ would block")
	}
	pInfo, err := popPod(q, logger)
	if err != nil {
		t.Fatalf("Pop: %v", err)
	}
	return pInfo
}

// popPod pops an entity that must be a pod (these tests queue no pod
// group) and returns it as one.
func popPod(q *PriorityQueue, logger klog.Logger) (*framework.QueuedPodInfo, error) {
	e, err := q.Pop(logger)
	if err != nil {
		return nil, err
	}
	pInfo, ok := e.(*framework.QueuedPodInfo)
	if !ok {
		return nil, fmt.Errorf("popped %T, want a pod", e)
	}
	return pInfo, nil
}

func (p *PriorityQueue) activeLen() int {
	p.lock.Lock()
	defer p.lock.Unlock()
	return p.activeQ.Len()
}

// attempt describes one failed scheduling attempt of a pod.
type attempt struct {
	unschedulable, pending []string
	// during runs while the pod is in flight, between Pop and the requeue.
	during func(q *PriorityQueue, logger klog.Logger)
}

// failAttempt adds pod, pops it, lets the attempt fail as a says, puts it
// back and calls Done, as the scheduler would. It returns the requeue error.
func failAttempt(t *testing.T, q *PriorityQueue, logger klog.Logger, pod *v1.Pod, a attempt) error {
	t.Helper()
	q.Add(logger, pod)
	pInfo := mustPop(t, q, logger)
	if pInfo.Pod.UID != pod.UID {
		t.Fatalf("popped %s, want %s", pInfo.Pod.Name, pod.Name)
	}
	pInfo.UnschedulablePlugins = sets.New(a.unschedulable...)
	pInfo.PendingPlugins = sets.New(a.pending...)
	if a.during != nil {
		a.during(q, logger)
	}
	err := q.AddUnschedulablePodIfNotPresent(logger, pInfo)
	q.Done(pod.UID)
	return err
}

// locations reports where every pod the queue knows is, by pod name.
func (p *PriorityQueue) locations() map[string]Location {
	p.lock.Lock()
	defer p.lock.Unlock()
	out := map[string]Location{}
	for loc, entities := range map[Location][]framework.QueuedEntity{ActiveQ: p.activeQ.List(),
		BackoffQ: p.backoffQ.list(), UnschedulablePods: p.unschedulablePods.list()} {
		for _, e := range entities {
			e.ForEachPod(func(pInfo *framework.QueuedPodInfo) bool {
				out[pInfo.Pod.Name] = loc
				return true
			})
		}
	}
	for _, rec := range p.inFlight.pods {
		if _, ok := out[rec.pod.Name]; !ok {
			out[rec.pod.Name] = InFlight
		}
	}
	return out
}

// entry returns a copy of the queue's entry for uid: a pod's in a
// sub-queue, or a member's in its group, incomplete or pending (nil if
// none).
func (p *PriorityQueue) entry(uid types.UID) *framework.QueuedPodInfo {
	p.lock.Lock()
	defer p.lock.Unlock()
	if pInfo := p.get(uid); pInfo != nil {
		return pInfo.DeepCopy()
	}
	if m, _ := p.member(uid); m != nil {
		return m.DeepCopy()
	}
	return nil
}

func podNames(pods []*v1.Pod) []string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

// nominations reports the nominator's content: node → pod names.
func (p *PriorityQueue) nominations() map[string][]string {
	p.nominator.mu.RLock()
	defer p.nominator.mu.RUnlock()
	out := map[string][]string{}
	for node, pods := range p.nominator.byNode {
		for _, pi := range pods {
			out[node] = append(out[node], pi.Pod.Name)
		}
	}
	return out
}
