// Tests for GangScheduling's PreEnqueue, Permit and PlacementFeasible, the
// messages checked against kube-scheduler v1.37.1's.

package gangscheduling

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// newPlugin builds the plugin on h.
func newPlugin(t *testing.T, h framework.Handle) *GangScheduling {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	pl, err := New(ctx, nil, h)
	if err != nil {
		t.Fatal(err)
	}
	return pl.(*GangScheduling)
}

func TestPreEnqueue(t *testing.T) {
	p1, p2, p3 := member("ns", "p1", "pg"), member("ns", "p2", "pg"), member("ns", "p3", "pg")
	waitingForMembers := framework.NewStatus(framework.UnschedulableAndUnresolvable,
		"waiting for minCount pods from a gang to appear in scheduling queue")
	tests := []struct {
		name      string
		pod       *v1.Pod
		noManager bool
		podGroups []*schedulingv1beta1.PodGroup
		states    map[string]*fakeState
		want      *framework.Status
	}{
		{name: "pod in no group", pod: st.MakePod().Namespace("ns").Name("p").Obj()},
		{
			name: "PodGroup not seen yet",
			pod:  p1,
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable,
				`waiting for pods's pod group "pg" to appear in scheduling queue`),
		},
		{
			name:      "PodGroup of the same name in another namespace",
			pod:       p1,
			podGroups: []*schedulingv1beta1.PodGroup{gang("other", "pg", 1)},
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable,
				`waiting for pods's pod group "pg" to appear in scheduling queue`),
		},
		{
			name:      "GenericWorkload off: no manager, the group is never seen",
			pod:       p1,
			noManager: true,
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable,
				`waiting for pods's pod group "pg" to appear in scheduling queue`),
		},
		{
			name:      "basic policy, its state not even asked",
			pod:       p1,
			podGroups: []*schedulingv1beta1.PodGroup{basic("ns", "pg")},
		},
		{
			name:      "gang below minCount",
			pod:       p1,
			podGroups: []*schedulingv1beta1.PodGroup{gang("ns", "pg", 3)},
			states:    map[string]*fakeState{"ns/pg": {pending: []*v1.Pod{p1, p2}}},
			want:      waitingForMembers,
		},
		{
			name:      "gang at minCount, counting assumed and bound pods",
			pod:       p1,
			podGroups: []*schedulingv1beta1.PodGroup{gang("ns", "pg", 3)},
			states: map[string]*fakeState{"ns/pg": {pending: []*v1.Pod{p1}, assumed: []*v1.Pod{p2},
				bound: []*v1.Pod{p3}}},
		},
		{
			name:      "gang's state cannot be read",
			pod:       p1,
			podGroups: []*schedulingv1beta1.PodGroup{gang("ns", "pg", 3)},
			want:      framework.AsStatus(errors.New("no state for pod group ns/pg")),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &fakeHandle{}
			if !tt.noManager {
				h.manager = newManager(tt.podGroups, tt.states)
			}
			got := newPlugin(t, h).PreEnqueue(t.Context(), tt.pod)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PreEnqueue (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPermit(t *testing.T) {
	p1, p2, p3 := member("ns", "p1", "pg"), member("ns", "p2", "pg"), member("ns", "p3", "pg")
	waitForGang := framework.NewStatus(framework.Wait, "waiting for minCount pods from a gang to be scheduled")
	tests := []struct {
		name string
		pod  *v1.Pod
		// snapshotGroups are the PodGroups the cycle decided on;
		// cacheGroups those the cache knows now.
		snapshotGroups, cacheGroups []*schedulingv1beta1.PodGroup
		// state is group ns/pg's pods in the cache (none if nil).
		state *fakeState
		// waiting are the pods waiting on Permit.
		waiting       []*v1.Pod
		want          *framework.Status
		wantTimeout   time.Duration
		wantActivated []map[string]*v1.Pod
		// wantAllowed are the waiting pods GangScheduling allowed.
		wantAllowed []string
	}{
		{name: "pod in no group", pod: st.MakePod().Namespace("ns").Name("p").Obj()},
		{
			name:        "PodGroup not in the snapshot",
			pod:         p1,
			cacheGroups: []*schedulingv1beta1.PodGroup{gang("ns", "pg", 2)},
			state:       &fakeState{assumed: []*v1.Pod{p1}},
			want:        framework.AsStatus(errors.New("failed to get podGroup ns/pg: pod group ns/pg not found")),
		},
		{
			name:           "gang's pods cannot be read",
			pod:            p1,
			snapshotGroups: []*schedulingv1beta1.PodGroup{gang("ns", "pg", 2)},
			want:           framework.AsStatus(errors.New("no state for pod group ns/pg")),
		},
		{
			name:           "basic policy: allowed at once",
			pod:            p1,
			snapshotGroups: []*schedulingv1beta1.PodGroup{basic("ns", "pg")},
			state:          &fakeState{pending: []*v1.Pod{p2}, assumed: []*v1.Pod{p1}},
		},
		{
			name:           "gang below minCount: wait, and wake the pending members",
			pod:            p1,
			snapshotGroups: []*schedulingv1beta1.PodGroup{gang("ns", "pg", 3)},
			state:          &fakeState{pending: []*v1.Pod{p2, p3}, assumed: []*v1.Pod{p1}},
			want:           waitForGang,
			wantTimeout:    5 * time.Minute,
			wantActivated:  []map[string]*v1.Pod{{"p2": p2, "p3": p3}},
		},
		{
			name:           "minCount as the snapshot has it, not the cache",
			pod:            p2,
			snapshotGroups: []*schedulingv1beta1.PodGroup{gang("ns", "pg", 3)},
			cacheGroups:    []*schedulingv1beta1.PodGroup{gang("ns", "pg", 2)},
			state:          &fakeState{pending: []*v1.Pod{p3}, assumed: []*v1.Pod{p1, p2}},
			waiting:        []*v1.Pod{p1},
			want:           waitForGang,
			wantTimeout:    5 * time.Minute,
			wantActivated:  []map[string]*v1.Pod{{"p3": p3}},
		},
		{
			name:           "gang reaches minCount: every waiting member is allowed",
			pod:            p3,
			snapshotGroups: []*schedulingv1beta1.PodGroup{gang("ns", "pg", 3)},
			state:          &fakeState{assumed: []*v1.Pod{p1, p2, p3}},
			waiting:        []*v1.Pod{p1, p2},
			wantAllowed:    []string{"p1", "p2"},
		},
		{
			name:           "bound members count; one assumed but no longer waiting is passed by",
			pod:            p3,
			snapshotGroups: []*schedulingv1beta1.PodGroup{gang("ns", "pg", 3)},
			state:          &fakeState{assumed: []*v1.Pod{p2, p3}, bound: []*v1.Pod{p1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			states := map[string]*fakeState{}
			if tt.state != nil {
				states["ns/pg"] = tt.state
			}
			h := &fakeHandle{
				manager:  newManager(tt.cacheGroups, states),
				snapshot: newSnapshot(tt.snapshotGroups...),
				waiting:  map[types.UID]*fakeWaitingPod{},
			}
			for _, p := range tt.waiting {
				h.waiting[p.UID] = &fakeWaitingPod{}
			}
			got, timeout := newPlugin(t, h).Permit(t.Context(), framework.NewCycleState(), tt.pod, "node")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Permit (-want +got):\n%s", diff)
			}
			if timeout != tt.wantTimeout {
				t.Errorf("timeout = %v, want %v", timeout, tt.wantTimeout)
			}
			if diff := cmp.Diff(tt.wantActivated, h.activated); diff != "" {
				t.Errorf("activated (-want +got):\n%s", diff)
			}
			var allowed []string
			for _, p := range tt.waiting {
				switch by := h.waiting[p.UID].allowedBy; {
				case len(by) == 0:
				case len(by) == 1 && by[0] == Name:
					allowed = append(allowed, p.Name)
				default:
					t.Errorf("pod %s allowed by %v, want by %s once", p.Name, by, Name)
				}
			}
			if diff := cmp.Diff(tt.wantAllowed, allowed); diff != "" {
				t.Errorf("allowed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPermitReleasesTheGang runs Permit in a real framework: the first
// member of a gang of two waits there, and the second lets both through.
func TestPermitReleasesTheGang(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	p1, p2 := member("ns", "p1", "pg"), member("ns", "p2", "pg")
	pg := gang("ns", "pg", 2)
	state := &fakeState{pending: []*v1.Pod{p1, p2}}
	cache := newManager([]*schedulingv1beta1.PodGroup{pg}, map[string]*fakeState{"ns/pg": state})
	fw, _, err := plugintesting.NewPluginFramework[*GangScheduling](ctx, Name, New,
		&configv1.Plugins{MultiPoint: plugintesting.Enable(Name)}, nil,
		framework.WithPodGroupManager(cache),
		framework.WithSnapshotSharedLister(newSnapshot(pg)))
	if err != nil {
		t.Fatal(err)
	}
	activator := &recordingActivator{}
	fw.SetPodActivator(activator)

	state.assume("p1")
	if s := fw.RunPermitPlugins(ctx, framework.NewCycleState(), p1, "node"); !s.IsWait() {
		t.Fatalf("Permit p1 = %v, want Wait", s)
	}
	if wp := fw.GetWaitingPod(p1.UID); wp == nil || !slices.Equal(wp.GetPendingPlugins(), []string{Name}) {
		t.Fatalf("p1 is not waiting on %s alone", Name)
	}
	if diff := cmp.Diff([]map[string]*v1.Pod{{"p2": p2}}, activator.activated); diff != "" {
		t.Errorf("activated (-want +got):\n%s", diff)
	}

	state.assume("p2")
	if s := fw.RunPermitPlugins(ctx, framework.NewCycleState(), p2, "node"); !s.IsSuccess() {
		t.Fatalf("Permit p2 = %v, want Success", s)
	}
	if s := fw.WaitOnPermit(ctx, p1); !s.IsSuccess() {
		t.Errorf("WaitOnPermit p1 = %v, want Success", s)
	}
}

func TestPlacementFeasible(t *testing.T) {
	tests := []struct {
		name     string
		podGroup *schedulingv1beta1.PodGroup
		progress framework.PlacementProgress
		want     *framework.Status
	}{
		{
			name:     "gang: too few members left",
			podGroup: gang("ns", "pg", 3),
			progress: framework.PlacementProgress{Scheduled: 1, Remaining: 1},
			want: framework.NewStatus(framework.Unschedulable,
				"minCount (3) cannot be satisfied: 1 scheduled, 1 remaining"),
		},
		{
			name:     "gang: before any member is tried",
			podGroup: gang("ns", "pg", 3),
			progress: framework.PlacementProgress{Remaining: 3},
			want: framework.NewStatus(framework.Wait,
				"minCount (3) is not yet satisfied: 0 scheduled, 3 remaining"),
		},
		{
			name:     "gang: minCount placed, more members left",
			podGroup: gang("ns", "pg", 2),
			progress: framework.PlacementProgress{Scheduled: 2, Remaining: 1},
		},
		{
			name:     "basic: no member placed and none left",
			podGroup: basic("ns", "pg"),
			progress: framework.PlacementProgress{},
			want: framework.NewStatus(framework.Unschedulable,
				"minCount (1) cannot be satisfied: 0 scheduled, 0 remaining"),
		},
		{
			name:     "basic: none placed yet",
			podGroup: basic("ns", "pg"),
			progress: framework.PlacementProgress{Remaining: 2},
			want: framework.NewStatus(framework.Wait,
				"minCount (1) is not yet satisfied: 0 scheduled, 2 remaining"),
		},
		{
			name:     "basic: one placed is enough",
			podGroup: basic("ns", "pg"),
			progress: framework.PlacementProgress{Scheduled: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := &framework.PodGroupInfo{Namespace: "ns", Name: "pg", PodGroup: tt.podGroup}
			got := newPlugin(t, &fakeHandle{}).PlacementFeasible(t.Context(), framework.NewCycleState(), info,
				tt.progress)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PlacementFeasible (-want +got):\n%s", diff)
			}
		})
	}
}
