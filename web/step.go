// Step mode (docs/web.md, "Step mode"): the View's Stepper holds each cycle
// before each extension point until the person watching presses Next, and
// keeps what the page shows of each attempt it holds: the steps taken, the
// CycleState keys, the nodes' Filter verdicts and scores as they come, and
// the scheduler's writes to the apiserver while the attempt's binding
// cycle ran.

package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/minisched/minisched/minisched/framework"
)

// attemptsKept is how many attempts the Stepper remembers (the page shows
// the one it holds, or the last).
const attemptsKept = 64

// Stepper is the live view's framework.Stepper: while it is stepping, every
// cycle waits before each extension point in a first-in first-out line
// (the scheduling loop and binding goroutines may all wait at once), and
// the page lets the first go on.
type Stepper struct {
	mu sync.Mutex
	// stepping: cycles wait (Run turns it off, Step on again).
	stepping bool
	// line is the steps waiting, first in first out.
	line []*pausedStep
	// attempts are the attempts seen, by their CycleState; order is their
	// arrival, oldest first, to forget the oldest beyond attemptsKept.
	attempts map[*framework.CycleState]*steppedAttempt
	order    []*framework.CycleState
	// version counts the changes, for the stream to send only new ones.
	version int64
	// seq numbers the attempts, from 1.
	seq int64
}

// pausedStep is a cycle waiting before a step.
type pausedStep struct {
	step    framework.Step
	attempt *steppedAttempt
	keys    []string
	release chan struct{}
}

// steppedAttempt is what the page shows of one attempt.
type steppedAttempt struct {
	seq   int64
	pod   string
	cycle string
	point string
	node  string
	// points are the steps taken so far, the last being the current one.
	points []string
	// through: Cycle was pressed, the attempt no longer waits.
	through bool
	filter  map[string]filterVerdict
	scores  map[string]int64
	writes  []string
}

