package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/minisched/minisched/minisched/framework"
)

// cycleRun is a cycle that drives a Stepper as the scheduler does: a
// goroutine that takes its steps in order.
type cycleRun struct {
	pod   *v1.Pod
	state *framework.CycleState
	done  chan struct{}
}

// run starts a cycle of pod taking points, each with Before.
func run(ctx context.Context, st *Stepper, name string, points ...string) *cycleRun {
	c := &cycleRun{pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}},
		state: framework.NewCycleState(), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for _, p := range points {
			st.Before(ctx, framework.Step{Pod: c.pod, State: c.state, Cycle: framework.SchedulingCycle, Point: p})
		}
	}()
	return c
}

// waitHeld waits until the first held step is pod's at point, with others
// held after it.
func waitHeld(t *testing.T, st *Stepper, pod, point string, others int) {
	t.Helper()
	var last stepDoc
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) {
			last, _ = st.document()
			c := last.Current
			return c != nil && c.Paused && c.Pod == "ns/"+pod && c.Point == point && len(last.Others) == others, nil
		})
	if err != nil {
		t.Fatalf("want %s held before %s with %d others; the document: %+v (current %+v)", pod, point, others,
			last, last.Current)
	}
}

// finished waits until the cycle has taken all its steps.
func finished(t *testing.T, c *cycleRun) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s's cycle did not finish", c.pod.Name)
	}
}

// TestStepperControls checks the controls on two cycles held at once: Next
// and Cycle act on the first in line, or on the attempt a seq names; Run
// lets everything go and later steps pass; a held cycle whose context ends
// leaves the line.
func TestStepperControls(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		drive func(t *testing.T, st *Stepper, a, b *cycleRun)
	}{
		{name: "Next moves the first in line one step", drive: func(t *testing.T, st *Stepper, a, b *cycleRun) {
			must(t, st.Do(actionNext, 0))
			waitHeld(t, st, "b", "PreFilter", 1) // b came before a's next step
			must(t, st.Do(actionNext, 0))
			waitHeld(t, st, "a", "Filter", 1)
			must(t, st.Do(actionRun, 0))
		}},
		{name: "Next with a seq moves that attempt", drive: func(t *testing.T, st *Stepper, a, b *cycleRun) {
			doc, _ := st.document()
			must(t, st.Do(actionNext, doc.Others[0].Seq))
			waitHeld(t, st, "a", "PreFilter", 1)
			doc, _ = st.document()
			if o := doc.Others[0]; o.Pod != "ns/b" || o.Point != "Filter" {
				t.Errorf("the other held step is %+v, want b before Filter", o)
			}
			must(t, st.Do(actionRun, 0))
		}},
		{name: "Cycle lets one attempt finish", drive: func(t *testing.T, st *Stepper, a, b *cycleRun) {
			must(t, st.Do(actionCycle, 0))
			finished(t, a)
			waitHeld(t, st, "b", "PreFilter", 0)
			must(t, st.Do(actionRun, 0))
		}},
		{name: "Run lets everything go, and Step holds again", drive: func(t *testing.T, st *Stepper, a, b *cycleRun) {
			must(t, st.Do(actionRun, 0))
			finished(t, a)
			finished(t, b)
			must(t, st.Do(actionStep, 0))
			c := run(ctx, st, "c", "PreFilter")
			waitHeld(t, st, "c", "PreFilter", 0)
			must(t, st.Do(actionNext, 0))
			finished(t, c)
		}},
		{name: "a cycle whose context ends leaves the line", drive: func(t *testing.T, st *Stepper, a, b *cycleRun) {
			cctx, cancel := context.WithCancel(ctx)
			c := run(cctx, st, "c", "PreFilter")
			waitHeld(t, st, "a", "PreFilter", 2)
			cancel()
			finished(t, c)
			waitHeld(t, st, "a", "PreFilter", 1)
			must(t, st.Do(actionRun, 0))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := NewStepper()
			a := run(ctx, st, "a", "PreFilter", "Filter", "Reserve")
			waitHeld(t, st, "a", "PreFilter", 0)
			b := run(ctx, st, "b", "PreFilter", "Filter")
			waitHeld(t, st, "a", "PreFilter", 1)
			tt.drive(t, st, a, b)
			finished(t, a)
			finished(t, b)
			if err := st.Do("jump", 0); err == nil || !strings.Contains(err.Error(), `unknown step action "jump"`) {
				t.Errorf("Do(jump) = %v, want an error naming it", err)
			}
		})
	}
}

