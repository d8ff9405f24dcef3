// This file tests the scheduling queue through its public methods, with a
// fake clock and fake profiles: ordering, backoff, event-driven moves with
// queueing hints, activation, in-flight events, updates, deletes, gating and
// the flushes.

package queue

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

func TestPopOrder(t *testing.T) {
	type add struct {
		pod   *v1.Pod
		after time.Duration // clock step before adding
	}
	tests := []struct {
		name string
		adds []add
		want []string
	}{
		{
			name: "higher priority first",
			adds: []add{
				{pod: makePod("low").Priority(0).Obj()},
				{pod: makePod("high").Priority(100).Obj()},
				{pod: makePod("mid").Priority(50).Obj()},
			},
			want: []string{"high", "mid", "low"},
		},
		{
			name: "equal priority: earlier first",
			adds: []add{
				{pod: makePod("first").Obj()},
				{pod: makePod("second").Obj(), after: time.Second},
				{pod: makePod("third").Obj(), after: time.Second},
			},
			want: []string{"first", "second", "third"},
		},
		{
			name: "priority beats age",
			adds: []add{
				{pod: makePod("old-low").Priority(1).Obj()},
				{pod: makePod("new-high").Priority(2).Obj(), after: time.Hour},
				{pod: makePod("old-high").Priority(2).Obj(), after: -time.Minute},
			},
			want: []string{"old-high", "new-high", "old-low"},
		},
		{
			name: "pods of other schedulers are ignored",
			adds: []add{
				{pod: makePod("ours").Obj()},
				{pod: makePod("theirs").SchedulerName("other-scheduler").Obj()},
			},
			want: []string{"ours"},
		},
		{
			name: "adding a pod twice queues it once",
			adds: []add{
				{pod: makePod("a").Obj()},
				{pod: makePod("a").Obj()},
			},
			want: []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := testLogger(t)
			q, clk := newTestQueue(newProfile(nil))
			for _, a := range tt.adds {
				clk.Step(a.after)
				q.Add(logger, a.pod)
			}
			var got []string
			for q.activeLen() > 0 {
				got = append(got, mustPop(t, q, logger).Pod.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("pop order (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPopCountsAttemptsAndTracksInFlight(t *testing.T) {
	logger := testLogger(t)
	q, clk := newTestQueue(newProfile(nil))
	pod := makePod("p").Obj()
	q.Add(logger, pod)

	pInfo := mustPop(t, q, logger)
	if pInfo.Attempts != 1 {
		t.Errorf("after one Pop: attempts=%d, want 1", pInfo.Attempts)
	}
	if pInfo.InitialAttemptTimestamp == nil || !pInfo.InitialAttemptTimestamp.Equal(startTime) {
		t.Errorf("InitialAttemptTimestamp = %v, want %v", pInfo.InitialAttemptTimestamp, startTime)
	}
	if got := q.Locate(pod.UID); got != InFlight {
		t.Errorf("after Pop: Locate = %q, want %q", got, InFlight)
	}

	// Put it back with an error, which ends its in-flight period; once its
	// backoff window is over, it is popped again.
	if err := q.AddUnschedulablePodIfNotPresent(logger, pInfo); err != nil {
		t.Fatal(err)
	}
	if got := q.Locate(pod.UID); got != BackoffQ {
		t.Errorf("after the requeue: Locate = %q, want %q", got, BackoffQ)
	}
	clk.Step(2 * time.Second)
	q.FlushBackoffQCompleted(logger)
	pInfo = mustPop(t, q, logger)
	if pInfo.Attempts != 2 {
		t.Errorf("after two Pops: attempts=%d, want 2", pInfo.Attempts)
	}
	q.Done(pod.UID)
	if got := q.Locate(pod.UID); got != NotQueued {
		t.Errorf("after Done: Locate = %q, want %q", got, NotQueued)
	}
}

func TestPopBlocksUntilAdd(t *testing.T) {
	logger := testLogger(t)
	q, _ := newTestQueue(newProfile(nil))
	popped := make(chan string, 1)
	go func() {
		pInfo, err := popPod(q, logger)
		if err != nil {
			popped <- "error: " + err.Error()
			return
		}
		popped <- pInfo.Pod.Name
	}()
	select {
	case got := <-popped:
		t.Fatalf("Pop returned %q from an empty queue", got)
	default:
	}
	q.Add(logger, makePod("p").Obj())
	select {
	case got := <-popped:
		if got != "p" {
			t.Errorf("Pop returned %q, want p", got)
		}
	case <-time.After(wait.ForeverTestTimeout):
		t.Fatal("Pop did not return after Add")
	}
}

func TestPopReturnsErrorAfterClose(t *testing.T) {
	logger := testLogger(t)
	q, _ := newTestQueue(newProfile(nil))
	errs := make(chan error, 1)
	go func() {
		_, err := popPod(q, logger)
		errs <- err
	}()
	q.Close()
	select {
	case err := <-errs:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("blocked Pop returned %v, want %v", err, ErrClosed)
		}
	case <-time.After(wait.ForeverTestTimeout):
		t.Fatal("blocked Pop did not return after Close")
	}
	q.Add(logger, makePod("p").Obj())
	if _, err := q.Pop(logger); !errors.Is(err, ErrClosed) {
		t.Errorf("Pop after Close returned %v, want %v", err, ErrClosed)
	}
}

// TestBackoff follows one pod that failed with an error after n errors in a
// row: its backoff doubles per error, and it leaves backoffQ with the flush
// after the one-second window its expiry falls in (startTime is a whole
// second, so the expiry is one too).
func TestBackoff(t *testing.T) {
	tests := []struct {
		errorsBefore int
		want         time.Duration
	}{
		{errorsBefore: 0, want: 1 * time.Second},
		{errorsBefore: 1, want: 2 * time.Second},
		{errorsBefore: 2, want: 4 * time.Second},
		{errorsBefore: 3, want: 8 * time.Second},
		{errorsBefore: 4, want: 10 * time.Second},
		{errorsBefore: 49, want: 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d errors before", tt.errorsBefore), func(t *testing.T) {
			logger := testLogger(t)
			q, clk := newTestQueue(newProfile(nil))
			pod := makePod("p").Obj()
			q.Add(logger, pod)
			pInfo := mustPop(t, q, logger)
			pInfo.ConsecutiveErrorsCount = tt.errorsBefore
			// No rejecting plugin: the attempt failed with an error.
			if err := q.AddUnschedulablePodIfNotPresent(logger, pInfo); err != nil {
				t.Fatal(err)
			}
			if got := q.backoffDuration(backoffCount(&pInfo.QueueingParams), 1); got != tt.want {
				t.Errorf("backoffDuration = %v, want %v", got, tt.want)
			}
			if got, want := q.backoffExpiry(pInfo), startTime.Add(tt.want); !got.Equal(want) {
				t.Errorf("backoffExpiry = %v, want %v", got, want)
			}

			// The expiry's window is flushed when the next one starts.
			clk.Step(tt.want + time.Second - time.Nanosecond)
			q.FlushBackoffQCompleted(logger)
			if got := q.Locate(pod.UID); got != BackoffQ {
				t.Errorf("1ns before the window after the expiry: Locate = %q, want %q", got, BackoffQ)
			}
			clk.Step(time.Nanosecond)
			q.FlushBackoffQCompleted(logger)
			if got := q.Locate(pod.UID); got != ActiveQ {
				t.Errorf("at the window after the expiry: Locate = %q, want %q", got, ActiveQ)
			}
		})
	}
}

// TestBackoffCounting checks which count a backoff doubles with: errors in a
// row after an error, rejections after a rejection; an error streak does not
// lengthen the backoff of a later rejection, and a rejection ends it.
func TestBackoffCounting(t *testing.T) {
	const rejected, errored = true, false
	tests := []struct {
		name     string
		failures []bool
		want     time.Duration
	}{
		{name: "one rejection", failures: []bool{rejected}, want: time.Second},
		{name: "three rejections", failures: []bool{rejected, rejected, rejected}, want: 4 * time.Second},
		{name: "three errors", failures: []bool{errored, errored, errored}, want: 4 * time.Second},
		{name: "three errors, then a rejection", failures: []bool{errored, errored, errored, rejected},
			want: time.Second},
		{name: "two rejections, then an error", failures: []bool{rejected, rejected, errored}, want: time.Second},
		{name: "a rejection ends the error streak", failures: []bool{errored, errored, rejected, errored},
			want: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := newTestQueue(newProfile(nil))
			pInfo := framework.NewQueuedPodInfo(makePod("p").Obj(), startTime)
			for _, r := range tt.failures {
				if r == rejected {
					pInfo.UnschedulableCount++
					pInfo.ConsecutiveErrorsCount = 0
				} else {
					pInfo.ConsecutiveErrorsCount++
				}
			}
			if got := q.backoffDuration(backoffCount(&pInfo.QueueingParams), 1); got != tt.want {
				t.Errorf("backoff = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestAddUnschedulableCounts checks that putting a pod back counts the
// failure by its kind, as TestBackoffCounting assumes.
func TestAddUnschedulableCounts(t *testing.T) {
	logger := testLogger(t)
	q, clk := newTestQueue(newProfile(map[string][]framework.ClusterEventWithHint{fooPlugin: {on(nodeLabelChange)}}))
	pod := makePod("p").Obj()
	var last *framework.QueuedPodInfo
	for i, plugins := range [][]string{nil, nil, {fooPlugin}, nil} {
		if i == 0 {
			q.Add(logger, pod)
		} else {
			clk.Step(time.Minute)
			q.FlushBackoffQCompleted(logger)
			q.MoveAllToActiveOrBackoffQueue(logger, wildcard, nil, nil, nil)
		}
		last = mustPop(t, q, logger)
		last.UnschedulablePlugins = sets.New(plugins...)
		if err := q.AddUnschedulablePodIfNotPresent(logger, last); err != nil {
			t.Fatal(err)
		}
	}
	if last.UnschedulableCount != 1 || last.ConsecutiveErrorsCount != 1 {
		t.Errorf("after error, error, rejection, error: UnschedulableCount=%d ConsecutiveErrorsCount=%d, want 1 and 1",
			last.UnschedulableCount, last.ConsecutiveErrorsCount)
	}
}

func TestBackoffOptions(t *testing.T) {
	q, _ := newTestQueue(newProfile(nil), WithPodInitialBackoffDuration(100*time.Millisecond),
		WithPodMaxBackoffDuration(time.Second))
	var got []time.Duration
	for count := 0; count <= 6; count++ {
		got = append(got, q.backoffDuration(count, 1))
	}
	want := []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, time.Second, time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("backoff by count (-want +got):\n%s", diff)
	}
}

// TestGroupBackoffCap: a pod group's backoff is capped at the maximum times
// the square root of its size, as kube-scheduler's backoff queue does.
func TestGroupBackoffCap(t *testing.T) {
	q, _ := newTestQueue(newProfile(nil)) // 1s, doubling to 10s
	tests := []struct {
		name        string
		count, size int
		want        time.Duration
	}{
		{name: "a pod is capped at the maximum", count: 6, size: 1, want: 10 * time.Second},
		{name: "a group of 4 at twice the maximum", count: 6, size: 4, want: 20 * time.Second},
		{name: "a group of 4, still doubling", count: 5, size: 4, want: 16 * time.Second},
		{name: "a group of 9 at three times", count: 10, size: 9, want: 30 * time.Second},
		{name: "the first failure is the initial backoff", count: 1, size: 9, want: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := q.backoffDuration(tt.count, tt.size); got != tt.want {
				t.Errorf("backoffDuration(%d, %d) = %v, want %v", tt.count, tt.size, got, tt.want)
			}
		})
	}
}

// TestFlushBackoffQCompletedWindows checks that the flush releases whole
// one-second windows: pods whose expiries share a window leave together,
// later windows wait.
func TestFlushBackoffQCompletedWindows(t *testing.T) {
	logger := testLogger(t)
	q, clk := newTestQueue(newProfile(nil))
	// a and b fail half a second apart, in the same window; c a second later.
	for i, name := range []string{"a", "b", "c"} {
		if i > 0 {
			clk.Step(500 * time.Millisecond)
		}
		if err := failAttempt(t, q, logger, makePod(name).Obj(), attempt{}); err != nil {
			t.Fatal(err)
		}
	}
	// Expiries: a 1.0s, b 1.5s → 1.0s, c 2.0s. At 2.0s the 1.0s window is over.
	clk.SetTime(startTime.Add(2 * time.Second))
	q.FlushBackoffQCompleted(logger)
	want := map[string]Location{"a": ActiveQ, "b": ActiveQ, "c": BackoffQ}
	if diff := cmp.Diff(want, q.locations()); diff != "" {
		t.Errorf("locations (-want +got):\n%s", diff)
	}
}

// TestPopFromBackoffQWhenActiveQIsEmpty checks SchedulerPopFromBackoffQ:
// with activeQ empty, Pop takes rejected pods from backoffQ before their
// backoff ends, earliest window first and by QueueSort within a window;
// pods that failed with an error are not taken early.
func TestPopFromBackoffQWhenActiveQIsEmpty(t *testing.T) {
	logger := testLogger(t)
	q, clk := newTestQueue(newProfile(map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.NodeAdd)}}))
	rejectedDuringAttempt := attempt{unschedulable: []string{fooPlugin}, during: func(q *PriorityQueue, l klog.Logger) {
		q.MoveAllToActiveOrBackoffQueue(l, framework.NodeAdd, nil, makeNode("n"), nil)
	}}
	// "low" and "high" share a window; "early" has the earlier window;
	// "broken" failed with an error.
	steps := []struct {
		pod *v1.Pod
		a   attempt
	}{
		{makePod("early").Obj(), rejectedDuringAttempt},
		{makePod("low").Priority(1).Obj(), rejectedDuringAttempt},
		{makePod("broken").Priority(100).Obj(), attempt{}},
		{makePod("high").Priority(10).Obj(), rejectedDuringAttempt},
	}
	for i, st := range steps {
		if i == 1 {
			clk.Step(time.Second)
		}
		if err := failAttempt(t, q, logger, st.pod, st.a); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for range 3 {
		pInfo, err := popPod(q, logger)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, pInfo.Pod.Name)
	}
	if diff := cmp.Diff([]string{"early", "high", "low"}, got); diff != "" {
		t.Errorf("pop order from backoffQ (-want +got):\n%s", diff)
	}
	if loc := q.Locate("broken"); loc != BackoffQ {
		t.Errorf("the pod that failed with an error is in %q, want it to wait in %q", loc, BackoffQ)
	}
}

var (
	nodeLabelChange = framework.ClusterEvent{Resource: framework.Node, ActionType: framework.UpdateNodeLabel,
		Label: "NodeLabelChange"}
	nodeTaintChange = framework.ClusterEvent{Resource: framework.Node, ActionType: framework.UpdateNodeTaint,
		Label: "NodeTaintChange"}
	wildcard = framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.All, Label: "WildCard"}
)

// hintReturning is a QueueingHintFn with a fixed answer.
func hintReturning(h framework.QueueingHint, err error) framework.QueueingHintFn {
	return func(klog.Logger, *v1.Pod, interface{}, interface{}) (framework.QueueingHint, error) {
		return h, err
	}
}

// queueIfNode is a QueueingHintFn that answers Queue only for the named node.
func queueIfNode(name string) framework.QueueingHintFn {
	return func(_ klog.Logger, _ *v1.Pod, _, newObj interface{}) (framework.QueueingHint, error) {
		if n, ok := newObj.(*v1.Node); ok && n.Name == name {
			return framework.Queue, nil
		}
		return framework.QueueSkip, nil
	}
}

func TestMoveAllToActiveOrBackoffQueue(t *testing.T) {
	tests := []struct {
		name  string
		hints map[string][]framework.ClusterEventWithHint
		// the failed attempt
		unschedulable, pending []string
		// wait after the failure, before the event
		wait     time.Duration
		event    framework.ClusterEvent
		newObj   interface{}
		preCheck func(*v1.Pod) bool
		want     Location
	}{
		{
			name:          "registered event moves a backing-off pod to backoffQ",
			hints:         map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.NodeAdd)}},
			unschedulable: []string{fooPlugin},
			event:         framework.NodeAdd,
			want:          BackoffQ,
		},
		{
			name:          "registered event moves a pod whose backoff is over to activeQ",
			hints:         map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.NodeAdd)}},
			unschedulable: []string{fooPlugin},
			// The 1s backoff ends at 1s; its window is over at 2s.
			wait:  2 * time.Second,
			event: framework.NodeAdd,
			want:  ActiveQ,
		},
		{
			name:          "event not registered leaves the pod",
			hints:         map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.NodeAdd)}},
			unschedulable: []string{fooPlugin},
			event:         framework.NodeDelete,
			want:          UnschedulablePods,
		},
		{
			name: "event registered by a plugin that did not reject the pod leaves it",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.NodeAdd)},
				barPlugin: {on(framework.NodeDelete)}},
			unschedulable: []string{fooPlugin},
			event:         framework.NodeDelete,
			want:          UnschedulablePods,
		},
		{
			name: "action bits overlap",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.ClusterEvent{
				Resource: framework.Node, ActionType: framework.UpdateNodeLabel | framework.UpdateNodeTaint})}},
			unschedulable: []string{fooPlugin},
			event:         nodeTaintChange,
			want:          BackoffQ,
		},
		{
			name: "one of two rejectors registered the event",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.NodeAdd)},
				barPlugin: {on(nodeLabelChange)}},
			unschedulable: []string{fooPlugin, barPlugin},
			event:         nodeLabelChange,
			want:          BackoffQ,
		},
		{
			name: "hint QueueSkip leaves the pod",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {onWithHint(framework.NodeAdd,
				hintReturning(framework.QueueSkip, nil))}},
			unschedulable: []string{fooPlugin},
			event:         framework.NodeAdd,
			want:          UnschedulablePods,
		},
		{
			name: "hint Queue moves the pod",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {onWithHint(framework.NodeAdd,
				hintReturning(framework.Queue, nil))}},
			unschedulable: []string{fooPlugin},
			event:         framework.NodeAdd,
			want:          BackoffQ,
		},
		{
			name: "hint error counts as Queue",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {onWithHint(framework.NodeAdd,
				hintReturning(framework.QueueSkip, errors.New("boom")))}},
			unschedulable: []string{fooPlugin},
			event:         framework.NodeAdd,
			want:          BackoffQ,
		},
		{
			name: "hint sees the event's object: the right node",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {onWithHint(framework.NodeAdd,
				queueIfNode("n1"))}},
			unschedulable: []string{fooPlugin},
			event:         framework.NodeAdd,
			newObj:        makeNode("n1"),
			want:          BackoffQ,
		},
		{
			name: "hint sees the event's object: another node",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {onWithHint(framework.NodeAdd,
				queueIfNode("n1"))}},
			unschedulable: []string{fooPlugin},
			event:         framework.NodeAdd,
			newObj:        makeNode("n2"),
			want:          UnschedulablePods,
		},
		{
			name:    "Pending plugin's event moves the pod to activeQ at once",
			hints:   map[string][]framework.ClusterEventWithHint{waitPlugin: {on(framework.NodeAdd)}},
			pending: []string{waitPlugin},
			event:   framework.NodeAdd,
			want:    ActiveQ,
		},
		{
			name: "Pending plugin wins over an unschedulable plugin",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.NodeAdd)},
				waitPlugin: {on(framework.NodeAdd)}},
			unschedulable: []string{fooPlugin},
			pending:       []string{waitPlugin},
			event:         framework.NodeAdd,
			want:          ActiveQ,
		},
		{
			name: "only the unschedulable plugin answers Queue",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.NodeAdd)},
				waitPlugin: {on(framework.NodeDelete)}},
			unschedulable: []string{fooPlugin},
			pending:       []string{waitPlugin},
			event:         framework.NodeAdd,
			want:          BackoffQ,
		},
		{
			name:          "plugin without EnqueueExtensions (wildcard registration) moves on any event",
			hints:         map[string][]framework.ClusterEventWithHint{fooPlugin: {on(wildcard)}},
			unschedulable: []string{fooPlugin},
			event:         nodeTaintChange,
			want:          BackoffQ,
		},
		{
			name:          "wildcard event moves every pod",
			hints:         map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.NodeAdd)}},
			unschedulable: []string{fooPlugin},
			event:         wildcard,
			want:          BackoffQ,
		},
		{
			name:          "preCheck false leaves the pod",
			hints:         map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.NodeAdd)}},
			unschedulable: []string{fooPlugin},
			event:         framework.NodeAdd,
			preCheck:      func(*v1.Pod) bool { return false },
			want:          UnschedulablePods,
		},
		{
			name:          "preCheck true lets the pod move",
			hints:         map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.NodeAdd)}},
			unschedulable: []string{fooPlugin},
			event:         framework.NodeAdd,
			preCheck:      func(p *v1.Pod) bool { return p.Name == "p" },
			want:          BackoffQ,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := testLogger(t)
			q, clk := newTestQueue(newProfile(tt.hints))
			pod := makePod("p").Obj()
			if err := failAttempt(t, q, logger, pod, attempt{unschedulable: tt.unschedulable, pending: tt.pending}); err != nil {
				t.Fatal(err)
			}
			if got := q.Locate(pod.UID); got != UnschedulablePods {
				t.Fatalf("after the failed attempt: Locate = %q, want %q", got, UnschedulablePods)
			}
			clk.Step(tt.wait)
			q.MoveAllToActiveOrBackoffQueue(logger, tt.event, nil, tt.newObj, tt.preCheck)
			if got := q.Locate(pod.UID); got != tt.want {
				t.Errorf("after %v: Locate = %q, want %q", tt.event, got, tt.want)
			}
		})
	}
}

