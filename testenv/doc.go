// Package testenv is the embedded cluster that scenarios and integration
// tests run against: a real etcd and kube-apiserver (envtest), KWOK playing
// the kubelets when pods must run and terminate, kube-controller-manager
// with the controllers that finish what the storage and DRA plugins start,
// and a scraper for a scheduler's /metrics.
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
//	kwok.go         KWOK: StartKWOK
//	controllermanager.go
//	                kube-controller-manager: StartControllerManager,
//	                StorageControllers, DRAControllers
//	metrics.go      Metrics: Scrape, Value, Quantile
package testenv
