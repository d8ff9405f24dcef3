package builders_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/minisched/minisched/builders"
)

// Each method that adds a container adds one of its own, named by its
// index and running PauseImage; an extended resource's request is also its
// limit, as the apiserver requires.
func ExampleMakePod() {
	pod := builders.MakePod().Name("p").
		Req(map[v1.ResourceName]string{v1.ResourceCPU: "500m", "example.com/gpu": "1"}).
		HostPort(v1.ProtocolTCP, "", 8080).
		SidecarReq(map[v1.ResourceName]string{v1.ResourceCPU: "100m"}).
		Obj()
	fmt.Println(pod.Namespace + "/" + pod.Name)
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		gpu := c.Resources.Limits["example.com/gpu"]
		fmt.Printf("%s %s cpu=%s gpu-limit=%s ports=%d\n", c.Name, c.Image, c.Resources.Requests.Cpu(), &gpu,
			len(c.Ports))
	}
	// Output:
	// default/p
	// init0 registry.k8s.io/pause:3.10 cpu=100m gpu-limit=0 ports=0
	// c0 registry.k8s.io/pause:3.10 cpu=500m gpu-limit=1 ports=0
	// c1 registry.k8s.io/pause:3.10 cpu=0 gpu-limit=0 ports=1
}

// A node has room for DefaultPodCapacity pods unless Capacity says
// otherwise, and Capacity sets allocatable too.
func ExampleMakeNode() {
	node := builders.MakeNode().Name("n").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "4"}).Zone("a").Obj()
	fmt.Println(node.Name, node.Labels[v1.LabelTopologyZone], node.Status.Allocatable.Cpu(),
		node.Status.Allocatable.Pods())
	// Output:
	// n a 4 110
}
