// Unit tests for NodeNumber: args, PreScore, Score and Permit's answers.
package nodenumber

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	testingclock "k8s.io/utils/clock/testing"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func newPlugin(t *testing.T, args *runtime.RawExtension) *NodeNumber {
	t.Helper()
	pl, err := New(context.Background(), args, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return pl.(*NodeNumber)
}

// stoppedClock returns a fake clock that the test never steps.
func stoppedClock() *testingclock.FakeClock {
	return testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

func TestNewArgs(t *testing.T) {
	tests := []struct {
		name        string
		args        *runtime.RawExtension
		wantReverse bool
		wantErr     string
	}{
		{name: "no args"},
		{name: "empty args", args: &runtime.RawExtension{Raw: []byte(`{}`)}},
		{name: "reverse", args: &runtime.RawExtension{Raw: []byte(`{"reverse": true}`)}, wantReverse: true},
		{
			name: "apiVersion and kind are allowed",
			args: &runtime.RawExtension{Raw: []byte(`{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": ` +
				`"NodeNumberArgs", "reverse": true}`)},
			wantReverse: true,
		},
		{name: "typed args", args: &runtime.RawExtension{Object: &NodeNumberArgs{Reverse: true}}, wantReverse: true},
		{name: "unknown field", args: &runtime.RawExtension{Raw: []byte(`{"reversed": true}`)},
			wantErr: `decoding NodeNumberArgs: unknown field "reversed"`},
		{name: "wrong type", args: &runtime.RawExtension{Raw: []byte(`{"reverse": "yes"}`)},
			wantErr: "decoding NodeNumberArgs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := New(context.Background(), tt.args, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := pl.(*NodeNumber).reverse; got != tt.wantReverse {
				t.Errorf("reverse = %v, want %v", got, tt.wantReverse)
			}
		})
	}
}

func TestPreScoreAndScore(t *testing.T) {
	tests := []struct {
		name    string
		reverse bool
		pod     string
		// wantSkip: PreScore returns Skip and Score is not run.
		wantSkip   bool
		wantScores map[string]int64
	}{
		{
			name:       "matching node gets the high score",
			pod:        "pod3",
			wantScores: map[string]int64{"node3": 10, "node1": 0, "node13": 10, "master": 0},
		},
		{
			name:       "only the last digit counts",
			pod:        "pod12",
			wantScores: map[string]int64{"node2": 10, "node12": 10, "node1": 0},
		},
		{
			name:       "reverse: every other node gets the high score",
			reverse:    true,
			pod:        "pod3",
			wantScores: map[string]int64{"node3": 0, "node1": 10, "master": 10},
		},
		{name: "no digit: skip", pod: "nginx", wantSkip: true},
		{name: "no digit, reverse: skip", reverse: true, pod: "web-a", wantSkip: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			pl := newPlugin(t, &runtime.RawExtension{Object: &NodeNumberArgs{Reverse: tt.reverse}})
			pod := st.MakePod().Name(tt.pod).Obj()
			state := framework.NewCycleState()
			s := pl.PreScore(ctx, state, pod, nil)
			if got := s.IsSkip(); got != tt.wantSkip {
				t.Fatalf("PreScore = %v, want skip %v", s, tt.wantSkip)
			}
			if tt.wantSkip {
				return
			}
			if !s.IsSuccess() {
				t.Fatalf("PreScore = %v", s)
			}
			got := map[string]int64{}
			for name := range tt.wantScores {
				score, s := pl.Score(ctx, state, pod, plugintesting.MakeNodeInfo(st.MakeNode().Name(name).Obj()))
				if !s.IsSuccess() {
					t.Fatalf("Score(%s) = %v", name, s)
				}
				got[name] = score
			}
			if diff := cmp.Diff(tt.wantScores, got); diff != "" {
				t.Errorf("scores (-want +got):\n%s", diff)
			}
			if pl.ScoreExtensions() != nil {
				t.Error("ScoreExtensions should be nil")
			}
		})
	}
}

func TestScoreWithoutPreScore(t *testing.T) {
	pl := newPlugin(t, nil)
	_, s := pl.Score(context.Background(), framework.NewCycleState(), st.MakePod().Name("pod1").Obj(),
		plugintesting.MakeNodeInfo(st.MakeNode().Name("node1").Obj()))
	if s.Code() != framework.Error {
		t.Errorf("Score = %v, want Error", s)
	}
}

func TestPermitAnswers(t *testing.T) {
	tests := []struct {
		pod         string
		wantCode    framework.Code
		wantTimeout time.Duration
	}{
		{pod: "nginx", wantCode: framework.Success},
		{pod: "pod0", wantCode: framework.Success},
		{pod: "pod1", wantCode: framework.Wait, wantTimeout: 6 * time.Second},
		{pod: "pod9", wantCode: framework.Wait, wantTimeout: 14 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.pod, func(t *testing.T) {
			// A clock that never advances: the Allow timer is started but
			// never fires, so no handle is needed.
			pl := newPlugin(t, nil)
			pl.clock = stoppedClock()
			s, timeout := pl.Permit(context.Background(), framework.NewCycleState(), st.MakePod().Name(tt.pod).Obj(), "node1")
			if s.Code() != tt.wantCode || timeout != tt.wantTimeout {
				t.Errorf("Permit = %v, %v; want %v, %v", s.Code(), timeout, tt.wantCode, tt.wantTimeout)
			}
		})
	}
}

func TestEventsToRegister(t *testing.T) {
	evs, err := newPlugin(t, nil).EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []framework.ClusterEventWithHint{{Event: framework.ClusterEvent{Resource: framework.Node,
		ActionType: framework.Add}}}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("EventsToRegister (-want +got):\n%s", diff)
	}
}
