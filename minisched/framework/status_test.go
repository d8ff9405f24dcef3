// This file tests Status and the small types plugins answer with:
// CycleState, FitError's message, PreFilterResult, host ports and
// DefaultNormalizeScore.

package framework

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

func TestNilStatusIsSuccess(t *testing.T) {
	var s *Status
	if !s.IsSuccess() || s.Code() != Success || s.Message() != "" || s.AsError() != nil || s.IsRejected() ||
		s.Plugin() != "" || s.Err() != nil || s.Reasons() != nil || s.IsWait() || s.IsSkip() ||
		s.String() != "Success" || !s.Equal(nil) {
		t.Errorf("nil status does not behave as Success: %v", s)
	}
}

// Every method works on a nil receiver, the two With methods included.
func TestNilStatusWith(t *testing.T) {
	var s *Status
	if got := s.WithPlugin("P"); got != nil {
		t.Errorf("nil.WithPlugin = %v, want nil (Success names no plugin)", got)
	}
	if got := s.WithError(nil); got != nil {
		t.Errorf("nil.WithError(nil) = %v, want nil", got)
	}
	err := errors.New("boom")
	got := s.WithError(err)
	if got.Code() != Error || !errors.Is(got.AsError(), err) {
		t.Errorf("nil.WithError(err) = %v, want an Error status carrying err", got)
	}
}

func TestStatus(t *testing.T) {
	tests := []struct {
		name        string
		status      *Status
		wantCode    Code
		wantMessage string
		wantReject  bool
	}{
		{
			name:        "reasons joined",
			status:      NewStatus(Unschedulable, "Insufficient cpu", "Insufficient memory"),
			wantCode:    Unschedulable,
			wantMessage: "Insufficient cpu, Insufficient memory",
			wantReject:  true,
		},
		{
			name:        "error",
			status:      AsStatus(errors.New("boom")),
			wantCode:    Error,
			wantMessage: "boom",
		},
		{
			name:        "unresolvable",
			status:      NewStatus(UnschedulableAndUnresolvable, "x"),
			wantCode:    UnschedulableAndUnresolvable,
			wantMessage: "x",
			wantReject:  true,
		},
		{
			name:        "pending is a rejection",
			status:      NewStatus(Pending, "later"),
			wantCode:    Pending,
			wantMessage: "later",
			wantReject:  true,
		},
		{
			name:        "error attached to a rejection",
			status:      NewStatus(Unschedulable).WithError(errors.New("fit")),
			wantCode:    Unschedulable,
			wantMessage: "fit",
			wantReject:  true,
		},
		{
			name:     "skip",
			status:   NewStatus(Skip),
			wantCode: Skip,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.status.Code(); got != tt.wantCode {
				t.Errorf("Code() = %v, want %v", got, tt.wantCode)
			}
			if got := tt.status.Message(); got != tt.wantMessage {
				t.Errorf("Message() = %q, want %q", got, tt.wantMessage)
			}
			if got := tt.status.IsRejected(); got != tt.wantReject {
				t.Errorf("IsRejected() = %v, want %v", got, tt.wantReject)
			}
			if tt.wantCode != Success && tt.status.AsError() == nil {
				t.Errorf("AsError() = nil for %v", tt.status)
			}
		})
	}
}

type intState int

func (i intState) Clone() StateData { return i }

func TestCycleState(t *testing.T) {
	cs := NewCycleState()
	if _, err := cs.Read("k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Read of a missing key = %v, want ErrNotFound", err)
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := StateKey(fmt.Sprint("k", i%5))
			cs.Write(key, intState(i))
			_, _ = cs.Read(key)
			cs.Write(StateKey(fmt.Sprint("d", i)), intState(i))
		}()
	}
	wg.Wait()
	// Writers publish copies of the entries: none may lose another's.
	for i := range 50 {
		if got, err := cs.Read(StateKey(fmt.Sprint("d", i))); err != nil || got.(intState) != intState(i) {
			t.Errorf("d%d after concurrent writes = %v, %v; want %d", i, got, err, i)
		}
	}
	cs.Write("x", intState(7))
	clone := cs.Clone()
	cs.Write("x", intState(8))
	got, err := clone.Read("x")
	if err != nil || got.(intState) != 7 {
		t.Errorf("clone saw %v, %v; want 7 unaffected by later writes", got, err)
	}
	cs.Delete("x")
	if _, err := cs.Read("x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Read after Delete = %v", err)
	}
	cs.Delete("d7")
	for _, key := range []StateKey{"d6", "d8", "k2"} {
		if _, err := cs.Read(key); err != nil {
			t.Errorf("Read(%s) after deleting another key = %v", key, err)
		}
	}
}

// TestCycleStatePodGroupLink: a member's state links to its group's, a
// clone (preemption's what-if) keeps the link to the same state, and
// unlinking leaves the group's state to the group.
func TestCycleStatePodGroupLink(t *testing.T) {
	group := NewCycleState()
	member := NewCycleState()
	if member.PodGroupCycleState() != nil {
		t.Fatal("a new state links to a group's")
	}
	member.SetPodGroupCycleState(group)
	member.PodGroupCycleState().Write("seen", intState(1))
	clone := member.Clone()
	if clone.PodGroupCycleState() != group {
		t.Errorf("the clone links to %p, want the group's state %p", clone.PodGroupCycleState(), group)
	}
	member.SetPodGroupCycleState(nil)
	if member.PodGroupCycleState() != nil || clone.PodGroupCycleState() != group {
		t.Error("unlinking the member changed what its clone links to, or did not unlink it")
	}
	if got, err := group.Read("seen"); err != nil || got.(intState) != 1 {
		t.Errorf("the group's state holds %v, %v; want what the member wrote through the link", got, err)
	}
	var none *CycleState
	if none.PodGroupCycleState() != nil {
		t.Error("a nil state links to a group's")
	}
}

