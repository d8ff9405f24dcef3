// This file is the contract of HTTP extenders, the scheduling policies that
// live outside the scheduler.

package framework

import (
	v1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// An Extender is a scheduling policy that lives outside the scheduler,
// behind HTTP: kube-scheduler's older way to customise scheduling, still
// run by many clusters. Extenders are configured once for all profiles
// (the configuration's extenders list) and take part in four places of
// the cycle:
//
//	Filter plugins → extenders' Filter, one after another on the shrinking list
//	Score plugins  + extenders' Prioritize (score × weight × 10), when >1 node is feasible
//	Bind           → the first interested binder binds instead of the Bind plugins
//	preemption     → after the dry run, each preempting extender trims candidates and victims
//
// An extender is consulted only for pods it IsInterested in. A failing
// extender that IsIgnorable is skipped (ignorable extenders come last);
// any other failure fails the attempt as a scheduler error, except in
// Prioritize, whose errors only cost the extender its say.
type Extender interface {
	// Name identifies the extender in logs and scores (its URL prefix).
	Name() string
	// IsIgnorable says a failure of this extender must not fail the attempt.
	IsIgnorable() bool
	// IsInterested says whether the extender wants to see pod: always when
	// it manages no resources, otherwise when a container or init container
	// of the pod requests or limits one of them.
	IsInterested(pod *v1.Pod) bool

	// IsFilter, IsPrioritizer and IsBinder say which verbs are configured;
	// SupportsPreemption says whether the preempt verb is.
	IsFilter() bool
	IsPrioritizer() bool
	IsBinder() bool
	SupportsPreemption() bool

	// Filter returns the nodes of nodes that pass, and the reasons of the
	// ones that do not: failed (Unschedulable, preemption may help) and
	// failedAndUnresolvable (UnschedulableAndUnresolvable). The passing
	// nodes must be a subset of nodes.
	Filter(pod *v1.Pod, nodes []*NodeInfo) (passed []*NodeInfo,
		failed, failedAndUnresolvable extenderv1.FailedNodesMap, err error)
	// Prioritize scores nodes from 0 to extenderv1.MaxExtenderPriority and
	// returns the extender's weight.
	Prioritize(pod *v1.Pod, nodes []*NodeInfo) (*extenderv1.HostPriorityList, int64, error)
	// Bind binds the pod to binding.Target.
	Bind(binding *v1.Binding) error
	// ProcessPreemption returns the candidates it keeps, each with the
	// victims it agrees to, from the dry run's nodeNameToVictims (which it
	// must not change). nodeInfos resolves the victims it names by UID.
	ProcessPreemption(pod *v1.Pod, nodeNameToVictims map[string]*extenderv1.Victims,
		nodeInfos NodeInfoLister) (map[string]*extenderv1.Victims, error)
}

// ExtenderName stands for all extenders among a pod's unschedulable
// plugins when an extender rejected some nodes. Extenders register no
// events, so every cluster event may make such a pod schedulable.
const ExtenderName = "Extender"