func TestMoveAllWakesPop(t *testing.T) {
	logger := testLogger(t)
	q, _ := newTestQueue(newProfile(map[string][]framework.ClusterEventWithHint{waitPlugin: {on(framework.NodeAdd)}}))
	pod := makePod("p").Obj()
	if err := failAttempt(t, q, logger, pod, attempt{pending: []string{waitPlugin}}); err != nil {
		t.Fatal(err)
	}
	popped := make(chan string, 1)
	go func() {
		if pInfo, err := popPod(q, logger); err == nil {
			popped <- pInfo.Pod.Name
		}
	}()
	q.MoveAllToActiveOrBackoffQueue(logger, framework.NodeAdd, nil, makeNode("n"), nil)
	select {
	case got := <-popped:
		if got != "p" {
			t.Errorf("Pop returned %q, want p", got)
		}
	case <-time.After(wait.ForeverTestTimeout):
		t.Fatal("Pop was not woken by the move")
	}
}

func TestAssignedPodEvents(t *testing.T) {
	assigned := makePod("assigned").Label("app", "db").Obj()
	relabelled := makePod("assigned").Label("app", "web").Obj()
	statusOnly := makePod("assigned").Label("app", "db").Condition(v1.PodReady).Obj()
	tests := []struct {
		name  string
		hints map[string][]framework.ClusterEventWithHint
		act   func(q *PriorityQueue, logger klog.Logger)
		want  Location
	}{
		{
			name:  "assigned pod added, registered",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.AssignedPodAdd)}},
			act:   func(q *PriorityQueue, l klog.Logger) { q.AssignedPodAdded(l, assigned) },
			want:  BackoffQ,
		},
		{
			name:  "assigned pod added, not registered",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.AssignedPodDelete)}},
			act:   func(q *PriorityQueue, l klog.Logger) { q.AssignedPodAdded(l, assigned) },
			want:  UnschedulablePods,
		},
		{
			name: "assigned pod relabelled, label updates registered",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.ClusterEvent{Resource: framework.Pod,
				ActionType: framework.UpdatePodLabel})}},
			act:  func(q *PriorityQueue, l klog.Logger) { q.AssignedPodUpdated(l, assigned, relabelled) },
			want: BackoffQ,
		},
		{
			name:  "assigned pod relabelled, only adds registered",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.AssignedPodAdd)}},
			act:   func(q *PriorityQueue, l klog.Logger) { q.AssignedPodUpdated(l, assigned, relabelled) },
			want:  UnschedulablePods,
		},
		{
			name:  "status-only update of an assigned pod is no event",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {on(wildcard)}},
			act:   func(q *PriorityQueue, l klog.Logger) { q.AssignedPodUpdated(l, assigned, statusOnly) },
			want:  UnschedulablePods,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := testLogger(t)
			q, _ := newTestQueue(newProfile(tt.hints))
			pod := makePod("p").Obj()
			if err := failAttempt(t, q, logger, pod, attempt{unschedulable: []string{fooPlugin}}); err != nil {
				t.Fatal(err)
			}
			tt.act(q, logger)
			if got := q.Locate(pod.UID); got != tt.want {
				t.Errorf("Locate = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestActivate(t *testing.T) {
	hints := map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.NodeAdd)}}
	rejected := attempt{unschedulable: []string{fooPlugin}}
	tests := []struct {
		name string
		// setup leaves pod p somewhere; inFlight says it is still popped.
		setup    func(t *testing.T, q *PriorityQueue, l klog.Logger) *framework.QueuedPodInfo
		wantNow  Location
		wantBack Location // after a popped pod is put back, rejected again
	}{
		{
			name: "unschedulable pod: to activeQ",
			setup: func(t *testing.T, q *PriorityQueue, l klog.Logger) *framework.QueuedPodInfo {
				if err := failAttempt(t, q, l, makePod("p").Obj(), rejected); err != nil {
					t.Fatal(err)
				}
				return nil
			},
			wantNow: ActiveQ,
		},
		{
			name: "backing-off pod: to activeQ",
			setup: func(t *testing.T, q *PriorityQueue, l klog.Logger) *framework.QueuedPodInfo {
				if err := failAttempt(t, q, l, makePod("p").Obj(), attempt{}); err != nil {
					t.Fatal(err)
				}
				return nil
			},
			wantNow: ActiveQ,
		},
		{
			name: "pod in flight: retried after backoff when it comes back, not parked",
			setup: func(t *testing.T, q *PriorityQueue, l klog.Logger) *framework.QueuedPodInfo {
				q.Add(l, makePod("p").Obj())
				return mustPop(t, q, l)
			},
			wantNow:  InFlight,
			wantBack: BackoffQ,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := testLogger(t)
			q, _ := newTestQueue(newProfile(hints))
			popped := tt.setup(t, q, logger)
			q.Activate(logger, map[string]*v1.Pod{"default/p": makePod("p").Obj()})
			if got := q.Locate("p"); got != tt.wantNow {
				t.Errorf("after Activate: Locate = %q, want %q", got, tt.wantNow)
			}
			if popped == nil {
				return
			}
			popped.UnschedulablePlugins.Insert(fooPlugin)
			if err := q.AddUnschedulablePodIfNotPresent(logger, popped); err != nil {
				t.Fatal(err)
			}
			if got := q.Locate("p"); got != tt.wantBack {
				t.Errorf("after the rejected attempt: Locate = %q, want %q", got, tt.wantBack)
			}
		})
	}
}

