// This file builds the containers that PodWrapper's methods add.

package builders

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// PauseImage is the image of every container the builders add, unless
// PodWrapper.Image names another.
const PauseImage = "registry.k8s.io/pause:3.10"

// container returns a container running image and requesting req. A
// resource that cannot be overcommitted (an extended resource such as
// example.com/gpu, or huge pages) also gets req as its limit, as the
// apiserver requires; the scheduler reads requests only.
func container(image string, req map[v1.ResourceName]string) v1.Container {
	c := v1.Container{Image: image, Resources: v1.ResourceRequirements{Requests: ResourceList(req)}}
	for res, q := range c.Resources.Requests {
		if overcommitAllowed(res) {
			continue
		}
		if c.Resources.Limits == nil {
			c.Resources.Limits = v1.ResourceList{}
		}
		c.Resources.Limits[res] = q.DeepCopy()
	}
	return c
}

// hostPortContainer returns a pause container exposing hostPort (as its
// container port too) on hostIP.
func hostPortContainer(protocol v1.Protocol, hostIP string, hostPort int32) v1.Container {
	c := container(PauseImage, nil)
	c.Ports = []v1.ContainerPort{{Protocol: protocol, HostIP: hostIP, HostPort: hostPort, ContainerPort: hostPort}}
	return c
}

// addContainer appends c as a regular container named c<i>, i its index.
func (p *PodWrapper) addContainer(c v1.Container) *PodWrapper {
	c.Name = fmt.Sprintf("c%d", len(p.Spec.Containers))
	p.Spec.Containers = append(p.Spec.Containers, c)
	return p
}

// addInitContainer appends c as an init container named init<i>, i its
// index; restart Always makes it a sidecar.
func (p *PodWrapper) addInitContainer(c v1.Container, restart *v1.ContainerRestartPolicy) *PodWrapper {
	c.Name = fmt.Sprintf("init%d", len(p.Spec.InitContainers))
	c.RestartPolicy = restart
	p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	return p
}