// filterVerdict is a node's Filter verdict: passed, or the plugin that
// rejected it and why.
type filterVerdict struct {
	Passed bool   `json:"passed"`
	Plugin string `json:"plugin,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// NewStepper returns a Stepper that is stepping.
func NewStepper() *Stepper {
	return &Stepper{stepping: true, attempts: map[*framework.CycleState]*steppedAttempt{}}
}

var _ framework.Stepper = (*Stepper)(nil)

// attemptKey carries, in a step's context, the attempt whose writes to the
// apiserver the Stepper's transport records.
type attemptKey struct{}

// Before implements framework.Stepper: it notes the step and, while
// stepping, waits until the step is let go (Next, Cycle, Run), ctx ends or
// the scheduler stops (step.Stop).
func (st *Stepper) Before(ctx context.Context, step framework.Step) context.Context {
	st.mu.Lock()
	a := st.attempt(step)
	a.cycle, a.point, a.node = step.Cycle, step.Point, step.Node
	a.points = append(a.points, step.Point)
	st.version++
	ctx = context.WithValue(ctx, attemptKey{}, a)
	select {
	case <-step.Stop:
		st.mu.Unlock()
		return ctx // the scheduler stops: nothing is held any more
	default:
	}
	if !st.stepping || a.through {
		st.mu.Unlock()
		return ctx
	}
	p := &pausedStep{step: step, attempt: a, release: make(chan struct{})}
	for _, k := range step.State.Keys() {
		p.keys = append(p.keys, string(k))
	}
	st.line = append(st.line, p)
	st.mu.Unlock()
	select {
	case <-p.release:
	case <-ctx.Done():
		st.leave(p)
	case <-step.Stop:
		st.leave(p)
	}
	return ctx
}

// leave takes p out of the line, if it is still there.
func (st *Stepper) leave(p *pausedStep) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.line = slices.DeleteFunc(st.line, func(q *pausedStep) bool { return q == p })
	st.version++
}

// attempt returns step's attempt, remembering it if it is new. Called with
// mu held.
func (st *Stepper) attempt(step framework.Step) *steppedAttempt {
	if a, ok := st.attempts[step.State]; ok {
		return a
	}
	st.seq++
	a := &steppedAttempt{seq: st.seq, pod: step.Pod.Namespace + "/" + step.Pod.Name,
		filter: map[string]filterVerdict{}, scores: map[string]int64{}}
	st.attempts[step.State] = a
	st.order = append(st.order, step.State)
	if len(st.order) > attemptsKept {
		delete(st.attempts, st.order[0])
		st.order = st.order[1:]
	}
	return a
}

// FilterResult implements framework.Stepper.
func (st *Stepper) FilterResult(state *framework.CycleState, node string, status *framework.Status) {
	v := filterVerdict{Passed: status.IsSuccess()}
	if !v.Passed {
		v.Plugin, v.Reason = status.Plugin(), strings.Join(status.Reasons(), ", ")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if a, ok := st.attempts[state]; ok {
		a.filter[node] = v
		st.version++
	}
}

// ScoreResult implements framework.Stepper.
func (st *Stepper) ScoreResult(state *framework.CycleState, node string, total int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if a, ok := st.attempts[state]; ok {
		a.scores[node] = total
		st.version++
	}
}

// The controls, as /api/step/{action} names them.
const (
	// actionNext lets the first waiting step go on.
	actionNext = "next"
	// actionCycle lets the first waiting step's attempt go on to its end
	// (its scheduling and binding cycles) without waiting again.
	actionCycle = "cycle"
	// actionRun stops stepping: everything waiting goes on.
	actionRun = "run"
	// actionStep starts stepping again.
	actionStep = "step"
)

// Do carries out a control; it is an error to name another. Next and
// Cycle act on the first waiting step, or, if seq is not 0, on the step
// of the attempt numbered seq (stepView.Seq) if it waits: several cycles
// may wait at once (one pod's binding cycle, the next pod's scheduling
// cycle), and the person may want to move one of them on and not the
// other, as chapter 6 does to see a pod that is assumed but not yet bound.
func (st *Stepper) Do(action string, seq int64) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	i := slices.IndexFunc(st.line, func(p *pausedStep) bool { return seq == 0 || p.attempt.seq == seq })
	switch action {
	case actionNext:
		if i >= 0 {
			p := st.line[i]
			st.releaseWhere(func(q *pausedStep) bool { return q == p })
		}
	case actionCycle:
		if i >= 0 {
			a := st.line[i].attempt
			a.through = true
			st.releaseWhere(func(p *pausedStep) bool { return p.attempt == a })
		}
	case actionRun:
		st.stepping = false
		st.releaseWhere(func(*pausedStep) bool { return true })
	case actionStep:
		st.stepping = true
	default:
		return fmt.Errorf("unknown step action %q: want %s, %s, %s or %s", action, actionNext, actionCycle,
			actionRun, actionStep)
	}
	st.version++
	return nil
}

// releaseWhere lets the waiting steps that match go on. Called with mu
// held.
func (st *Stepper) releaseWhere(match func(*pausedStep) bool) {
	st.line = slices.DeleteFunc(st.line, func(p *pausedStep) bool {
		if match(p) {
			close(p.release)
			return true
		}
		return false
	})
}

// stepDoc is /api/step's document and the stream's step event.
type stepDoc struct {
	// Version grows with each change: the page draws no document older
	// than one it drew (a control's answer may arrive after the stream's
	// next event).
	Version int64 `json:"version"`
	// Order is every step an attempt may take, in order
	// (framework.StepPoints), for the page to lay them out.
	Order []string `json:"order"`
	// Stepping: cycles wait before each step.
	Stepping bool `json:"stepping"`
	// Waiting counts the steps waiting after Current.
	Waiting int `json:"waiting"`
	// Current is the first waiting step, or, when none waits, the last
	// attempt seen (Paused false); nil before any.
	Current *stepView `json:"current"`
	// Others are the other waiting steps, in the order they came.
	Others []otherStep `json:"others"`
}

// otherStep is a waiting step after the first, in short.
type otherStep struct {
	Seq   int64  `json:"seq"`
	Pod   string `json:"pod"`
	Cycle string `json:"cycle"`
	Point string `json:"point"`
}

// stepView is an attempt at one step.
type stepView struct {
	Paused bool   `json:"paused"`
	Seq    int64  `json:"seq"`
	Pod    string `json:"pod"`
	Cycle  string `json:"cycle"`
	Point  string `json:"point"`
	Node   string `json:"node,omitempty"`
	// Points are the steps this attempt has taken, the last the current.
	Points []string `json:"points"`
	// Plugins are the profile's plugins at Point, in order.
	Plugins []string `json:"plugins"`
	// Keys are the CycleState keys written before this step.
	Keys []string `json:"keys"`
	// Waiting are, at WaitOnPermit, the Permit plugins the pod waits for.
	Waiting []string                 `json:"waiting,omitempty"`
	Filter  map[string]filterVerdict `json:"filter"`
	Scores  map[string]int64         `json:"scores"`
	// Writes are the scheduler's requests that changed the cluster on the
	// attempt's behalf, each with the step it was made in.
	Writes []string `json:"writes"`
}

// document describes what the Stepper holds now, and its version.
func (st *Stepper) document() (stepDoc, int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	doc := stepDoc{Version: st.version, Order: framework.StepPoints, Stepping: st.stepping, Waiting: max(len(st.line)-1, 0), Others: []otherStep{}}
	for _, p := range st.line[min(1, len(st.line)):] {
		doc.Others = append(doc.Others, otherStep{Seq: p.attempt.seq, Pod: p.attempt.pod, Cycle: p.step.Cycle,
			Point: p.step.Point})
	}
	var a *steppedAttempt
	var p *pausedStep
	switch {
	case len(st.line) > 0:
		p = st.line[0]
		a = p.attempt
	case len(st.order) > 0:
		a = st.attempts[st.order[len(st.order)-1]]
	default:
		return doc, st.version
	}
	v := &stepView{Seq: a.seq, Pod: a.pod, Cycle: a.cycle, Point: a.point, Node: a.node,
		Points: slices.Clone(a.points), Keys: []string{}, Plugins: []string{},
		Filter: make(map[string]filterVerdict, len(a.filter)), Scores: make(map[string]int64, len(a.scores)),
		Writes: slices.Clone(a.writes)}
	for n, f := range a.filter {
		v.Filter[n] = f
	}
	for n, s := range a.scores {
		v.Scores[n] = s
	}
	if p != nil {
		v.Paused, v.Cycle, v.Point, v.Node = true, p.step.Cycle, p.step.Point, p.step.Node
		v.Plugins = append(v.Plugins, p.step.Plugins...)
		v.Keys = append(v.Keys, p.keys...)
		v.Waiting = p.step.Waiting
	}
	if v.Writes == nil {
		v.Writes = []string{}
	}
	doc.Current = v
	return doc, st.version
}

// WrapTransport records, for the attempt whose step made it (the context
// Before returned), each request that changes the cluster: PreBind's and
// Bind's writes, shown in the page. It is the scheduler's client's
// transport only in step mode (scheduler.WithLiveView).
func (st *Stepper) WrapTransport(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		a, _ := r.Context().Value(attemptKey{}).(*steppedAttempt)
		resp, err := next.RoundTrip(r)
		if a == nil || r.Method == http.MethodGet || r.Method == http.MethodHead {
			return resp, err
		}
		outcome := "failed"
		if err == nil {
			outcome = resp.Status
		}
		st.mu.Lock()
		a.writes = append(a.writes, fmt.Sprintf("%s: %s %s → %s", a.point, r.Method, apiPath(r.URL.Path), outcome))
		st.version++
		st.mu.Unlock()
		return resp, err
	})
}

// roundTripper is a function as an http.RoundTripper.
type roundTripper func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// apiPath is a request's path without its API group and version:
// /api/v1/namespaces/ns/pods/p/binding is namespaces/ns/pods/p/binding.
func apiPath(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) > 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) > 3 && parts[0] == "apis":
		parts = parts[3:]
	}
	return strings.Join(parts, "/")
}

// serveStep serves GET /api/step.
func (v *View) serveStep(w http.ResponseWriter, _ *http.Request) {
	doc, _ := v.stepper.document()
	writeJSON(w, http.StatusOK, doc)
}

// stepHeader is the header a control must carry: a page of another site
// cannot send it without the browser first asking this server, which does
// not answer such questions (no CORS), so a control can only come from
// this page or a script that means it.
const stepHeader = "X-Minisched-Step"

// serveStepControl serves POST /api/step/{action}[?seq=N].
func (v *View) serveStepControl(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(stepHeader) != "1" {
		writeError(w, http.StatusForbidden, "a step control must carry the header "+stepHeader+": 1")
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && origin != "http://"+r.Host {
		writeError(w, http.StatusForbidden, "a step control must come from this page, not "+origin)
		return
	}
	var seq int64
	if q := r.URL.Query().Get("seq"); q != "" {
		n, err := strconv.ParseInt(q, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("seq=%q is not a number: %v", q, err))
			return
		}
		seq = n
	}
	if err := v.stepper.Do(r.PathValue("action"), seq); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	doc, _ := v.stepper.document()
	writeJSON(w, http.StatusOK, doc)
}