func TestAddUnschedulablePodIfNotPresent(t *testing.T) {
	fooOnNodeAdd := map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.NodeAdd)}}
	scaleDown := framework.ClusterEvent{Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodScaleDown}
	tests := []struct {
		name    string
		hints   map[string][]framework.ClusterEventWithHint
		attempt attempt
		// before runs before the pod is added and popped.
		before func(q *PriorityQueue, logger klog.Logger)
		want   Location
	}{
		{
			name:    "failed with an error (no plugin): backoffQ",
			hints:   fooOnNodeAdd,
			attempt: attempt{},
			want:    BackoffQ,
		},
		{
			name:    "rejected, nothing happened meanwhile: unschedulablePods",
			hints:   fooOnNodeAdd,
			attempt: attempt{unschedulable: []string{fooPlugin}},
			want:    UnschedulablePods,
		},
		{
			name:  "rejected, registered event during the attempt: backoffQ",
			hints: fooOnNodeAdd,
			attempt: attempt{unschedulable: []string{fooPlugin}, during: func(q *PriorityQueue, l klog.Logger) {
				q.MoveAllToActiveOrBackoffQueue(l, framework.NodeAdd, nil, makeNode("n"), nil)
			}},
			want: BackoffQ,
		},
		{
			name:  "rejected, irrelevant event during the attempt: unschedulablePods",
			hints: fooOnNodeAdd,
			attempt: attempt{unschedulable: []string{fooPlugin}, during: func(q *PriorityQueue, l klog.Logger) {
				q.MoveAllToActiveOrBackoffQueue(l, framework.NodeDelete, makeNode("n"), nil, nil)
			}},
			want: UnschedulablePods,
		},
		{
			name:  "rejected, hint says QueueSkip for the event during the attempt: unschedulablePods",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {onWithHint(framework.NodeAdd, queueIfNode("n1"))}},
			attempt: attempt{unschedulable: []string{fooPlugin}, during: func(q *PriorityQueue, l klog.Logger) {
				q.MoveAllToActiveOrBackoffQueue(l, framework.NodeAdd, nil, makeNode("n2"), nil)
			}},
			want: UnschedulablePods,
		},
		{
			name:  "rejected, assigned pod added during the attempt: backoffQ",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.AssignedPodAdd)}},
			attempt: attempt{unschedulable: []string{fooPlugin}, during: func(q *PriorityQueue, l klog.Logger) {
				q.AssignedPodAdded(l, makePod("other").Obj())
			}},
			want: BackoffQ,
		},
		{
			name:  "Pending, registered event during the attempt: activeQ",
			hints: map[string][]framework.ClusterEventWithHint{waitPlugin: {on(framework.NodeAdd)}},
			attempt: attempt{pending: []string{waitPlugin}, during: func(q *PriorityQueue, l klog.Logger) {
				q.MoveAllToActiveOrBackoffQueue(l, framework.NodeAdd, nil, makeNode("n"), nil)
			}},
			want: ActiveQ,
		},
		{
			name:    "an event before the pod was popped does not count",
			hints:   fooOnNodeAdd,
			attempt: attempt{unschedulable: []string{fooPlugin}},
			before: func(q *PriorityQueue, l klog.Logger) {
				q.MoveAllToActiveOrBackoffQueue(l, framework.NodeAdd, nil, makeNode("n"), nil)
			},
			want: UnschedulablePods,
		},
		{
			name:  "the pod's own scale-down during the attempt: backoffQ",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {on(scaleDown)}},
			attempt: attempt{unschedulable: []string{fooPlugin}, during: func(q *PriorityQueue, l klog.Logger) {
				q.Update(l, makePod("p").Req(cpu("2")).Obj(), makePod("p").Req(cpu("1")).Obj())
			}},
			want: BackoffQ,
		},
		{
			name:  "the pod's own label change during the attempt, scale-down registered: unschedulablePods",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {on(scaleDown)}},
			attempt: attempt{unschedulable: []string{fooPlugin}, during: func(q *PriorityQueue, l klog.Logger) {
				q.Update(l, makePod("p").Req(cpu("2")).Obj(), makePod("p").Req(cpu("2")).Label("a", "b").Obj())
			}},
			want: UnschedulablePods,
		},
		{
			name:  "deleted during the attempt: dropped",
			hints: fooOnNodeAdd,
			attempt: attempt{during: func(q *PriorityQueue, _ klog.Logger) {
				q.Delete(makePod("p").Obj())
			}},
			want: NotQueued,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := testLogger(t)
			q, _ := newTestQueue(newProfile(tt.hints))
			if tt.before != nil {
				tt.before(q, logger)
			}
			pod := makePod("p").Req(cpu("2")).Obj()
			if err := failAttempt(t, q, logger, pod, tt.attempt); err != nil {
				t.Fatal(err)
			}
			if got := q.Locate(pod.UID); got != tt.want {
				t.Errorf("Locate = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAddUnschedulableKeepsNewestObject(t *testing.T) {
	logger := testLogger(t)
	q, _ := newTestQueue(newProfile(nil))
	pod := makePod("p").Req(cpu("2")).Obj()
	err := failAttempt(t, q, logger, pod,
		attempt{unschedulable: []string{fooPlugin}, during: func(q *PriorityQueue, l klog.Logger) {
			q.Update(l, pod, makePod("p").Req(cpu("1")).Obj())
		}})
	if err != nil {
		t.Fatal(err)
	}
	got := q.entry(pod.UID)
	if got == nil {
		t.Fatal("pod not queued")
	}
	if diff := cmp.Diff(int64(1000), got.Requests.MilliCPU); diff != "" {
		t.Errorf("requests of the queued object (-want +got):\n%s", diff)
	}
}

func TestAddUnschedulablePodIfNotPresentErrors(t *testing.T) {
	logger := testLogger(t)
	q, _ := newTestQueue(newProfile(nil))
	pod := makePod("p").Obj()
	q.Add(logger, pod)
	dup := framework.NewQueuedPodInfo(pod, startTime)
	if err := q.AddUnschedulablePodIfNotPresent(logger, dup); err == nil {
		t.Error("putting back a pod that is in activeQ: no error")
	}
	stray := framework.NewQueuedPodInfo(makePod("stray").SchedulerName("other").Obj(), startTime)
	if err := q.AddUnschedulablePodIfNotPresent(logger, stray); err == nil {
		t.Error("putting back a pod of no profile: no error")
	}
}

func TestInFlightEventsOnlyForTheirPods(t *testing.T) {
	logger := testLogger(t)
	scaleDown := framework.ClusterEvent{Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodScaleDown}
	q, _ := newTestQueue(newProfile(map[string][]framework.ClusterEventWithHint{fooPlugin: {on(scaleDown)}}))
	a, b := makePod("a").Req(cpu("2")).Obj(), makePod("b").Req(cpu("2")).Obj()
	q.Add(logger, a)
	q.Add(logger, b)
	pa, pb := mustPop(t, q, logger), mustPop(t, q, logger)
	// a is scaled down while both are in flight: that concerns a only.
	q.Update(logger, a, makePod("a").Req(cpu("1")).Obj())
	for _, pInfo := range []*framework.QueuedPodInfo{pa, pb} {
		pInfo.UnschedulablePlugins.Insert(fooPlugin)
		if err := q.AddUnschedulablePodIfNotPresent(logger, pInfo); err != nil {
			t.Fatal(err)
		}
		q.Done(pInfo.Pod.UID)
	}
	want := map[string]Location{"a": BackoffQ, "b": UnschedulablePods}
	if diff := cmp.Diff(want, q.locations()); diff != "" {
		t.Errorf("locations (-want +got):\n%s", diff)
	}
}

func TestInFlightEventLogIsTrimmed(t *testing.T) {
	logger := testLogger(t)
	q, _ := newTestQueue(newProfile(nil))
	q.MoveAllToActiveOrBackoffQueue(logger, framework.NodeAdd, nil, nil, nil)
	if n := len(q.inFlight.events); n != 0 {
		t.Fatalf("events logged with no pod in flight: %d", n)
	}
	q.Add(logger, makePod("a").Obj())
	q.Add(logger, makePod("b").Obj())
	a := mustPop(t, q, logger)
	q.MoveAllToActiveOrBackoffQueue(logger, framework.NodeAdd, nil, nil, nil)
	b := mustPop(t, q, logger)
	q.MoveAllToActiveOrBackoffQueue(logger, framework.NodeDelete, nil, nil, nil)

	counts := func() []int {
		return []int{len(q.inFlight.events), len(q.inFlight.eventsFor(a.Pod.UID)), len(q.inFlight.eventsFor(b.Pod.UID))}
	}
	if diff := cmp.Diff([]int{2, 2, 1}, counts()); diff != "" {
		t.Errorf("events logged, seen by a, seen by b (-want +got):\n%s", diff)
	}
	q.Done(a.Pod.UID)
	if diff := cmp.Diff([]int{1, 0, 1}, counts()); diff != "" {
		t.Errorf("after a is done: events logged, seen by a, seen by b (-want +got):\n%s", diff)
	}
	q.Done(b.Pod.UID)
	if diff := cmp.Diff([]int{0, 0, 0}, counts()); diff != "" {
		t.Errorf("after b is done: events logged, seen by a, seen by b (-want +got):\n%s", diff)
	}
}

func TestUpdate(t *testing.T) {
	scaleDown := framework.ClusterEvent{Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodScaleDown}
	scaleDownHints := map[string][]framework.ClusterEventWithHint{fooPlugin: {on(scaleDown)}}
	big := makePod("p").Req(cpu("2")).Obj()
	tests := []struct {
		name  string
		hints map[string][]framework.ClusterEventWithHint
		// setup queues big somewhere.
		setup func(t *testing.T, q *PriorityQueue, logger klog.Logger)
		// wait between setup and the update
		wait    time.Duration
		newPod  *v1.Pod
		want    Location
		wantCPU int64 // the queued object's cpu request, in millicores
	}{
		{
			name:    "in activeQ: replaced in place",
			setup:   func(_ *testing.T, q *PriorityQueue, l klog.Logger) { q.Add(l, big) },
			newPod:  makePod("p").Req(cpu("3")).Label("a", "b").Obj(),
			want:    ActiveQ,
			wantCPU: 3000,
		},
		{
			name: "in backoffQ: replaced in place",
			setup: func(t *testing.T, q *PriorityQueue, l klog.Logger) {
				if err := failAttempt(t, q, l, big, attempt{}); err != nil {
					t.Fatal(err)
				}
			},
			newPod:  makePod("p").Req(cpu("1")).Obj(),
			want:    BackoffQ,
			wantCPU: 1000,
		},
		{
			name:  "unschedulable, scale-down registered, requests reduced: backoffQ",
			hints: scaleDownHints,
			setup: func(t *testing.T, q *PriorityQueue, l klog.Logger) {
				if err := failAttempt(t, q, l, big, attempt{unschedulable: []string{fooPlugin}}); err != nil {
					t.Fatal(err)
				}
			},
			newPod:  makePod("p").Req(cpu("1")).Obj(),
			want:    BackoffQ,
			wantCPU: 1000,
		},
		{
			name:  "unschedulable, scale-down registered, requests reduced after the backoff: activeQ",
			hints: scaleDownHints,
			setup: func(t *testing.T, q *PriorityQueue, l klog.Logger) {
				if err := failAttempt(t, q, l, big, attempt{unschedulable: []string{fooPlugin}}); err != nil {
					t.Fatal(err)
				}
			},
			wait:    2 * time.Second, // the 1s backoff's window is over at 2s
			newPod:  makePod("p").Req(cpu("1")).Obj(),
			want:    ActiveQ,
			wantCPU: 1000,
		},
		{
			name:  "unschedulable, scale-down registered, requests raised: stays, object replaced",
			hints: scaleDownHints,
			setup: func(t *testing.T, q *PriorityQueue, l klog.Logger) {
				if err := failAttempt(t, q, l, big, attempt{unschedulable: []string{fooPlugin}}); err != nil {
					t.Fatal(err)
				}
			},
			newPod:  makePod("p").Req(cpu("4")).Obj(),
			want:    UnschedulablePods,
			wantCPU: 4000,
		},
		{
			name:  "unschedulable, status-only update: stays",
			hints: map[string][]framework.ClusterEventWithHint{fooPlugin: {on(wildcard)}},
			setup: func(t *testing.T, q *PriorityQueue, l klog.Logger) {
				if err := failAttempt(t, q, l, big, attempt{unschedulable: []string{fooPlugin}}); err != nil {
					t.Fatal(err)
				}
			},
			newPod:  makePod("p").Req(cpu("2")).Condition(v1.PodScheduled).Obj(),
			want:    UnschedulablePods,
			wantCPU: 2000,
		},
		{
			name:    "unknown pod: added",
			setup:   func(*testing.T, *PriorityQueue, klog.Logger) {},
			newPod:  makePod("p").Req(cpu("1")).Obj(),
			want:    ActiveQ,
			wantCPU: 1000,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := testLogger(t)
			q, clk := newTestQueue(newProfile(tt.hints))
			tt.setup(t, q, logger)
			clk.Step(tt.wait)
			q.Update(logger, big, tt.newPod)
			if got := q.Locate(big.UID); got != tt.want {
				t.Errorf("Locate = %q, want %q", got, tt.want)
			}
			got := q.entry(big.UID)
			if got == nil {
				t.Fatal("pod not in any sub-queue")
			}
			if got.Pod != tt.newPod {
				t.Errorf("queued object is not the new one")
			}
			if diff := cmp.Diff(tt.wantCPU, got.Requests.MilliCPU); diff != "" {
				t.Errorf("queued cpu request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUpdateInActiveQReordersAndKeepsBookkeeping(t *testing.T) {
	logger := testLogger(t)
	q, clk := newTestQueue(newProfile(nil))
	a, b := makePod("a").Priority(1).Obj(), makePod("b").Priority(2).Obj()
	q.Add(logger, a)
	clk.Step(time.Second)
	q.Add(logger, b)
	// Priority is immutable in Kubernetes, but less may read anything.
	q.Update(logger, a, makePod("a").Priority(3).Obj())
	got := mustPop(t, q, logger)
	if got.Pod.Name != "a" {
		t.Errorf("popped %s first, want a", got.Pod.Name)
	}
	if !got.Timestamp.Equal(startTime) {
		t.Errorf("timestamp changed by Update: %v, want %v", got.Timestamp, startTime)
	}
}

func TestUpdateInFlightIsRecordedNotQueued(t *testing.T) {
	logger := testLogger(t)
	q, _ := newTestQueue(newProfile(nil))
	pod := makePod("p").Req(cpu("2")).Obj()
	q.Add(logger, pod)
	mustPop(t, q, logger)
	q.Update(logger, pod, makePod("p").Req(cpu("1")).Obj())
	if diff := cmp.Diff(map[string]Location{"p": InFlight}, q.locations()); diff != "" {
		t.Errorf("locations (-want +got):\n%s", diff)
	}
	if n := len(q.inFlight.eventsFor(pod.UID)); n != 1 {
		t.Errorf("events recorded for the pod: %d, want 1", n)
	}
}

func TestDelete(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, q *PriorityQueue, logger klog.Logger, pod *v1.Pod)
		from  Location
	}{
		{
			name:  "from activeQ",
			setup: func(_ *testing.T, q *PriorityQueue, l klog.Logger, pod *v1.Pod) { q.Add(l, pod) },
			from:  ActiveQ,
		},
		{
			name: "from backoffQ",
			setup: func(t *testing.T, q *PriorityQueue, l klog.Logger, pod *v1.Pod) {
				if err := failAttempt(t, q, l, pod, attempt{}); err != nil {
					t.Fatal(err)
				}
			},
			from: BackoffQ,
		},
		{
			name: "from unschedulablePods",
			setup: func(t *testing.T, q *PriorityQueue, l klog.Logger, pod *v1.Pod) {
				if err := failAttempt(t, q, l, pod, attempt{unschedulable: []string{fooPlugin}}); err != nil {
					t.Fatal(err)
				}
			},
			from: UnschedulablePods,
		},
		{
			name: "a gated pod",
			setup: func(_ *testing.T, q *PriorityQueue, l klog.Logger, _ *v1.Pod) {
				q.Add(l, makePod("p").SchedulingGates("g").Obj())
			},
			from: UnschedulablePods,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := testLogger(t)
			q, _ := newTestQueue(newProfile(nil))
			pod := makePod("p").Obj()
			tt.setup(t, q, logger, pod)
			if got := q.Locate(pod.UID); got != tt.from {
				t.Fatalf("before Delete: Locate = %q, want %q", got, tt.from)
			}
			q.Delete(pod)
			pods, summary := q.PendingPods()
			if len(pods) != 0 || q.Locate(pod.UID) != NotQueued {
				t.Errorf("after Delete: pending pods %v (%s), Locate = %q", podNames(pods), summary, q.Locate(pod.UID))
			}
		})
	}
}

func TestPreEnqueueGating(t *testing.T) {
	logger := testLogger(t)
	profile := newProfile(map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.NodeAdd)}})
	q, _ := newTestQueue(profile)
	gated := makePod("p").SchedulingGates("a", "b").Obj()

	q.Add(logger, gated)
	got := q.entry(gated.UID)
	if got == nil {
		t.Fatal("gated pod not queued")
	}
	type gate struct {
		Location             Location
		GatingPlugin         string
		GatingPluginEvents   []framework.ClusterEvent
		UnschedulablePlugins []string
	}
	wantGated := gate{
		Location:             UnschedulablePods,
		GatingPlugin:         gatesPlugin,
		GatingPluginEvents:   []framework.ClusterEvent{gatesHint.Event},
		UnschedulablePlugins: []string{gatesPlugin},
	}
	state := func() gate {
		e := q.entry(gated.UID)
		return gate{q.Locate(gated.UID), e.GatingPlugin, e.GatingPluginEvents, sets.List(e.UnschedulablePlugins)}
	}
	if diff := cmp.Diff(wantGated, state()); diff != "" {
		t.Errorf("after Add (-want +got):\n%s", diff)
	}

	// Events the gating plugin did not register do not even re-run PreEnqueue.
	calls := profile.preEnqueueCalls
	q.MoveAllToActiveOrBackoffQueue(logger, framework.NodeAdd, nil, makeNode("n"), nil)
	if diff := cmp.Diff(wantGated, state()); diff != "" {
		t.Errorf("after NodeAdd (-want +got):\n%s", diff)
	}
	if profile.preEnqueueCalls != calls {
		t.Errorf("PreEnqueue ran %d times for an unregistered event", profile.preEnqueueCalls-calls)
	}

	// Removing one of two gates is not "gates eliminated".
	oneGate := makePod("p").SchedulingGates("b").Obj()
	q.Update(logger, gated, oneGate)
	if diff := cmp.Diff(wantGated, state()); diff != "" {
		t.Errorf("after removing one gate (-want +got):\n%s", diff)
	}

	// A wildcard event re-runs PreEnqueue; still gated, the pod stays.
	calls = profile.preEnqueueCalls
	q.MoveAllToActiveOrBackoffQueue(logger, framework.UnschedulableTimeout, nil, nil, nil)
	if diff := cmp.Diff(wantGated, state()); diff != "" {
		t.Errorf("after a wildcard event (-want +got):\n%s", diff)
	}
	if profile.preEnqueueCalls != calls+1 {
		t.Errorf("PreEnqueue ran %d times for a wildcard event, want 1", profile.preEnqueueCalls-calls)
	}

	// Removing the last gate lets it in.
	q.Update(logger, oneGate, makePod("p").Obj())
	want := gate{Location: ActiveQ, UnschedulablePlugins: []string{gatesPlugin}}
	if diff := cmp.Diff(want, state()); diff != "" {
		t.Errorf("after removing the last gate (-want +got):\n%s", diff)
	}
}

