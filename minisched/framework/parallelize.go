// This file is the worker pool that Filter and Score run on, node by node.

package framework

import (
	"context"
	"sync"
	"sync/atomic"
)

// DefaultParallelism is the number of goroutines Filter and Score use,
// as kube-scheduler's `parallelism` default.
const DefaultParallelism = 16

// Parallelizer runs a piece of work for indexes 0..n-1 on a bounded number of
// goroutines.
type Parallelizer struct {
	parallelism int
}

// NewParallelizer returns a Parallelizer using parallelism goroutines (at
// least one).
func NewParallelizer(parallelism int) Parallelizer {
	if parallelism < 1 {
		parallelism = 1
	}
	return Parallelizer{parallelism: parallelism}
}

// Until calls work(i) for every i in [0, n) on up to parallelism goroutines
// and returns when all are done or ctx is cancelled (remaining pieces are
// then skipped). Work that wants to stop early cancels ctx.
func (p Parallelizer) Until(ctx context.Context, n int, work func(i int)) {
	if n <= 0 {
		return
	}
	workers := min(p.parallelism, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(workers)
	for range workers {
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				work(i)
			}
		}()
	}
	wg.Wait()
}
