// This file tests the runners from Reserve to Bind: Unreserve's order,
// Permit's waits and verdicts, and Bind plugins that skip.

package framework

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestReserveFailureAndUnreserveOrder(t *testing.T) {
	log := &callLog{}
	a := &fakePlugin{name: "A", log: log}
	b := &fakePlugin{name: "B", log: log, reserve: NewStatus(Unschedulable, "no room")}
	c := &fakePlugin{name: "C", log: log}
	f := newTestFramework(t, []*fakePlugin{a, b, c}, nil)
	s := f.RunReservePluginsReserve(context.Background(), NewCycleState(), testPod, "n1")
	if s.Code() != Unschedulable || s.Plugin() != "B" {
		t.Fatalf("Reserve = %v, want B's rejection", s)
	}
	f.RunReservePluginsUnreserve(context.Background(), NewCycleState(), testPod, "n1")
	want := []string{"Reserve/A", "Reserve/B", "Unreserve/C", "Unreserve/B", "Unreserve/A"}
	if diff := cmp.Diff(want, log.get()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestPermit(t *testing.T) {
	tests := []struct {
		name     string
		permits  []*Status
		act      func(f *Framework, clk *clocktesting.FakeClock)
		wantCode Code
		wantMsg  string
	}{
		{
			name:     "all approve",
			permits:  []*Status{nil, nil},
			wantCode: Success,
		},
		{
			name:     "a rejection wins at once",
			permits:  []*Status{NewStatus(Wait), NewStatus(Unschedulable, "no")},
			wantCode: Unschedulable,
			wantMsg:  "no",
		},
		{
			name:    "waiting until every waiting plugin allows",
			permits: []*Status{NewStatus(Wait), NewStatus(Wait)},
			act: func(f *Framework, _ *clocktesting.FakeClock) {
				f.GetWaitingPod(testPod.UID).Allow("P0")
				f.GetWaitingPod(testPod.UID).Allow("P1")
			},
			wantCode: Success,
		},
		{
			name:    "rejected by another goroutine",
			permits: []*Status{NewStatus(Wait)},
			act: func(f *Framework, _ *clocktesting.FakeClock) {
				f.GetWaitingPod(testPod.UID).Reject("P0", "changed my mind")
			},
			wantCode: Unschedulable,
			wantMsg:  "changed my mind",
		},
		{
			name:     "timeout rejects",
			permits:  []*Status{NewStatus(Wait)},
			act:      func(_ *Framework, clk *clocktesting.FakeClock) { clk.Step(11 * time.Second) },
			wantCode: Unschedulable,
			wantMsg:  "rejected due to timeout after waiting 10s at plugin P0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			var pls []*fakePlugin
			for i, st := range tt.permits {
				pls = append(pls, &fakePlugin{
					name: "P" + string(rune('0'+i)), log: &callLog{}, permit: st, permitWait: 10 * time.Second,
				})
			}
			f := newTestFramework(t, pls, nil, WithClock(clock.WithDelayedExecution(clk)))
			s := f.RunPermitPlugins(context.Background(), NewCycleState(), testPod, "n1")
			if s.IsWait() {
				done := make(chan *Status, 1)
				go func() { done <- f.WaitOnPermit(context.Background(), testPod) }()
				tt.act(f, clk)
				select {
				case s = <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("WaitOnPermit did not return")
				}
			}
			if s.Code() != tt.wantCode || (tt.wantMsg != "" && s.Message() != tt.wantMsg) {
				t.Errorf("status = %v, want %v %q", s, tt.wantCode, tt.wantMsg)
			}
			if f.GetWaitingPod(testPod.UID) != nil && s.Code() != Wait {
				t.Errorf("the pod is still among the waiting pods")
			}
		})
	}
}

func TestBindSkipsToTheNextBinder(t *testing.T) {
	log := &callLog{}
	a := &fakePlugin{name: "A", log: log, bind: NewStatus(Skip)}
	b := &fakePlugin{name: "B", log: log}
	c := &fakePlugin{name: "C", log: log}
	f := newTestFramework(t, []*fakePlugin{a, b, c}, nil)
	if s := f.RunBindPlugins(context.Background(), NewCycleState(), testPod, "n1"); !s.IsSuccess() {
		t.Fatal(s)
	}
	if diff := cmp.Diff([]string{"Bind/A", "Bind/B"}, log.get()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