func TestGatedAfterAFailedAttempt(t *testing.T) {
	logger := testLogger(t)
	const quota = "Quota"
	profile := newProfile(map[string][]framework.ClusterEventWithHint{
		fooPlugin: {on(framework.NodeAdd)},
		quota:     {on(framework.AssignedPodDelete)},
	})
	closed := false
	profile.extraGate = func(*v1.Pod) *framework.Status {
		if closed {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, "quota exhausted").WithPlugin(quota)
		}
		return nil
	}
	q, clk := newTestQueue(profile)
	pod := makePod("p").Obj()
	// The attempt fails, and by the time the pod is put back PreEnqueue
	// gates it: it waits as gated, not in backoffQ.
	err := failAttempt(t, q, logger, pod, attempt{during: func(*PriorityQueue, klog.Logger) { closed = true }})
	if err != nil {
		t.Fatal(err)
	}
	got := q.entry(pod.UID)
	if q.Locate(pod.UID) != UnschedulablePods || got.GatingPlugin != quota {
		t.Fatalf("after the attempt: Locate = %q, gating plugin %q; want %q and %q", q.Locate(pod.UID), got.GatingPlugin,
			UnschedulablePods, quota)
	}
	// The event the gate registered lifts it. The pod still owes the rest
	// of its backoff (as in kube-scheduler, a gate does not waive it), so
	// it goes to backoffQ, and PreEnqueue does not run again on the way out.
	closed = false
	q.MoveAllToActiveOrBackoffQueue(logger, framework.AssignedPodDelete, makePod("victim").Obj(), nil, nil)
	if got := q.Locate(pod.UID); got != BackoffQ {
		t.Errorf("after the gate lifted: Locate = %q, want %q", got, BackoffQ)
	}
	calls := profile.preEnqueueCalls
	closed = true
	clk.Step(2 * time.Second)
	q.FlushBackoffQCompleted(logger)
	if got := q.Locate(pod.UID); got != ActiveQ || profile.preEnqueueCalls != calls {
		t.Errorf("after the backoff: Locate = %q with %d more PreEnqueue calls, want %q and none",
			got, profile.preEnqueueCalls-calls, ActiveQ)
	}
}

