// This file builds pods.

package builders

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodWrapper builds a pod step by step: MakePod().Name("p").Req(...).Obj().
type PodWrapper struct{ v1.Pod }

// MakePod starts a pod in namespace "default", with no containers: each of
// Req, Image and HostPort adds one (named c0, c1, ...), and each of InitReq,
// SidecarReq, InitHostPort and SidecarHostPort adds an init container
// (init0, init1, ...).
func MakePod() *PodWrapper {
	return &PodWrapper{v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault}}}
}

// Obj returns a copy of the pod built so far, so a wrapper can be built on
// and used again.
func (p *PodWrapper) Obj() *v1.Pod { return p.Pod.DeepCopy() }

// Name sets the pod's name.
func (p *PodWrapper) Name(name string) *PodWrapper { p.Pod.Name = name; return p }

// Namespace sets the pod's namespace.
func (p *PodWrapper) Namespace(ns string) *PodWrapper { p.Pod.Namespace = ns; return p }

// UID sets the pod's UID.
func (p *PodWrapper) UID(uid string) *PodWrapper { p.Pod.UID = types.UID(uid); return p }

// Req adds a container requesting the given resources.
func (p *PodWrapper) Req(req map[v1.ResourceName]string) *PodWrapper {
	return p.addContainer(container(PauseImage, req))
}

// Image adds a container running image, requesting nothing.
func (p *PodWrapper) Image(image string) *PodWrapper { return p.addContainer(container(image, nil)) }

// HostPort adds a container exposing hostPort on hostIP ("" for every
// address) over protocol.
func (p *PodWrapper) HostPort(protocol v1.Protocol, hostIP string, hostPort int32) *PodWrapper {
	return p.addContainer(hostPortContainer(protocol, hostIP, hostPort))
}

// InitReq adds a regular (run-to-completion) init container requesting the
// given resources.
func (p *PodWrapper) InitReq(req map[v1.ResourceName]string) *PodWrapper {
	return p.addInitContainer(container(PauseImage, req), nil)
}

// SidecarReq adds a restartable init container (a sidecar, restartPolicy
// Always) requesting the given resources. It keeps running beside the
// regular containers, so its requests add up with theirs.
func (p *PodWrapper) SidecarReq(req map[v1.ResourceName]string) *PodWrapper {
	return p.addInitContainer(container(PauseImage, req), ptrTo(v1.ContainerRestartPolicyAlways))
}

// InitHostPort adds an ordinary (run-to-completion) init container exposing
// hostPort.
func (p *PodWrapper) InitHostPort(protocol v1.Protocol, hostIP string, hostPort int32) *PodWrapper {
	return p.addInitContainer(hostPortContainer(protocol, hostIP, hostPort), nil)
}

// SidecarHostPort adds a sidecar (an init container with restartPolicy
// Always) exposing hostPort.
func (p *PodWrapper) SidecarHostPort(protocol v1.Protocol, hostIP string, hostPort int32) *PodWrapper {
	return p.addInitContainer(hostPortContainer(protocol, hostIP, hostPort), ptrTo(v1.ContainerRestartPolicyAlways))
}

// Overhead sets the pod's runtime-class overhead.
func (p *PodWrapper) Overhead(o map[v1.ResourceName]string) *PodWrapper {
	p.Spec.Overhead = ResourceList(o)
	return p
}

// Priority sets the pod's resolved priority.
func (p *PodWrapper) Priority(prio int32) *PodWrapper { p.Spec.Priority = &prio; return p }

// PriorityClassName sets spec.priorityClassName (the apiserver resolves it
// into spec.priority).
func (p *PodWrapper) PriorityClassName(name string) *PodWrapper {
	p.Spec.PriorityClassName = name
	return p
}

// SchedulerName sets spec.schedulerName.
func (p *PodWrapper) SchedulerName(name string) *PodWrapper { p.Spec.SchedulerName = name; return p }

// NodeName sets spec.nodeName (the pod is bound, or asks for that node).
func (p *PodWrapper) NodeName(name string) *PodWrapper { p.Spec.NodeName = name; return p }

// NominatedNodeName sets status.nominatedNodeName.
func (p *PodWrapper) NominatedNodeName(name string) *PodWrapper {
	p.Status.NominatedNodeName = name
	return p
}

