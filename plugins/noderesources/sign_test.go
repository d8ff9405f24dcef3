// Tests for the SignPod of NodeResourcesFit and
// NodeResourcesBalancedAllocation, which sign alike.
package noderesources

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// signers builds both plugins, on a handle giving m (none when m is nil).
func signers(t *testing.T, m *testDRAManager) map[string]framework.SignPlugin {
	t.Helper()
	var h framework.Handle
	if m != nil {
		h = draHandle{m: m}
	}
	ba, err := NewBalancedAllocation(context.Background(), nil, h)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]framework.SignPlugin{
		Name:                   newDRAFit(t, nil, m),
		BalancedAllocationName: ba.(*BalancedAllocation),
	}
}

// resourcesFragment is the fragment for the effective requests r.
func resourcesFragment(r framework.Resource) []framework.SignFragment {
	return []framework.SignFragment{{Key: "v1.Pod.Spec.ContainerRequestsAndOverheads()", Value: r}}
}

// withPodLevel sets pod-level requests on pod.
func withPodLevel(pod *v1.Pod, req res) *v1.Pod {
	pod.Spec.Resources = &v1.ResourceRequirements{Requests: v1.ResourceList{}}
	for name, q := range req {
		pod.Spec.Resources.Requests[name] = resource.MustParse(q)
	}
	return pod
}

func TestSignPod(t *testing.T) {
	refused := framework.NewStatus(framework.Unschedulable,
		"signature disabled when dra extended resources are used in the cluster")
	// Cases whatever the DRA manager says.
	common := []plugintesting.SignCase{
		{
			Name: "best-effort pod",
			Pod:  st.MakePod().Name("p").Image("nginx").Obj(),
			Want: resourcesFragment(framework.Resource{}),
		},
		{
			Name: "cpu and memory",
			Pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "1", v1.ResourceMemory: "2Gi"}).Obj(),
			Want: resourcesFragment(framework.Resource{MilliCPU: 1000, Memory: 2 << 30}),
		},
		{
			Name: "containers summed, the largest init container, overhead",
			Pod: st.MakePod().Name("p").Req(res{v1.ResourceCPU: "500m"}).
				Req(res{v1.ResourceCPU: "500m", v1.ResourceMemory: "1000", v1.ResourceEphemeralStorage: "1Gi"}).
				InitReq(res{v1.ResourceCPU: "2"}).InitReq(res{v1.ResourceCPU: "1500m"}).
				Overhead(res{v1.ResourceCPU: "100m", v1.ResourceMemory: "24"}).Obj(),
			Want: resourcesFragment(framework.Resource{MilliCPU: 2100, Memory: 1024, EphemeralStorage: 1 << 30}),
		},
		{
			Name: "pod-level requests win over the containers'",
			Pod: withPodLevel(st.MakePod().Name("p").Req(res{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi"}).Obj(),
				res{v1.ResourceCPU: "3", v1.ResourceMemory: "2Gi"}),
			Want: resourcesFragment(framework.Resource{MilliCPU: 3000, Memory: 2 << 30}),
		},
		{
			Name: "an extended resource no class backs",
			Pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "1", gpu: "2"}).Obj(),
			Want: resourcesFragment(framework.Resource{MilliCPU: 1000,
				ScalarResources: map[v1.ResourceName]int64{gpu: 2}}),
		},
	}
	tests := []struct {
		name  string
		dra   *testDRAManager
		cases []plugintesting.SignCase
	}{
		{
			name: "without DRA",
			cases: slices.Concat(common, []plugintesting.SignCase{{
				Name: "an extended resource, no classes to back it",
				Pod:  st.MakePod().Name("p").Req(res{draResource: "1"}).Obj(),
				Want: resourcesFragment(framework.Resource{ScalarResources: map[v1.ResourceName]int64{draResource: 1}}),
			}}),
		},
		{
			name: "with a DeviceClass backing an extended resource",
			dra:  newTestDRAManager(t, []*resourceapi.DeviceClass{deviceClass(gpuClass, draResource)}, nil, nil),
			cases: slices.Concat(common, []plugintesting.SignCase{
				{
					Name:       "the backed resource",
					Pod:        st.MakePod().Name("p").Req(res{v1.ResourceCPU: "1", draResource: "1"}).Obj(),
					WantStatus: refused,
				},
				{
					Name:       "the class's implicit resource name",
					Pod:        st.MakePod().Name("p").Req(res{implicitResource: "2"}).Obj(),
					WantStatus: refused,
				},
				{
					Name:       "the backed resource beside another extended resource",
					Pod:        st.MakePod().Name("p").Req(res{gpu: "1"}).Req(res{draResource: "1"}).Obj(),
					WantStatus: refused,
				},
				{
					Name: "none of the backed resource",
					Pod:  st.MakePod().Name("p").Req(res{v1.ResourceCPU: "1", draResource: "0"}).Obj(),
					Want: resourcesFragment(framework.Resource{MilliCPU: 1000,
						ScalarResources: map[v1.ResourceName]int64{draResource: 0}}),
				},
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for name, pl := range signers(t, tt.dra) {
				t.Run(name, func(t *testing.T) {
					plugintesting.RunSignCases(t, pl, tt.cases)
				})
			}
		})
	}
}