func TestPreEnqueueErrorGates(t *testing.T) {
	logger := testLogger(t)
	profile := newProfile(nil)
	profile.extraGate = func(*v1.Pod) *framework.Status {
		return framework.AsStatus(errors.New("broken plugin")).WithPlugin("Broken")
	}
	q, _ := newTestQueue(profile)
	pod := makePod("p").Obj()
	q.Add(logger, pod)
	got := q.entry(pod.UID)
	if got == nil || q.Locate(pod.UID) != UnschedulablePods || got.GatingPlugin != "Broken" {
		t.Errorf("pod whose PreEnqueue failed: Locate = %q, entry %+v; want gated by Broken", q.Locate(pod.UID), got)
	}
}

func TestFlushUnschedulablePodsLeftover(t *testing.T) {
	logger := testLogger(t)
	// Foo registers nothing that will happen: only the flush can help.
	q, clk := newTestQueue(newProfile(map[string][]framework.ClusterEventWithHint{fooPlugin: {on(framework.NodeDelete)}}))
	if err := failAttempt(t, q, logger, makePod("old").Obj(), attempt{unschedulable: []string{fooPlugin}}); err != nil {
		t.Fatal(err)
	}
	q.Add(logger, makePod("gated").SchedulingGates("g").Obj())
	clk.Step(time.Minute)
	if err := failAttempt(t, q, logger, makePod("young").Obj(), attempt{unschedulable: []string{fooPlugin}}); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		step time.Duration
		want map[string]Location
	}{
		{ // exactly five minutes is not longer than five minutes
			step: 4 * time.Minute,
			want: map[string]Location{"old": UnschedulablePods, "gated": UnschedulablePods, "young": UnschedulablePods},
		},
		{
			step: time.Nanosecond,
			want: map[string]Location{"old": ActiveQ, "gated": UnschedulablePods, "young": UnschedulablePods},
		},
		{
			step: time.Minute,
			want: map[string]Location{"old": ActiveQ, "gated": UnschedulablePods, "young": ActiveQ},
		},
	}
	for i, s := range steps {
		clk.Step(s.step)
		q.FlushUnschedulablePodsLeftover(logger)
		if diff := cmp.Diff(s.want, q.locations()); diff != "" {
			t.Errorf("flush %d (-want +got):\n%s", i+1, diff)
		}
	}
}

