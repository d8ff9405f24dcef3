// The observer: a watcher of the scheduler (the scenarios, a trace) is told
// of every attempt, as the pod it was about and the attempt's record; and
// the Watcher, an observer that wants them only while someone looks (the
// live view), so that nobody looking costs nothing.

package minisched

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minisched/minisched/minisched/attempt"
)

// Attempt is one scheduling attempt as an Observer is told of it: the pod,
// and the record of what the attempt saw and decided (never nil), whose
// fields and views (TopScores, Rejections, ...) it shares.
type Attempt struct {
	Namespace, Name string
	UID             types.UID
	*attempt.Record
}

// Observer is told about every attempt. It is called from the scheduling
// and binding goroutines and must return quickly; it must not change the
// record.
type Observer func(Attempt)

// Watcher is told about attempts only while it is Watching. While it is not
// (and no Observer or attempt annotations ask for them), the scheduler
// builds no record. Both methods are called from the scheduling and binding
// goroutines: Watching on every cycle, so it must be cheap (an atomic
// load); Observe must return quickly and must not change the record.
type Watcher interface {
	Watching() bool
	Observe(Attempt)
}

// watching reports whether a Watcher wants attempts now.
func (s *Scheduler) watching() bool { return s.watcher != nil && s.watcher.Watching() }

// observe tells the observer, if there is one, and the watcher, if it
// watches, about the attempt at pod.
func (s *Scheduler) observe(pod *v1.Pod, rec *attempt.Record) {
	if s.observer == nil && !s.watching() {
		return
	}
	a := Attempt{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Record: rec}
	if s.observer != nil {
		s.observer(a)
	}
	if s.watching() {
		s.watcher.Observe(a)
	}
}
