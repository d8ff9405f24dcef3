// Tests of DynamicResources' extension points, after the scenarios of
// kube-scheduler's dynamicresources_test.go: each case runs a pod's cycle
// (PreFilter, Filter on every node, then PostFilter when none fits, or
// Score, Reserve and PreBind on the first that does) against a fake
// apiserver, and compares each step's status and the claims it wrote.
package dynamicresources

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/framework"
)

// uau is an UnschedulableAndUnresolvable status with reason.
func uau(reason string) *framework.Status {
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, reason)
}

func TestPreEnqueue(t *testing.T) {
	templatePod := func(status *v1.PodResourceClaimStatus) *v1.Pod {
		pod := makePod()
		pod.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("template")}}
		if status != nil {
			pod.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{*status}
		}
		return pod
	}
	deleting := makeClaim(claimName)
	deleting.DeletionTimestamp = &metav1.Time{}
	generated := makeClaim("generated")
	tests := []struct {
		name   string
		pod    *v1.Pod
		claims []runtime.Object
		want   *framework.Status
	}{
		{name: "no claims", pod: makePod()},
		{name: "the claim exists", pod: makePod(claimName), claims: []runtime.Object{makeClaim(claimName)}},
		{name: "the claim is missing", pod: makePod(claimName),
			want: uau(`could not find ResourceClaim "default/my-pod-my-resource"`)},
		{name: "the claim is being deleted", pod: makePod(claimName), claims: []runtime.Object{deleting},
			want: uau(`resourceclaim "my-pod-my-resource" is being deleted`)},
		{name: "the template's claim is not created yet", pod: templatePod(nil),
			want: uau(`pod "default/my-pod": ResourceClaim not created yet`)},
		{name: "the template needs no claim", pod: templatePod(&v1.PodResourceClaimStatus{Name: "gpu"})},
		{name: "the template's claim is not the pod's", claims: []runtime.Object{generated},
			pod:  templatePod(&v1.PodResourceClaimStatus{Name: "gpu", ResourceClaimName: ptr.To("generated")}),
			want: uau("ResourceClaim default/generated was not created for Pod default/my-pod (Pod is not owner)")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newPluginEnv(t, nil, tt.claims...)
			got := env.pl.PreEnqueue(context.Background(), tt.pod)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PreEnqueue (-want +got):\n%s", diff)
			}
		})
	}
}

// cycleWant is what one pod's cycle should return at each step it reaches.
type cycleWant struct {
	preFilter *framework.Status
	// filter maps node names to their statuses (missing: Success).
	filter     map[string]*framework.Status
	postFilter *framework.Status
	score      map[string]int64
	reserve    *framework.Status
	preBind    *framework.Status
	// claim is the claim (named like the first of the pod) in the
	// apiserver at the end, compared on finalizers, allocation devices and
	// node selector, and reservedFor.
	claim *resourceapi.ResourceClaim
}

