package web

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/minisched/minisched/minisched"
	"github.com/minisched/minisched/minisched/attempt"
)

// observed is an attempt of pod ns/name number n.
func observed(name string, n int) minisched.Attempt {
	return minisched.Attempt{Namespace: "ns", Name: name, Record: &attempt.Record{Attempt: n,
		Result: attempt.Unschedulable, Time: time.Date(2026, 1, 1, 0, 0, n, 0, time.UTC)}}
}

// TestAttemptLogWindows checks what the view keeps: the last timelineSize
// entries, the records of the last recordsSize attempts, a pod's last
// podAttempts newest first, and that a subscriber too slow to read loses
// entries instead of holding the scheduler up.
func TestAttemptLogWindows(t *testing.T) {
	tests := []struct {
		name string
		// attempts of pod "p" and of pod "q", alternating while both last.
		p, q int
		// want: the first seq the timeline keeps, how many of p's entries
		// forPod returns and how many of them still have a record.
		wantFirstSeq       int64
		wantP, wantRecords int
	}{
		{name: "a few", p: 3, q: 2, wantFirstSeq: 1, wantP: 3, wantRecords: 3},
		{name: "more than a pod's window", p: 25, wantFirstSeq: 1, wantP: podAttempts, wantRecords: podAttempts},
		{name: "past every window", p: timelineSize, q: timelineSize, wantFirstSeq: timelineSize + 1,
			wantP: podAttempts, wantRecords: podAttempts},
		{name: "records drop before entries", p: 5, q: recordsSize + 10, wantFirstSeq: 1, wantP: 5, wantRecords: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newAttemptLog()
			for i := 1; i <= max(tt.p, tt.q); i++ {
				if i <= tt.p {
					l.add(observed("p", i))
				}
				if i <= tt.q {
					l.add(observed("q", i))
				}
			}
			all := l.last(timelineSize)
			if got := all[0].Seq; got != tt.wantFirstSeq || len(all) > timelineSize || len(l.timeline) >= 2*timelineSize {
				t.Errorf("timeline starts at seq %d with %d entries, want %d and at most %d", got, len(all),
					tt.wantFirstSeq, timelineSize)
			}
			entries, records := l.forPod("ns/p")
			kept := 0
			for i, e := range entries {
				if i > 0 && e.Seq >= entries[i-1].Seq {
					t.Errorf("forPod is not newest first: %d after %d", e.Seq, entries[i-1].Seq)
				}
				if records[i] != nil {
					kept++
				}
			}
			if len(entries) != tt.wantP || kept != tt.wantRecords {
				t.Errorf("forPod: %d entries, %d with a record; want %d and %d", len(entries), kept, tt.wantP,
					tt.wantRecords)
			}
			if len(l.records) > recordsSize {
				t.Errorf("%d records kept, want at most %d", len(l.records), recordsSize)
			}
		})
	}

	t.Run("a slow subscriber loses entries", func(t *testing.T) {
		l := newAttemptLog()
		ch, unsubscribe := l.subscribe()
		defer unsubscribe()
		n := cap(ch) + 10
		for i := 1; i <= n; i++ {
			l.add(observed("p", i)) // must not block
		}
		if len(ch) != cap(ch) {
			t.Errorf("the subscriber has %d entries, want its %d", len(ch), cap(ch))
		}
		if e := <-ch; e.Seq != 1 {
			t.Errorf("first entry has seq %d, want 1", e.Seq)
		}
	})
}

