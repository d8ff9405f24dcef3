// Tests of the events put in words: every event an in-tree plugin registers
// has words, and the grouping of events by resource.

package web

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
	"github.com/minisched/minisched/plugins/defaultbinder"
	"github.com/minisched/minisched/plugins/dynamic"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/plugins/prioritysort"
	"github.com/minisched/minisched/plugins/statefulsetordinal"
)

// TestEveryRegisteredEventHasWords builds every in-tree plugin (with each
// setting of the feature gates that change what plugins register) and checks
// that each event it registers, alone, is said in words. A plugin that
// registers a new resource or action without words here fails this test.
func TestEveryRegisteredEventHasWords(t *testing.T) {
	gates := []struct {
		name  string
		gates features.Gates
	}{
		{name: "defaults"},
		{name: "workloads", gates: features.Gates{GenericWorkload: true, TopologyAwareWorkloadScheduling: true}},
	}
	// The plugins that cannot be built without args.
	args := map[string]string{
		dynamic.Name:            `{"policyConfigPath":"../plugins/dynamic/testdata/crane-policy.yaml"}`,
		statefulsetordinal.Name: `{"podLabels":["app"],"nodeOrdinalLabel":"ordinal"}`,
	}
	registry := plugins.NewInTreeRegistry()
	names := make([]string, 0, len(registry))
	for name := range registry {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, g := range gates {
		// A profile of the two plugins every profile needs is the Handle
		// each plugin is built with.
		minimal := &configv1.Plugins{QueueSort: plugintesting.Enable(prioritysort.Name),
			Bind: plugintesting.Enable(defaultbinder.Name)}
		handle, err := plugintesting.NewFramework(context.Background(), registry, minimal, nil,
			append(plugintesting.InformerOptions(t), framework.WithSnapshotSharedLister(cache.NewEmptySnapshot()),
				framework.WithFeatureGates(g.gates))...)
		if err != nil {
			t.Fatalf("NewFramework: %v", err)
		}
		registered := 0
		for _, name := range names {
			t.Run(g.name+"/"+name, func(t *testing.T) {
				var raw *runtime.RawExtension
				if a, ok := args[name]; ok {
					raw = &runtime.RawExtension{Raw: []byte(a)}
				}
				pl, err := registry[name](context.Background(), raw, handle)
				if err != nil {
					t.Fatalf("building %s: %v", name, err)
				}
				ext, ok := pl.(framework.EnqueueExtensions)
				if !ok {
					return
				}
				evs, err := ext.EventsToRegister(context.Background())
				if err != nil {
					t.Fatalf("EventsToRegister: %v", err)
				}
				for _, e := range evs {
					registered++
					if _, ok := eventWords(e.Event.Resource, e.Event.ActionType); !ok {
						t.Errorf("%s registers %v (resource %q, actions %v), which has no words", name, e.Event,
							e.Event.Resource, e.Event.ActionType)
					}
				}
			})
		}
		if registered == 0 {
			t.Errorf("%s: no plugin registered any event; the test checks nothing", g.name)
		}
	}
	// The events the framework itself registers for a plugin without
	// EnqueueExtensions and for extenders.
	wildCard := framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.All, Label: "WildCard"}
	if _, ok := eventWords(wildCard.Resource, wildCard.ActionType); !ok {
		t.Errorf("%v has no words", wildCard)
	}
}

// TestEveryActionHasWords checks each single action bit of a resource whose
// updates are split, so that a new bit in framework's ActionType needs words.
func TestEveryActionHasWords(t *testing.T) {
	for _, r := range []framework.EventResource{framework.Node, framework.Pod, framework.UnscheduledPod} {
		for bit := framework.ActionType(1); bit <= framework.All; bit <<= 1 {
			t.Run(string(r)+"/"+bit.String(), func(t *testing.T) {
				if _, ok := eventWords(r, bit); !ok {
					t.Errorf("%s %v has no words", r, bit)
				}
			})
		}
	}
}

