// Package scheduler is the service that turns a KubeSchedulerConfiguration
// into a running minisched (the talk's scheduler.Service): it loads, defaults
// and validates the configuration (config.go, defaults.go), then New builds
// the clients, one framework per profile, the queue, the cache and the
// informers, and wires them into a minisched.Scheduler; Run checks the
// apiserver, starts events and informers, runs the Scheduler and stops it
// gracefully (service.go).
//
// The scheduler itself (the loop, its event handlers, failure handling) is
// package minisched; its contract with plugins is minisched/framework.
package scheduler
