// Command minisched is a small Kubernetes scheduler, built from scratch to
// show how kube-scheduler works inside. Its subcommands live in package app,
// so that your own binary can have them too, with plugins of your own.
//
//	minisched start [--scenario NAME ...] [--config FILE]   run the scenarios on an embedded apiserver
//	minisched run --kubeconfig FILE [--config FILE]         schedule pods of a real cluster
//	minisched apiserver --kubeconfig-out FILE               start an embedded apiserver to try `run` against
package main

import "github.com/minisched/minisched/app"

func main() { app.NewCommand().Main() }