func TestRun(t *testing.T) {
	// The loops log from their own goroutines, possibly after the test
	// returns: give them a logger that does not write to t.
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	defer cancel()
	logger := testLogger(t)
	q, clk := newTestQueue(newProfile(nil))
	pod := makePod("p").Obj()
	if err := failAttempt(t, q, logger, pod, attempt{}); err != nil {
		t.Fatal(err)
	}
	q.Run(ctx)
	popped := make(chan string, 1)
	go func() {
		if pInfo, err := popPod(q, logger); err == nil {
			popped <- pInfo.Pod.Name
		}
	}()
	// The pod's 1s backoff ends at 1s, in the window the flush on the
	// second whole second releases. The loop's first timer fires at 1s;
	// once it has set up its ticker (two waiters again, with the leftover
	// loop's), the next second releases the pod.
	clk.Step(time.Second)
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, wait.ForeverTestTimeout, true,
		func(context.Context) (bool, error) { return clk.Waiters() == 2, nil }); err != nil {
		t.Fatalf("the backoff flush loop did not start its ticker: %v", err)
	}
	clk.Step(time.Second)
	select {
	case got := <-popped:
		if got != "p" {
			t.Errorf("Pop returned %q, want p", got)
		}
	case <-time.After(wait.ForeverTestTimeout):
		t.Fatal("the backoff flush loop did not release the pod")
	}
	q.Close()
}

