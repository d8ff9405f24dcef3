// Package testenv is the embedded cluster that scenarios and integration
// tests run against: a real etcd and kube-apiserver (envtest), KWOK playing
// the kubelets when pods must run and terminate, kube-controller-manager
// with the controllers that finish what the storage and DRA plugins start
// (and those that make pods leave, for chapter 18), the descheduler, and a
// scraper for a scheduler's /metrics.
//
// It knows nothing of the scheduler: no package of minisched's scheduler
// (minisched, scheduler, plugins, queue, cache) is imported here, so that
// any package can test against an apiserver without compiling the stories.
//
// Reading order:
//
//	environment.go  Environment: StartEnvironment, RunWithEnvironment, Stop,
//	                CrashAPIServer and StartAPIServer
//	binaries.go     where the binaries are: AssetsDir, RepoRoot
//	process.go      a helper process beside the apiserver, with a kubeconfig
//	                and a log file of its own: what KWOK and
//	                kube-controller-manager run as
//	kwok.go         KWOK: StartKWOK, StartKWOKWith (node Leases), and
//	                MemoryPressureLabel (kwokstages/, a stage of our own)
//	controllermanager.go
//	                kube-controller-manager: StartControllerManager,
//	                StorageControllers, DRAControllers
//	eviction.go     the controllers that make pods leave: KnownControllers,
//	                CheckControllers, NodeMonitor
//	descheduler.go  RunDescheduler: the descheduler, once
//	metrics.go      Metrics: Scrape, Value, Quantile
package testenv
