package framework

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// member is a queued pod of group "g" with a priority, attempts and a
// timestamp offset in seconds.
func member(name string, priority int32, attempts int, at int) *QueuedPodInfo {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)},
		Spec: v1.PodSpec{Priority: ptr.To(priority), SchedulingGroup: &v1.PodSchedulingGroup{PodGroupName: ptr.To("g")}}}
	q := NewQueuedPodInfo(pod, time.Unix(1000+int64(at), 0))
	q.Attempts = attempts
	return q
}

func names(ms []*QueuedPodInfo) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Pod.Name)
	}
	return out
}

// TestMemberOrder: the order a pod-group cycle tries members in, as
// kube-scheduler's PodGroupMemberPodsOrderingFunc.
func TestMemberOrder(t *testing.T) {
	tests := []struct {
		name    string
		members []*QueuedPodInfo
		want    []string
	}{
		{name: "higher priority first", members: []*QueuedPodInfo{member("a", 1, 0, 0), member("b", 5, 0, 9)},
			want: []string{"b", "a"}},
		{name: "then more attempts", members: []*QueuedPodInfo{member("a", 1, 1, 0), member("b", 1, 3, 9)},
			want: []string{"b", "a"}},
		{name: "then the earlier timestamp", members: []*QueuedPodInfo{member("a", 1, 1, 5), member("b", 1, 1, 2)},
			want: []string{"b", "a"}},
		{name: "then the name", members: []*QueuedPodInfo{member("b", 1, 1, 5), member("a", 1, 1, 5)},
			want: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewQueuedPodGroupInfo(&schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"}},
				time.Unix(1000, 0))
			for _, m := range tt.members {
				g.AddMember(m)
			}
			if diff := cmp.Diff(tt.want, names(g.Members)); diff != "" {
				t.Errorf("members (-want +got):\n%s", diff)
			}
			var pods []string
			for _, p := range g.UnscheduledPods {
				pods = append(pods, p.Name)
			}
			if diff := cmp.Diff(tt.want, pods); diff != "" {
				t.Errorf("UnscheduledPods (-want +got):\n%s", diff)
			}
		})
	}
}

// TestQueuedPodGroupInfoMembers: members join, change and leave a queued
// group; its entity view (Key, Size, Priority, ForEachPod) follows.
func TestQueuedPodGroupInfoMembers(t *testing.T) {
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"},
		Spec: schedulingv1beta1.PodGroupSpec{Priority: ptr.To[int32](7)}}
	g := NewQueuedPodGroupInfo(pg, time.Unix(1000, 0))
	for _, m := range []*QueuedPodInfo{member("a", 7, 0, 1), member("b", 7, 0, 2), member("c", 7, 0, 3)} {
		g.AddMember(m)
	}
	if g.Key() != "ns/g" || g.Size() != 3 || g.Priority() != 7 {
		t.Errorf("Key, Size, Priority = %q, %d, %d; want ns/g, 3, 7", g.Key(), g.Size(), g.Priority())
	}
	if got := g.RemoveMember("b"); got == nil || got.Pod.Name != "b" {
		t.Errorf("RemoveMember(b) = %v, want b", got)
	}
	if got := g.RemoveMember("b"); got != nil {
		t.Errorf("RemoveMember(b) again = %v, want nil", got.Pod.Name)
	}
	updated := g.Members[0].Pod.DeepCopy()
	updated.Labels = map[string]string{"new": "label"}
	if _, err := g.UpdateMember(updated); err != nil {
		t.Fatal(err)
	}
	if g.Members[0].Pod.Labels["new"] != "label" || g.UnscheduledPods[0] != updated {
		t.Errorf("UpdateMember did not replace the pod object")
	}
	stranger := member("z", 7, 0, 0).Pod
	if _, err := g.UpdateMember(stranger); err == nil {
		t.Errorf("UpdateMember of a pod not in the group: no error")
	}
	var seen []string
	g.ForEachPod(func(m *QueuedPodInfo) bool { seen = append(seen, m.Pod.Name); return false })
	if diff := cmp.Diff([]string{"a"}, seen); diff != "" {
		t.Errorf("ForEachPod stops when fn returns false (-want +got):\n%s", diff)
	}
}

func TestMinCountAndPriority(t *testing.T) {
	tests := []struct {
		name         string
		spec         schedulingv1beta1.PodGroupSpec
		wantMin      int
		wantPriority int32
	}{
		{name: "gang", spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 4}}, Priority: ptr.To[int32](100)},
			wantMin: 4, wantPriority: 100},
		{name: "basic counts 1, no priority counts 0", spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}},
			wantMin: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pg := &schedulingv1beta1.PodGroup{Spec: tt.spec}
			if got := MinCount(pg); got != tt.wantMin {
				t.Errorf("MinCount = %d, want %d", got, tt.wantMin)
			}
			if got := PodGroupPriority(pg); got != tt.wantPriority {
				t.Errorf("PodGroupPriority = %d, want %d", got, tt.wantPriority)
			}
		})
	}
}

// TestQueuedPodInfoDeepCopy: the bookkeeping is copied, the pod shared.
func TestQueuedPodInfoDeepCopy(t *testing.T) {
	q := member("a", 1, 2, 0)
	q.UnschedulablePlugins.Insert("NodeResourcesFit")
	q.GatingPluginEvents = []ClusterEvent{{Resource: Node, ActionType: Add}}
	c := q.DeepCopy()
	c.UnschedulablePlugins.Insert("Other")
	c.GatingPluginEvents[0].Resource = Pod
	c.Attempts = 9
	if q.UnschedulablePlugins.Has("Other") || q.GatingPluginEvents[0].Resource != Node || q.Attempts != 2 {
		t.Errorf("DeepCopy shares bookkeeping with the original")
	}
	if c.Pod != q.Pod {
		t.Errorf("DeepCopy copied the pod object; it should share it")
	}
}
