// Package scenario runs minisched's stories against a real apiserver: the
// Runner starts a scheduler per story on a clean cluster and reports where
// each pod went and why, and Env is what a story gets to tell itself with
// (builders, one way to create each kind of object, waits, and the
// scheduler's attempts).
//
// The stories themselves are elsewhere: the chapters' in package chapters,
// those written as YAML in files read by package scenario/scenariofile; the
// cluster they run against is package testenv's.
//
// Stories talk to the apiserver only; the windows into the scheduler are
// the stream of scheduling attempts it reports (to see retries and scores)
// and its /metrics, as Prometheus would scrape them.
//
// Reading order:
//
//	scenario.go   Scenario, the Parts it needs, and Select by name
//	runner.go     Runner: a scheduler per story, a clean cluster, the report
//	parts.go      what a story needs beside its scheduler (Scenario.Parts),
//	              started before it and stopped after it
//	background.go a helper run beside a story, its log lines quieter
//	summary.go    the table that ends a run
//	env.go        Env, what a story gets
//	builders.go   MakeNode, MakePod, MakePVC, Nodes, Numbered
//	objects.go    creating nodes, pods, priority classes, PDBs and any other
//	              object: one code path for Go stories and scenario files
//	waits.go      waiting for the scheduler's decisions, and checking them
//	attempts.go   AttemptLog, and ShowAttempt, which prints one as a table
//	placement.go  where each pod went, at the end of a story
//	config.go     configurations written as YAML, and a profile of chosen plugins
//	extender.go   the example extender, for stories that need one
//	storage.go    kube-controller-manager and the example provisioner, for
//	              stories of volumes; waits on claims and capacity
//	dra.go        the example DRA driver, for stories of devices; waits on
//	              resource claims and slices, and a claim in one line
//	replica.go    a scheduler a story starts itself (leader election, throughput)
//	eviction.go   chapter 18's part: a story's own kube-controller-manager
//	              controllers (Scenario.Controllers), ReplicaSets, taints,
//	              a stopped kubelet, the Eviction API, the descheduler
package scenario
