// This file holds the options of New: the clock, the two durations that
// shape backoff, the nominator's pod lister and the metrics.

package queue

import (
	"time"

	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/clock"

	"github.com/minisched/minisched/minisched/metrics"
)

// Defaults, as in kube-scheduler.
const (
	// DefaultPodInitialBackoffDuration is the backoff after a pod's first
	// failed attempt.
	DefaultPodInitialBackoffDuration = 1 * time.Second
	// DefaultPodMaxBackoffDuration caps the doubling backoff.
	DefaultPodMaxBackoffDuration = 10 * time.Second
)

// Option configures New.
type Option func(*options)

type options struct {
	clock                     clock.WithTicker
	podLister                 corelisters.PodLister
	podInitialBackoffDuration time.Duration
	podMaxBackoffDuration     time.Duration
	metrics                   *metrics.Metrics
	podGroups                 bool
}

func defaultOptions() options {
	return options{
		clock:                     clock.RealClock{},
		podInitialBackoffDuration: DefaultPodInitialBackoffDuration,
		podMaxBackoffDuration:     DefaultPodMaxBackoffDuration,
	}
}

// WithClock sets the clock behind timestamps, backoff and the flush tickers.
// Tests pass a k8s.io/utils/clock/testing.FakeClock and step it.
func WithClock(c clock.WithTicker) Option {
	return func(o *options) { o.clock = c }
}

// WithPodLister lets the nominator check that a pod still exists and is
// not bound before nominating it (the informer's lister; tests may omit it).
func WithPodLister(l corelisters.PodLister) Option {
	return func(o *options) { o.podLister = l }
}

// WithPodInitialBackoffDuration sets the backoff after the first failed
// attempt (default 1s).
func WithPodInitialBackoffDuration(d time.Duration) Option {
	return func(o *options) { o.podInitialBackoffDuration = d }
}

// WithMetrics counts the pods entering each part of the queue
// (scheduler_queue_incoming_pods_total); nil counts nothing.
func WithMetrics(m *metrics.Metrics) Option {
	return func(o *options) { o.metrics = m }
}

// WithPodMaxBackoffDuration caps the backoff (default 10s).
func WithPodMaxBackoffDuration(d time.Duration) Option {
	return func(o *options) { o.podMaxBackoffDuration = d }
}

// WithPodGroups queues the members of a PodGroup as one entity
// (podgroups.go): kube-scheduler's GenericWorkload gate. Without it a pod
// naming a PodGroup queues as any other pod.
func WithPodGroups() Option {
	return func(o *options) { o.podGroups = true }
}
