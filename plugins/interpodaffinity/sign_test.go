// Tests for InterPodAffinity's SignPod.
package interpodaffinity

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestSignPod(t *testing.T) {
	refused := framework.NewStatus(framework.Unschedulable, "pods with InterPodAffinity are not signable")
	affinityPod := pod("p").Label("app", "web").PodAffinity(required(term(zone, "app", "db"))).Obj()
	antiAffinityPod := pod("p").Label("app", "web").PodAntiAffinity(requiredAnti(term(hostname, "app", "web"))).Obj()
	preferredPod := pod("p").PodAffinity(preferred(weighted(5, term(zone, "app", "db")))).Obj()
	labelled := pod("p").Label("app", "web").Label("tier", "front").Obj()
	tests := []struct {
		name  string
		args  string
		cases []plugintesting.SignCase
	}{
		{
			name: "default args",
			args: `{}`,
			cases: []plugintesting.SignCase{
				{Name: "required pod affinity", Pod: affinityPod, WantStatus: refused},
				{Name: "required pod anti-affinity", Pod: antiAffinityPod, WantStatus: refused},
				{Name: "preferred pod affinity", Pod: preferredPod, WantStatus: refused},
				{
					Name: "no terms: the labels existing pods' terms may select",
					Pod:  labelled,
					Want: []framework.SignFragment{{Key: "v1.Pod.Labels",
						Value: map[string]string{"app": "web", "tier": "front"}}},
				},
				{
					Name: "node affinity only: no labels",
					Pod: pod("p").NodeAffinity(&v1.NodeAffinity{
						PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 1}}}).Obj(),
					Want: []framework.SignFragment{{Key: "v1.Pod.Labels", Value: map[string]string(nil)}},
				},
			},
		},
		{
			name: "ignorePreferredTermsOfExistingPods",
			args: `{"ignorePreferredTermsOfExistingPods": true}`,
			cases: []plugintesting.SignCase{
				{Name: "required pod anti-affinity", Pod: antiAffinityPod, WantStatus: refused},
				{Name: "preferred pod affinity", Pod: preferredPod, WantStatus: refused},
				{Name: "no terms: nothing to sign", Pod: labelled},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plugintesting.RunSignCases(t, newTestEnv(t, rawArgs(tt.args), nil, nil).pl, tt.cases)
		})
	}
}

func TestSignPodPairs(t *testing.T) {
	pl := newTestEnv(t, nil, nil, nil).pl
	plugintesting.RunSignPairs(t, pl, []plugintesting.SignPair{
		{
			Name: "same labels, other names and requests",
			A:    pod("a").Label("app", "web").Label("tier", "front").Obj(),
			B: pod("b").Label("tier", "front").Label("app", "web").
				Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj(),
			Same: true,
		},
		{
			// Existing pods' terms select by namespace too, which
			// kube-scheduler's fragment leaves out.
			Name: "same labels in another namespace, as kube-scheduler signs it",
			A:    pod("a").Namespace("ns1").Label("app", "web").Obj(),
			B:    pod("a").Namespace("ns2").Label("app", "web").Obj(),
			Same: true,
		},
		{
			Name: "another label value",
			A:    pod("a").Label("app", "web").Obj(),
			B:    pod("a").Label("app", "db").Obj(),
		},
		{
			Name: "one more label",
			A:    pod("a").Label("app", "web").Obj(),
			B:    pod("a").Label("app", "web").Label("tier", "front").Obj(),
		},
	})
}
