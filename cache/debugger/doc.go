// Package debugger is the scheduler's cache debugger, kube-scheduler's in
// miniature: on SIGUSR2 it compares the cache with what the informers hold
// (CacheComparer) and dumps the cache's nodes and the queue's pending pods
// to the log (CacheDumper). Tests and the chaos run call the comparer
// directly.
package debugger