// PreemptionPolicy sets spec.preemptionPolicy (Never: the pod waits rather
// than preempt).
func (p *PodWrapper) PreemptionPolicy(policy v1.PreemptionPolicy) *PodWrapper {
	p.Spec.PreemptionPolicy = &policy
	return p
}

// TerminationGracePeriod sets spec.terminationGracePeriodSeconds.
func (p *PodWrapper) TerminationGracePeriod(seconds int64) *PodWrapper {
	p.Spec.TerminationGracePeriodSeconds = &seconds
	return p
}

// Label adds a label to the pod.
func (p *PodWrapper) Label(k, v string) *PodWrapper {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}

// OwnerReference makes kind/name (with uid) the pod's controller.
func (p *PodWrapper) OwnerReference(kind, name string, uid types.UID) *PodWrapper {
	p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
		APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: ptrTo(true),
	})
	return p
}

// Toleration adds a toleration.
func (p *PodWrapper) Toleration(t v1.Toleration) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, t)
	return p
}

// NodeSelector adds a spec.nodeSelector entry.
func (p *PodWrapper) NodeSelector(k, v string) *PodWrapper {
	if p.Spec.NodeSelector == nil {
		p.Spec.NodeSelector = map[string]string{}
	}
	p.Spec.NodeSelector[k] = v
	return p
}

// Affinity sets the pod's whole affinity.
func (p *PodWrapper) Affinity(a *v1.Affinity) *PodWrapper { p.Spec.Affinity = a; return p }

// NodeAffinity sets the pod's node affinity.
func (p *PodWrapper) NodeAffinity(na *v1.NodeAffinity) *PodWrapper {
	p.ensureAffinity().NodeAffinity = na
	return p
}

// PodAffinity sets the pod's pod affinity.
func (p *PodWrapper) PodAffinity(pa *v1.PodAffinity) *PodWrapper {
	p.ensureAffinity().PodAffinity = pa
	return p
}

// PodAntiAffinity sets the pod's pod anti-affinity.
func (p *PodWrapper) PodAntiAffinity(paa *v1.PodAntiAffinity) *PodWrapper {
	p.ensureAffinity().PodAntiAffinity = paa
	return p
}

// ensureAffinity returns the pod's affinity, creating it.
func (p *PodWrapper) ensureAffinity() *v1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	return p.Spec.Affinity
}

// SpreadConstraint adds a topology spread constraint.
func (p *PodWrapper) SpreadConstraint(c v1.TopologySpreadConstraint) *PodWrapper {
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	return p
}

// SchedulingGates adds scheduling gates.
func (p *PodWrapper) SchedulingGates(names ...string) *PodWrapper {
	for _, n := range names {
		p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, v1.PodSchedulingGate{Name: n})
	}
	return p
}

// PodGroup makes the pod a member of the PodGroup name
// (spec.schedulingGroup.podGroupName), in the pod's namespace.
func (p *PodWrapper) PodGroup(name string) *PodWrapper {
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &name}
	return p
}

// Condition adds a true status condition (a status-only change).
func (p *PodWrapper) Condition(t v1.PodConditionType) *PodWrapper {
	p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: t, Status: v1.ConditionTrue})
	return p
}

// StartTime sets status.startTime, which a kubelet sets when the pod
// starts; preemption evicts the pods that started later first.
func (p *PodWrapper) StartTime(t time.Time) *PodWrapper {
	p.Status.StartTime = &metav1.Time{Time: t}
	return p
}

// ptrTo returns a pointer to a copy of v.
func ptrTo[T any](v T) *T { return &v }

// PVC adds a volume named after claimName that mounts that
// PersistentVolumeClaim (in the pod's namespace).
func (p *PodWrapper) PVC(claimName string) *PodWrapper {
	return p.Volume(v1.Volume{Name: claimName, VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}})
}

// EphemeralVolume adds a generic ephemeral volume named name whose claim
// template requests storage of storageClass; the ephemeral-volume
// controller creates its claim, named <pod>-<name>.
func (p *PodWrapper) EphemeralVolume(name, storageClass, storage string) *PodWrapper {
	return p.Volume(v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{
		VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: &storageClass,
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceStorage: resource.MustParse(storage)}},
		}}}}})
}

// Volume adds a volume of any kind (an inline disk, a configMap...).
func (p *PodWrapper) Volume(v v1.Volume) *PodWrapper {
	p.Spec.Volumes = append(p.Spec.Volumes, v)
	return p
}
