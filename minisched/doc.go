// Package minisched is the scheduler being built: the Scheduler takes pods
// from the queue one at a time, runs the scheduling cycle with the pod's
// profile (a framework.Framework), and binds in the background. Its event
// handlers keep the cache and the queue in step with the apiserver, and its
// failure handling puts back every pod that could not be placed.
//
// Read it in this order: scheduler.go (the struct and Run), eventhandlers.go
// (how the world gets in), schedule_one.go (one pod's way through the
// extension points), failure.go (what happens when it does not fit),
// observer.go (how an attempt is told to a watcher).
//
// Its contract with plugins is the sub-package framework. Package scheduler
// is the service that builds a Scheduler from a configuration and runs it.
package minisched
