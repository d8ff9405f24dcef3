// The observer: a watcher of the scheduler (the scenarios, a trace) is told
// of every attempt, as the pod it was about and the attempt's record.

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

// observe tells the observer, if there is one, about the attempt at pod.
func (s *Scheduler) observe(pod *v1.Pod, rec *attempt.Record) {
	if s.observer != nil {
		s.observer(Attempt{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Record: rec})
	}
}
