// The JSON documents of the API (docs/web.md) and their handlers.

package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/minisched/minisched/explain"
	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/queue"
)

// The page sizes of /api/queue (per list) and /api/attempts.
const (
	defaultQueueLimit    = 100
	maxQueueLimit        = 5000
	defaultAttemptsLimit = 200
	maxAttemptsLimit     = timelineSize
)

// eventsTimeout bounds the read of a pod's events.
const eventsTimeout = 5 * time.Second

// queueDoc is /api/queue's document.
type queueDoc struct {
	Scheduler           bool             `json:"scheduler"`
	Now                 time.Time        `json:"now"`
	Counts              queueCounts      `json:"counts"`
	ActiveQ             []queuedEntry    `json:"activeQ"`
	BackoffQ            []queuedEntry    `json:"backoffQ"`
	Unschedulable       []queuedEntry    `json:"unschedulable"`
	InFlight            []inFlightEntry  `json:"inFlight"`
	Nominated           []nominatedEntry `json:"nominated"`
	IncompletePodGroups []groupEntry     `json:"incompletePodGroups"`
	PendingPodGroups    []groupEntry     `json:"pendingPodGroups"`
}

// queueCounts are the full lengths of the lists, which are paged: entries
// (a pod group counts once), pods, nominations and groups.
type queueCounts struct {
	ActiveQ             int `json:"activeQ"`
	BackoffQ            int `json:"backoffQ"`
	Unschedulable       int `json:"unschedulable"`
	InFlight            int `json:"inFlight"`
	Nominated           int `json:"nominated"`
	IncompletePodGroups int `json:"incompletePodGroups"`
	PendingPodGroups    int `json:"pendingPodGroups"`
}

// queuedEntry is an entry of activeQ, backoffQ or the unschedulable pods:
// a pod (Pod) or a pod group (Group); the fields after Since belong to one
// of the last two. Events are the events that may move an unschedulable
// entry, by label; EventGroups are the same events in words (events.go).
type queuedEntry struct {
	Pod                string       `json:"pod,omitempty"`
	Group              *groupEntry  `json:"group,omitempty"`
	Priority           int32        `json:"priority"`
	Attempts           int          `json:"attempts"`
	Since              time.Time    `json:"since"`
	BackoffRemaining   string       `json:"backoffRemaining,omitempty"`
	BackoffRemainingMs *int64       `json:"backoffRemainingMs,omitempty"`
	Plugins            []string     `json:"plugins,omitempty"`
	GatingPlugin       *string      `json:"gatingPlugin,omitempty"`
	Events             []string     `json:"events,omitempty"`
	EventGroups        []eventGroup `json:"eventGroups,omitempty"`
}

// groupEntry is a pod group (chapter 19): namespace/name, its policy
// (attempt.PolicyGang or attempt.PolicyBasic; "" while its PodGroup is not
// seen) and minCount, and its members.
type groupEntry struct {
	Name     string        `json:"name"`
	Policy   string        `json:"policy,omitempty"`
	MinCount int           `json:"minCount,omitempty"`
	Members  []memberEntry `json:"members"`
}

// memberEntry is a member of a pod group: its attempts and, among the
// unschedulable pods, the plugins that rejected or gate it.
type memberEntry struct {
	Pod          string   `json:"pod"`
	Attempts     int      `json:"attempts"`
	Plugins      []string `json:"plugins,omitempty"`
	GatingPlugin string   `json:"gatingPlugin,omitempty"`
}

// inFlightEntry is a pod the scheduler is working on.
type inFlightEntry struct {
	Pod   string `json:"pod"`
	Phase string `json:"phase"`
	Node  string `json:"node,omitempty"`
}

// nominatedEntry is a pod nominated to a node.
type nominatedEntry struct {
	Pod  string `json:"pod"`
	Node string `json:"node"`
}

// page is the part of a list a request asks for.
type page struct{ offset, limit int }

// pageOf reads offset and limit from the request's query, with limit
// defaulted to def and capped at most.
func pageOf(r *http.Request, def, most int) page {
	p := page{limit: def}
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 {
		p.limit = min(n, most)
	}
	if n, err := strconv.Atoi(r.URL.Query().Get("offset")); err == nil && n > 0 {
		p.offset = n
	}
	return p
}

// cut returns the page's part of a list of length n, as bounds.
func (p page) cut(n int) (int, int) {
	from := min(p.offset, n)
	return from, min(from+p.limit, n)
}

