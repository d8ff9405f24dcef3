package noderesources

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/framework"
)

// TestPodRequestsFromState checks that the scorers' requests taken from the
// PodInfo the scheduler records in the cycle's state are the ones computed
// from the pod, for every kind of scored resource and container, with the
// requests as given and with cpu and memory defaulted.
func TestPodRequestsFromState(t *testing.T) {
	list := func(kv ...string) v1.ResourceList {
		l := v1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	ctr := func(name string, reqs v1.ResourceList) v1.Container {
		return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: reqs}}
	}
	all := list("cpu", "250m", "memory", "1Gi", "ephemeral-storage", "3Gi", "hugepages-2Mi", "4Mi", "example.com/gpu", "2")
	sidecar := ctr("side", list("cpu", "100m", "memory", "200Mi", "example.com/gpu", "1"))
	sidecar.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
	pods := []struct {
		name string
		spec v1.PodSpec
	}{
		{name: "every kind of resource", spec: v1.PodSpec{Containers: []v1.Container{ctr("a", all), ctr("b", all)}}},
		{name: "cpu and memory only", spec: v1.PodSpec{Containers: []v1.Container{ctr("a", list("cpu", "100m", "memory", "500Mi"))}}},
		{name: "a container without memory", spec: v1.PodSpec{Containers: []v1.Container{ctr("a", all), ctr("b", list("cpu", "1"))}}},
		{name: "no requests", spec: v1.PodSpec{Containers: []v1.Container{ctr("a", nil)}}},
		{name: "a larger init container and a sidecar", spec: v1.PodSpec{Containers: []v1.Container{ctr("a", all)},
			InitContainers: []v1.Container{sidecar, ctr("init", list("cpu", "2", "memory", "4Gi", "example.com/gpu", "8"))}}},
		{name: "overhead", spec: v1.PodSpec{Containers: []v1.Container{ctr("a", all)}, Overhead: list("cpu", "50m", "memory", "64Mi")}},
		{name: "pod-level requests", spec: v1.PodSpec{Containers: []v1.Container{ctr("a", list("cpu", "100m", "memory", "100Mi"))},
			Resources: &v1.ResourceRequirements{Requests: list("cpu", "1", "memory", "1Gi")}}},
	}
	scored := []configv1.ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1},
		{Name: "ephemeral-storage", Weight: 1}, {Name: "hugepages-2Mi", Weight: 1}, {Name: "example.com/gpu", Weight: 1},
		{Name: "example.com/absent", Weight: 1}}
	for _, p := range pods {
		for _, useRequested := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, useRequested %v", p.name, useRequested), func(t *testing.T) {
				pod := &v1.Pod{Spec: p.spec}
				r := &resourceAllocationScorer{resources: scored, useRequested: useRequested}
				state := framework.NewCycleState()
				state.SetPodInfo(framework.NewPodInfo(pod))
				got, want := r.podRequests(state, pod), r.podRequests(nil, pod)
				if !slices.Equal(got, want) {
					t.Errorf("requests from the state %v, computed %v", got, want)
				}
				// Whether the state was read: a PodInfo with a cpu figure
				// no computation gives shows it.
				marked := framework.NewPodInfo(pod)
				marked.Requests.MilliCPU = -1
				state.SetPodInfo(marked)
				read := r.podRequests(state, pod)[0] == -1
				if wantRead := useRequested || !framework.ContainersMayLackRequests(pod); read != wantRead {
					t.Errorf("requests read from the state: %v, want %v", read, wantRead)
				}
			})
		}
	}
}
