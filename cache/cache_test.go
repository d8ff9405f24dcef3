// This file tests the Cache: the pod state machine, expiry, resource
// accounting, deleted nodes, image states and concurrent use.

package cache

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
)

// podOp is one call on the cache, with the error it should return ("" for
// none; otherwise a substring of the message).
type podOp struct {
	desc    string
	do      func(c *Cache, logger klog.Logger) error
	wantErr string
}

func assumeOp(p *v1.Pod) podOp {
	return podOp{desc: "assume " + p.Name, do: func(c *Cache, l klog.Logger) error { return c.AssumePod(l, p) }}
}

func finishOp(p *v1.Pod) podOp {
	return podOp{desc: "finish binding " + p.Name,
		do: func(c *Cache, l klog.Logger) error { return c.FinishBinding(l, p) }}
}

func forgetOp(p *v1.Pod) podOp {
	return podOp{desc: "forget " + p.Name, do: func(c *Cache, l klog.Logger) error { return c.ForgetPod(l, p) }}
}

func addOp(p *v1.Pod) podOp {
	return podOp{desc: "add " + p.Name, do: func(c *Cache, l klog.Logger) error { return c.AddPod(l, p) }}
}

func updateOp(oldPod, newPod *v1.Pod) podOp {
	return podOp{desc: "update " + oldPod.Name,
		do: func(c *Cache, l klog.Logger) error { return c.UpdatePod(l, oldPod, newPod) }}
}

func removeOp(p *v1.Pod) podOp {
	return podOp{desc: "remove " + p.Name, do: func(c *Cache, l klog.Logger) error { return c.RemovePod(l, p) }}
}

// failing expects op to fail with a message containing msg.
func failing(op podOp, msg string) podOp {
	op.wantErr = msg
	return op
}

// runOps applies ops in order and checks each one's error.
func runOps(t *testing.T, c *Cache, logger klog.Logger, ops []podOp) {
	t.Helper()
	for i, op := range ops {
		err := op.do(c, logger)
		switch {
		case op.wantErr == "" && err != nil:
			t.Fatalf("op %d (%s): unexpected error: %v", i, op.desc, err)
		case op.wantErr != "" && err == nil:
			t.Fatalf("op %d (%s): got no error, want one containing %q", i, op.desc, op.wantErr)
		case op.wantErr != "" && !strings.Contains(err.Error(), op.wantErr):
			t.Fatalf("op %d (%s): got error %q, want one containing %q", i, op.desc, err, op.wantErr)
		}
	}
}

// podsByNode returns, from a Dump, the sorted pod UIDs of every NodeInfo
// that has pods.
func podsByNode(d *Dump) map[string][]types.UID {
	out := map[string][]types.UID{}
	for name, ni := range d.Nodes {
		if len(ni.Pods) > 0 {
			out[name] = uids(ni.Pods)
		}
	}
	return out
}

