// Package web is the live view: a page that shows a running scheduler's
// queue as it moves, the attempts it makes and, for one pod, the Filter and
// Score tables of each attempt, the cluster as a map and, in step mode, the
// cycle one extension point at a time (docs/web.md). It is read-only (step
// mode's controls aside), serves only what `kubectl get pods` and
// `minisched explain` show, and records nothing while no page is open.
//
//   - view.go: the View, what a scheduler attaches to it, and its server.
//   - attempts.go: the attempts kept while someone watches (the timeline,
//     and the last full records).
//   - api.go: the JSON documents and their handlers.
//   - cluster.go: the cluster map's documents, from the view's own copy
//     of the scheduler's cache.
//   - events.go: the events that would move a pod, grouped and in words.
//   - step.go: step mode, the Stepper that holds each cycle before each
//     extension point until the page says go on (the view's one write).
//   - stream.go: the Server-Sent Events stream that feeds the page.
//   - static/: the page itself (HTML, CSS and JavaScript, embedded).
package web

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched"
)

//go:embed static
var static embed.FS

// Source is a running scheduler as the view reads it: its queue, cache and
// profiles (through the Scheduler), the pods its informers see, and a
// client to read a pod's events with.
type Source struct {
	Scheduler *minisched.Scheduler
	Pods      corelisters.PodLister
	Client    kubernetes.Interface
	// CSINodes, if set, give the map each node's attach limits: those of
	// the informer NodeVolumeLimits reads (empty when no profile has it).
	CSINodes storagelisters.CSINodeLister
}

// View is the live view of whichever scheduler is attached to it (Attach):
// `minisched run` attaches its one scheduler, `minisched start` each
// scenario's in turn. It is the scheduler's minisched.Watcher: it watches
// while at least one stream is open.
type View struct {
	mu sync.Mutex
	// source is the attached scheduler (nil: none).
	source *Source
	// streams counts the open streams; Watching reads it on every
	// scheduling cycle.
	streams atomic.Int32
	// attempts keeps what was observed while someone watched.
	attempts *attemptLog
	// stepper is step mode's (step.go); nil unless EnableStepping.
	stepper *Stepper
	// cluster is the cluster map's copy of the scheduler's cache, and the
	// last scheduler's final picture (cluster.go).
	cluster clusterView
}

var _ minisched.Watcher = (*View)(nil)

// New returns a view with nothing attached.
func New() *View {
	return &View{attempts: newAttemptLog()}
}

// Attach makes src the scheduler the view shows, until the returned detach
// is called (at the latest when the scheduler stops). Attaching another
// replaces it. After detach, the cluster map keeps the scheduler's last
// picture until another attaches.
func (v *View) Attach(src Source) (detach func()) {
	s := &src
	v.mu.Lock()
	v.source = s
	v.mu.Unlock()
	return func() {
		v.mu.Lock()
		if v.source == s {
			v.source = nil
		}
		v.mu.Unlock()
		v.cluster.freeze(s, v.attached())
	}
}

// EnableStepping turns step mode on (step.go): every scheduler attached
// after it holds its cycles before each extension point until the page
// lets them go on, and the page gets its step controls. Call it before
// serving and before attaching a scheduler.
func (v *View) EnableStepping() { v.stepper = NewStepper() }

// Stepper returns step mode's Stepper, or nil when step mode is off.
func (v *View) Stepper() *Stepper { return v.stepper }

// attached returns the attached scheduler, or nil.
func (v *View) attached() *Source {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.source
}

// Watching reports whether a page is open (a stream is connected): only
// then does the scheduler record attempts for the view.
func (v *View) Watching() bool { return v.streams.Load() > 0 }

// WaitForWatcher returns once a page is open (Watching), or ctx ended.
func (v *View) WaitForWatcher(ctx context.Context) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !v.Watching() {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
		}
	}
	return nil
}

// Observe keeps an attempt for the timeline and the pod's detail, and sends
// it to the open streams.
func (v *View) Observe(a minisched.Attempt) {
	v.attempts.add(a)
}

// Handler serves the page and the API (docs/web.md): GET and HEAD only,
// but for step mode's controls (POST /api/step/{action}) when it is on.
func (v *View) Handler() http.Handler {
	mux := http.NewServeMux()
	page, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	mux.Handle("GET /", http.FileServerFS(page))
	mux.HandleFunc("GET /api/queue", v.serveQueue)
	mux.HandleFunc("GET /api/attempts", v.serveAttempts)
	mux.HandleFunc("GET /api/pods/{namespace}/{name}", v.servePod)
	mux.HandleFunc("GET /api/stream", v.serveStream)
	mux.HandleFunc("GET /api/cluster", v.serveCluster)
	mux.HandleFunc("GET /api/cluster/pods/{namespace}/{name}", v.serveMapResult)
	if v.stepper == nil {
		return readOnly(mux, nil)
	}
	mux.HandleFunc("GET /api/step", v.serveStep)
	control := http.NewServeMux()
	control.HandleFunc("POST /api/step/{action}", v.serveStepControl)
	return readOnly(mux, control)
}

// readOnly refuses every method but GET and HEAD, but for the POSTs that
// control serves (nil: none), and sets the headers that keep the page to
// its own server: no script, style or connection from elsewhere, no
// framing, no guessing of content types.
func readOnly(next, control http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		switch {
		case control != nil && r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/step/"):
			control.ServeHTTP(w, r)
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "the live view is read-only", http.StatusMethodNotAllowed)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// ListenAddress is addr with a bare ":PORT" bound to loopback, so that the
// view is never reachable from another machine unless a host is named. It
// is an error if addr is not HOST:PORT.
func ListenAddress(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%q is not HOST:PORT: %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// Serve serves the view on addr (see ListenAddress) until ctx ends, and
// returns the address it listens on once it does.
func (v *View) Serve(ctx context.Context, addr string) (net.Addr, error) {
	listen, err := ListenAddress(addr)
	if err != nil {
		return nil, err
	}
	lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", listen)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: v.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	logger := klog.FromContext(ctx)
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Serving the live view stopped", "address", lis.Addr().String())
		}
	}()
	go func() {
		<-ctx.Done()
		// The streams end with ctx (BaseContext); Shutdown waits for them.
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	logger.Info("Serving the live view", "address", "http://"+lis.Addr().String()+"/")
	return lis.Addr(), nil
}
