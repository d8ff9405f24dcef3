// Tests of single steps beyond one cycle: Score's preference for earlier
// firstAvailable alternatives, Unreserve, a pending allocation shared in a
// pod-group cycle, PreBind's wait for binding
// conditions on a fake clock, Filter's timeout, and the queueing hints.
package dynamicresources

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2/ktesting"

	"github.com/minisched/minisched/minisched/framework"
)

func TestScoreFirstAvailable(t *testing.T) {
	// node-big has the preferred device class's device, node-small only
	// the fallback's.
	big := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `"size" in device.attributes["x"] && device.attributes["x"].size == "big"`}}}}}
	small := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "small"}}
	bigSlice := makeSlice("node-big", "gpu")
	bigSlice.Spec.Devices[0].Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"x/size": {StringValue: ptrTo("big")}}
	smallSlice := makeSlice("node-small", "gpu")
	claim := withFirstAvailable(makeClaim(claimName), "big", "small")
	env := newPluginEnv(t, nil, claim, big, small, bigSlice, smallSlice)
	_, ctx := ktesting.NewTestContext(t)
	pod := makePod(claimName)
	cs := framework.NewCycleState()
	if _, s := env.pl.PreFilter(ctx, cs, pod, nil); !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	scores := framework.NodeScoreList{}
	for _, n := range []string{"node-big", "node-small"} {
		if s := env.pl.Filter(ctx, cs, pod, makeNode(n)); !s.IsSuccess() {
			t.Fatalf("Filter %s: %v", n, s)
		}
		score, s := env.pl.Score(ctx, cs, pod, makeNode(n))
		if !s.IsSuccess() {
			t.Fatalf("Score %s: %v", n, s)
		}
		scores = append(scores, framework.NodeScore{Name: n, Score: score})
	}
	if diff := cmp.Diff(framework.NodeScoreList{{Name: "node-big", Score: 8}, {Name: "node-small", Score: 7}}, scores); diff != "" {
		t.Errorf("raw scores (-want +got):\n%s", diff)
	}
	env.pl.NormalizeScore(ctx, cs, pod, scores)
	if diff := cmp.Diff(framework.NodeScoreList{{Name: "node-big", Score: 100}, {Name: "node-small", Score: 87}}, scores); diff != "" {
		t.Errorf("normalized scores (-want +got):\n%s", diff)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestReserveUnreserve: Reserve puts the allocation in flight (the next
// pod needing the claim waits); Unreserve drops it, twice harmlessly, and
// removes the pod from an allocated claim's reservedFor.
func TestReserveUnreserve(t *testing.T) {
	pod := makePod(claimName, "shared")
	shared := reservedFor(allocatedOn(makeClaim("shared"), nodeName, "device-1"), pod)
	env := newPluginEnv(t, nil, makeClaim(claimName), shared, makeSlice(nodeName, "device-0", "device-1"), deviceClass)
	_, ctx := ktesting.NewTestContext(t)
	cs := reserve(t, ctx, env, pod)
	claimUID := makeClaim(claimName).UID
	if env.manager.ResourceClaims().GetPendingAllocation(claimUID) == nil {
		t.Fatal("after Reserve: no allocation in flight")
	}
	other := makePod(claimName)
	other.Name, other.UID = "other", "5678"
	if _, s := env.pl.PreFilter(ctx, framework.NewCycleState(), other, nil); !statusEqual(s,
		uau("resource claim default/my-pod-my-resource is in the process of being allocated")) {
		t.Errorf("PreFilter of another pod during the allocation: %v", s)
	}
	for range 2 {
		env.pl.Unreserve(ctx, cs, pod, nodeName)
		if env.manager.ResourceClaims().GetPendingAllocation(claimUID) != nil {
			t.Error("after Unreserve: the allocation is still in flight")
		}
		if got := env.claimInAPI(t, "shared").Status.ReservedFor; len(got) != 0 {
			t.Errorf("after Unreserve: shared claim reserved for %v", got)
		}
	}
}

// reserve runs PreFilter, Filter on nodeName and Reserve for pod, as a
// scheduling cycle that picks nodeName does, failing the test unless each
// succeeds, and returns the cycle's state.
func reserve(t *testing.T, ctx context.Context, env *pluginEnv, pod *v1.Pod) *framework.CycleState {
	t.Helper()
	cs := framework.NewCycleState()
	reserveIn(t, ctx, env, cs, pod)
	return cs
}

// bindingEnv is a pod whose claim is allocated a device with a binding
// condition "ready" and a failure condition "failed", through PreFilter,
// Filter and Reserve; the test then runs PreBind.
func bindingEnv(t *testing.T) (*pluginEnv, *framework.CycleState, *v1.Pod) {
	t.Helper()
	slice := makeSlice(nodeName, "device-0")
	slice.Spec.Devices[0].BindingConditions = []string{"ready"}
	slice.Spec.Devices[0].BindingFailureConditions = []string{"failed"}
	env := newPluginEnv(t, &runtime.RawExtension{Raw: []byte(`{"bindingTimeout":"60s"}`)},
		makeClaim(claimName), slice, deviceClass)
	_, ctx := ktesting.NewTestContext(t)
	pod := makePod(claimName)
	cs := reserve(t, ctx, env, pod)
	return env, cs, pod
}

// setDeviceCondition writes a condition of the claim's device, as the
// driver would, into the assume cache (the informer's path is not
// needed: the cache is what PreBind polls).
func setDeviceCondition(t *testing.T, env *pluginEnv, condType string) {
	t.Helper()
	claim, err := env.manager.ResourceClaims().Get(namespace, claimName)
	if err != nil {
		t.Fatal(err)
	}
	claim = claim.DeepCopy()
	claim.Status.Devices = []resourceapi.AllocatedDeviceStatus{{Driver: driverName, Pool: nodeName, Device: "device-0",
		Conditions: []metav1.Condition{{Type: condType, Status: metav1.ConditionTrue, Reason: "Test", Message: "set by the test"}}}}
	if err := env.manager.ResourceClaims().AssumeClaimAfterAPICall(claim); err != nil {
		t.Fatal(err)
	}
}

func TestPreBindBindingConditions(t *testing.T) {
	tests := []struct {
		name string
		// then runs while PreBind waits.
		then func(t *testing.T, env *pluginEnv)
		want *framework.Status
	}{
		{name: "the driver reports the device ready", then: func(t *testing.T, env *pluginEnv) {
			setDeviceCondition(t, env, "ready")
			env.clock.Step(bindingConditionsPollInterval)
		}},
		{name: "the driver reports a failure", then: func(t *testing.T, env *pluginEnv) {
			setDeviceCondition(t, env, "failed")
			env.clock.Step(bindingConditionsPollInterval)
		}, want: framework.NewStatus(framework.Error,
			`device binding failed: claim=my-pod-my-resource, reason=Test, message="set by the test"`)},
		{name: "nothing within bindingTimeout", then: func(t *testing.T, env *pluginEnv) {
			env.clock.Step(60 * time.Second)
		}, want: framework.NewStatus(framework.Error, "device binding timeout: context deadline exceeded")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, cs, pod := bindingEnv(t)
			_, ctx := ktesting.NewTestContext(t)
			done := make(chan *framework.Status, 1)
			go func() { done <- env.pl.PreBind(ctx, cs, pod, nodeName) }()
			// PreBind waits on a timer and a ticker of the fake clock.
			if err := waitFor(func() bool { return env.clock.HasWaiters() }); err != nil {
				t.Fatal("PreBind did not start waiting")
			}
			if diff := cmp.Diff("Normal BindingConditionsPending waiting for binding conditions for device on node worker",
				<-env.recorder.Events); diff != "" {
				t.Errorf("event (-want +got):\n%s", diff)
			}
			tt.then(t, env)
			got := <-done
			if !statusEqual(tt.want, got) {
				t.Errorf("PreBind = %v, want %v", got, tt.want)
			}
			// Success drops the allocation from the in-flight set; a
			// failure leaves it to Unreserve.
			inFlight := env.manager.ResourceClaims().GetPendingAllocation(makeClaim(claimName).UID) != nil
			if inFlight != (tt.want != nil) {
				t.Errorf("after PreBind: in flight = %v, want %v", inFlight, tt.want != nil)
			}
		})
	}
}

// waitFor polls cond for up to 10s.
func waitFor(cond func() bool) error {
	return waitPoll(10*time.Second, cond)
}

func waitPoll(timeout time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

func TestFilterTimeout(t *testing.T) {
	env := newPluginEnv(t, &runtime.RawExtension{Raw: []byte(`{"filterTimeout":"1ns"}`)},
		makeClaim(claimName), makeSlice(nodeName, "device-0"), deviceClass)
	_, ctx := ktesting.NewTestContext(t)
	pod := makePod(claimName)
	cs := framework.NewCycleState()
	if _, s := env.pl.PreFilter(ctx, cs, pod, nil); !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	want := framework.NewStatus(framework.Error, "node worker: timed out trying to allocate devices")
	if got := env.pl.Filter(ctx, cs, pod, makeNode(nodeName)); !statusEqual(want, got) {
		t.Errorf("Filter = %v, want %v", got, want)
	}
}

func TestQueueingHints(t *testing.T) {
	pod := makePod(claimName)
	claim := makeClaim(claimName)
	allocated := allocatedOn(claim, nodeName, "device-0")
	other := makeClaim("other")
	withStatus := claim.DeepCopy()
	withStatus.Status.Devices = []resourceapi.AllocatedDeviceStatus{{Driver: driverName, Pool: nodeName, Device: "d"}}
	withFinalizer := claim.DeepCopy()
	withFinalizer.Finalizers = []string{resourceapi.Finalizer}
	tests := []struct {
		name     string
		existing []runtime.Object
		old, new interface{}
		want     framework.QueueingHint
	}{
		{name: "an unallocated claim deleted", existing: []runtime.Object{claim}, old: other,
			want: framework.QueueSkip},
		{name: "an allocated claim deleted", existing: []runtime.Object{claim},
			old: allocatedOn(other, nodeName, "d"), want: framework.Queue},
		{name: "the pod's claims still missing", new: other, want: framework.QueueSkip},
		{name: "another claim deallocated", existing: []runtime.Object{claim},
			old: allocatedOn(other, nodeName, "d"), new: other, want: framework.Queue},
		{name: "an unrelated claim changed", existing: []runtime.Object{claim, other}, old: other, new: other,
			want: framework.QueueSkip},
		{name: "the pod's claim created", existing: []runtime.Object{claim}, new: claim, want: framework.Queue},
		{name: "the pod's claim got a finalizer only", existing: []runtime.Object{claim}, old: claim,
			new: withFinalizer, want: framework.QueueSkip},
		{name: "the pod's claim's status changed", existing: []runtime.Object{claim}, old: claim, new: withStatus,
			want: framework.Queue},
		{name: "the pod's claim allocated by the scheduler", existing: []runtime.Object{claim}, old: claim, new: allocated,
			want: framework.Queue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newPluginEnv(t, nil, tt.existing...)
			logger, _ := ktesting.NewTestContext(t)
			got, err := env.pl.isSchedulableAfterClaimChange(logger, pod, tt.old, tt.new)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("isSchedulableAfterClaimChange = %v, want %v", got, tt.want)
			}
		})
	}

	t.Run("the pod's generated claim named", func(t *testing.T) {
		generated := makeClaim("generated")
		generated.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: podName, UID: podUID,
			Controller: ptrTo(true)}}
		env := newPluginEnv(t, nil, generated)
		logger, _ := ktesting.NewTestContext(t)
		gated := makePod()
		gated.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptrTo("t")}}
		named := gated.DeepCopy()
		named.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptrTo("generated")}}
		for _, c := range []struct {
			pod  *v1.Pod
			want framework.QueueingHint
		}{{gated, framework.QueueSkip}, {named, framework.Queue}} {
			got, err := env.pl.isSchedulableAfterTargetPodUpdate(logger, gated, gated, c.pod)
			if err != nil || got != c.want {
				t.Errorf("isSchedulableAfterTargetPodUpdate = %v, %v; want %v", got, err, c.want)
			}
		}
	})
}