func TestPodStateMachine(t *testing.T) {
	nodeA := makeNode("node-a").Obj()
	nodeB := makeNode("node-b").Obj()
	p1 := makePod("p1").NodeName("node-a").Req(map[v1.ResourceName]string{v1.ResourceCPU: "100m"}).Obj()
	p1OnB := makePod("p1").NodeName("node-b").Req(map[v1.ResourceName]string{v1.ResourceCPU: "100m"}).Obj()
	p1Bigger := makePod("p1").NodeName("node-a").Req(map[v1.ResourceName]string{v1.ResourceCPU: "300m"}).Obj()
	p1NoNode := makePod("p1").Obj()
	p2 := makePod("p2").NodeName("node-b").Obj()
	p3OnC := makePod("p3").NodeName("node-c").Obj()
	noUID := makePod("x").UID("").NodeName("node-a").Obj()

	tests := []struct {
		name          string
		ops           []podOp
		wantAssumed   []types.UID
		wantPods      map[string][]types.UID
		wantNodeCount int
		// wantNodeOf is each listed pod's node as GetPod reports it.
		wantNodeOf map[types.UID]string
	}{
		{
			name:          "assume, then the informer's add confirms",
			ops:           []podOp{assumeOp(p1), finishOp(p1), addOp(p1)},
			wantPods:      map[string][]types.UID{"node-a": {p1.UID}},
			wantNodeCount: 2,
			wantNodeOf:    map[types.UID]string{p1.UID: "node-a"},
		},
		{
			name:          "assumed pod stays assumed until confirmed",
			ops:           []podOp{assumeOp(p1), finishOp(p1)},
			wantAssumed:   []types.UID{p1.UID},
			wantPods:      map[string][]types.UID{"node-a": {p1.UID}},
			wantNodeCount: 2,
		},
		{
			name:          "assume, then forget after a failed binding",
			ops:           []podOp{assumeOp(p1), forgetOp(p1)},
			wantNodeCount: 2,
		},
		{
			name:          "assumed on node-a, the informer says node-b: the pod moves",
			ops:           []podOp{assumeOp(p1), addOp(p1OnB)},
			wantPods:      map[string][]types.UID{"node-b": {p1.UID}},
			wantNodeCount: 2,
			wantNodeOf:    map[types.UID]string{p1.UID: "node-b"},
		},
		{
			name:          "a pod bound by someone else goes straight to added",
			ops:           []podOp{addOp(p2)},
			wantPods:      map[string][]types.UID{"node-b": {p2.UID}},
			wantNodeCount: 2,
		},
		{
			name:          "adding an added pod again is an error",
			ops:           []podOp{addOp(p1), failing(addOp(p1), "was already in added state")},
			wantPods:      map[string][]types.UID{"node-a": {p1.UID}},
			wantNodeCount: 2,
		},
		{
			name: "assuming a known pod is an error",
			ops: []podOp{assumeOp(p1), failing(assumeOp(p1), "is in the cache"), addOp(p1),
				failing(assumeOp(p1), "is in the cache")},
			wantPods:      map[string][]types.UID{"node-a": {p1.UID}},
			wantNodeCount: 2,
		},
		{
			name:          "forgetting an added pod is an error",
			ops:           []podOp{addOp(p1), failing(forgetOp(p1), "wasn't assumed")},
			wantPods:      map[string][]types.UID{"node-a": {p1.UID}},
			wantNodeCount: 2,
		},
		{
			name:          "forgetting an unknown pod is an error",
			ops:           []podOp{failing(forgetOp(p1), "wasn't assumed")},
			wantNodeCount: 2,
		},
		{
			name:          "forgetting on another node than assumed is an error",
			ops:           []podOp{assumeOp(p1), failing(forgetOp(p1OnB), "was assumed on")},
			wantAssumed:   []types.UID{p1.UID},
			wantPods:      map[string][]types.UID{"node-a": {p1.UID}},
			wantNodeCount: 2,
		},
		{
			name:          "update replaces the added pod",
			ops:           []podOp{addOp(p1), updateOp(p1, p1Bigger)},
			wantPods:      map[string][]types.UID{"node-a": {p1.UID}},
			wantNodeCount: 2,
			wantNodeOf:    map[types.UID]string{p1.UID: "node-a"},
		},
		{
			name:          "update to another node moves the pod",
			ops:           []podOp{addOp(p1), updateOp(p1, p1OnB)},
			wantPods:      map[string][]types.UID{"node-b": {p1.UID}},
			wantNodeCount: 2,
			wantNodeOf:    map[types.UID]string{p1.UID: "node-b"},
		},
		{
			name:          "updating an assumed pod is an error",
			ops:           []podOp{assumeOp(p1), failing(updateOp(p1, p1Bigger), "should not be updated")},
			wantAssumed:   []types.UID{p1.UID},
			wantPods:      map[string][]types.UID{"node-a": {p1.UID}},
			wantNodeCount: 2,
		},
		{
			name:          "updating an unknown pod is an error",
			ops:           []podOp{failing(updateOp(p1, p1Bigger), "not in the cache")},
			wantNodeCount: 2,
		},
		{
			name:          "remove an added pod",
			ops:           []podOp{addOp(p1), addOp(p2), removeOp(p1)},
			wantPods:      map[string][]types.UID{"node-b": {p2.UID}},
			wantNodeCount: 2,
		},
		{
			name:          "remove with the informer's stale object that has no node name",
			ops:           []podOp{addOp(p1), removeOp(p1NoNode)},
			wantNodeCount: 2,
		},
		{
			name:          "remove an assumed pod",
			ops:           []podOp{assumeOp(p1), removeOp(p1)},
			wantNodeCount: 2,
		},
		{
			name:          "removing an unknown pod is an error",
			ops:           []podOp{failing(removeOp(p1), "not in the cache")},
			wantNodeCount: 2,
		},
		{
			name:          "a pod on an unknown node gets a node-less NodeInfo, dropped with its last pod",
			ops:           []podOp{assumeOp(p3OnC), forgetOp(p3OnC)},
			wantNodeCount: 2,
		},
		{
			name:          "the node-less NodeInfo holds the pod until then",
			ops:           []podOp{addOp(p3OnC)},
			wantPods:      map[string][]types.UID{"node-c": {p3OnC.UID}},
			wantNodeCount: 3,
		},
		{
			name: "pods without a UID or a node are refused",
			ops: []podOp{
				failing(assumeOp(noUID), "empty UID"), failing(addOp(noUID), "empty UID"),
				failing(assumeOp(p1NoNode), "no node name"), failing(addOp(p1NoNode), "no node name"),
			},
			wantNodeCount: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			c := New(0)
			c.AddNode(logger, nodeA)
			c.AddNode(logger, nodeB)
			runOps(t, c, logger, tt.ops)

			d := c.Dump()
			if diff := cmp.Diff(sets.New(tt.wantAssumed...), d.AssumedPods, cmpOpts...); diff != "" {
				t.Errorf("assumed pods (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantPods, podsByNode(d), cmpOpts...); diff != "" {
				t.Errorf("pods by node (-want +got):\n%s", diff)
			}
			if got := c.NodeCount(); got != tt.wantNodeCount {
				t.Errorf("NodeCount() = %d, want %d", got, tt.wantNodeCount)
			}
			wantPodCount := 0
			for _, ps := range tt.wantPods {
				wantPodCount += len(ps)
			}
			if got, _ := c.PodCount(); got != wantPodCount {
				t.Errorf("PodCount() = %d, want %d", got, wantPodCount)
			}
			for uid, node := range tt.wantNodeOf {
				got, err := c.GetPod(st.MakePod().UID(string(uid)).Obj())
				if err != nil {
					t.Fatalf("GetPod(%s): %v", uid, err)
				}
				if got.Spec.NodeName != node {
					t.Errorf("GetPod(%s) is on %q, want %q", uid, got.Spec.NodeName, node)
				}
			}
			for _, uid := range tt.wantAssumed {
				if ok, _ := c.IsAssumedPod(st.MakePod().UID(string(uid)).Obj()); !ok {
					t.Errorf("IsAssumedPod(%s) = false, want true", uid)
				}
			}
			listed := sets.New[types.UID]()
			for _, p := range c.AssumedPods() {
				listed.Insert(p.UID)
				if p.Spec.NodeName == "" {
					t.Errorf("AssumedPods lists %s without its node", p.Name)
				}
			}
			if diff := cmp.Diff(sets.New(tt.wantAssumed...), listed, cmpOpts...); diff != "" {
				t.Errorf("AssumedPods (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExpireAssumedPods(t *testing.T) {
	const ttl = 10 * time.Second
	p1 := makePod("p1").NodeName("node-a").Obj()

	tests := []struct {
		name          string
		ttl           time.Duration
		finishBinding bool
		// stepBefore is how long after assuming FinishBinding is called;
		// stepAfter how long after that the cleanup runs.
		stepBefore, stepAfter time.Duration
		wantExpired           bool
	}{
		{name: "expires once the deadline after FinishBinding passed", ttl: ttl, finishBinding: true,
			stepAfter: ttl + time.Second, wantExpired: true},
		{name: "the deadline counts from FinishBinding, not from AssumePod", ttl: ttl, finishBinding: true,
			stepBefore: time.Hour, stepAfter: ttl - time.Second},
		{name: "not at the deadline exactly", ttl: ttl, finishBinding: true, stepAfter: ttl},
		{name: "never while binding is in progress", ttl: ttl, stepAfter: time.Hour},
		{name: "never with ttl 0", ttl: 0, finishBinding: true, stepAfter: 1000 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			fc := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			c := New(tt.ttl, WithClock(fc))
			c.AddNode(logger, makeNode("node-a").Obj())
			if err := c.AssumePod(logger, p1); err != nil {
				t.Fatal(err)
			}
			fc.Step(tt.stepBefore)
			if tt.finishBinding {
				if err := c.FinishBinding(logger, p1); err != nil {
					t.Fatal(err)
				}
			}
			fc.Step(tt.stepAfter)
			c.cleanupAssumedPods(logger, fc.Now())

			_, err := c.GetPod(p1)
			if gotExpired := err != nil; gotExpired != tt.wantExpired {
				t.Fatalf("expired = %v, want %v", gotExpired, tt.wantExpired)
			}
			if !tt.wantExpired {
				return
			}
			// The informer's late Add puts an expired pod back as added.
			if err := c.AddPod(logger, p1); err != nil {
				t.Fatalf("AddPod after expiry: %v", err)
			}
			if assumed, _ := c.IsAssumedPod(p1); assumed {
				t.Errorf("pod is assumed after the informer's Add")
			}
		})
	}
}

func TestRunExpiresAssumedPods(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fc := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := New(5*time.Second, WithClock(fc))
	p1 := makePod("p1").NodeName("node-a").Obj()
	if err := c.AssumePod(logger, p1); err != nil {
		t.Fatal(err)
	}
	if err := c.FinishBinding(logger, p1); err != nil {
		t.Fatal(err)
	}
	c.Run(ctx)
	if !fc.HasWaiters() {
		t.Fatal("Run did not arm its cleanup timer")
	}
	// Each tick runs the cleanup and arms the next timer; the pod expires at
	// the tick after its 5s deadline.
	for range 6 {
		if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true,
			func(context.Context) (bool, error) { return fc.HasWaiters(), nil }); err != nil {
			t.Fatalf("cleanup loop did not re-arm its timer: %v", err)
		}
		fc.Step(time.Second)
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { n, _ := c.PodCount(); return n == 0, nil }); err != nil {
		t.Fatalf("assumed pod was not expired by the loop: %v", err)
	}
}

func TestRunWithoutTTLStartsNothing(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	fc := testingclock.NewFakeClock(time.Now())
	New(0, WithClock(fc)).Run(ctx)
	if fc.HasWaiters() {
		t.Error("Run with ttl 0 started a cleanup loop")
	}
}

func TestRequestedResources(t *testing.T) {
	const gpu v1.ResourceName = "example.com/gpu"
	node := makeNode("node-a").Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi", v1.ResourcePods: "110", gpu: "4",
	}).Obj()
	p1 := makePod("p1").NodeName("node-a").Req(map[v1.ResourceName]string{v1.ResourceCPU: "500m", v1.ResourceMemory: "1Gi",
		gpu: "1"}).Obj()
	p2 := makePod("p2").NodeName("node-a").Req(map[v1.ResourceName]string{v1.ResourceCPU: "250m",
		v1.ResourceMemory: "512Mi"}).Obj()
	// p3's one container requests nothing: it counts with the defaults in
	// NonZeroRequested.
	p3 := makePod("p3").NodeName("node-a").Req(nil).Obj()
	const gi, mi = 1 << 30, 1 << 20

	type want struct {
		pods                        int
		requested, nonZeroRequested framework.Resource
	}
	gpus := func(n int64) map[v1.ResourceName]int64 { return map[v1.ResourceName]int64{gpu: n} }
	steps := []struct {
		op   podOp
		want want
	}{
		{assumeOp(p1), want{1,
			framework.Resource{MilliCPU: 500, Memory: gi, ScalarResources: gpus(1)},
			framework.Resource{MilliCPU: 500, Memory: gi}}},
		{addOp(p2), want{2,
			framework.Resource{MilliCPU: 750, Memory: gi + 512*mi, ScalarResources: gpus(1)},
			framework.Resource{MilliCPU: 750, Memory: gi + 512*mi}}},
		{addOp(p3), want{3,
			framework.Resource{MilliCPU: 750, Memory: gi + 512*mi, ScalarResources: gpus(1)},
			framework.Resource{MilliCPU: 850, Memory: gi + 712*mi}}},
		{forgetOp(p1), want{2,
			framework.Resource{MilliCPU: 250, Memory: 512 * mi},
			framework.Resource{MilliCPU: 350, Memory: 712 * mi}}},
		{assumeOp(p1), want{3,
			framework.Resource{MilliCPU: 750, Memory: gi + 512*mi, ScalarResources: gpus(1)},
			framework.Resource{MilliCPU: 850, Memory: gi + 712*mi}}},
		{addOp(p1), want{3,
			framework.Resource{MilliCPU: 750, Memory: gi + 512*mi, ScalarResources: gpus(1)},
			framework.Resource{MilliCPU: 850, Memory: gi + 712*mi}}},
		{removeOp(p2), want{2,
			framework.Resource{MilliCPU: 500, Memory: gi, ScalarResources: gpus(1)},
			framework.Resource{MilliCPU: 600, Memory: gi + 200*mi}}},
		{removeOp(p1), want{1,
			framework.Resource{},
			framework.Resource{MilliCPU: 100, Memory: 200 * mi}}},
		{removeOp(p3), want{0, framework.Resource{}, framework.Resource{}}},
	}

	logger, _ := ktesting.NewTestContext(t)
	c := New(0)
	c.AddNode(logger, node)
	s := NewEmptySnapshot()
	wantAllocatable := framework.Resource{MilliCPU: 4000, Memory: 8 * gi, AllowedPodNumber: 110, ScalarResources: gpus(4)}
	for i, step := range steps {
		t.Run(fmt.Sprintf("%d %s", i, step.op.desc), func(t *testing.T) {
			runOps(t, c, logger, []podOp{step.op})
			if err := c.UpdateSnapshot(logger, s); err != nil {
				t.Fatal(err)
			}
			ni, err := s.Get("node-a")
			if err != nil {
				t.Fatal(err)
			}
			got := want{len(ni.Pods), normResource(ni.Requested), normResource(ni.NonZeroRequested)}
			if diff := cmp.Diff(step.want, got, cmp.AllowUnexported(want{}), cmpOpts[0]); diff != "" {
				t.Errorf("after %s (-want +got):\n%s", step.op.desc, diff)
			}
			if diff := cmp.Diff(wantAllocatable, normResource(ni.Allocatable)); diff != "" {
				t.Errorf("allocatable (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRemovedNodeWithPods(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	c := New(0)
	s := NewEmptySnapshot()
	nodeA := makeNode("node-a").Obj()
	nodeB := makeNode("node-b").Obj()
	p1 := makePod("p1").NodeName("node-a").Obj()
	p2 := makePod("p2").NodeName("node-a").Obj()

	snapshotNodes := func() map[string][]types.UID {
		t.Helper()
		if err := c.UpdateSnapshot(logger, s); err != nil {
			t.Fatalf("UpdateSnapshot: %v", err)
		}
		out := map[string][]types.UID{}
		for _, ni := range s.nodeInfoList {
			out[ni.Node().Name] = uids(ni.Pods)
		}
		return out
	}
	check := func(step string, want map[string][]types.UID, wantNodeCount int) {
		t.Helper()
		if diff := cmp.Diff(want, snapshotNodes(), cmpOpts...); diff != "" {
			t.Errorf("%s: snapshot nodes (-want +got):\n%s", step, diff)
		}
		if got := c.NodeCount(); got != wantNodeCount {
			t.Errorf("%s: NodeCount() = %d, want %d", step, got, wantNodeCount)
		}
	}

	c.AddNode(logger, nodeA)
	c.AddNode(logger, nodeB)
	runOps(t, c, logger, []podOp{addOp(p1), addOp(p2)})
	check("two nodes", map[string][]types.UID{"node-a": {p1.UID, p2.UID}, "node-b": nil}, 2)

	if err := c.RemoveNode(logger, nodeA); err != nil {
		t.Fatal(err)
	}
	check("node-a deleted, its pods not yet", map[string][]types.UID{"node-b": nil}, 2)
	if _, err := s.Get("node-a"); err == nil {
		t.Error("Get(node-a) found a deleted node")
	}
	if err := c.RemoveNode(logger, nodeA); err == nil {
		t.Error("removing node-a twice did not fail")
	}

	c.AddNode(logger, nodeA)
	check("node-a back, with its pods", map[string][]types.UID{"node-a": {p1.UID, p2.UID}, "node-b": nil}, 2)

	if err := c.RemoveNode(logger, nodeA); err != nil {
		t.Fatal(err)
	}
	runOps(t, c, logger, []podOp{removeOp(p1)})
	check("node-a deleted, one pod left", map[string][]types.UID{"node-b": nil}, 2)
	runOps(t, c, logger, []podOp{removeOp(p2)})
	check("last pod gone: the NodeInfo is dropped", map[string][]types.UID{"node-b": nil}, 1)
	if _, ok := c.Dump().Nodes["node-a"]; ok {
		t.Error("Dump still has node-a")
	}
}

func TestImageStates(t *testing.T) {
	const mb = 1 << 20
	// nginx has two names (tag and digest); node-b knows it by its tag only.
	nodeA := makeNode("node-a").Images(100*mb, "nginx:1", "nginx@sha256:1").Images(50*mb, "pause:3").Obj()
	nodeB := makeNode("node-b").Images(100*mb, "nginx:1").Images(50*mb, "pause:3").Obj()
	nodeBNoNginx := makeNode("node-b").Images(50*mb, "pause:3").Obj()
	nodeC := makeNode("node-c").Obj()

	type images map[string]framework.ImageStateSummary
	img := func(size int64, numNodes int) framework.ImageStateSummary {
		return framework.ImageStateSummary{Size: size, NumNodes: numNodes}
	}
	steps := []struct {
		name string
		do   func(c *Cache, logger klog.Logger) error
		want map[string]images
	}{
		{
			name: "add three nodes",
			do: func(c *Cache, logger klog.Logger) error {
				c.AddNode(logger, nodeA)
				c.AddNode(logger, nodeB)
				c.AddNode(logger, nodeC)
				return nil
			},
			want: map[string]images{
				"node-a": {"nginx:1": img(100*mb, 2), "nginx@sha256:1": img(100*mb, 1), "pause:3": img(50*mb, 2)},
				"node-b": {"nginx:1": img(100*mb, 2), "pause:3": img(50*mb, 2)},
				"node-c": {},
			},
		},
		{
			name: "node-b drops nginx: node-a, unchanged itself, sees the new count",
			do: func(c *Cache, logger klog.Logger) error {
				c.UpdateNode(logger, nodeB, nodeBNoNginx)
				return nil
			},
			want: map[string]images{
				"node-a": {"nginx:1": img(100*mb, 1), "nginx@sha256:1": img(100*mb, 1), "pause:3": img(50*mb, 2)},
				"node-b": {"pause:3": img(50*mb, 2)},
				"node-c": {},
			},
		},
		{
			name: "node-a removed",
			do:   func(c *Cache, logger klog.Logger) error { return c.RemoveNode(logger, nodeA) },
			want: map[string]images{
				"node-b": {"pause:3": img(50*mb, 1)},
				"node-c": {},
			},
		},
		{
			name: "node-c pulls pause and nginx",
			do: func(c *Cache, logger klog.Logger) error {
				c.UpdateNode(logger, nodeC, makeNode("node-c").Images(50*mb, "pause:3").Images(100*mb, "nginx:1").Obj())
				return nil
			},
			want: map[string]images{
				"node-b": {"pause:3": img(50*mb, 2)},
				"node-c": {"nginx:1": img(100*mb, 1), "pause:3": img(50*mb, 2)},
			},
		},
	}

	logger, _ := ktesting.NewTestContext(t)
	c := New(0)
	s := NewEmptySnapshot()
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if err := step.do(c, logger); err != nil {
				t.Fatal(err)
			}
			if err := c.UpdateSnapshot(logger, s); err != nil {
				t.Fatal(err)
			}
			got := map[string]images{}
			for _, ni := range s.nodeInfoList {
				got[ni.Node().Name] = summarizeNodeInfo(ni).ImageStates
			}
			if diff := cmp.Diff(step.want, got, cmpOpts...); diff != "" {
				t.Errorf("image states in the snapshot (-want +got):\n%s", diff)
			}
			// A NodeInfo copy from AddNode or Dump counts nodes as of now too.
			for name, ni := range c.Dump().Nodes {
				if diff := cmp.Diff(step.want[name], images(summarizeNodeInfo(ni).ImageStates), cmpOpts...); diff != "" {
					t.Errorf("image states of %s in Dump (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

func TestAddNodeReturnsACopy(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	c := New(0)
	node := makeNode("node-a").Images(10, "img").Obj()
	ni := c.AddNode(logger, node)
	ni.AddPod(makePod("p").NodeName("node-a").Obj())
	ni.ImageStates["img"].NumNodes = 42
	got := c.Dump().Nodes["node-a"]
	if len(got.Pods) != 0 || got.ImageStates["img"].NumNodes != 1 {
		t.Errorf("changing AddNode's result changed the cache: %d pods, NumNodes %d", len(got.Pods),
			got.ImageStates["img"].NumNodes)
	}
	if ni2 := c.UpdateNode(logger, node, node); ni2.Node() != node || ni2.ImageStates["img"].NumNodes != 1 {
		t.Errorf("UpdateNode returned %v", ni2)
	}
}

// TestConcurrentUse runs writers and a snapshotting reader at once; under
// -race it checks the locking, and at the end that nothing was lost.
func TestConcurrentUse(t *testing.T) {
	logger := logr.Discard()
	c := New(0)
	const workers, rounds, nodesPerWorker = 4, 150, 3

	done := make(chan struct{})
	var readers sync.WaitGroup
	s := NewEmptySnapshot()
	readers.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := c.UpdateSnapshot(logger, s); err != nil {
				t.Errorf("UpdateSnapshot: %v", err)
			}
			c.Dump()
			_, _ = c.PodCount()
		}
	})

	var writers sync.WaitGroup
	remaining := make([]int, workers) // pods each worker leaves behind
	for w := range workers {
		writers.Go(func() {
			fail := func(what string, err error) {
				if err != nil {
					t.Errorf("worker %d: %s: %v", w, what, err)
				}
			}
			var kept []*v1.Pod
			for r := range rounds {
				nodeName := fmt.Sprintf("w%d-n%d", w, r%nodesPerWorker)
				node := makeNode(nodeName).Region("r").Zone(fmt.Sprintf("z%d", r%2)).Images(10, fmt.Sprintf("img-%d", r%4)).Obj()
				c.AddNode(logger, node)
				pod := makePod(fmt.Sprintf("w%d-p%d", w, r)).NodeName(nodeName).
					Req(map[v1.ResourceName]string{v1.ResourceCPU: "10m"}).Obj()
				fail("assume", c.AssumePod(logger, pod))
				if r%3 == 0 {
					fail("forget", c.ForgetPod(logger, pod))
					continue
				}
				fail("add", c.AddPod(logger, pod))
				if r%2 == 0 {
					fail("remove", c.RemovePod(logger, pod))
				} else {
					kept = append(kept, pod)
				}
				if r%10 == 5 {
					fail("remove node", c.RemoveNode(logger, node))
				}
			}
			remaining[w] = len(kept)
		})
	}
	writers.Wait()
	close(done)
	readers.Wait()

	want := 0
	for _, n := range remaining {
		want += n
	}
	if got, _ := c.PodCount(); got != want {
		t.Errorf("PodCount() = %d, want %d", got, want)
	}
	if err := c.UpdateSnapshot(logger, s); err != nil {
		t.Fatalf("final UpdateSnapshot: %v", err)
	}
	fresh := NewEmptySnapshot()
	if err := c.UpdateSnapshot(logger, fresh); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(summarizeSnapshot(t, fresh), summarizeSnapshot(t, s), cmpOpts...); diff != "" {
		t.Errorf("incremental snapshot differs from a fresh one (-want +got):\n%s", diff)
	}
	if got, want := s.NumNodes(), workers*nodesPerWorker; got != want {
		t.Errorf("snapshot has %d nodes, want %d", got, want)
	}
	var names []string
	for _, ni := range s.nodeInfoList {
		names = append(names, ni.Node().Name)
	}
	if slices.Contains(names, "") {
		t.Errorf("snapshot lists a NodeInfo without a node: %v", names)
	}
}
