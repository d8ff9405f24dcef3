// This file builds the snapshot a pod-group plugin reads: nodes, the
// PodGroups, and each group's pods, pending or bound, as the cache would
// hold them.

package plugintesting

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/klog/v2/ktesting"

	"github.com/minisched/minisched/cache"
)

// PodGroupSnapshot returns a snapshot of a cache that tracks pod groups
// and holds nodes, podGroups and pods: a pod with spec.nodeName is bound
// there (and counts as scheduled in its group); one without is a pending
// member of its group.
func PodGroupSnapshot(t testing.TB, nodes []*v1.Node, podGroups []*schedulingv1beta1.PodGroup,
	pods []*v1.Pod) *cache.Snapshot {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig())
	c := cache.New(0, cache.WithPodGroups())
	for _, n := range nodes {
		c.AddNode(logger, n)
	}
	for _, pg := range podGroups {
		c.AddPodGroup(pg)
	}
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			c.AddPodGroupMember(p)
			continue
		}
		if err := c.AddPod(logger, p); err != nil {
			t.Fatal(err)
		}
	}
	s := cache.NewEmptySnapshot()
	if err := c.UpdateSnapshot(logger, s); err != nil {
		t.Fatal(err)
	}
	return s
}
