// This file builds PodGroups (scheduling.k8s.io/v1beta1), for gang
// scheduling (chapter 19).

package builders

import (
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodGroupWrapper builds a PodGroup step by step.
type PodGroupWrapper struct{ schedulingv1beta1.PodGroup }

// MakePodGroup starts a PodGroup in namespace "default" with the basic
// policy; Gang turns it into a gang.
func MakePodGroup() *PodGroupWrapper {
	pg := &PodGroupWrapper{}
	pg.PodGroup.Namespace = metav1.NamespaceDefault
	pg.Spec.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
	return pg
}

// Obj returns a copy of the PodGroup built so far.
func (pg *PodGroupWrapper) Obj() *schedulingv1beta1.PodGroup { return pg.PodGroup.DeepCopy() }

// Name sets the name.
func (pg *PodGroupWrapper) Name(name string) *PodGroupWrapper { pg.PodGroup.Name = name; return pg }

// Namespace sets the namespace.
func (pg *PodGroupWrapper) Namespace(ns string) *PodGroupWrapper {
	pg.PodGroup.Namespace = ns
	return pg
}

// Gang makes it a gang that is placed only with at least minCount members.
func (pg *PodGroupWrapper) Gang(minCount int32) *PodGroupWrapper {
	pg.Spec.SchedulingPolicy = schedulingv1beta1.PodGroupSchedulingPolicy{
		Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}}
	return pg
}

// Priority sets spec.priority, as the apiserver's Priority admission
// resolves it from priorityClassName (a test without an apiserver sets it
// itself).
func (pg *PodGroupWrapper) Priority(p int32) *PodGroupWrapper { pg.Spec.Priority = &p; return pg }

// PriorityClassName sets spec.priorityClassName, which the apiserver
// resolves to spec.priority.
func (pg *PodGroupWrapper) PriorityClassName(name string) *PodGroupWrapper {
	pg.Spec.PriorityClassName = name
	return pg
}

// TopologyKey asks for the whole group in one domain of the node label key
// (TopologyAwareWorkloadScheduling).
func (pg *PodGroupWrapper) TopologyKey(key string) *PodGroupWrapper {
	pg.Spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{
		Topology: []schedulingv1beta1.TopologyConstraint{{Key: key}}}
	return pg
}

// DisruptionModeAll makes the group's pods disrupted together
// (spec.disruptionMode.all): preemption evicts all of its scheduled pods
// or none.
func (pg *PodGroupWrapper) DisruptionModeAll() *PodGroupWrapper {
	pg.Spec.DisruptionMode = &schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}}
	return pg
}

// UID sets the UID (a test without an apiserver sets it itself).
func (pg *PodGroupWrapper) UID(uid string) *PodGroupWrapper {
	pg.PodGroup.UID = types.UID(uid)
	return pg
}
