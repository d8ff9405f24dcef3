// Tests for PodTopologySpread's registered events and queueing hints, with
// the cases kube-scheduler's tests check.
package podtopologyspread

import (
	"context"
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
	got := plugintesting.HintedEvents(t, (&PodTopologySpread{}))
	want := []framework.ClusterEvent{
		{Resource: framework.Pod, ActionType: framework.Add | framework.UpdatePodLabel | framework.Delete},
		{Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodToleration | framework.UpdatePodLabel},
		{Resource: framework.Node,
			ActionType: framework.Add | framework.Delete | framework.UpdateNodeLabel | framework.UpdateNodeTaint |
				framework.UpdateNodeUnschedulable},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EventsToRegister (-want +got):\n%s", diff)
	}
}

// hintPlugin builds the plugin with List defaulting and no default
// constraints, as kube-scheduler's hint tests do, unless objs are given:
// then with the system defaults and objs in its informers.
func hintPlugin(t *testing.T, ctx context.Context, objs ...runtime.Object) *PodTopologySpread {
	t.Helper()
	if len(objs) == 0 {
		return newPlugin(t, ctx, `{"defaultingType":"List"}`, nil, nil)
	}
	return newPlugin(t, ctx, "", nil, nil, objs...)
}

func TestIsSchedulableAfterNodeChange(t *testing.T) {
	foo := map[string]string{"foo": ""}
	oneKey := st.MakePod().Name("p").SpreadConstraint(hard(1, "zone", foo)).Obj()
	twoKeys := st.MakePod().Name("p").SpreadConstraint(hard(1, "zone", foo)).SpreadConstraint(hard(1, "node", foo)).Obj()
	node := func() *st.NodeWrapper { return st.MakeNode().Name("node-a") }
	tests := []struct {
		name             string
		pod              *v1.Pod
		oldNode, newNode *v1.Node
		want             framework.QueueingHint
	}{
		{
			name:    "node changes the value of a topology key",
			pod:     oneKey,
			oldNode: node().Label("zone", "zone1").Obj(),
			newNode: node().Label("zone", "zone2").Obj(),
			want:    framework.Queue,
		},
		{
			name:    "node without the topology key changes an unrelated label",
			pod:     oneKey,
			oldNode: node().Label("foo", "bar1").Obj(),
			newNode: node().Label("foo", "bar2").Obj(),
			want:    framework.QueueSkip,
		},
		{
			name:    "node with every topology key drops an unrelated label",
			pod:     twoKeys,
			oldNode: node().Label("zone", "zone1").Label("node", "node1").Label("foo", "bar").Obj(),
			newNode: node().Label("zone", "zone1").Label("node", "node1").Obj(),
			want:    framework.QueueSkip,
		},
		{
			name:    "node gains the topology key",
			pod:     oneKey,
			oldNode: node().Obj(),
			newNode: node().Label("zone", "zone1").Obj(),
			want:    framework.Queue,
		},
		{
			name:    "node loses the topology key",
			pod:     oneKey,
			oldNode: node().Label("zone", "zone1").Obj(),
			newNode: node().Obj(),
			want:    framework.Queue,
		},
		{
			name:    "node added without the topology key",
			pod:     oneKey,
			newNode: node().Label("foo", "bar").Obj(),
			want:    framework.QueueSkip,
		},
		{
			name:    "node added with the topology key",
			pod:     oneKey,
			newNode: node().Label("zone", "zone1").Obj(),
			want:    framework.Queue,
		},
		{
			name:    "node deleted without the topology key",
			pod:     oneKey,
			oldNode: node().Label("foo", "bar").Obj(),
			want:    framework.QueueSkip,
		},
		{
			name:    "node deleted with the topology key",
			pod:     oneKey,
			oldNode: node().Label("zone", "zone1").Obj(),
			want:    framework.Queue,
		},
		{
			name:    "node added with only one of two topology keys",
			pod:     twoKeys,
			newNode: node().Label("zone", "zone1").Obj(),
			want:    framework.QueueSkip,
		},
		{
			name:    "node added with both topology keys",
			pod:     twoKeys,
			newNode: node().Label("zone", "zone1").Label("node", "node1").Obj(),
			want:    framework.Queue,
		},
		{
			name:    "node with one of two keys updated without change",
			pod:     twoKeys,
			oldNode: node().Label("zone", "zone1").Obj(),
			newNode: node().Label("zone", "zone1").Obj(),
			want:    framework.QueueSkip,
		},
		{
			name:    "node with both keys changes a value",
			pod:     twoKeys,
			oldNode: node().Label("zone", "zone1").Label("node", "node1").Obj(),
			newNode: node().Label("zone", "zone1").Label("node", "node2").Obj(),
			want:    framework.Queue,
		},
		{
			name:    "node with both keys changes its taints",
			pod:     twoKeys,
			oldNode: node().Label("zone", "zone1").Label("node", "node1").Taint("aaa", "bbb", v1.TaintEffectNoSchedule).Obj(),
			newNode: node().Label("zone", "zone1").Label("node", "node1").Taint("ccc", "bbb", v1.TaintEffectNoSchedule).Obj(),
			want:    framework.Queue,
		},
		{
			name:    "node with one of two keys changes its taints",
			pod:     twoKeys,
			oldNode: node().Label("node", "node1").Taint("aaa", "bbb", v1.TaintEffectNoSchedule).Obj(),
			newNode: node().Label("node", "node1").Taint("ccc", "bbb", v1.TaintEffectNoSchedule).Obj(),
			want:    framework.QueueSkip,
		},
		{
			// A cordon alone changes neither labels nor taints.
			name:    "node with every key cordoned",
			pod:     oneKey,
			oldNode: node().Label("zone", "zone1").Obj(),
			newNode: node().Label("zone", "zone1").Unschedulable(true).Obj(),
			want:    framework.QueueSkip,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, ctx := ktesting.NewTestContext(t)
			pl := hintPlugin(t, ctx)
			var oldObj, newObj interface{}
			if tt.oldNode != nil {
				oldObj = tt.oldNode
			}
			if tt.newNode != nil {
				newObj = tt.newNode
			}
			got, err := pl.isSchedulableAfterNodeChange(logger, tt.pod, oldObj, newObj)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("hint (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIsSchedulableAfterAssignedPodChange(t *testing.T) {
	foo := map[string]string{"foo": ""}
	bar := map[string]string{"bar": ""}
	onePod := st.MakePod().Name("p").Label("foo", "").SpreadConstraint(hard(1, "zone", foo)).Obj()
	twoPod := st.MakePod().Name("p").Label("foo", "").SpreadConstraint(hard(1, "zone", foo)).SpreadConstraint(hard(1,
		"node", bar)).Obj()
	assigned := func() *st.PodWrapper { return st.MakePod().Name("q").NodeName("n") }
	tests := []struct {
		name           string
		pod            *v1.Pod
		oldPod, newPod *v1.Pod
		objs           []runtime.Object
		want           framework.QueueingHint
	}{
		{
			name:   "matching pod added",
			pod:    onePod,
			newPod: assigned().Label("foo", "").Obj(),
			want:   framework.Queue,
		},
		{
			name:   "unscheduled pod added",
			pod:    onePod,
			newPod: st.MakePod().Name("q").Label("foo", "").Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:   "unscheduled pod updated",
			pod:    onePod,
			oldPod: st.MakePod().Name("q").Label("foo", "").Obj(),
			newPod: st.MakePod().Name("q").Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:   "unscheduled pod deleted",
			pod:    onePod,
			oldPod: st.MakePod().Name("q").Label("foo", "").Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:   "matching pod added in another namespace",
			pod:    onePod,
			newPod: assigned().Namespace("other").Label("foo", "").Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:   "non-matching pod added",
			pod:    onePod,
			newPod: assigned().Label("bar", "").Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:   "matching pod deleted",
			pod:    onePod,
			oldPod: assigned().Label("foo", "").Obj(),
			want:   framework.Queue,
		},
		{
			name:   "nominated non-matching pod deleted",
			pod:    onePod,
			oldPod: st.MakePod().Name("q").NominatedNodeName("n").Label("bar", "").Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:   "nominated matching pod deleted",
			pod:    onePod,
			oldPod: st.MakePod().Name("q").NominatedNodeName("n").Label("foo", "").Obj(),
			want:   framework.Queue,
		},
		{
			name:   "non-matching pod deleted",
			pod:    onePod,
			oldPod: assigned().Label("bar", "").Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:   "unrelated label changed",
			pod:    onePod,
			oldPod: assigned().Label("foo", "").Label("x", "1").Obj(),
			newPod: assigned().Label("foo", "").Label("x", "2").Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:   "pod gains a matching label",
			pod:    onePod,
			oldPod: assigned().Obj(),
			newPod: assigned().Label("foo", "").Obj(),
			want:   framework.Queue,
		},
		{
			name:   "pod loses a matching label",
			pod:    onePod,
			oldPod: assigned().Label("foo", "").Obj(),
			newPod: assigned().Obj(),
			want:   framework.Queue,
		},
		{
			// The selector is foo="": another value no longer matches.
			name:   "value of a matching label changes",
			pod:    onePod,
			oldPod: assigned().Label("foo", "").Obj(),
			newPod: assigned().Label("foo", "x").Obj(),
			want:   framework.Queue,
		},
		{
			name:   "value of a non-matching label changes",
			pod:    onePod,
			oldPod: assigned().Label("foo", "x").Obj(),
			newPod: assigned().Label("foo", "y").Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:   "pod gains a label matching the second constraint",
			pod:    twoPod,
			oldPod: assigned().Label("foo", "").Obj(),
			newPod: assigned().Label("foo", "").Label("bar", "").Obj(),
			want:   framework.Queue,
		},
		{
			name:   "label update of an assigned pod with the same match",
			pod:    twoPod,
			oldPod: assigned().Label("foo", "").Label("bar", "").Obj(),
			newPod: assigned().Label("foo", "").Label("bar", "").Label("x", "").Obj(),
			want:   framework.QueueSkip,
		},
		{
			// The system defaults are ScheduleAnyway: no hard constraints
			// select anything, so an added pod cannot help.
			name:   "pod without hard constraints",
			pod:    st.MakePod().Name("p").Label("app", "web").Obj(),
			newPod: assigned().Label("app", "web").Obj(),
			objs:   []runtime.Object{service("web", web)},
			want:   framework.QueueSkip,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, ctx := ktesting.NewTestContext(t)
			pl := hintPlugin(t, ctx, tt.objs...)
			var oldObj, newObj interface{}
			if tt.oldPod != nil {
				oldObj = tt.oldPod
			}
			if tt.newPod != nil {
				newObj = tt.newPod
			}
			got, err := pl.isSchedulableAfterAssignedPodChange(logger, tt.pod, oldObj, newObj)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("hint (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIsSchedulableAfterTargetPodChange(t *testing.T) {
	foo := map[string]string{"foo": ""}
	bar := map[string]string{"bar": ""}
	withPolicy := func(p v1.NodeInclusionPolicy) *v1.Pod {
		return st.MakePod().Name("p").Label("foo", "").
			SpreadConstraint(hard(1, "zone", foo, taintsPolicy(p))).
			SpreadConstraint(hard(1, "node", bar)).Obj()
	}
	tolerating := st.MakePod().Name("p").Label("foo", "").Toleration(v1.Toleration{Key: v1.TaintNodeUnschedulable,
		Operator: v1.TolerationOpExists}).Obj()
	tests := []struct {
		name           string
		pod            *v1.Pod
		oldPod, newPod *v1.Pod
		want           framework.QueueingHint
	}{
		{
			name:   "new toleration with nodeTaintsPolicy Honor",
			pod:    withPolicy(v1.NodeInclusionPolicyHonor),
			oldPod: st.MakePod().Name("p").Label("foo", "").Obj(),
			newPod: tolerating,
			want:   framework.Queue,
		},
		{
			name:   "new toleration without nodeTaintsPolicy Honor",
			pod:    withPolicy(v1.NodeInclusionPolicyIgnore),
			oldPod: st.MakePod().Name("p").Label("foo", "").Obj(),
			newPod: tolerating,
			want:   framework.QueueSkip,
		},
		{
			name:   "new label matching a constraint",
			pod:    withPolicy(v1.NodeInclusionPolicyIgnore),
			oldPod: st.MakePod().Name("p").Obj(),
			newPod: st.MakePod().Name("p").Label("foo", "").Obj(),
			want:   framework.Queue,
		},
		{
			name:   "new unrelated label",
			pod:    withPolicy(v1.NodeInclusionPolicyIgnore),
			oldPod: st.MakePod().Name("p").Obj(),
			newPod: st.MakePod().Name("p").Label("unrelated", "").Obj(),
			want:   framework.QueueSkip,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, ctx := ktesting.NewTestContext(t)
			pl := hintPlugin(t, ctx)
			got, err := pl.isSchedulableAfterTargetPodChange(logger, tt.pod, tt.oldPod, tt.newPod)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("hint (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHintsWithWrongObjects(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	pl := hintPlugin(t, ctx)
	pod := st.MakePod().Name("p").Obj()
	node := st.MakeNode().Name("n").Obj()
	checks := []struct {
		name string
		hint framework.QueueingHintFn
		old  interface{}
		new  interface{}
	}{
		{"assigned pod hint given a node", pl.isSchedulableAfterAssignedPodChange, nil, node},
		{"assigned pod hint given nothing", pl.isSchedulableAfterAssignedPodChange, nil, nil},
		{"target pod hint given a node", pl.isSchedulableAfterTargetPodChange, node, node},
		{"node hint given a pod", pl.isSchedulableAfterNodeChange, nil, pod},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.hint(logger, pod, c.old, c.new)
			if err == nil || got != framework.Queue {
				t.Errorf("hint = %v, %v; want Queue with an error", got, err)
			}
		})
	}
}
