// The attempts the view keeps, observed while someone watched: a timeline
// of the last ones, in short, and the full records of the most recent, for
// a pod's Filter and Score tables. A record can list thousands of nodes, so
// fewer of them are kept. A pod group's attempt is one entry of its own,
// made when the first of its members' records arrives (they all carry it);
// the members' entries point to it.

package web

import (
	"sync"
	"time"

	"github.com/minisched/minisched/minisched"
	"github.com/minisched/minisched/minisched/attempt"
)

// How much the view keeps: at least timelineSize short entries, the full records of
// the last recordsSize attempts, and at most podAttempts per pod in a pod's
// document.
const (
	timelineSize = 1000
	recordsSize  = 100
	podAttempts  = 10
)

// timelineEntry is one attempt in short, as /api/attempts and the stream's
// attempt events carry it: a pod's (Pod), or a pod group's (GroupAttempt,
// as the members' records have it; Pod empty). A member's entry names its
// group in PodGroup, and GroupSeq is the seq of the group's entry. (A pod's
// document embeds the entry beside the tables of explain, whose "group"
// is the record's group section.)
type timelineEntry struct {
	Seq           int64                 `json:"seq"`
	Time          time.Time             `json:"time"`
	Pod           string                `json:"pod,omitempty"`
	Attempt       int                   `json:"attempt"`
	Result        attempt.Result        `json:"result"`
	Node          string                `json:"node,omitempty"`
	NominatedNode string                `json:"nominatedNode,omitempty"`
	Victims       []string              `json:"victims,omitempty"`
	Message       string                `json:"message,omitempty"`
	PodGroup      string                `json:"podGroup,omitempty"`
	GroupSeq      int64                 `json:"groupSeq,omitempty"`
	GroupAttempt  *attempt.GroupAttempt `json:"groupAttempt,omitempty"`
}

// attemptLog is the view's memory of attempts, and the streams that want
// each new one.
type attemptLog struct {
	mu sync.Mutex
	// seq numbers the attempts observed; the last one has seq.
	seq int64
	// timeline holds at least the last timelineSize entries (at most twice
	// that), oldest first.
	timeline []timelineEntry
	// records maps the seq of the last recordsSize attempts to their record.
	records map[int64]*attempt.Record
	// groups maps the group attempts in the timeline (the members' records
	// share each one) to the seq of their entry.
	groups map[*attempt.GroupAttempt]int64
	// subscribers get each new entry; a full channel drops it (the page
	// sees the gap in seq and reads /api/attempts again).
	subscribers map[chan timelineEntry]struct{}
}

func newAttemptLog() *attemptLog {
	return &attemptLog{records: map[int64]*attempt.Record{}, groups: map[*attempt.GroupAttempt]int64{},
		subscribers: map[chan timelineEntry]struct{}{}}
}

// add keeps a (after its group's entry, the first time a member's record
// of that attempt comes), drops what falls out of the windows, and tells
// the subscribers.
func (l *attemptLog) add(a minisched.Attempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at := a.Time
	if at.IsZero() {
		at = time.Now()
	}
	e := timelineEntry{Time: at, Pod: a.Namespace + "/" + a.Name, Attempt: a.Attempt,
		Result: a.Result, Node: a.Node, NominatedNode: a.NominatedNode, Victims: a.Victims, Message: a.Message}
	if g := a.Group; g != nil {
		e.PodGroup = a.Namespace + "/" + g.PodGroup
		seq, ok := l.groups[g]
		if !ok {
			seq = l.append(timelineEntry{Time: at, Attempt: g.Attempt, Result: g.Result, Message: g.Message,
				PodGroup: e.PodGroup, GroupAttempt: g})
			l.groups[g] = seq
		}
		e.GroupSeq = seq
	}
	seq := l.append(e)
	l.records[seq] = a.Record
}

// append numbers e, keeps it, drops what falls out of the windows, and
// tells the subscribers. It returns e's seq.
func (l *attemptLog) append(e timelineEntry) int64 {
	l.seq++
	e.Seq = l.seq
	l.timeline = append(l.timeline, e)
	if len(l.timeline) >= 2*timelineSize {
		// Trimmed in one copy every timelineSize attempts, not one per
		// attempt.
		l.timeline = append(l.timeline[:0:0], l.timeline[len(l.timeline)-timelineSize:]...)
		for g, seq := range l.groups {
			if seq < l.timeline[0].Seq {
				delete(l.groups, g)
			}
		}
	}
	delete(l.records, l.seq-recordsSize)
	for ch := range l.subscribers {
		select {
		case ch <- e:
		default:
		}
	}
	return e.Seq
}

// last returns the last n timeline entries, oldest first.
func (l *attemptLog) last(n int) []timelineEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	from := max(len(l.timeline)-n, 0)
	return append([]timelineEntry(nil), l.timeline[from:]...)
}

// forPod returns pod's (namespace/name) last podAttempts entries, newest
// first, each with its record if it is still kept.
func (l *attemptLog) forPod(pod string) ([]timelineEntry, []*attempt.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var entries []timelineEntry
	var records []*attempt.Record
	for i := len(l.timeline) - 1; i >= 0 && len(entries) < podAttempts; i-- {
		if e := l.timeline[i]; e.Pod == pod {
			entries = append(entries, e)
			records = append(records, l.records[e.Seq])
		}
	}
	return entries, records
}

// subscribe returns a channel that gets every new entry, until unsubscribe.
func (l *attemptLog) subscribe() (<-chan timelineEntry, func()) {
	ch := make(chan timelineEntry, 256)
	l.mu.Lock()
	l.subscribers[ch] = struct{}{}
	l.mu.Unlock()
	return ch, func() {
		l.mu.Lock()
		delete(l.subscribers, ch)
		l.mu.Unlock()
	}
}