func TestPendingPods(t *testing.T) {
	logger := testLogger(t)
	q, _ := newTestQueue(newProfile(nil))
	if err := failAttempt(t, q, logger, makePod("backing-off").Obj(), attempt{}); err != nil {
		t.Fatal(err)
	}
	if err := failAttempt(t, q, logger, makePod("rejected").Obj(),
		attempt{unschedulable: []string{fooPlugin}}); err != nil {
		t.Fatal(err)
	}
	q.Add(logger, makePod("gated").SchedulingGates("g").Obj())
	q.Add(logger, makePod("active").Obj())
	q.Add(logger, makePod("in-flight").Priority(10).Obj())
	mustPop(t, q, logger)

	pods, summary := q.PendingPods()
	if diff := cmp.Diff([]string{"active", "backing-off", "gated", "rejected"}, podNames(pods)); diff != "" {
		t.Errorf("pending pods (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("activeQ:1; backoffQ:1; unschedulableEntities:2", summary); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
}

func BenchmarkAddPop(b *testing.B) {
	const batch = 100
	logger := logr.Discard()
	q := New(prioritySort, map[string]Profile{testProfile: newProfile(nil)})
	pods := make([]*v1.Pod, batch)
	for i := range pods {
		pods[i] = makePod(fmt.Sprintf("p%d", i)).Priority(int32(i * 7919 % batch)).Obj()
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, pod := range pods {
			q.Add(logger, pod)
		}
		for range pods {
			pInfo, err := popPod(q, logger)
			if err != nil {
				b.Fatal(err)
			}
			q.Done(pInfo.Pod.UID)
		}
	}
}

// A pod gated until the resourceclaim controller names its generated claim
// (DynamicResources' PreEnqueue) is admitted by the status update that does
// so: PodUpdateActions reports UpdatePodGeneratedResourceClaim for it, and
// the gating plugin's registration for that action re-runs PreEnqueue.
func TestGatedUntilClaimGenerated(t *testing.T) {
	logger := testLogger(t)
	const claimsPlugin = "DynamicResources"
	claimsGenerated := func(pod *v1.Pod) bool { return len(pod.Status.ResourceClaimStatuses) > 0 }
	profile := newProfile(map[string][]framework.ClusterEventWithHint{claimsPlugin: {
		onWithHint(framework.ClusterEvent{Resource: framework.UnscheduledPod,
			ActionType: framework.UpdatePodGeneratedResourceClaim},
			func(_ klog.Logger, _ *v1.Pod, _, newObj interface{}) (framework.QueueingHint, error) {
				if claimsGenerated(newObj.(*v1.Pod)) {
					return framework.Queue, nil
				}
				return framework.QueueSkip, nil
			}),
	}})
	profile.extraGate = func(pod *v1.Pod) *framework.Status {
		if !claimsGenerated(pod) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable,
				`pod "default/p": ResourceClaim not created yet`).WithPlugin(claimsPlugin)
		}
		return nil
	}
	q, _ := newTestQueue(profile)
	pod := makePod("p").Obj()
	q.Add(logger, pod)
	if got := q.Locate(pod.UID); got != UnschedulablePods {
		t.Fatalf("after Add: Locate = %q, want %q", got, UnschedulablePods)
	}

	// A status change of another kind is no event: the pod stays gated.
	running := pod.DeepCopy()
	running.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
	q.Update(logger, pod, running)
	if got := q.Locate(pod.UID); got != UnschedulablePods {
		t.Errorf("after a condition update: Locate = %q, want %q", got, UnschedulablePods)
	}

	named := running.DeepCopy()
	name := "p-gpu-x7k2"
	named.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &name}}
	q.Update(logger, running, named)
	if got := q.Locate(pod.UID); got != ActiveQ {
		t.Errorf("after the claim was named: Locate = %q, want %q", got, ActiveQ)
	}
}

