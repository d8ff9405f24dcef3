package main

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestGangWorkloads checks, at both sizes, that every gang workload's
// measured pods fill its PodGroups exactly (PodsPerGroup each, in order),
// that createPodGroups makes those groups as gangs of MinCount with the
// workload's priority class, and that both schedulers get the gate.
func TestGangWorkloads(t *testing.T) {
	for _, smoke := range []bool{true, false} {
		for _, w := range workloads(smoke) {
			if w.Gangs == nil {
				continue
			}
			t.Run(w.Name, func(t *testing.T) {
				g := w.Gangs
				if w.Pods != g.Groups*g.PodsPerGroup || int(g.MinCount) != g.PodsPerGroup {
					t.Fatalf("%d pods in %d groups of %d (minCount %d), want full gangs", w.Pods, g.Groups, g.PodsPerGroup, g.MinCount)
				}
				members := map[string]int{}
				for i := range w.Pods {
					p := w.Pod(podName("pod", i))
					if p.Spec.SchedulingGroup == nil || p.Spec.SchedulingGroup.PodGroupName == nil {
						t.Fatalf("pod %s has no pod group", p.Name)
					}
					members[*p.Spec.SchedulingGroup.PodGroupName]++
				}
				for i := range g.Groups {
					if n := members[gangName(i)]; n != g.PodsPerGroup {
						t.Errorf("%s has %d members, want %d", gangName(i), n, g.PodsPerGroup)
					}
				}
				client := fake.NewClientset()
				if err := createPodGroups(context.Background(), client, w); err != nil {
					t.Fatal(err)
				}
				pgs, err := client.SchedulingV1beta1().PodGroups(namespace).List(context.Background(), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if len(pgs.Items) != g.Groups {
					t.Fatalf("%d pod groups, want %d", len(pgs.Items), g.Groups)
				}
				for _, pg := range pgs.Items {
					gang := pg.Spec.SchedulingPolicy.Gang
					if gang == nil || gang.MinCount != g.MinCount || pg.Spec.PriorityClassName != g.PriorityClass {
						t.Errorf("%s: policy %+v, priority class %q; want a gang of %d, class %q",
							pg.Name, pg.Spec.SchedulingPolicy, pg.Spec.PriorityClassName, g.MinCount, g.PriorityClass)
					}
				}
				if !strings.Contains(w.FeatureGates, "GenericWorkload=true") {
					t.Errorf("feature gates %q, want GenericWorkload=true", w.FeatureGates)
				}
			})
		}
	}
}
