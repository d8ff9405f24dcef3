package minisched

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/framework"
)

// TestPodGroupMemberAttemptDuration: a member's attempt is timed as
// kube-scheduler times it (podSchedulingStart in
// submitPodGroupAlgorithmResult): from now less the member's own
// algorithm's time, not from the start of its group's cycle, which also
// spans the other members' tries and PodGroupPostFilter. The group's cycle
// here began an hour ago; its two members, one node short, each took well
// under a minute.
func TestPodGroupMemberAttemptDuration(t *testing.T) {
	var members []*v1.Pod
	for i := range 2 {
		name := fmt.Sprintf("m%d", i)
		members = append(members, st.MakePod().Namespace("default").Name(name).UID(name).PodGroup("g").
			Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj())
	}
	pg := st.MakePodGroup().Namespace("default").Name("g").Gang(2).Obj()
	pt := newPodGroupTest(t, features.Gates{GenericWorkload: true}, rackNodes("a", 1, "1"), pg, members)
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	objects := []runtime.Object{pg}
	for _, m := range members {
		if err := indexer.Add(m); err != nil {
			t.Fatal(err)
		}
		objects = append(objects, m)
	}
	pt.s.client = fake.NewClientset(objects...)
	pt.s.podLister = corelisters.NewPodLister(indexer)
	_, ctx := ktesting.NewTestContext(t)

	res := pt.s.podGroupAlgorithm(ctx, pt.fw, framework.NewCycleState(), pt.group)
	if !res.status.IsRejected() {
		t.Fatalf("the group's status = %v, want it unschedulable", res.status)
	}
	pt.s.submitPodGroupResult(ctx, ctx, pt.fw, pt.group, res, res.status, time.Now().Add(-time.Hour))

	families, err := pt.metrics.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var count uint64
	var sum float64
	for _, f := range families {
		if f.GetName() != "scheduler_scheduling_attempt_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			count += m.GetHistogram().GetSampleCount()
			sum += m.GetHistogram().GetSampleSum()
		}
	}
	if count != 2 || sum >= 60 {
		t.Errorf("members' attempts: %d observed, %.0f s in all; want 2, under a minute (each timed from its own try)",
			count, sum)
	}
}