// TestPodGroupMembersSharePendingAllocation: in one pod-group cycle, a
// member asking for a claim that an earlier member's Reserve allocated
// reuses that pending allocation (the pods outside the cycle still wait),
// even when it asks for a claim of its own too, which Filter allocates
// beside it and Reserve pairs with the right claim. The allocation stays
// in flight until the last member sharing it is unreserved, and then it is
// no longer shared in the cycle.
func TestPodGroupMembersSharePendingAllocation(t *testing.T) {
	const shared, own = "shared", "own"
	env := newPluginEnv(t, nil, makeClaim(shared), makeClaim(own), makeSlice(nodeName, "device-0", "device-1"),
		deviceClass)
	_, ctx := ktesting.NewTestContext(t)
	groupState := framework.NewCycleState()
	member := func(name, uid string, claims ...string) (*v1.Pod, *framework.CycleState) {
		pod := makePod(claims...)
		pod.Name, pod.UID = name, types.UID(uid)
		cs := framework.NewCycleState()
		cs.SetPodGroupCycleState(groupState)
		return pod, cs
	}
	first, firstState := member("first", "uid-first", shared)
	reserveIn(t, ctx, env, firstState, first)
	sharedUID := makeClaim(shared).UID
	pending := env.manager.ResourceClaims().GetPendingAllocation(sharedUID)
	if pending == nil {
		t.Fatal("after the first member's Reserve: no allocation in flight")
	}

	// A pod outside the cycle waits for the allocation to be written.
	outsider, _ := member("outsider", "uid-outsider", shared)
	if _, s := env.pl.PreFilter(ctx, framework.NewCycleState(), outsider, nil); !statusEqual(s,
		uau("resource claim default/shared is in the process of being allocated")) {
		t.Errorf("PreFilter of a pod outside the cycle: %v", s)
	}

	// The second member reuses it (its own claim comes second: the shared
	// one keeps its place in Reserve's pairing).
	second, secondState := member("second", "uid-second", shared, own)
	reserveIn(t, ctx, env, secondState, second)
	state, err := getStateData(secondState)
	if err != nil {
		t.Fatal(err)
	}
	if got := state.informationsForClaim[0].allocation; !apiequality.Semantic.DeepEqual(got, pending) {
		t.Errorf("the second member's allocation of %s = %v, want the pending %v", shared, got, pending)
	}
	ownAllocation := state.informationsForClaim[1].allocation
	if ownAllocation == nil || ownAllocation.Devices.Results[0].Device == pending.Devices.Results[0].Device {
		t.Errorf("the second member's own claim got %v, want the other device than %v", ownAllocation, pending)
	}
	groupData := podGroupStateOf(secondState)
	if got := groupData.pendingAllocations[sharedUID]; !got.Equal(sets.New[types.UID]("uid-first", "uid-second")) {
		t.Errorf("sharers of %s in the cycle = %v, want both members", shared, sets.List(got))
	}

	env.pl.Unreserve(ctx, firstState, first, nodeName)
	if env.manager.ResourceClaims().GetPendingAllocation(sharedUID) == nil {
		t.Error("after the first member's Unreserve: the allocation the second shares left flight")
	}
	env.pl.Unreserve(ctx, secondState, second, nodeName)
	if env.manager.ResourceClaims().GetPendingAllocation(sharedUID) != nil {
		t.Error("after both Unreserves: the allocation is still in flight")
	}
	if _, ok := groupData.pendingAllocations[sharedUID]; ok {
		t.Errorf("after both Unreserves: %s is still shared in the cycle", shared)
	}
}

// reserveIn is reserve with the cycle state given (a member's, linked to
// its group's).
func reserveIn(t *testing.T, ctx context.Context, env *pluginEnv, cs *framework.CycleState, pod *v1.Pod) {
	t.Helper()
	if _, s := env.pl.PreFilter(ctx, cs, pod, nil); !s.IsSuccess() {
		t.Fatalf("PreFilter of %s: %v", pod.Name, s)
	}
	if s := env.pl.Filter(ctx, cs, pod, makeNode(nodeName)); !s.IsSuccess() {
		t.Fatalf("Filter of %s: %v", pod.Name, s)
	}
	if s := env.pl.Reserve(ctx, cs, pod, nodeName); !s.IsSuccess() {
		t.Fatalf("Reserve of %s: %v", pod.Name, s)
	}
}
