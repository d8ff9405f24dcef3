// This file tests a pod's requests: NewPodInfo's, and those a cycle's state
// hands out.

package framework

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"
)

// TestNonZeroRequests checks NewPodInfo's NonZeroRequests against
// component-helpers' computation with the cpu and memory defaults always
// given, which NewPodInfo leaves out when no container could lack them
// (ContainersMayLackRequests).
func TestNonZeroRequests(t *testing.T) {
	both := v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("1Gi")}
	cpuOnly := v1.ResourceList{v1.ResourceCPU: resource.MustParse("300m")}
	memOnly := v1.ResourceList{v1.ResourceMemory: resource.MustParse("300Mi")}
	ctr := func(name string, reqs v1.ResourceList) v1.Container {
		return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: reqs}}
	}
	sidecar := func(name string, reqs v1.ResourceList) v1.Container {
		c := ctr(name, reqs)
		c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
		return c
	}
	tests := []struct {
		name       string
		spec       v1.PodSpec
		status     v1.PodStatus
		mayLack    bool
		wantCPU    int64
		wantMemory int64
	}{
		{name: "every container requests both", spec: v1.PodSpec{Containers: []v1.Container{ctr("a", both), ctr("b", both)}},
			wantCPU: 500, wantMemory: 2 << 30},
		{name: "no requests", spec: v1.PodSpec{Containers: []v1.Container{ctr("a", nil)}}, mayLack: true,
			wantCPU: DefaultMilliCPURequest, wantMemory: DefaultMemoryRequest},
		{name: "one container without memory", spec: v1.PodSpec{Containers: []v1.Container{ctr("a", both), ctr("b", cpuOnly)}},
			mayLack: true, wantCPU: 550, wantMemory: 1<<30 + DefaultMemoryRequest},
		{name: "one container without cpu", spec: v1.PodSpec{Containers: []v1.Container{ctr("a", memOnly)}},
			mayLack: true, wantCPU: DefaultMilliCPURequest, wantMemory: 300 << 20},
		{name: "an init container without requests", spec: v1.PodSpec{
			Containers: []v1.Container{ctr("a", both)}, InitContainers: []v1.Container{ctr("init", nil)}},
			mayLack: true, wantCPU: 250, wantMemory: 1 << 30},
		{name: "a sidecar with requests", spec: v1.PodSpec{
			Containers: []v1.Container{ctr("a", both)}, InitContainers: []v1.Container{sidecar("side", both)}},
			wantCPU: 500, wantMemory: 2 << 30},
		{name: "a sidecar without requests", spec: v1.PodSpec{
			Containers: []v1.Container{ctr("a", both)}, InitContainers: []v1.Container{sidecar("side", nil)}},
			mayLack: true, wantCPU: 250 + DefaultMilliCPURequest, wantMemory: 1<<30 + DefaultMemoryRequest},
		{name: "overhead", spec: v1.PodSpec{Containers: []v1.Container{ctr("a", both)}, Overhead: both},
			wantCPU: 500, wantMemory: 2 << 30},
		{name: "pod-level requests, containers without", spec: v1.PodSpec{
			Containers: []v1.Container{ctr("a", nil)}, Resources: &v1.ResourceRequirements{Requests: both}},
			mayLack: true, wantCPU: 250, wantMemory: 1 << 30},
		{name: "container statuses", spec: v1.PodSpec{Containers: []v1.Container{ctr("a", both)}},
			status:  v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "a"}}},
			mayLack: true, wantCPU: 250, wantMemory: 1 << 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: tt.spec, Status: tt.status}
			if got := ContainersMayLackRequests(pod); got != tt.mayLack {
				t.Errorf("ContainersMayLackRequests = %v, want %v", got, tt.mayLack)
			}
			opts := podResourcesOptions()
			opts.NonMissingContainerRequests = nonMissingContainerRequests(resourcehelper.PodRequests(pod, opts),
				resourcehelper.IsPodLevelRequestsSet(pod))
			reference := resourcehelper.PodRequests(pod, opts)
			got := NewPodInfo(pod).NonZeroRequests
			if got.MilliCPU != reference.Cpu().MilliValue() || got.Memory != reference.Memory().Value() {
				t.Errorf("NonZeroRequests = %d m, %d bytes; component-helpers with the defaults: %d m, %d bytes",
					got.MilliCPU, got.Memory, reference.Cpu().MilliValue(), reference.Memory().Value())
			}
			if got.MilliCPU != tt.wantCPU || got.Memory != tt.wantMemory {
				t.Errorf("NonZeroRequests = %d m, %d bytes, want %d m, %d bytes", got.MilliCPU, got.Memory, tt.wantCPU, tt.wantMemory)
			}
		})
	}
}

// TestCycleStatePodRequests checks that a cycle's state hands out the
// requests of the PodInfo the scheduler recorded only for that PodInfo's
// pod object, and that a cloned state keeps it.
func TestCycleStatePodRequests(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), "example.com/gpu": resource.MustParse("2")}}}}}}
	recorded := func() *CycleState {
		s := NewCycleState()
		s.SetPodInfo(NewPodInfo(pod))
		return s
	}
	tests := []struct {
		name   string
		state  *CycleState
		pod    *v1.Pod
		wantOK bool
	}{
		{name: "no state", state: nil, pod: pod},
		{name: "nothing recorded", state: NewCycleState(), pod: pod},
		{name: "the recorded pod", state: recorded(), pod: pod, wantOK: true},
		{name: "an equal copy of it", state: recorded(), pod: pod.DeepCopy()},
		{name: "a clone of the state", state: recorded().Clone(), pod: pod, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.state.PodRequests(tt.pod)
			if ok != tt.wantOK {
				t.Fatalf("PodRequests ok = %v, want %v", ok, tt.wantOK)
			}
			if !ok {
				return
			}
			want := PodRequests(tt.pod)
			if got.MilliCPU != want.MilliCPU || got.Memory != want.Memory ||
				got.ScalarResources["example.com/gpu"] != want.ScalarResources["example.com/gpu"] {
				t.Errorf("PodRequests = %+v, want %+v", got, want)
			}
		})
	}
}