func TestCycle(t *testing.T) {
	pod := makePod(claimName)
	otherPod := makePod()
	otherPod.Name, otherPod.UID = "other", "5678"
	claim := makeClaim(claimName)
	nodes := []string{nodeName, "other-node"}
	slice := makeSlice(nodeName, "device-0")
	tests := []struct {
		name          string
		pod           *v1.Pod
		objs          []runtime.Object
		skipPreFilter bool
		// inFlight signals claim's allocation as pending before the cycle.
		inFlight bool
		want     cycleWant
	}{
		{
			name: "a pod without claims: PreFilter skips, PostFilter leaves it to preemption",
			pod:  makePod(),
			want: cycleWant{preFilter: framework.NewStatus(framework.Skip),
				postFilter: framework.NewStatus(framework.Unschedulable)},
		},
		{
			name:          "PreFilter never ran (an earlier PreFilter was unresolvable): not found, an Error",
			pod:           makePod(),
			skipPreFilter: true,
			want:          cycleWant{postFilter: framework.AsStatus(framework.ErrNotFound)},
		},
		{
			name: "the claim's class does not exist",
			pod:  pod, objs: []runtime.Object{claim, slice},
			want: cycleWant{preFilter: uau("request req-1: device class my-resource-class does not exist"), claim: claim},
		},
		{
			name: "a firstAvailable alternative's class does not exist",
			pod:  pod, objs: []runtime.Object{withFirstAvailable(claim, className, "missing"), slice, deviceClass},
			want: cycleWant{preFilter: uau("request req-1/sub-1: device class missing does not exist"),
				claim: withFirstAvailable(claim, className, "missing")},
		},
		{
			name: "another pod's Reserve is allocating the claim",
			pod:  pod, objs: []runtime.Object{claim, slice, deviceClass}, inFlight: true,
			want: cycleWant{preFilter: uau("resource claim default/my-pod-my-resource is in the process of being allocated"), claim: claim},
		},
		{
			name: "no devices anywhere: cannot allocate all claims; nothing to deallocate",
			pod:  pod, objs: []runtime.Object{claim, deviceClass},
			want: cycleWant{
				filter: map[string]*framework.Status{
					nodeName:     uau("cannot allocate all claims"),
					"other-node": uau("cannot allocate all claims"),
				},
				postFilter: framework.NewStatus(framework.Unschedulable),
				claim:      claim,
			},
		},
		{
			name: "allocated on the node with the device, written by PreBind",
			pod:  pod, objs: []runtime.Object{claim, slice, deviceClass},
			want: cycleWant{
				filter: map[string]*framework.Status{"other-node": uau("cannot allocate all claims")},
				score:  map[string]int64{nodeName: 0},
				claim:  reservedFor(allocatedOn(claim, nodeName, "device-0"), pod),
			},
		},
		{
			name: "already allocated elsewhere and idle: PostFilter deallocates it",
			pod:  pod, objs: []runtime.Object{allocatedOn(claim, "far-away", "device-0"), slice, deviceClass},
			want: cycleWant{
				filter: map[string]*framework.Status{
					nodeName:     uau("resourceclaim not available on the node"),
					"other-node": uau("resourceclaim not available on the node"),
				},
				postFilter: framework.NewStatus(framework.Unschedulable, "deallocation of ResourceClaim completed"),
				claim: func() *resourceapi.ResourceClaim {
					c := claim.DeepCopy()
					c.Finalizers = []string{resourceapi.Finalizer}
					return c
				}(),
			},
		},
		{
			name: "already allocated elsewhere and in use by another pod: left alone",
			pod:  pod, objs: []runtime.Object{reservedFor(allocatedOn(claim, "far-away", "device-0"), otherPod), slice, deviceClass},
			want: cycleWant{
				filter: map[string]*framework.Status{
					nodeName:     uau("resourceclaim not available on the node"),
					"other-node": uau("resourceclaim not available on the node"),
				},
				postFilter: framework.NewStatus(framework.Unschedulable),
				claim:      reservedFor(allocatedOn(claim, "far-away", "device-0"), otherPod),
			},
		},
		{
			name: "already allocated on the node and shared: PreBind only adds the reservation",
			pod:  pod, objs: []runtime.Object{reservedFor(allocatedOn(claim, nodeName, "device-0"), otherPod), slice, deviceClass},
			want: cycleWant{
				filter: map[string]*framework.Status{"other-node": uau("resourceclaim not available on the node")},
				score:  map[string]int64{nodeName: 0},
				claim:  reservedFor(allocatedOn(claim, nodeName, "device-0"), otherPod, pod),
			},
		},
		{
			name: "the device is taken by another claim",
			pod:  pod, objs: []runtime.Object{claim, allocatedOn(makeClaim("other-claim"), nodeName, "device-0"), slice, deviceClass},
			want: cycleWant{
				filter: map[string]*framework.Status{
					nodeName:     uau("cannot allocate all claims"),
					"other-node": uau("cannot allocate all claims"),
				},
				postFilter: framework.NewStatus(framework.Unschedulable),
				claim:      claim,
			},
		},
		{
			name: "a request of neither kind",
			pod:  pod,
			objs: []runtime.Object{func() *resourceapi.ResourceClaim {
				c := claim.DeepCopy()
				c.Spec.Devices.Requests[0].Exactly = nil
				return c
			}(), slice, deviceClass},
			want: cycleWant{preFilter: uau("resource claim default/my-pod-my-resource, request req-1: unknown request type"), claim: claim},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newPluginEnv(t, nil, tt.objs...)
			_, ctx := ktesting.NewTestContext(t)
			if tt.inFlight {
				pending := allocatedOn(claim, nodeName, "device-0")
				if err := env.manager.ResourceClaims().SignalClaimPendingAllocation(claim.UID, pending); err != nil {
					t.Fatal(err)
				}
			}
			got := runCycle(ctx, t, env, tt.pod, nodes, tt.skipPreFilter)
			if tt.want.filter == nil {
				tt.want.filter = map[string]*framework.Status{}
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(cycleWant{}), cmp.Comparer(statusEqual),
				cmp.Transformer("claim", claimSummary)); diff != "" {
				t.Errorf("cycle (-want +got):\n%s", diff)
			}
		})
	}
}

