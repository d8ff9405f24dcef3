// Package chapters is the tutorial's stories, one file per chapter of
// docs/, and the scheduler as it stands at each chapter (ChapterPlugins,
// ChapterConfig). Each story uses only package scenario's helpers (and
// testenv's) and those of its own file: a reader of chapter 13 opens
// ch13_practice.go.
//
// Stories the YAML format can tell are files of scenarios/ at the
// repository's root instead (docs/scenarios.md), read by Stories beside the
// Go ones; chapters 2 and 3 are told there only.
//
//	config.go                the scheduler of each chapter
//	stories.go               All (the Go stories) and Stories (with the files)
//	ch01_random.go           ch1-random
//	scenarios/ch2-*.yaml     ch2-nodeunschedulable
//	scenarios/ch3-*.yaml     ch3-nodenumber
//	ch04_cyclestate.go       ch4-cyclestate
//	ch05_permit.go           ch5-permit
//	ch06_cache.go            ch6-assume
//	ch07_queue.go            ch7-backoff
//	ch08_events.go           ch8-events
//	ch09_default_plugins.go  the default plugins (and scenarios/ch9-*.yaml)
//	ch10_preemption.go       preemption, PDBs, nominated nodes
//	ch11_profiles.go         ch11-profiles
//	ch12_extending.go        ch12-extender
//	ch13_practice.go         StatefulSetOrdinal and Dynamic
//	ch14_real_cluster.go     ch14-leader-election
//	ch15_performance.go      ch15-throughput
//	ch16_volumes.go          the storage plugins, with kube-controller-manager
//	ch17_devices.go          claims in flight and binding conditions (and scenarios/ch17-*.yaml)
//	ch18_eviction.go         taints, a dead kubelet, pressure, the Eviction API (real controllers)
package chapters
