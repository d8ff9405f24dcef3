// Tests for DynamicResources' PodGroupPostFilter: each member's PreFilter
// records its claims in the group's cycle state, and the group's
// PodGroupPostFilter frees what PostFilter would free for each, with
// kube-scheduler's messages, its "not found" when no member was tried,
// and nothing done for a topology-aware group.

package dynamicresources

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/framework"
)

// groupMember is member name of pod group "g", with the claims named.
func groupMember(name string, claims ...string) *v1.Pod {
	pod := makePod(claims...)
	pod.Name, pod.UID = name, types.UID(name+"-uid")
	pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("g")}
	return pod
}

func TestPodGroupPostFilter(t *testing.T) {
	m1, m2, m3 := groupMember("m1", "claim-1"), groupMember("m2", "claim-2"), groupMember("m3")
	idle := func(name string) *resourceapi.ResourceClaim {
		return allocatedOn(makeClaim(name), "far-away", "device-"+name)
	}
	otherPod := groupMember("other")
	objs := func(claims ...*resourceapi.ResourceClaim) []runtime.Object {
		out := []runtime.Object{makeSlice(nodeName, "device-0"), deviceClass}
		for _, c := range claims {
			out = append(out, c)
		}
		return out
	}
	gang := st.MakePodGroup().Name("g").Gang(3).Obj()
	topologyAware := st.MakePodGroup().Name("g").Gang(3).TopologyKey("rack").Obj()
	const done = "deallocation and deletion of ResourceClaims completed"
	tests := []struct {
		name     string
		gates    features.Gates
		podGroup *schedulingv1beta1.PodGroup
		objs     []runtime.Object
		// tried are the members whose PreFilter and Filter ran; unscheduled
		// the group's pods the cycle was for.
		tried, unscheduled []*v1.Pod
		// failUpdates makes the apiserver refuse claim status updates.
		failUpdates bool
		wantCode    framework.Code
		wantMsg     string
		// wantAllocated says, per claim, whether it is still allocated.
		wantAllocated map[string]bool
	}{
		{name: "each tried member's idle claim is deallocated", podGroup: gang,
			objs: objs(idle("claim-1"), idle("claim-2")), tried: []*v1.Pod{m1, m2, m3}, unscheduled: []*v1.Pod{m1, m2, m3},
			wantCode: framework.Unschedulable, wantMsg: done,
			wantAllocated: map[string]bool{"claim-1": false, "claim-2": false}},
		{name: "a claim another pod holds is left", podGroup: gang,
			objs:  objs(reservedFor(idle("claim-1"), otherPod), idle("claim-2")),
			tried: []*v1.Pod{m1, m2}, unscheduled: []*v1.Pod{m1, m2},
			wantCode: framework.Unschedulable, wantMsg: done,
			wantAllocated: map[string]bool{"claim-1": true, "claim-2": false}},
		{name: "members without claims: nothing to free, the same words", podGroup: gang,
			objs: objs(), tried: []*v1.Pod{m3}, unscheduled: []*v1.Pod{m3},
			wantCode: framework.Unschedulable, wantMsg: done},
		{name: "a tried pod no longer among the unscheduled is left", podGroup: gang,
			objs: objs(idle("claim-1"), idle("claim-2")), tried: []*v1.Pod{m1, m2}, unscheduled: []*v1.Pod{m1},
			wantCode: framework.Unschedulable, wantMsg: done,
			wantAllocated: map[string]bool{"claim-1": false, "claim-2": true}},
		{name: "no member tried: kube-scheduler's not found", podGroup: gang,
			objs: objs(idle("claim-1")), unscheduled: []*v1.Pod{m1},
			wantCode: framework.Error, wantMsg: `error in "DynamicResources" PodGroupPostFilter plugins: not found`,
			wantAllocated: map[string]bool{"claim-1": true}},
		{name: "the apiserver refuses: an error", podGroup: gang, failUpdates: true,
			objs: objs(idle("claim-1")), tried: []*v1.Pod{m1}, unscheduled: []*v1.Pod{m1},
			wantCode: framework.Error, wantMsg: `error in "DynamicResources" PodGroupPostFilter plugins: refused`,
			wantAllocated: map[string]bool{"claim-1": true}},
		{name: "topology-aware, with constraints: left alone, without a word",
			gates:    features.Gates{GenericWorkload: true, TopologyAwareWorkloadScheduling: true},
			podGroup: topologyAware, objs: objs(idle("claim-1")), unscheduled: []*v1.Pod{m1},
			wantCode: framework.Unschedulable, wantAllocated: map[string]bool{"claim-1": true}},
		{name: "topology-aware, without constraints: as without the gate",
			gates:    features.Gates{GenericWorkload: true, TopologyAwareWorkloadScheduling: true},
			podGroup: gang, objs: objs(idle("claim-1")), tried: []*v1.Pod{m1}, unscheduled: []*v1.Pod{m1},
			wantCode: framework.Unschedulable, wantMsg: done, wantAllocated: map[string]bool{"claim-1": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gates := tt.gates
			if !gates.GenericWorkload {
				gates = features.Gates{GenericWorkload: true}
			}
			env := newPluginEnvWithGates(t, gates, nil, tt.objs...)
			if tt.failUpdates {
				env.client.PrependReactor("update", "resourceclaims",
					func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, errors.New("refused") })
			}
			_, ctx := ktesting.NewTestContext(t)
			groupState := framework.NewCycleState()
			for _, pod := range tt.tried {
				memberState := framework.NewCycleState()
				memberState.SetPodGroupCycleState(groupState)
				if _, s := env.pl.PreFilter(ctx, memberState, pod, nil); !s.IsSuccess() && !s.IsSkip() {
					t.Fatalf("PreFilter(%s): %v", pod.Name, s)
				}
				for _, n := range []string{nodeName, "other-node"} {
					env.pl.Filter(ctx, memberState, pod, makeNode(n))
				}
			}
			group := &framework.PodGroupInfo{Namespace: namespace, Name: "g", PodGroup: tt.podGroup,
				UnscheduledPods: tt.unscheduled}
			result, s := env.fw.RunPodGroupPostFilterPlugins(ctx, groupState, group, nil)
			if result != nil || s.Code() != tt.wantCode || s.Message() != tt.wantMsg {
				t.Errorf("RunPodGroupPostFilterPlugins = %v, %v %q; want no result, %v %q",
					result, s.Code(), s.Message(), tt.wantCode, tt.wantMsg)
			}
			got := map[string]bool{}
			for name := range tt.wantAllocated {
				claim, err := env.client.ResourceV1().ResourceClaims(namespace).Get(context.Background(), name,
					metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				got[name] = claim.Status.Allocation != nil
			}
			if diff := cmp.Diff(tt.wantAllocated, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("claims allocated (-want +got):\n%s", diff)
			}
		})
	}
}
