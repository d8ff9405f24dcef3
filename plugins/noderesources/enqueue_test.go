// Tests for NodeResourcesFit's registered events and queueing hints.
package noderesources

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestEventsToRegister(t *testing.T) {
	got := plugintesting.HintedEvents(t, newFit(t, nil))
	want := []framework.ClusterEvent{
		{Resource: framework.Pod, ActionType: framework.Delete | framework.UpdatePodScaleDown},
		{Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodScaleDown},
		{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeAllocatable},
		{Resource: framework.DeviceClass, ActionType: framework.Add | framework.Update},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EventsToRegister (-want +got):\n%s", diff)
	}
}

func TestIsSchedulableAfterPodEvent(t *testing.T) {
	cpuPod := st.MakePod().Name("pending").Req(res{v1.ResourceCPU: "1"}).Obj()
	gpuPod := st.MakePod().Name("pending").Req(res{gpu: "1"}).Obj()
	tests := []struct {
		name           string
		pod            *v1.Pod
		oldObj, newObj interface{}
		want           framework.QueueingHint
		wantErr        bool
	}{
		{
			name:   "assigned pod deleted",
			pod:    cpuPod,
			oldObj: st.MakePod().Name("gone").NodeName("n").Req(res{v1.ResourceCPU: "1"}).Obj(),
			want:   framework.Queue,
		},
		{
			name:   "assigned pod without requests deleted frees a pod slot",
			pod:    cpuPod,
			oldObj: st.MakePod().Name("gone").NodeName("n").Obj(),
			want:   framework.Queue,
		},
		{
			name:   "nominated pod deleted",
			pod:    cpuPod,
			oldObj: st.MakePod().Name("gone").NominatedNodeName("n").Obj(),
			want:   framework.Queue,
		},
		{
			name:   "unassigned pod deleted",
			pod:    cpuPod,
			oldObj: st.MakePod().Name("gone").Req(res{v1.ResourceCPU: "1"}).Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:   "assigned pod scaled down in cpu, which the pod requests",
			pod:    cpuPod,
			oldObj: st.MakePod().Name("a").NodeName("n").Req(res{v1.ResourceCPU: "2", v1.ResourceMemory: "1Gi"}).Obj(),
			newObj: st.MakePod().Name("a").NodeName("n").Req(res{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi"}).Obj(),
			want:   framework.Queue,
		},
		{
			name:   "assigned pod scaled down in memory, which the pod does not request",
			pod:    cpuPod,
			oldObj: st.MakePod().Name("a").NodeName("n").Req(res{v1.ResourceCPU: "2", v1.ResourceMemory: "2Gi"}).Obj(),
			newObj: st.MakePod().Name("a").NodeName("n").Req(res{v1.ResourceCPU: "2", v1.ResourceMemory: "1Gi"}).Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:   "assigned pod scaled down in an extended resource the pod requests",
			pod:    gpuPod,
			oldObj: st.MakePod().Name("a").NodeName("n").Req(res{gpu: "2"}).Obj(),
			newObj: st.MakePod().Name("a").NodeName("n").Req(res{gpu: "1"}).Obj(),
			want:   framework.Queue,
		},
		{
			name:   "unassigned pod scaled down",
			pod:    cpuPod,
			oldObj: st.MakePod().Name("a").Req(res{v1.ResourceCPU: "2"}).Obj(),
			newObj: st.MakePod().Name("a").Req(res{v1.ResourceCPU: "1"}).Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:    "not a pod",
			pod:     cpuPod,
			oldObj:  st.MakeNode().Obj(),
			want:    framework.Queue,
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			got, err := newFit(t, nil).isSchedulableAfterPodEvent(logger, tt.pod, tt.oldObj, tt.newObj)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsSchedulableAfterTargetPodScaleDown(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	old := st.MakePod().Name("p").Req(res{v1.ResourceCPU: "2"}).Obj()
	scaled := st.MakePod().Name("p").Req(res{v1.ResourceCPU: "1"}).Obj()
	got, err := isSchedulableAfterTargetPodScaleDown(logger, scaled, old, scaled)
	if err != nil || got != framework.Queue {
		t.Errorf("hint = %v, %v; want Queue, nil", got, err)
	}
}

func TestIsSchedulableAfterNodeChange(t *testing.T) {
	pod := st.MakePod().Name("p").Req(res{v1.ResourceCPU: "2", gpu: "1"}).Obj()
	node := func(c res) *v1.Node { return st.MakeNode().Name("n").Capacity(c).Obj() }
	tests := []struct {
		name           string
		args           *runtime.RawExtension
		pod            *v1.Pod
		oldObj, newObj interface{}
		want           framework.QueueingHint
		wantErr        bool
	}{
		{
			name:   "added node large enough",
			pod:    pod,
			newObj: node(res{v1.ResourceCPU: "4", gpu: "1"}),
			want:   framework.Queue,
		},
		{
			name:   "added node too small",
			pod:    pod,
			newObj: node(res{v1.ResourceCPU: "1", gpu: "1"}),
			want:   framework.QueueSkip,
		},
		{
			name:   "added node without the extended resource",
			pod:    pod,
			newObj: node(res{v1.ResourceCPU: "4"}),
			want:   framework.QueueSkip,
		},
		{
			// kube-scheduler's hint asks its Fits, which knows no ignore
			// lists: the node lacks the gpu, so it is skipped.
			name:   "added node without the extended resource, even an ignored one",
			args:   rawArgs(`{"ignoredResourceGroups": ["example.com"]}`),
			pod:    pod,
			newObj: node(res{v1.ResourceCPU: "4"}),
			want:   framework.QueueSkip,
		},
		{
			name:   "added node without pod slots",
			pod:    st.MakePod().Name("p").Obj(),
			newObj: node(res{v1.ResourcePods: "0"}),
			want:   framework.QueueSkip,
		},
		{
			name:   "node gained cpu and now fits",
			pod:    pod,
			oldObj: node(res{v1.ResourceCPU: "1", gpu: "1"}),
			newObj: node(res{v1.ResourceCPU: "4", gpu: "1"}),
			want:   framework.Queue,
		},
		{
			name:   "node gained the extended resource and now fits",
			pod:    pod,
			oldObj: node(res{v1.ResourceCPU: "4"}),
			newObj: node(res{v1.ResourceCPU: "4", gpu: "1"}),
			want:   framework.Queue,
		},
		{
			name:   "node gained cpu but still too small",
			pod:    pod,
			oldObj: node(res{v1.ResourceCPU: "1", gpu: "1"}),
			newObj: node(res{v1.ResourceCPU: "1500m", gpu: "1"}),
			want:   framework.QueueSkip,
		},
		{
			name:   "node gained memory, which the pod does not request",
			pod:    pod,
			oldObj: node(res{v1.ResourceCPU: "4", gpu: "1", v1.ResourceMemory: "1Gi"}),
			newObj: node(res{v1.ResourceCPU: "4", gpu: "1", v1.ResourceMemory: "2Gi"}),
			want:   framework.QueueSkip,
		},
		{
			name:   "node lost cpu but still fits",
			pod:    pod,
			oldObj: node(res{v1.ResourceCPU: "8", gpu: "1"}),
			newObj: node(res{v1.ResourceCPU: "4", gpu: "1"}),
			want:   framework.QueueSkip,
		},
		{
			name:   "node gained pod slots",
			pod:    st.MakePod().Name("p").Obj(),
			oldObj: node(res{v1.ResourcePods: "0"}),
			newObj: node(res{v1.ResourcePods: "10"}),
			want:   framework.Queue,
		},
		{
			name:    "not a node",
			pod:     pod,
			newObj:  pod,
			want:    framework.Queue,
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			got, err := newFit(t, tt.args).isSchedulableAfterNodeChange(logger, tt.pod, tt.oldObj, tt.newObj)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}
