// Tests for NodeDeclaredFeatures' registered events and queueing hints.
package nodedeclaredfeatures

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestEventsToRegister(t *testing.T) {
	got := plugintesting.HintedEvents(t, newPlugin(t))
	want := []framework.ClusterEvent{
		{Resource: framework.Node, ActionType: framework.Add | framework.Update},
		{Resource: framework.UnscheduledPod, ActionType: framework.Update},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EventsToRegister (-want +got):\n%s", diff)
	}
}

func TestIsSchedulableAfterNodeChange(t *testing.T) {
	bare := nodeDeclaring("n")
	other := nodeDeclaring("n", featureRestartAll)
	satisfying := nodeDeclaring("n", featureUserNSHostNetwork)
	relabelled := nodeDeclaring("n", featureUserNSHostNetwork)
	relabelled.Labels = map[string]string{"zone": "b"}
	tests := []struct {
		name           string
		pod            *v1.Pod
		oldObj, newObj interface{}
		want           framework.QueueingHint
		wantErr        bool
	}{
		{name: "node added declaring the feature", pod: userNSPod(), newObj: satisfying, want: framework.Queue},
		{name: "node added without the feature", pod: userNSPod(), newObj: bare, want: framework.QueueSkip},
		{name: "node added with another feature only", pod: userNSPod(), newObj: other, want: framework.QueueSkip},
		{name: "node gained the feature", pod: userNSPod(), oldObj: bare, newObj: satisfying, want: framework.Queue},
		{name: "node's features changed, still without the feature", pod: userNSPod(), oldObj: bare, newObj: other,
			want: framework.QueueSkip},
		{name: "node lost the feature", pod: userNSPod(), oldObj: satisfying, newObj: bare, want: framework.QueueSkip},
		{name: "node updated, declared features unchanged", pod: userNSPod(), oldObj: satisfying, newObj: relabelled,
			want: framework.QueueSkip},
		{name: "pod needing two features, node gained one of them", pod: withRestartAll(userNSPod()), oldObj: bare,
			newObj: satisfying, want: framework.QueueSkip},
		{name: "wrong new object type", pod: userNSPod(), newObj: userNSPod(), want: framework.Queue, wantErr: true},
		{name: "wrong old object type", pod: userNSPod(), oldObj: userNSPod(), newObj: satisfying, want: framework.Queue,
			wantErr: true},
		{name: "no new node", pod: userNSPod(), oldObj: satisfying, want: framework.Queue, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			got, err := newPlugin(t).isSchedulableAfterNodeChange(logger, tt.pod, tt.oldObj, tt.newObj)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsSchedulableAfterTargetPodUpdate(t *testing.T) {
	relabelled := userNSPod()
	relabelled.Labels = map[string]string{"app": "web"}
	tests := []struct {
		name           string
		oldObj, newObj interface{}
		want           framework.QueueingHint
		wantErr        bool
	}{
		{name: "requirement added", oldObj: userNSPod(), newObj: withRestartAll(userNSPod()), want: framework.Queue},
		{name: "requirement removed", oldObj: withRestartAll(userNSPod()), newObj: userNSPod(), want: framework.Queue},
		{name: "requirements unchanged", oldObj: userNSPod(), newObj: relabelled, want: framework.QueueSkip},
		{name: "wrong object type", oldObj: userNSPod(), newObj: nodeDeclaring("n"), want: framework.Queue, wantErr: true},
		{name: "no old pod", newObj: userNSPod(), want: framework.Queue, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			got, err := newPlugin(t).isSchedulableAfterTargetPodUpdate(logger, userNSPod(), tt.oldObj, tt.newObj)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}