func TestEventGroups(t *testing.T) {
	node := func(a framework.ActionType) framework.ClusterEvent {
		return framework.ClusterEvent{Resource: framework.Node, ActionType: a}
	}
	pvc := framework.ClusterEvent{Resource: framework.PersistentVolumeClaim, ActionType: framework.Add | framework.Update}
	slice := framework.ClusterEvent{Resource: framework.ResourceSlice, ActionType: framework.Add | framework.Update}
	tests := []struct {
		name   string
		events []framework.ClusterEvent
		want   []eventGroup
	}{
		{
			name: "none",
			want: []eventGroup{},
		},
		{
			name:   "a node added or its allocatable changed",
			events: []framework.ClusterEvent{node(framework.Add | framework.UpdateNodeAllocatable)},
			want: []eventGroup{{Words: "a node is added or has its allocatable resources changed",
				Labels: []string{"Node/Add|UpdateNodeAllocatable"}}},
		},
		{
			name: "two node events are one group, parts merged",
			events: []framework.ClusterEvent{
				node(framework.Add | framework.UpdateNodeLabel),
				node(framework.UpdateNodeTaint | framework.UpdateNodeUnschedulable),
			},
			want: []eventGroup{{
				Words:  "a node is added, is cordoned or uncordoned, or has its labels or taints changed",
				Labels: []string{"Node/Add|UpdateNodeLabel", "Node/UpdateNodeTaint|UpdateNodeUnschedulable"},
			}},
		},
		{
			name:   "every node update",
			events: []framework.ClusterEvent{node(framework.Update)},
			want:   []eventGroup{{Words: "a node changes", Labels: []string{"Node/Update"}}},
		},
		{
			name:   "a labelled event keeps its label",
			events: []framework.ClusterEvent{framework.AssignedPodDelete},
			want:   []eventGroup{{Words: "a pod on a node is deleted", Labels: []string{"AssignedPodDelete"}}},
		},
		{
			name: "resources in order of first appearance",
			events: []framework.ClusterEvent{
				pvc,
				framework.AssignedPodDelete,
				slice,
				{Resource: framework.Pod, ActionType: framework.UpdatePodScaleDown | framework.UpdatePodLabel},
			},
			want: []eventGroup{
				{Words: "a PersistentVolumeClaim is added or changes",
					Labels: []string{pvc.String()}},
				{Words: "a pod on a node is deleted, has its resource requests lowered, or has its labels changed",
					Labels: []string{"AssignedPodDelete", "Pod/UpdatePodLabel|UpdatePodScaleDown"}},
				{Words: "a ResourceSlice is added or changes",
					Labels: []string{slice.String()}},
			},
		},
		{
			name:   "an unsplit resource says changes for any update bit",
			events: []framework.ClusterEvent{{Resource: framework.StorageClass, ActionType: framework.UpdateNodeLabel}},
			want:   []eventGroup{{Words: "a StorageClass changes", Labels: []string{"StorageClass/UpdateNodeLabel"}}},
		},
		{
			name: "the pending pod",
			events: []framework.ClusterEvent{framework.UnscheduledPodAdd,
				{Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodSchedulingGatesEliminated}},
			want: []eventGroup{{Words: "a pending pod is added or has its last scheduling gate removed",
				Labels: []string{"UnscheduledPodAdd", "UnscheduledPod/UpdatePodSchedulingGatesEliminated"}}},
		},
		{
			name:   "any event",
			events: []framework.ClusterEvent{{Resource: framework.WildCard, ActionType: framework.All, Label: "WildCard"}},
			want:   []eventGroup{{Words: "anything in the cluster changes", Labels: []string{"WildCard"}}},
		},
		{
			name:   "an unknown resource is said by its labels",
			events: []framework.ClusterEvent{{Resource: "example.com/Widget", ActionType: framework.Add}},
			want:   []eventGroup{{Words: "example.com/Widget/Add", Labels: []string{"example.com/Widget/Add"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, eventGroups(tt.events)); diff != "" {
				t.Errorf("eventGroups (-want +got):\n%s", diff)
			}
		})
	}
}