// TestPodSignature checks that the queue signs a pod when it receives it and
// signs it again when an update replaces it in any sub-queue, so that a
// cycle compares the signature of the object it schedules.
func TestPodSignature(t *testing.T) {
	sigOf := func(v string) *v1.Pod { return makePod("p").Label(signatureLabel, v).Obj() }
	tests := []struct {
		name string
		// setup queues sigOf("old") somewhere.
		setup func(t *testing.T, q *PriorityQueue, l klog.Logger)
	}{
		{
			name:  "in activeQ",
			setup: func(_ *testing.T, q *PriorityQueue, l klog.Logger) { q.Add(l, sigOf("old")) },
		},
		{
			name: "in backoffQ",
			setup: func(t *testing.T, q *PriorityQueue, l klog.Logger) {
				if err := failAttempt(t, q, l, sigOf("old"), attempt{}); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "among the unschedulable pods",
			setup: func(t *testing.T, q *PriorityQueue, l klog.Logger) {
				if err := failAttempt(t, q, l, sigOf("old"), attempt{unschedulable: []string{fooPlugin}}); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := testLogger(t)
			q, _ := newTestQueue(newProfile(nil))
			tt.setup(t, q, logger)
			if got := string(q.get("p").PodSignature); got != "old" {
				t.Fatalf("signature after add = %q, want %q", got, "old")
			}
			q.Update(logger, sigOf("old"), sigOf("new"))
			pInfo := q.get("p")
			if pInfo == nil {
				t.Fatal("the update took the pod out of the queue")
			}
			if got := string(pInfo.PodSignature); got != "new" {
				t.Errorf("signature after update = %q, want %q", got, "new")
			}
		})
	}
}

// TestSchedulingCycleCountsPops checks the cycle number OpportunisticBatching
// compares: one more per Pop, whatever the pod and whether it is retried.
func TestSchedulingCycleCountsPops(t *testing.T) {
	logger := testLogger(t)
	q, clk := newTestQueue(newProfile(nil))
	if got := q.SchedulingCycle(); got != 0 {
		t.Fatalf("before any Pop: cycle %d, want 0", got)
	}
	q.Add(logger, makePod("a").Obj())
	q.Add(logger, makePod("b").Obj())
	for want := int64(1); want <= 2; want++ {
		pInfo := mustPop(t, q, logger)
		if got := q.SchedulingCycle(); got != want {
			t.Errorf("after popping %s: cycle %d, want %d", pInfo.Pod.Name, got, want)
		}
	}
	// A pod that failed counts, and so does its retry.
	if err := failAttempt(t, q, logger, makePod("c").Obj(), attempt{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(2 * time.Second)
	q.FlushBackoffQCompleted(logger)
	mustPop(t, q, logger)
	if got := q.SchedulingCycle(); got != 4 {
		t.Errorf("after the retry: cycle %d, want 4", got)
	}
}