// TestStepperResults checks what the document shows of an attempt: its
// steps so far, the keys written before the held step, each node's Filter
// verdict and score (reported from many goroutines), and the writes its
// steps made through WrapTransport, GETs and other requests left out.
func TestStepperResults(t *testing.T) {
	st := NewStepper()
	ctx := context.Background()
	state := framework.NewCycleState()
	state.Write("PreFilterNodeResourcesFit", nil)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	stepCtx := make(chan context.Context, 1)
	go func() {
		c := st.Before(ctx, framework.Step{Pod: pod, State: state, Cycle: framework.SchedulingCycle, Point: "Filter"})
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() {
				node := "n" + string(rune('a'+i%26)) + string(rune('a'+i/26))
				if i%2 == 0 {
					st.FilterResult(state, node, nil)
					st.ScoreResult(state, node, int64(i))
				} else {
					st.FilterResult(state, node, framework.NewStatus(framework.Unschedulable, "too small").WithPlugin("Fit"))
				}
			})
		}
		wg.Wait()
		stepCtx <- st.Before(c, framework.Step{Pod: pod, State: state, Cycle: framework.BindingCycle, Point: "Bind"})
	}()
	waitHeld(t, st, "p", "Filter", 0)
	must(t, st.Do(actionNext, 0))
	waitHeld(t, st, "p", "Bind", 0)
	doc, _ := st.document()
	c := doc.Current
	if strings.Join(c.Points, ",") != "Filter,Bind" || strings.Join(c.Keys, ",") != "PreFilterNodeResourcesFit" {
		t.Errorf("points %v, keys %v; want Filter,Bind and PreFilterNodeResourcesFit", c.Points, c.Keys)
	}
	if len(c.Filter) != 50 || len(c.Scores) != 25 || c.Filter["nba"] != (filterVerdict{Plugin: "Fit", Reason: "too small"}) ||
		!c.Filter["naa"].Passed || c.Scores["naa"] != 0 {
		t.Errorf("filter %d verdicts (nba: %+v), %d scores; want 50, nba refused by Fit, 25", len(c.Filter), c.Filter["nba"],
			len(c.Scores))
	}
	must(t, st.Do(actionNext, 0))
	bindCtx := <-stepCtx

	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	defer server.Close()
	client := &http.Client{Transport: st.WrapTransport(http.DefaultTransport)}
	for _, r := range []struct {
		ctx    context.Context
		method string
		path   string
	}{
		{bindCtx, http.MethodPost, "/api/v1/namespaces/ns/pods/p/binding"},
		{bindCtx, http.MethodGet, "/api/v1/namespaces/ns/pods/p"},
		{ctx, http.MethodPatch, "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c/status"},
	} {
		req, err := http.NewRequestWithContext(r.ctx, r.method, server.URL+r.path, nil)
		must(t, err)
		resp, err := client.Do(req)
		must(t, err)
		resp.Body.Close()
	}
	doc, _ = st.document()
	if got, want := strings.Join(doc.Current.Writes, "|"), "Bind: POST namespaces/ns/pods/p/binding → 201 Created"; got != want {
		t.Errorf("writes %q, want %q", got, want)
	}
}

// TestStepControlEndpoint checks who may press the buttons: only a POST
// with step mode's header, from this page's origin, naming an action.
func TestStepControlEndpoint(t *testing.T) {
	v := New()
	v.EnableStepping()
	server := httptest.NewServer(v.Handler())
	defer server.Close()
	tests := []struct {
		name, method, path, origin string
		header                     bool
		want                       int
	}{
		{name: "the page's Next", method: http.MethodPost, path: "/api/step/next", header: true, want: http.StatusOK},
		{name: "a form of another site", method: http.MethodPost, path: "/api/step/next", want: http.StatusForbidden},
		{name: "another origin", method: http.MethodPost, path: "/api/step/run", header: true,
			origin: "http://evil.example", want: http.StatusForbidden},
		{name: "an unknown action", method: http.MethodPost, path: "/api/step/jump", header: true,
			want: http.StatusBadRequest},
		{name: "a bad seq", method: http.MethodPost, path: "/api/step/next?seq=x", header: true,
			want: http.StatusBadRequest},
		{name: "any other POST", method: http.MethodPost, path: "/api/queue", header: true,
			want: http.StatusMethodNotAllowed},
		{name: "the document", method: http.MethodGet, path: "/api/step", want: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, server.URL+tt.path, nil)
			must(t, err)
			if tt.header {
				req.Header.Set(stepHeader, "1")
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			must(t, err)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("%s %s: %s, want %d", tt.method, tt.path, resp.Status, tt.want)
			}
		})
	}
	// Without step mode there is no control at all.
	plain := httptest.NewServer(New().Handler())
	defer plain.Close()
	req, err := http.NewRequest(http.MethodPost, plain.URL+"/api/step/next", nil)
	must(t, err)
	req.Header.Set(stepHeader, "1")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("a control without step mode: %s, want 405", resp.Status)
	}
}

// must fails the test on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestStepperSchedulerStops checks that a stopping scheduler's held step
// goes on, and that its later steps are not held: its binding cycles must
// be able to finish.
func TestStepperSchedulerStops(t *testing.T) {
	st := NewStepper()
	stop := make(chan struct{})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	state := framework.NewCycleState()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, p := range []string{"PreBind", "Bind", "PostBind"} {
			st.Before(context.Background(), framework.Step{Pod: pod, State: state, Cycle: framework.BindingCycle,
				Point: p, Stop: stop})
		}
	}()
	waitHeld(t, st, "p", "PreBind", 0)
	close(stop)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stopping scheduler's binding cycle is still held")
	}
	if doc, _ := st.document(); doc.Current == nil || doc.Current.Paused || doc.Current.Point != "PostBind" {
		t.Errorf("after the stop, the document shows %+v, want PostBind taken, nothing held", doc.Current)
	}
}
