// Tests for InterPodAffinity's registered events and queueing hints.
package interpodaffinity

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestEventsToRegister(t *testing.T) {
	env := newTestEnv(t, nil, nil, nil)
	got := plugintesting.HintedEvents(t, env.pl)
	want := []framework.ClusterEvent{
		{Resource: framework.Pod, ActionType: framework.Add | framework.UpdatePodLabel | framework.Delete},
		{Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodLabel},
		{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EventsToRegister (-want +got):\n%s", diff)
	}
}

func TestIsSchedulableAfterAssignedPodChange(t *testing.T) {
	// target wants a db pod in its zone and no web pod there.
	target := pod("p").Label("role", "p").
		PodAffinity(required(term(zone, "app", "db"))).
		PodAntiAffinity(requiredAnti(term(zone, "app", "web"))).Obj()
	assigned := func(name string, kv ...string) *v1.Pod {
		w := pod(name).NodeName("n")
		for i := 0; i+1 < len(kv); i += 2 {
			w.Label(kv[i], kv[i+1])
		}
		return w.Obj()
	}

	tests := []struct {
		name           string
		pod            *v1.Pod
		oldObj, newObj interface{}
		want           framework.QueueingHint
		wantErr        bool
	}{
		{
			name:   "added pod matches the affinity",
			pod:    target,
			newObj: assigned("db", "app", "db"),
			want:   framework.Queue,
		},
		{
			name:   "added pod matches nothing",
			pod:    target,
			newObj: assigned("cache", "app", "cache"),
			want:   framework.QueueSkip,
		},
		{
			name:   "added pod matches the anti-affinity: cannot help",
			pod:    target,
			newObj: assigned("web", "app", "web"),
			want:   framework.QueueSkip,
		},
		{
			name:   "added pod is not on a node",
			pod:    target,
			newObj: pod("db").Label("app", "db").Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:   "added pod is only nominated to a node",
			pod:    target,
			newObj: pod("db").Label("app", "db").NominatedNodeName("n").Obj(),
			want:   framework.Queue,
		},
		{
			name:   "added pod must match all affinity terms",
			pod:    pod("p").PodAffinity(required(term(zone, "app", "db"), term(zone, "tier", "back"))).Obj(),
			newObj: assigned("db", "app", "db"),
			want:   framework.QueueSkip,
		},
		{
			name:   "added pod matches all affinity terms",
			pod:    pod("p").PodAffinity(required(term(zone, "app", "db"), term(zone, "tier", "back"))).Obj(),
			newObj: assigned("db", "app", "db", "tier", "back"),
			want:   framework.Queue,
		},
		{
			name:   "added pod outside the term's namespaces",
			pod:    pod("p").PodAffinity(required(inNamespaces(term(zone, "app", "db"), "prod"))).Obj(),
			newObj: assigned("db", "app", "db"),
			want:   framework.QueueSkip,
		},
		{
			name:   "added pod in the term's namespaces",
			pod:    pod("p").PodAffinity(required(inNamespaces(term(zone, "app", "db"), "prod"))).Obj(),
			newObj: pod("db").Namespace("prod").Label("app", "db").NodeName("n").Obj(),
			want:   framework.Queue,
		},
		{
			// Hints do not resolve namespaceSelectors (no lister), as in
			// kube-scheduler: a non-empty one selects no namespace here.
			name:   "a term's namespaceSelector is not resolved by the hint",
			pod:    pod("p").PodAffinity(required(withNamespaceSelector(term(zone, "app", "db"), "team", "a"))).Obj(),
			newObj: pod("db").Namespace("ns1").Label("app", "db").NodeName("n").Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:   "an empty namespaceSelector selects every namespace",
			pod:    pod("p").PodAffinity(required(withNamespaceSelector(term(zone, "app", "db")))).Obj(),
			newObj: pod("db").Namespace("ns1").Label("app", "db").NodeName("n").Obj(),
			want:   framework.Queue,
		},
		{
			name:   "updated pod comes to match the affinity",
			pod:    target,
			oldObj: assigned("x", "app", "cache"),
			newObj: assigned("x", "app", "db"),
			want:   framework.Queue,
		},
		{
			name:   "updated pod matched the affinity before already",
			pod:    target,
			oldObj: assigned("x", "app", "db"),
			newObj: assigned("x", "app", "db", "extra", "label"),
			want:   framework.QueueSkip,
		},
		{
			name:   "updated pod stops matching the anti-affinity",
			pod:    target,
			oldObj: assigned("x", "app", "web"),
			newObj: assigned("x", "app", "cache"),
			want:   framework.Queue,
		},
		{
			name:   "updated pod comes to match the anti-affinity",
			pod:    target,
			oldObj: assigned("x", "app", "cache"),
			newObj: assigned("x", "app", "web"),
			want:   framework.QueueSkip,
		},
		{
			name:   "updated pod is not on a node",
			pod:    target,
			oldObj: pod("x").Label("app", "cache").Obj(),
			newObj: pod("x").Label("app", "db").Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:   "deleted pod matched the anti-affinity",
			pod:    target,
			oldObj: assigned("web", "app", "web"),
			want:   framework.Queue,
		},
		{
			name:   "deleted pod's anti-affinity selected the pod",
			pod:    target,
			oldObj: pod("x").NodeName("n").PodAntiAffinity(requiredAnti(term(hostname, "role", "p"))).Obj(),
			want:   framework.Queue,
		},
		{
			name:   "deleted pod's anti-affinity selected other pods",
			pod:    target,
			oldObj: pod("x").NodeName("n").PodAntiAffinity(requiredAnti(term(hostname, "role", "q"))).Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:   "deleted pod matched the affinity: deleting it cannot help",
			pod:    target,
			oldObj: assigned("db", "app", "db"),
			want:   framework.QueueSkip,
		},
		{
			name:   "deleted pod was not on a node",
			pod:    target,
			oldObj: pod("web").Label("app", "web").Obj(),
			want:   framework.QueueSkip,
		},
		{
			name: "the pod's selector does not parse",
			pod: pod("p").PodAffinity(required(v1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app",
					Operator: "Bogus"}}},
				TopologyKey: zone,
			})).Obj(),
			newObj:  assigned("db", "app", "db"),
			want:    framework.Queue,
			wantErr: true,
		},
		{
			name:    "not a pod",
			pod:     target,
			newObj:  node("n"),
			want:    framework.Queue,
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			env := newTestEnv(t, nil, nil, nil)
			got, err := env.pl.isSchedulableAfterAssignedPodChange(logger, tt.pod, tt.oldObj, tt.newObj)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsSchedulableAfterTargetPodUpdateLabel(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	env := newTestEnv(t, nil, nil, nil)
	old, updated := pod("p").Label("app", "web").Obj(), pod("p").Label("app", "cache").Obj()
	got, err := env.pl.isSchedulableAfterTargetPodUpdateLabel(logger, updated, old, updated)
	if err != nil || got != framework.Queue {
		t.Errorf("hint = %v, %v; want Queue, nil", got, err)
	}
}

func TestIsSchedulableAfterNodeChange(t *testing.T) {
	withAffinity := pod("p").PodAffinity(required(term(zone, "app", "db"))).Obj()
	withAntiAffinity := pod("p").PodAntiAffinity(requiredAnti(term(zone, "app", "web"))).Obj()
	withoutTerms := pod("p").Label("app", "web").Obj()

	tests := []struct {
		name           string
		pod            *v1.Pod
		oldObj, newObj interface{}
		want           framework.QueueingHint
		wantErr        bool
	}{
		{
			name:   "affinity: node added with the topology key",
			pod:    withAffinity,
			newObj: node("n", zone, "z1"),
			want:   framework.Queue,
		},
		{
			name:   "affinity: node added without the topology key",
			pod:    withAffinity,
			newObj: node("n", hostname, "n"),
			want:   framework.QueueSkip,
		},
		{
			name:   "affinity: node gained the topology key",
			pod:    withAffinity,
			oldObj: node("n"),
			newObj: node("n", zone, "z1"),
			want:   framework.Queue,
		},
		{
			name:   "affinity: node moved to another domain",
			pod:    withAffinity,
			oldObj: node("n", zone, "z1"),
			newObj: node("n", zone, "z2"),
			want:   framework.Queue,
		},
		{
			name:   "affinity: node lost the topology key",
			pod:    withAffinity,
			oldObj: node("n", zone, "z1"),
			newObj: node("n"),
			want:   framework.QueueSkip,
		},
		{
			name:   "affinity: another label changed",
			pod:    withAffinity,
			oldObj: node("n", zone, "z1", "disk", "ssd"),
			newObj: node("n", zone, "z1", "disk", "hdd"),
			want:   framework.QueueSkip,
		},
		{
			name:   "anti-affinity: any node added",
			pod:    withAntiAffinity,
			newObj: node("n"),
			want:   framework.Queue,
		},
		{
			name:   "anti-affinity: node lost the topology key",
			pod:    withAntiAffinity,
			oldObj: node("n", zone, "z1"),
			newObj: node("n"),
			want:   framework.Queue,
		},
		{
			name:   "anti-affinity: node moved to another domain",
			pod:    withAntiAffinity,
			oldObj: node("n", zone, "z1"),
			newObj: node("n", zone, "z2"),
			want:   framework.Queue,
		},
		{
			name:   "anti-affinity: node gained the topology key, which cannot help",
			pod:    withAntiAffinity,
			oldObj: node("n"),
			newObj: node("n", zone, "z1"),
			want:   framework.QueueSkip,
		},
		{
			name:   "no terms of its own: node added",
			pod:    withoutTerms,
			newObj: node("n", zone, "z1"),
			want:   framework.QueueSkip,
		},
		{
			name:    "not a node",
			pod:     withAffinity,
			newObj:  pod("x").Obj(),
			want:    framework.Queue,
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			env := newTestEnv(t, nil, nil, nil)
			got, err := env.pl.isSchedulableAfterNodeChange(logger, tt.pod, tt.oldObj, tt.newObj)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}
