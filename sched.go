// Command minisched is a small Kubernetes scheduler, built from scratch to
// show how kube-scheduler works inside. Its subcommands live in package app,
// so that your own binary can have them too, with plugins of your own.
//
//	minisched start [--chapter N] [--scenario NAME ...]   run the tutorial's scenarios on an embedded apiserver
//	minisched run --kubeconfig FILE [--config FILE]     schedule pods of a real cluster
//	minisched explain POD [-n NS] [--kubeconfig FILE]   why a pod is pending, or why it went where it did
//	minisched apiserver --kubeconfig-out FILE           start an embedded apiserver to try `run` against
//	minisched annotate --kubeconfig FILE ...            copy node load from Prometheus to annotations
//
// Every subcommand's -h lists its flags, with examples.
package main

import "github.com/minisched/minisched/app"

func main() { app.NewCommand().Main() }