func TestSignPodPairs(t *testing.T) {
	pairs := []plugintesting.SignPair{
		{
			Name: "the same requests split over containers",
			A:    st.MakePod().Name("a").Req(res{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi"}).Obj(),
			B: st.MakePod().Name("b").Req(res{v1.ResourceCPU: "500m", v1.ResourceMemory: "512Mi"}).
				Req(res{v1.ResourceCPU: "500m", v1.ResourceMemory: "512Mi"}).Label("app", "web").Obj(),
			Same: true,
		},
		{
			Name: "an init container smaller than the containers",
			A:    st.MakePod().Name("a").Req(res{v1.ResourceCPU: "1"}).Obj(),
			B:    st.MakePod().Name("b").Req(res{v1.ResourceCPU: "1"}).InitReq(res{v1.ResourceCPU: "500m"}).Obj(),
			Same: true,
		},
		{
			// Score counts a container without requests as asking for
			// 100m and 200Mi; kube-scheduler signs the sum all the same.
			Name: "one more container without requests, as kube-scheduler signs it",
			A:    st.MakePod().Name("a").Req(res{v1.ResourceCPU: "1"}).Obj(),
			B:    st.MakePod().Name("b").Req(res{v1.ResourceCPU: "1"}).Image("nginx").Obj(),
			Same: true,
		},
		{
			Name: "more memory",
			A:    st.MakePod().Name("a").Req(res{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi"}).Obj(),
			B:    st.MakePod().Name("a").Req(res{v1.ResourceCPU: "1", v1.ResourceMemory: "2Gi"}).Obj(),
		},
		{
			Name: "a sidecar adds up, an init container does not",
			A:    st.MakePod().Name("a").Req(res{v1.ResourceCPU: "1"}).InitReq(res{v1.ResourceCPU: "1"}).Obj(),
			B:    st.MakePod().Name("a").Req(res{v1.ResourceCPU: "1"}).SidecarReq(res{v1.ResourceCPU: "1"}).Obj(),
		},
		{
			Name: "overhead",
			A:    st.MakePod().Name("a").Req(res{v1.ResourceCPU: "1"}).Obj(),
			B:    st.MakePod().Name("a").Req(res{v1.ResourceCPU: "1"}).Overhead(res{v1.ResourceCPU: "100m"}).Obj(),
		},
		{
			Name: "an extended resource",
			A:    st.MakePod().Name("a").Req(res{v1.ResourceCPU: "1"}).Obj(),
			B:    st.MakePod().Name("a").Req(res{v1.ResourceCPU: "1", gpu: "1"}).Obj(),
		},
	}
	for name, pl := range signers(t, nil) {
		t.Run(name, func(t *testing.T) {
			plugintesting.RunSignPairs(t, pl, pairs)
		})
	}
}