// queueDocument describes the attached scheduler's queue, paged.
func (v *View) queueDocument(p page) queueDoc {
	src := v.attached()
	doc := queueDoc{Now: time.Now(), ActiveQ: []queuedEntry{}, BackoffQ: []queuedEntry{},
		Unschedulable: []queuedEntry{}, InFlight: []inFlightEntry{}, Nominated: []nominatedEntry{},
		IncompletePodGroups: []groupEntry{}, PendingPodGroups: []groupEntry{}}
	if src == nil {
		return doc
	}
	doc.Scheduler = true
	q := src.Scheduler.Queue
	c := q.Contents()
	doc.Now = c.Now
	inFlight := src.Scheduler.InFlight(c.InFlight)
	doc.Counts = queueCounts{ActiveQ: len(c.ActiveQ), BackoffQ: len(c.BackoffQ),
		Unschedulable: len(c.Unschedulable), InFlight: len(inFlight), Nominated: len(c.Nominated),
		IncompletePodGroups: len(c.IncompletePodGroups), PendingPodGroups: len(c.PendingPodGroups)}

	from, to := p.cut(len(c.ActiveQ))
	for _, e := range c.ActiveQ[from:to] {
		doc.ActiveQ = append(doc.ActiveQ, entry(e))
	}
	from, to = p.cut(len(c.BackoffQ))
	for _, e := range c.BackoffQ[from:to] {
		qe := entry(e)
		expiry := e.Group.BackoffExpiry
		if e.Pod != nil {
			expiry = e.Pod.BackoffExpiry
		}
		remaining := max(expiry.Sub(c.Now), 0)
		ms := remaining.Milliseconds()
		qe.BackoffRemaining, qe.BackoffRemainingMs = remaining.Round(time.Millisecond).String(), &ms
		doc.BackoffQ = append(doc.BackoffQ, qe)
	}
	from, to = p.cut(len(c.Unschedulable))
	for _, e := range c.Unschedulable[from:to] {
		qe := entry(e)
		var events []framework.ClusterEvent
		if e.Pod != nil {
			gating := e.Pod.GatingPlugin
			qe.Plugins, qe.GatingPlugin, events = e.Pod.Plugins, &gating, q.MovingEvents(*e.Pod)
		} else {
			gating := e.Group.GatingPlugin
			qe.GatingPlugin, events = &gating, q.GroupMovingEvents(*e.Group)
		}
		qe.Events, qe.EventGroups = eventLabels(events), eventGroups(events)
		doc.Unschedulable = append(doc.Unschedulable, qe)
	}
	from, to = p.cut(len(inFlight))
	for _, f := range inFlight[from:to] {
		doc.InFlight = append(doc.InFlight, inFlightEntry{Pod: podKey(f.Pod), Phase: string(f.Phase), Node: f.Node})
	}
	from, to = p.cut(len(c.Nominated))
	for _, n := range c.Nominated[from:to] {
		doc.Nominated = append(doc.Nominated, nominatedEntry{Pod: podKey(n.Pod), Node: n.Node})
	}
	from, to = p.cut(len(c.IncompletePodGroups))
	for _, g := range c.IncompletePodGroups[from:to] {
		doc.IncompletePodGroups = append(doc.IncompletePodGroups, *group(g))
	}
	from, to = p.cut(len(c.PendingPodGroups))
	for _, g := range c.PendingPodGroups[from:to] {
		doc.PendingPodGroups = append(doc.PendingPodGroups, *group(g))
	}
	return doc
}

// entry is what every queued entry has: a pod's, or a group's with its
// members.
func entry(e queue.QueuedEntity) queuedEntry {
	if e.Pod != nil {
		qp := e.Pod
		return queuedEntry{Pod: podKey(qp.Pod), Priority: corev1helpers.PodPriority(qp.Pod), Attempts: qp.Attempts,
			Since: qp.Since}
	}
	g := e.Group
	out := queuedEntry{Group: group(*g), Attempts: g.Attempts, Since: g.Since}
	if g.PodGroup != nil {
		out.Priority = framework.PodGroupPriority(g.PodGroup)
	}
	return out
}

// group is a pod group's entry, without what only an entity has.
func group(g queue.QueuedPodGroup) *groupEntry {
	out := &groupEntry{Name: g.Namespace + "/" + g.Name, Members: []memberEntry{}}
	if pg := g.PodGroup; pg != nil {
		out.Policy, out.MinCount = attempt.PolicyBasic, framework.MinCount(pg)
		if pg.Spec.SchedulingPolicy.Gang != nil {
			out.Policy = attempt.PolicyGang
		}
	}
	for _, m := range g.Members {
		out.Members = append(out.Members, memberEntry{Pod: podKey(m.Pod), Attempts: m.Attempts, Plugins: m.Plugins,
			GatingPlugin: m.GatingPlugin})
	}
	return out
}

