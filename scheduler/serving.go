package scheduler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// DefaultMetricsBindAddress is where `minisched run` serves /metrics and
// the health endpoints unless told otherwise: kube-scheduler's port, on
// loopback only, over plain HTTP.
const DefaultMetricsBindAddress = "127.0.0.1:10259"

// Serve serves, on addr, until ctx ends:
//
//	/metrics   the scheduler's metrics (kube-scheduler's names) in Prometheus' text format
//	/healthz   ok while the process runs
//	/livez     the same
//	/readyz    ok once the informers have synced (a standby replica is ready too), 503 before
//	/debug/pprof/  Go's profiles, when enableProfiling (default true) says so
//
// It returns the address it listens on (useful with port 0) once it does,
// or an error naming addr when it cannot listen.
func (s *Service) Serve(ctx context.Context, addr string) (net.Addr, error) {
	lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-bind-address %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.Metrics.Handler())
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }
	mux.HandleFunc("/healthz", ok)
	mux.HandleFunc("/livez", ok)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !s.Ready() {
			http.Error(w, "informers not synced yet", http.StatusServiceUnavailable)
			return
		}
		ok(w, r)
	})
	if ptr.Deref(s.Config.EnableProfiling, false) {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		if ptr.Deref(s.Config.EnableContentionProfiling, false) {
			runtime.SetBlockProfileRate(1)
		}
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	logger := klog.FromContext(ctx)
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Serving metrics and health stopped", "address", lis.Addr().String())
		}
	}()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	logger.Info("Serving metrics and health", "address", lis.Addr().String())
	return lis.Addr(), nil
}