func TestFitErrorMessage(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	tests := []struct {
		name string
		diag func() Diagnosis
		n    int
		want string
	}{
		{
			name: "reasons counted per node and sorted",
			n:    4,
			diag: func() Diagnosis {
				d := NewDiagnosis()
				d.NodeToStatus.Set("a", NewStatus(Unschedulable, "Insufficient cpu"))
				d.NodeToStatus.Set("b", NewStatus(Unschedulable, "Insufficient cpu", "Insufficient memory"))
				d.NodeToStatus.Set("c", NewStatus(UnschedulableAndUnresolvable, "node(s) were unschedulable"))
				d.NodeToStatus.Set("d", NewStatus(Unschedulable, "Insufficient cpu"))
				return d
			},
			want: "0/4 nodes are available: 1 Insufficient memory, 1 node(s) were unschedulable, 3 Insufficient cpu.",
		},
		{
			name: "a PreFilter rejection stands alone",
			n:    3,
			diag: func() Diagnosis {
				d := NewDiagnosis()
				d.PreFilterMsg = "node(s) didn't match Pod's node affinity/selector"
				return d
			},
			want: "0/3 nodes are available: node(s) didn't match Pod's node affinity/selector.",
		},
		{
			name: "absent nodes count with the absent status, then the PostFilter message",
			n:    3,
			diag: func() Diagnosis {
				d := NewDiagnosis()
				d.NodeToStatus.SetAbsentNodesStatus(NewStatus(UnschedulableAndUnresolvable,
					"node(s) didn't satisfy plugin(s) [NodeAffinity]"))
				d.NodeToStatus.Set("a", NewStatus(Unschedulable, "Too many pods"))
				d.PostFilterMsg = "preemption: not eligible due to preemptionPolicy=Never."
				return d
			},
			// The PostFilter message is appended as it is, with no period of
			// its own (kube-scheduler's FitError.Error).
			want: "0/3 nodes are available: 1 Too many pods, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. " +
				"preemption: not eligible due to preemptionPolicy=Never.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := &FitError{Pod: pod, NumAllNodes: tt.n, Diagnosis: tt.diag()}
			if got := err.Error(); got != tt.want {
				t.Errorf("message:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestPreFilterResultMerge(t *testing.T) {
	tests := []struct {
		name string
		a, b *PreFilterResult
		want *PreFilterResult
	}{
		{
			name: "all and all",
			want: nil,
		},
		{
			name: "all and some",
			b:    &PreFilterResult{NodeNames: sets.New("x")},
			want: &PreFilterResult{NodeNames: sets.New("x")},
		},
		{
			name: "intersection",
			a:    &PreFilterResult{NodeNames: sets.New("x", "y")},
			b:    &PreFilterResult{NodeNames: sets.New("y", "z")},
			want: &PreFilterResult{NodeNames: sets.New("y")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.a.Merge(tt.b)); diff != "" {
				t.Errorf("Merge (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHostPortConflicts(t *testing.T) {
	used := HostPortInfo{}
	used.Add("127.0.0.1", "TCP", 80)
	used.Add("", "UDP", 53)
	tests := []struct {
		name     string
		ip, prot string
		port     int32
		want     bool
	}{
		{name: "same ip, protocol and port", ip: "127.0.0.1", prot: "TCP", port: 80, want: true},
		{name: "other ip", ip: "127.0.0.2", prot: "TCP", port: 80, want: false},
		{name: "0.0.0.0 clashes with any ip", ip: "0.0.0.0", prot: "TCP", port: 80, want: true},
		{name: "any ip clashes with 0.0.0.0", ip: "10.0.0.1", prot: "UDP", port: 53, want: true},
		{name: "other protocol", ip: "127.0.0.1", prot: "UDP", port: 80, want: false},
		{name: "empty protocol is TCP", ip: "127.0.0.1", prot: "", port: 80, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := used.CheckConflict(tt.ip, tt.prot, tt.port); got != tt.want {
				t.Errorf("CheckConflict(%s, %s, %d) = %v, want %v", tt.ip, tt.prot, tt.port, got, tt.want)
			}
		})
	}
}

func TestDefaultNormalizeScore(t *testing.T) {
	tests := []struct {
		name    string
		reverse bool
		in      []int64
		want    []int64
	}{
		{name: "scaled to the highest", in: []int64{0, 5, 10}, want: []int64{0, 50, 100}},
		{name: "integer division", in: []int64{1, 3}, want: []int64{33, 100}},
		{name: "all zero stay zero", in: []int64{0, 0}, want: []int64{0, 0}},
		{name: "reversed", reverse: true, in: []int64{0, 1, 2}, want: []int64{100, 50, 0}},
		{name: "reversed, all zero get the maximum", reverse: true, in: []int64{0, 0}, want: []int64{100, 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scores := make(NodeScoreList, len(tt.in))
			for i, s := range tt.in {
				scores[i] = NodeScore{Name: fmt.Sprint("n", i), Score: s}
			}
			DefaultNormalizeScore(MaxNodeScore, tt.reverse, scores)
			var got []int64
			for _, s := range scores {
				got = append(got, s.Score)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("scores (-want +got):\n%s", diff)
			}
		})
	}
}
