// Tests for NodePorts' SignPod.
package nodeports

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestSignPod(t *testing.T) {
	plugintesting.RunSignCases(t, &NodePorts{}, []plugintesting.SignCase{
		{
			Name: "no host ports",
			Pod:  st.MakePod().Name("p").Image("nginx").Obj(),
			Want: []framework.SignFragment{{Key: "v1.Pod.Spec.HostPorts()", Value: []int32{}}},
		},
		{
			Name: "host ports of containers, sidecars and init containers, sorted and once each",
			Pod: st.MakePod().Name("p").HostPort(v1.ProtocolTCP, "", 8080).HostPort(v1.ProtocolUDP, "", 53).
				SidecarHostPort(v1.ProtocolTCP, "", 9090).InitHostPort(v1.ProtocolTCP, "", 80).
				HostPort(v1.ProtocolTCP, "10.0.0.1", 8080).Obj(),
			Want: []framework.SignFragment{{Key: "v1.Pod.Spec.HostPorts()", Value: []int32{53, 80, 8080, 9090}}},
		},
		{
			Name: "container ports without a host port are left out",
			Pod: st.MakePod().Name("p").HostPort(v1.ProtocolTCP, "", 0).HostPort(v1.ProtocolTCP, "", 8080).
				Obj(),
			Want: []framework.SignFragment{{Key: "v1.Pod.Spec.HostPorts()", Value: []int32{8080}}},
		},
	})
}

func TestSignPodPairs(t *testing.T) {
	plugintesting.RunSignPairs(t, &NodePorts{}, []plugintesting.SignPair{
		{
			Name: "same ports in other containers",
			A:    st.MakePod().Name("a").HostPort(v1.ProtocolTCP, "", 80).HostPort(v1.ProtocolTCP, "", 443).Obj(),
			B:    st.MakePod().Name("b").HostPort(v1.ProtocolTCP, "", 443).HostPort(v1.ProtocolTCP, "", 80).Obj(),
			Same: true,
		},
		{
			Name: "other labels and images",
			A:    st.MakePod().Name("a").Label("app", "web").HostPort(v1.ProtocolTCP, "", 80).Obj(),
			B:    st.MakePod().Name("b").Image("nginx").HostPort(v1.ProtocolTCP, "", 80).Obj(),
			Same: true,
		},
		{
			// kube-scheduler's fragment holds port numbers only, though
			// Filter tells protocols and host IPs apart.
			Name: "same port over another protocol, as kube-scheduler signs it",
			A:    st.MakePod().Name("a").HostPort(v1.ProtocolTCP, "", 53).Obj(),
			B:    st.MakePod().Name("a").HostPort(v1.ProtocolUDP, "", 53).Obj(),
			Same: true,
		},
		{
			Name: "another port",
			A:    st.MakePod().Name("a").HostPort(v1.ProtocolTCP, "", 80).Obj(),
			B:    st.MakePod().Name("a").HostPort(v1.ProtocolTCP, "", 8080).Obj(),
		},
		{
			Name: "a port and none",
			A:    st.MakePod().Name("a").HostPort(v1.ProtocolTCP, "", 80).Obj(),
			B:    st.MakePod().Name("a").Image("nginx").Obj(),
		},
	})
}
