// This file is the CacheDebugger: New wires the comparer and the dumper to
// the scheduler's listers, cache and queue, and ListenForSignal runs both on
// SIGUSR2.

package debugger

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/queue"
)

// compareSignal makes a debugger that listens for it (ListenForSignal) log
// the comparer's result and the dumper's dump: `kill -USR2 <pid>`, the
// signal kube-scheduler uses.
const compareSignal = syscall.SIGUSR2

// CacheDebugger checks the scheduler's cache against its informers and
// writes the cache and the queue to the log, for debugging.
type CacheDebugger struct {
	// Comparer finds what differs between the cache and the informers.
	Comparer CacheComparer
	// Dumper logs the cache's nodes and the queue's pending pods.
	Dumper CacheDumper
}

// New builds a CacheDebugger for a scheduler. nodeLister and podLister must
// read the informers whose events feed cache and podQueue; a lister over
// other informers would report their lag as differences.
func New(nodeLister corelisters.NodeLister, podLister corelisters.PodLister,
	cache *cache.Cache, podQueue *queue.PriorityQueue) *CacheDebugger {
	return &CacheDebugger{
		Comparer: CacheComparer{nodeLister: nodeLister, podLister: podLister, cache: cache},
		Dumper:   CacheDumper{cache: cache, podQueue: podQueue},
	}
}

// ListenForSignal makes the debugger log the comparer's result and the
// dumper's dump each time the process receives SIGUSR2, until ctx is done,
// as kube-scheduler does. It returns at once; the signal is caught from then
// on (SIGUSR2 would otherwise end the process).
func (d *CacheDebugger) ListenForSignal(ctx context.Context) {
	logger := klog.FromContext(ctx)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, compareSignal)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				d.Comparer.logComparison(logger)
				d.Dumper.DumpAll(logger)
			}
		}
	}()
}