// podKey is namespace/name.
func podKey(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

// serveQueue serves /api/queue.
func (v *View) serveQueue(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, v.queueDocument(pageOf(r, defaultQueueLimit, maxQueueLimit)))
}

// attemptsDoc is /api/attempts' document.
type attemptsDoc struct {
	Watching bool            `json:"watching"`
	Attempts []timelineEntry `json:"attempts"`
}

// serveAttempts serves /api/attempts.
func (v *View) serveAttempts(w http.ResponseWriter, r *http.Request) {
	p := pageOf(r, defaultAttemptsLimit, maxAttemptsLimit)
	attempts := v.attempts.last(p.limit)
	if attempts == nil {
		attempts = []timelineEntry{}
	}
	writeJSON(w, http.StatusOK, attemptsDoc{Watching: v.Watching(), Attempts: attempts})
}

// podDoc is /api/pods/{namespace}/{name}'s document.
type podDoc struct {
	Pod         string          `json:"pod"`
	UID         string          `json:"uid"`
	NodeName    string          `json:"nodeName"`
	Location    string          `json:"location"`
	Attempts    []podAttempt    `json:"attempts"`
	LastRecord  *recordTables   `json:"lastRecord"`
	Events      []explain.Event `json:"events"`
	EventsError string          `json:"eventsError"`
}

// podAttempt is one of a pod's attempts: the timeline's entry and, if its
// record is still kept, the tables explain prints.
type podAttempt struct {
	timelineEntry
	*recordTables
}

// recordTables is a record as explain shows it: its tables, and its text.
type recordTables struct {
	explain.Tables
	Text string `json:"text"`
}

// tablesOf renders pod's record r as explain does.
func tablesOf(pod string, r *attempt.Record) *recordTables {
	t := explain.RecordTables(pod, r, explain.Options{})
	var b strings.Builder
	t.Write(&b)
	return &recordTables{Tables: t, Text: b.String()}
}

// servePod serves /api/pods/{namespace}/{name}. A pod that is gone (or
// whose scheduler has stopped: between two scenarios of start) is still
// shown from the attempts the view kept, if any.
func (v *View) servePod(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("namespace") + "/" + r.PathValue("name")
	doc := podDoc{Pod: key, Location: "gone", Attempts: []podAttempt{}, Events: []explain.Event{}}
	entries, records := v.attempts.forPod(key)
	for i, e := range entries {
		a := podAttempt{timelineEntry: e}
		if records[i] != nil {
			a.recordTables = tablesOf(key, records[i])
		}
		doc.Attempts = append(doc.Attempts, a)
	}
	var pod *v1.Pod
	src := v.attached()
	if src != nil {
		var err error
		pod, err = src.Pods.Pods(r.PathValue("namespace")).Get(r.PathValue("name"))
		if err != nil && !apierrors.IsNotFound(err) {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
	}
	if pod == nil {
		if len(doc.Attempts) == 0 {
			writeError(w, http.StatusNotFound, "pod "+key+" not found")
			return
		}
		writeJSON(w, http.StatusOK, doc)
		return
	}
	doc.UID, doc.NodeName, doc.Location = string(pod.UID), pod.Spec.NodeName, location(src, pod)
	if value, ok := pod.Annotations[attempt.Annotation]; ok {
		if rec, err := attempt.Decode(value); err == nil {
			doc.LastRecord = tablesOf(key, rec)
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), eventsTimeout)
	defer cancel()
	if events, err := explain.SchedulingEvents(ctx, src.Client, pod); err != nil {
		doc.EventsError = err.Error()
	} else if events != nil {
		doc.Events = events
	}
	writeJSON(w, http.StatusOK, doc)
}

// location says where pod is: bound, or where the queue (or the scheduler
// working on it) holds it.
func location(src *Source, pod *v1.Pod) string {
	if pod.Spec.NodeName != "" {
		return "bound"
	}
	switch src.Scheduler.Queue.Locate(pod.UID) {
	case queue.ActiveQ:
		return "activeQ"
	case queue.BackoffQ:
		return "backoffQ"
	case queue.UnschedulablePods:
		return "unschedulable"
	case queue.InFlight:
		return "inFlight"
	case queue.IncompletePodGroupPods:
		return "incompletePodGroups"
	case queue.PendingPodGroupPods:
		return "pendingPodGroups"
	}
	if assumed, _ := src.Scheduler.Cache.IsAssumedPod(pod); assumed {
		return "inFlight"
	}
	return "notQueued"
}

// writeJSON writes doc with status, never cached.
func writeJSON(w http.ResponseWriter, status int, doc any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(doc)
}

// writeError writes {"error": msg} with status.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
