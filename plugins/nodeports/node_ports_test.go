// Tests for NodePorts' PreFilter and Filter.
package nodeports

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestPreFilter(t *testing.T) {
	port := func(protocol v1.Protocol, hostIP string, p int32) v1.ContainerPort {
		return v1.ContainerPort{Protocol: protocol, HostIP: hostIP, HostPort: p, ContainerPort: p}
	}
	tests := []struct {
		name     string
		pod      *v1.Pod
		wantSkip bool
		want     preFilterState
	}{
		{name: "no containers", pod: st.MakePod().Name("p").Obj(), wantSkip: true},
		{
			name: "container port without host port",
			pod: func() *v1.Pod {
				p := st.MakePod().Name("p").Obj()
				p.Spec.Containers = []v1.Container{{Name: "c", Ports: []v1.ContainerPort{{ContainerPort: 80}}}}
				return p
			}(),
			wantSkip: true,
		},
		{name: "host port on an ordinary init container", pod: st.MakePod().Name("p").InitHostPort(v1.ProtocolTCP,
			"", 80).Obj(), wantSkip: true},
		{
			name: "host ports on containers",
			pod:  st.MakePod().Name("p").HostPort(v1.ProtocolTCP, "", 80).HostPort(v1.ProtocolUDP, "127.0.0.1", 53).Obj(),
			want: preFilterState{port(v1.ProtocolTCP, "", 80), port(v1.ProtocolUDP, "127.0.0.1", 53)},
		},
		{
			name: "sidecar ports come first, ordinary init containers are left out",
			pod: st.MakePod().Name("p").HostPort(v1.ProtocolTCP, "", 80).
				InitHostPort(v1.ProtocolTCP, "", 81).SidecarHostPort(v1.ProtocolTCP, "", 82).Obj(),
			want: preFilterState{port(v1.ProtocolTCP, "", 82), port(v1.ProtocolTCP, "", 80)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := &NodePorts{}
			state := framework.NewCycleState()
			result, s := pl.PreFilter(ctx, state, tt.pod, nil)
			if result != nil {
				t.Errorf("PreFilter result = %v, want nil", result)
			}
			if tt.wantSkip {
				if !s.IsSkip() {
					t.Errorf("PreFilter = %v, want Skip", s)
				}
				if _, err := state.Read(preFilterStateKey); err == nil {
					t.Error("PreFilter wrote state although it skipped")
				}
				return
			}
			if !s.IsSuccess() {
				t.Fatalf("PreFilter = %v, want Success", s)
			}
			got, err := getPreFilterState(state)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
	if (&NodePorts{}).PreFilterExtensions() != nil {
		t.Error("PreFilterExtensions() is not nil")
	}
}

func TestFilter(t *testing.T) {
	conflict := framework.NewStatus(framework.Unschedulable, "node(s) didn't have free ports for the requested pod ports")
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		want     *framework.Status
	}{
		{
			name: "empty node",
			pod:  st.MakePod().Name("p").HostPort(v1.ProtocolTCP, "", 8080).Obj(),
		},
		{
			name:     "other ports in use",
			pod:      st.MakePod().Name("p").HostPort(v1.ProtocolUDP, "127.0.0.1", 8080).Obj(),
			existing: []*v1.Pod{st.MakePod().Name("e").UID("e").HostPort(v1.ProtocolUDP, "127.0.0.1", 9090).Obj()},
		},
		{
			name:     "same port and IP, another protocol",
			pod:      st.MakePod().Name("p").HostPort(v1.ProtocolUDP, "127.0.0.1", 8080).Obj(),
			existing: []*v1.Pod{st.MakePod().Name("e").UID("e").HostPort(v1.ProtocolTCP, "127.0.0.1", 8080).Obj()},
		},
		{
			name:     "same port, protocol and IP",
			pod:      st.MakePod().Name("p").HostPort(v1.ProtocolUDP, "127.0.0.1", 8080).Obj(),
			existing: []*v1.Pod{st.MakePod().Name("e").UID("e").HostPort(v1.ProtocolUDP, "127.0.0.1", 8080).Obj()},
			want:     conflict,
		},
		{
			name:     "same port and protocol, another IP",
			pod:      st.MakePod().Name("p").HostPort(v1.ProtocolTCP, "127.0.0.2", 8080).Obj(),
			existing: []*v1.Pod{st.MakePod().Name("e").UID("e").HostPort(v1.ProtocolTCP, "127.0.0.1", 8080).Obj()},
		},
		{
			name: "one of several ports taken",
			pod: st.MakePod().Name("p").HostPort(v1.ProtocolTCP, "127.0.0.1", 8080).HostPort(v1.ProtocolTCP,
				"127.0.0.1", 8081).Obj(),
			existing: []*v1.Pod{
				st.MakePod().Name("e").UID("e").HostPort(v1.ProtocolTCP, "127.0.0.1", 8081).HostPort(v1.ProtocolUDP,
					"127.0.0.1", 8080).Obj(),
			},
			want: conflict,
		},
		{
			name:     "0.0.0.0 wanted, specific IP in use",
			pod:      st.MakePod().Name("p").HostPort(v1.ProtocolTCP, "0.0.0.0", 8001).Obj(),
			existing: []*v1.Pod{st.MakePod().Name("e").UID("e").HostPort(v1.ProtocolTCP, "10.0.10.10", 8001).Obj()},
			want:     conflict,
		},
		{
			name:     "specific IP wanted, 0.0.0.0 in use",
			pod:      st.MakePod().Name("p").HostPort(v1.ProtocolTCP, "10.0.10.10", 8001).Obj(),
			existing: []*v1.Pod{st.MakePod().Name("e").UID("e").HostPort(v1.ProtocolTCP, "0.0.0.0", 8001).Obj()},
			want:     conflict,
		},
		{
			name:     "empty IP means 0.0.0.0 and empty protocol means TCP",
			pod:      st.MakePod().Name("p").HostPort("", "", 8001).Obj(),
			existing: []*v1.Pod{st.MakePod().Name("e").UID("e").HostPort(v1.ProtocolTCP, "10.0.10.10", 8001).Obj()},
			want:     conflict,
		},
		{
			name:     "0.0.0.0 wanted, another protocol in use",
			pod:      st.MakePod().Name("p").HostPort(v1.ProtocolUDP, "0.0.0.0", 8001).Obj(),
			existing: []*v1.Pod{st.MakePod().Name("e").UID("e").HostPort(v1.ProtocolTCP, "10.0.10.10", 8001).Obj()},
		},
		{
			name:     "the pod's sidecar port is taken",
			pod:      st.MakePod().Name("p").SidecarHostPort(v1.ProtocolTCP, "", 9000).Obj(),
			existing: []*v1.Pod{st.MakePod().Name("e").UID("e").HostPort(v1.ProtocolTCP, "", 9000).Obj()},
			want:     conflict,
		},
		{
			name:     "the pod's ordinary init container port is not checked",
			pod:      st.MakePod().Name("p").InitHostPort(v1.ProtocolTCP, "", 9000).HostPort(v1.ProtocolTCP, "", 9001).Obj(),
			existing: []*v1.Pod{st.MakePod().Name("e").UID("e").HostPort(v1.ProtocolTCP, "", 9000).Obj()},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl, err := New(ctx, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			state := framework.NewCycleState()
			nodeInfo := plugintesting.MakeNodeInfo(st.MakeNode().Name("n").Obj(), tt.existing...)
			if _, s := pl.(framework.PreFilterPlugin).PreFilter(ctx, state, tt.pod,
				[]*framework.NodeInfo{nodeInfo}); !s.IsSuccess() {
				t.Fatalf("PreFilter = %v", s)
			}
			got := pl.(framework.FilterPlugin).Filter(ctx, state, tt.pod, nodeInfo)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Filter (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilterWithoutPreFilter(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pod := st.MakePod().Name("p").HostPort(v1.ProtocolTCP, "", 80).Obj()
	got := (&NodePorts{}).Filter(ctx, framework.NewCycleState(), pod,
		plugintesting.MakeNodeInfo(st.MakeNode().Name("n").Obj()))
	want := `reading "PreFilterNodePorts" from cycleState: not found`
	if got.Code() != framework.Error || got.Message() != want {
		t.Errorf("Filter without PreFilter = %v, want Error: %s", got, want)
	}
}