// TestAttemptLogGroups checks that a pod group's attempt is one entry of
// the timeline, before its members' entries, which point to it; that the
// next attempt of the group is another; and that the view forgets the
// attempts that left the timeline.
func TestAttemptLogGroups(t *testing.T) {
	member := func(name string, g *attempt.GroupAttempt) minisched.Attempt {
		a := observed(name, g.Attempt)
		a.Group = g
		return a
	}
	first := &attempt.GroupAttempt{PodGroup: "g", Attempt: 1, Result: attempt.Unschedulable, Message: "no"}
	second := &attempt.GroupAttempt{PodGroup: "g", Attempt: 2, Result: attempt.Scheduled}
	l := newAttemptLog()
	l.add(member("a", first))
	l.add(member("b", first))
	l.add(observed("lone", 1))
	l.add(member("a", second))
	type row struct {
		Seq, GroupSeq int64
		Pod, PodGroup string
		Group         *attempt.GroupAttempt
	}
	var got []row
	for _, e := range l.last(timelineSize) {
		got = append(got, row{Seq: e.Seq, GroupSeq: e.GroupSeq, Pod: e.Pod, PodGroup: e.PodGroup, Group: e.GroupAttempt})
	}
	want := []row{
		{Seq: 1, PodGroup: "ns/g", Group: first},
		{Seq: 2, GroupSeq: 1, Pod: "ns/a", PodGroup: "ns/g"},
		{Seq: 3, GroupSeq: 1, Pod: "ns/b", PodGroup: "ns/g"},
		{Seq: 4, Pod: "ns/lone"},
		{Seq: 5, PodGroup: "ns/g", Group: second},
		{Seq: 6, GroupSeq: 5, Pod: "ns/a", PodGroup: "ns/g"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
	if entries, records := l.forPod("ns/a"); len(entries) != 2 || records[0] == nil || records[0].Group != second {
		t.Errorf("forPod(ns/a) = %d entries, newest record %+v; want 2, the second attempt's", len(entries), records[0])
	}
	for i := range 2 * timelineSize {
		l.add(member("a", &attempt.GroupAttempt{PodGroup: "g", Attempt: i + 3}))
	}
	if len(l.groups) > timelineSize {
		t.Errorf("%d group attempts remembered, want at most the %d entries of the timeline", len(l.groups), timelineSize)
	}
	if len(l.records) > recordsSize {
		t.Errorf("%d records kept, want at most %d", len(l.records), recordsSize)
	}
}

// TestPage checks the paging of the queue's lists.
func TestPage(t *testing.T) {
	tests := []struct {
		query            string
		n                int
		wantFrom, wantTo int
		def, most        int
	}{
		{query: "", n: 250, wantFrom: 0, wantTo: 100, def: 100, most: 5000},
		{query: "?limit=10&offset=245", n: 250, wantFrom: 245, wantTo: 250, def: 100, most: 5000},
		{query: "?limit=99999", n: 9000, wantFrom: 0, wantTo: 5000, def: 100, most: 5000},
		{query: "?offset=300", n: 250, wantFrom: 250, wantTo: 250, def: 100, most: 5000},
		{query: "?limit=-1&offset=x", n: 5, wantFrom: 0, wantTo: 5, def: 100, most: 5000},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			p := pageOf(httptest.NewRequest("GET", "/api/queue"+tt.query, nil), tt.def, tt.most)
			if from, to := p.cut(tt.n); from != tt.wantFrom || to != tt.wantTo {
				t.Errorf("cut(%d) = [%d, %d), want [%d, %d)", tt.n, from, to, tt.wantFrom, tt.wantTo)
			}
		})
	}
}

// TestChangeKey checks that a stream sends a queue document again only
// when the queue changed, not when time passed.
func TestChangeKey(t *testing.T) {
	ms := func(n int64) *int64 { return &n }
	base := queueDoc{Scheduler: true, Now: time.Unix(1, 0),
		BackoffQ: []queuedEntry{{Pod: "ns/a", BackoffRemaining: "2s", BackoffRemainingMs: ms(2000)}}}
	later := base
	later.Now = time.Unix(2, 0)
	later.BackoffQ = []queuedEntry{{Pod: "ns/a", BackoffRemaining: "1s", BackoffRemainingMs: ms(1000)}}
	moved := later
	moved.BackoffQ = nil
	moved.ActiveQ = []queuedEntry{{Pod: "ns/a"}}
	key := func(d queueDoc) string {
		b, err := changeKey(d)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if diff := cmp.Diff(key(base), key(later)); diff != "" {
		t.Errorf("time passing changes the key (-before +after):\n%s", diff)
	}
	if key(base) == key(moved) {
		t.Error("a pod moving to activeQ does not change the key")
	}
	if base.BackoffQ[0].BackoffRemainingMs == nil || *base.BackoffQ[0].BackoffRemainingMs != 2000 {
		t.Error("changeKey changed the document it was given")
	}
}

// TestListenAddress checks that a bare port means loopback.
func TestListenAddress(t *testing.T) {
	tests := []struct{ in, want, wantErr string }{
		{in: ":8080", want: "127.0.0.1:8080"},
		{in: "0.0.0.0:8080", want: "0.0.0.0:8080"},
		{in: "[::1]:9", want: "[::1]:9"},
		{in: "8080", wantErr: `"8080" is not HOST:PORT`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ListenAddress(tt.in)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ListenAddress(%q) = %q, %v; want an error with %q", tt.in, got, err, tt.wantErr)
				}
			case err != nil || got != tt.want:
				t.Errorf("ListenAddress(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}
