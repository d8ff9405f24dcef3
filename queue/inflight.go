// This file tracks pods in flight: popped and not yet Done. It keeps a log
// of the cluster events that arrive meanwhile, so that a pod whose attempt
// fails because of state an event has just changed is retried instead of
// parked as unschedulable. (kube-scheduler does the same with its
// inFlightEvents list; the older moveRequestCycle it replaced compared cycle
// numbers and requeued far more.)

package queue

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minisched/minisched/minisched/framework"
)

// inFlightEvent is one event seen while some pod was in flight, with the
// objects the QueueingHint functions will be given.
type inFlightEvent struct {
	event          framework.ClusterEvent
	oldObj, newObj interface{}
	// onlyFor, when set, limits the event to one pod: a pending pod's own
	// update says nothing about other pods.
	onlyFor types.UID
}

// inFlightPod is the record of one popped pod.
type inFlightPod struct {
	// pod is the newest object known: the popped one, or a later update.
	pod *v1.Pod
	// updated says pod was replaced by an Update while in flight.
	updated bool
	// deleted says the pod was deleted while in flight: it must not be
	// requeued.
	deleted bool
	// firstEvent is the sequence number of the first event logged after the
	// pod was popped; earlier ones are not its business.
	firstEvent int64
}

// inFlightPods is the set of pods in flight and one shared event log. Events
// are numbered; each pod sees the ones from its firstEvent on. The log is
// trimmed when the oldest pod is Done, and nothing is logged while no pod is
// in flight.
type inFlightPods struct {
	pods   map[types.UID]*inFlightPod
	events []inFlightEvent
	// offset is the sequence number of events[0].
	offset int64
}

func newInFlightPods() *inFlightPods {
	return &inFlightPods{pods: map[types.UID]*inFlightPod{}}
}

// add starts tracking a popped pod.
func (f *inFlightPods) add(pod *v1.Pod) {
	f.pods[pod.UID] = &inFlightPod{pod: pod, firstEvent: f.next()}
}

// next is the sequence number the next logged event will get.
func (f *inFlightPods) next() int64 { return f.offset + int64(len(f.events)) }

// get returns the pod's record, or nil if it is not in flight.
func (f *inFlightPods) get(uid types.UID) *inFlightPod { return f.pods[uid] }

// record logs a cluster event for every pod in flight.
func (f *inFlightPods) record(event framework.ClusterEvent, oldObj, newObj interface{}) {
	if len(f.pods) == 0 {
		return
	}
	f.events = append(f.events, inFlightEvent{event: event, oldObj: oldObj, newObj: newObj})
}

// recordPodUpdate remembers an update of a pod in flight: its newest object
// and, if anything relevant changed, the event for it alone. It reports
// whether the pod is in flight.
func (f *inFlightPods) recordPodUpdate(oldPod, newPod *v1.Pod, event framework.ClusterEvent) bool {
	rec := f.pods[newPod.UID]
	if rec == nil {
		return false
	}
	rec.pod, rec.updated = newPod, true
	if event.ActionType != 0 {
		f.events = append(f.events, inFlightEvent{event: event, oldObj: oldPod, newObj: newPod, onlyFor: newPod.UID})
	}
	return true
}

// recordFor logs an event for one pod in flight alone (a forced activation)
// and reports whether the pod is in flight.
func (f *inFlightPods) recordFor(uid types.UID, event framework.ClusterEvent) bool {
	if f.pods[uid] == nil {
		return false
	}
	f.events = append(f.events, inFlightEvent{event: event, onlyFor: uid})
	return true
}

// markDeleted notes that a pod in flight was deleted.
func (f *inFlightPods) markDeleted(uid types.UID) {
	if rec := f.pods[uid]; rec != nil {
		rec.deleted = true
	}
}

// eventsFor returns the events logged since the pod was popped.
func (f *inFlightPods) eventsFor(uid types.UID) []inFlightEvent {
	rec := f.pods[uid]
	if rec == nil {
		return nil
	}
	var out []inFlightEvent
	for _, e := range f.events[rec.firstEvent-f.offset:] {
		if e.onlyFor == "" || e.onlyFor == uid {
			out = append(out, e)
		}
	}
	return out
}

// done stops tracking the pod and drops the events no remaining pod needs.
func (f *inFlightPods) done(uid types.UID) {
	if _, ok := f.pods[uid]; !ok {
		return
	}
	delete(f.pods, uid)
	keepFrom := f.next()
	for _, rec := range f.pods {
		keepFrom = min(keepFrom, rec.firstEvent)
	}
	drop := keepFrom - f.offset
	clear(f.events[:drop]) // release the objects the dropped events hold
	f.events = f.events[drop:]
	if len(f.events) == 0 {
		f.events = nil // let the old backing array go
	}
	f.offset = keepFrom
}