// runCycle runs the pod's cycle as the scheduler would, stopping where the
// pod stops, and returns what each step returned.
func runCycle(ctx context.Context, t *testing.T, env *pluginEnv, pod *v1.Pod, nodes []string,
	skipPreFilter bool) (got cycleWant) {
	t.Helper()
	got.filter = map[string]*framework.Status{}
	cs := framework.NewCycleState()
	defer func() {
		if len(pod.Spec.ResourceClaims) > 0 {
			claims, err := env.client.ResourceV1().ResourceClaims(namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range claims.Items {
				if claims.Items[i].Name == *pod.Spec.ResourceClaims[0].ResourceClaimName {
					got.claim = &claims.Items[i]
				}
			}
		}
	}()
	if !skipPreFilter {
		_, got.preFilter = env.pl.PreFilter(ctx, cs, pod, nil)
		if got.preFilter.Code() == framework.UnschedulableAndUnresolvable || got.preFilter.Code() == framework.Error {
			return got
		}
	}
	var feasible []string
	if !got.preFilter.IsSkip() && !skipPreFilter {
		for _, n := range nodes {
			if s := env.pl.Filter(ctx, cs, pod, makeNode(n)); !s.IsSuccess() {
				got.filter[n] = s
				continue
			}
			feasible = append(feasible, n)
		}
	}
	if len(feasible) == 0 {
		_, got.postFilter = env.pl.PostFilter(ctx, cs, pod, framework.NewNodeToStatus())
		return got
	}
	got.score = map[string]int64{}
	for _, n := range feasible {
		s, status := env.pl.Score(ctx, cs, pod, makeNode(n))
		if !status.IsSuccess() {
			t.Fatalf("Score: %v", status)
		}
		got.score[n] = s
	}
	if got.reserve = env.pl.Reserve(ctx, cs, pod, feasible[0]); !got.reserve.IsSuccess() {
		return got
	}
	got.preBind = env.pl.PreBind(ctx, cs, pod, feasible[0])
	return got
}

// statusEqual compares code and message.
func statusEqual(a, b *framework.Status) bool {
	return a.Code() == b.Code() && a.Message() == b.Message()
}

// claimView is what the tests compare of a claim.
type claimView struct {
	Finalizers   []string
	Devices      []string
	NodeSelector *v1.NodeSelector
	ReservedFor  []string
	Timestamped  bool
}

// claimSummary keeps what a step may write of a claim. A claim that PreBind
// allocated has a timestamp; tests want it there but not its value.
func claimSummary(c *resourceapi.ResourceClaim) *claimView {
	if c == nil {
		return nil
	}
	v := &claimView{Finalizers: c.Finalizers}
	if a := c.Status.Allocation; a != nil {
		for _, r := range a.Devices.Results {
			v.Devices = append(v.Devices, r.Request+"="+r.Pool+"/"+r.Device)
		}
		v.NodeSelector = a.NodeSelector
		v.Timestamped = a.AllocationTimestamp != nil
	}
	for _, r := range c.Status.ReservedFor {
		v.ReservedFor = append(v.ReservedFor, r.Resource+"/"+r.Name+"/"+string(r.UID))
	}
	return v
}

func TestNewValidatesArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		wantErr string
	}{
		{name: "none", args: ""},
		{name: "kube-scheduler's defaults", args: `{"filterTimeout":"10s","bindingTimeout":"600s"}`},
		{name: "filterTimeout 0 turns the timeout off", args: `{"filterTimeout":"0s"}`},
		{name: "negative filterTimeout", args: `{"filterTimeout":"-1s"}`,
			wantErr: `args.filterTimeout: Invalid value: "-1s": must be zero or positive`},
		{name: "bindingTimeout under a second", args: `{"bindingTimeout":"500ms"}`,
			wantErr: `args.bindingTimeout: Invalid value: "500ms": must be at least 1s`},
		{name: "unknown field", args: `{"filterTimeut":"1s"}`,
			wantErr: `decoding DynamicResourcesArgs: unknown field "filterTimeut"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeArgs(&runtime.RawExtension{Raw: []byte(tt.args)})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("decodeArgs error = %q, want %q", got, tt.wantErr)
			}
		})
	}
}

func TestNewNeedsTheSharedDRAState(t *testing.T) {
	_, err := New(context.Background(), nil, nil)
	if err == nil || !errors.Is(err, err) || err.Error() != "SharedDRAManager is nil" {
		t.Errorf("New without a handle: error %v, want SharedDRAManager is nil", err)
	}
}
