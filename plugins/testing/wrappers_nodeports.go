// This file adds the builders NodePorts' tests need: host ports on sidecars
// and on ordinary init containers.
package plugintesting

import v1 "k8s.io/api/core/v1"

// SidecarHostPort adds a sidecar (an init container with restartPolicy
// Always) exposing hostPort.
func (p *PodWrapper) SidecarHostPort(protocol v1.Protocol, hostIP string, hostPort int32) *PodWrapper {
	always := v1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = append(p.Spec.InitContainers, initContainerWithHostPort(protocol, hostIP, hostPort, &always))
	return p
}

// InitHostPort adds an ordinary (run-to-completion) init container exposing
// hostPort.
func (p *PodWrapper) InitHostPort(protocol v1.Protocol, hostIP string, hostPort int32) *PodWrapper {
	p.Spec.InitContainers = append(p.Spec.InitContainers, initContainerWithHostPort(protocol, hostIP, hostPort, nil))
	return p
}

func initContainerWithHostPort(protocol v1.Protocol, hostIP string, hostPort int32, restart *v1.ContainerRestartPolicy) v1.Container {
	return v1.Container{
		Name:          "init-port-" + string(protocol) + "-" + hostIP,
		RestartPolicy: restart,
		Ports:         []v1.ContainerPort{{Protocol: protocol, HostIP: hostIP, HostPort: hostPort, ContainerPort: hostPort}},
	}
}
