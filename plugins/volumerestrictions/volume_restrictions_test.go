// Tests for VolumeRestrictions' PreFilter, Filter and PreFilterExtensions,
// ported from kube-scheduler's volume_restrictions_test.go and extended.
package volumerestrictions

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
)

var (
	skip             = framework.NewStatus(framework.Skip)
	diskConflict     = framework.NewStatus(framework.Unschedulable, ErrReasonDiskConflict)
	rwopConflict     = framework.NewStatus(framework.Unschedulable, ErrReasonReadWriteOncePodConflict)
	noRestrictionVol = v1.Volume{Name: "volume with no restriction"}
)

// TestDiskConflicts ports upstream's TestGCEDiskConflicts,
// TestAWSDiskConflicts, TestRBDDiskConflicts and TestISCSIDiskConflicts
// ("nothing", "one state", "same state", "different state", a volume with no
// restriction) and adds the read-only exceptions of each kind.
func TestDiskConflicts(t *testing.T) {
	monAB, monCD, monBX := []string{"a", "b"}, []string{"c", "d"}, []string{"x", "b"}
	iqn1, iqn2 := "iqn.2016-12.server:storage.target01", "iqn.2017-12.server:storage.target01"
	tests := []struct {
		name          string
		pod           *v1.Pod
		existing      []*v1.Pod // on node1
		wantPreFilter *framework.Status
		wantFilter    *framework.Status
	}{
		{name: "nothing", pod: pod("p").Obj(), wantPreFilter: skip},
		{name: "pod with a volume that doesn't have restrictions", pod: pod("p").Volume(noRestrictionVol).Obj(),
			wantPreFilter: skip},

		{name: "GCE PD: one state (pod without disks)", pod: pod("p").Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(gcePD("foo", false)).Obj()}, wantPreFilter: skip},
		{name: "GCE PD: same state", pod: pod("p").Volume(gcePD("foo", false)).Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(gcePD("foo", false)).Obj()}, wantFilter: diskConflict},
		{name: "GCE PD: different state", pod: pod("p").Volume(gcePD("bar", false)).Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(gcePD("foo", false)).Obj()}},
		{name: "GCE PD: same disk, both read-only", pod: pod("p").Volume(gcePD("foo", true)).Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(gcePD("foo", true)).Obj()}},
		{name: "GCE PD: same disk, only the new pod read-only", pod: pod("p").Volume(gcePD("foo", true)).Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(gcePD("foo", false)).Obj()}, wantFilter: diskConflict},
		{name: "GCE PD: same disk, only the existing pod read-only", pod: pod("p").Volume(gcePD("foo", false)).Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(gcePD("foo", true)).Obj()}, wantFilter: diskConflict},
		{name: "GCE PD: same disk used in another namespace", pod: pod("p").Volume(gcePD("foo", false)).Obj(),
			existing:   []*v1.Pod{pod("e").Namespace("other").NodeName(node1).Volume(gcePD("foo", false)).Obj()},
			wantFilter: diskConflict},
		{name: "GCE PD: same disk on another node", pod: pod("p").Volume(gcePD("foo", false)).Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node2).Volume(gcePD("foo", false)).Obj()}},

		{name: "AWS EBS: one state (pod without disks)", pod: pod("p").Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(awsEBS("foo", false)).Obj()}, wantPreFilter: skip},
		{name: "AWS EBS: same state", pod: pod("p").Volume(awsEBS("foo", false)).Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(awsEBS("foo", false)).Obj()}, wantFilter: diskConflict},
		{name: "AWS EBS: different state", pod: pod("p").Volume(awsEBS("bar", false)).Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(awsEBS("foo", false)).Obj()}},
		{name: "AWS EBS: same volume, both read-only, still a conflict", pod: pod("p").Volume(awsEBS("foo", true)).Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(awsEBS("foo", true)).Obj()}, wantFilter: diskConflict},

		{name: "RBD: one state (pod without disks)", pod: pod("p").Obj(),
			existing:      []*v1.Pod{pod("e").NodeName(node1).Volume(rbd(monAB, "foo", "bar", false)).Obj()},
			wantPreFilter: skip},
		{name: "RBD: same state", pod: pod("p").Volume(rbd(monAB, "foo", "bar", false)).Obj(),
			existing:   []*v1.Pod{pod("e").NodeName(node1).Volume(rbd(monAB, "foo", "bar", false)).Obj()},
			wantFilter: diskConflict},
		{name: "RBD: different state (no monitor in common)", pod: pod("p").Volume(rbd(monCD, "foo", "bar", false)).Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(rbd(monAB, "foo", "bar", false)).Obj()}},
		{name: "RBD: one monitor in common", pod: pod("p").Volume(rbd(monBX, "foo", "bar", false)).Obj(),
			existing:   []*v1.Pod{pod("e").NodeName(node1).Volume(rbd(monAB, "foo", "bar", false)).Obj()},
			wantFilter: diskConflict},
		{name: "RBD: another pool", pod: pod("p").Volume(rbd(monAB, "baz", "bar", false)).Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(rbd(monAB, "foo", "bar", false)).Obj()}},
		{name: "RBD: another image", pod: pod("p").Volume(rbd(monAB, "foo", "baz", false)).Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(rbd(monAB, "foo", "bar", false)).Obj()}},
		{name: "RBD: same image, both read-only", pod: pod("p").Volume(rbd(monAB, "foo", "bar", true)).Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(rbd(monAB, "foo", "bar", true)).Obj()}},
		{name: "RBD: same image, one read-only", pod: pod("p").Volume(rbd(monAB, "foo", "bar", true)).Obj(),
			existing:   []*v1.Pod{pod("e").NodeName(node1).Volume(rbd(monAB, "foo", "bar", false)).Obj()},
			wantFilter: diskConflict},

		{name: "iSCSI: one state (pod without disks)", pod: pod("p").Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(iscsi(iqn1, false)).Obj()}, wantPreFilter: skip},
		{name: "iSCSI: same state", pod: pod("p").Volume(iscsi(iqn1, false)).Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(iscsi(iqn1, false)).Obj()}, wantFilter: diskConflict},
		{name: "iSCSI: different state", pod: pod("p").Volume(iscsi(iqn2, false)).Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(iscsi(iqn1, false)).Obj()}},
		{name: "iSCSI: same IQN, both read-only", pod: pod("p").Volume(iscsi(iqn1, true)).Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(iscsi(iqn1, true)).Obj()}},
		{name: "iSCSI: same IQN, one read-only", pod: pod("p").Volume(iscsi(iqn1, false)).Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(iscsi(iqn1, true)).Obj()}, wantFilter: diskConflict},

		{name: "different kinds with the same name do not conflict", pod: pod("p").Volume(gcePD("foo", false)).Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).Volume(awsEBS("foo", false)).Obj()}},
		{name: "the second of two existing pods holds the disk", pod: pod("p").Volume(gcePD("foo", false)).Obj(),
			existing: []*v1.Pod{
				pod("e1").NodeName(node1).Volume(noRestrictionVol).Obj(),
				pod("e2").NodeName(node1).Volume(awsEBS("x", false)).Volume(gcePD("foo", false)).Obj(),
			}, wantFilter: diskConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			env := newTestEnv(t, tt.existing)
			state := framework.NewCycleState()
			_, got := env.pl.PreFilter(ctx, state, tt.pod, nil)
			if diff := cmp.Diff(tt.wantPreFilter, got); diff != "" {
				t.Errorf("PreFilter (-want +got):\n%s", diff)
			}
			// If PreFilter does not succeed, Filter is not run.
			if !got.IsSuccess() {
				return
			}
			got = env.pl.Filter(ctx, state, tt.pod, env.nodeInfo(t, node1))
			if diff := cmp.Diff(tt.wantFilter, got); diff != "" {
				t.Errorf("Filter (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAccessModeConflicts ports upstream's TestAccessModeConflicts
// ("nothing", "failed to get PVC", "no access mode conflict", "access mode
// conflict, unschedulable", "two conflicts, unschedulable") and adds where
// the claim's key, its other access modes and the check order matter.
func TestAccessModeConflicts(t *testing.T) {
	rwx := st.MakePVC().Name("claim-with-rwx").AccessModes(v1.ReadWriteMany).Obj()
	rwo := st.MakePVC().Name("claim-with-rwo").Obj()
	rwop1, rwop2 := rwop("claim-with-rwop-1"), rwop("claim-with-rwop-2")
	rwopOther := st.MakePVC().Name("claim-with-rwop-1").Namespace("other").AccessModes(v1.ReadWriteOncePod).Obj()
	mixed := st.MakePVC().Name("claim-mixed").AccessModes(v1.ReadWriteOnce, v1.ReadWriteOncePod).Obj()
	withRWX := pod("with-rwx").NodeName(node1).PVC("claim-with-rwx").Obj()
	tests := []struct {
		name          string
		pod           *v1.Pod
		existing      []*v1.Pod
		pvcs          []*v1.PersistentVolumeClaim
		wantPreFilter *framework.Status
		wantFilter    map[string]*framework.Status // by node; a node not named passes
	}{
		{name: "nothing", pod: pod("p").Obj(), wantPreFilter: skip},
		{name: "failed to get PVC", pod: pod("p").PVC("claim-with-rwop-1").Obj(),
			wantPreFilter: framework.NewStatus(framework.UnschedulableAndUnresolvable,
				`persistentvolumeclaim "claim-with-rwop-1" not found`)},
		{name: "failed to get the second PVC", pod: pod("p").PVC("claim-with-rwop-1").PVC("claim-with-rwop-2").Obj(),
			pvcs: []*v1.PersistentVolumeClaim{rwop1},
			wantPreFilter: framework.NewStatus(framework.UnschedulableAndUnresolvable,
				`persistentvolumeclaim "claim-with-rwop-2" not found`)},
		{name: "claim exists only in another namespace", pod: pod("p").Namespace("other").PVC("claim-with-rwx").Obj(),
			pvcs: []*v1.PersistentVolumeClaim{rwx},
			wantPreFilter: framework.NewStatus(framework.UnschedulableAndUnresolvable,
				`persistentvolumeclaim "claim-with-rwx" not found`)},
		{name: "no access mode conflict", pod: pod("p").PVC("claim-with-rwop-1").Obj(),
			existing: []*v1.Pod{withRWX}, pvcs: []*v1.PersistentVolumeClaim{rwop1, rwx}, wantPreFilter: skip},
		{name: "access mode conflict, unschedulable", pod: pod("p").PVC("claim-with-rwop-1").Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).PVC("claim-with-rwop-1").Obj(), withRWX},
			pvcs:     []*v1.PersistentVolumeClaim{rwop1, rwx},
			// Every node fails alike, including one without the claim's user.
			wantFilter: map[string]*framework.Status{node1: rwopConflict, node2: rwopConflict}},
		{name: "two conflicts, unschedulable", pod: pod("p").PVC("claim-with-rwop-1").PVC("claim-with-rwop-2").Obj(),
			existing:   []*v1.Pod{pod("e").NodeName(node1).PVC("claim-with-rwop-1").PVC("claim-with-rwop-2").Obj(), withRWX},
			pvcs:       []*v1.PersistentVolumeClaim{rwop1, rwop2, rwx},
			wantFilter: map[string]*framework.Status{node1: rwopConflict, node2: rwopConflict}},
		{name: "claim of the same name in use in another namespace", pod: pod("p").PVC("claim-with-rwop-1").Obj(),
			existing: []*v1.Pod{pod("e").Namespace("other").NodeName(node1).PVC("claim-with-rwop-1").Obj()},
			pvcs:     []*v1.PersistentVolumeClaim{rwop1, rwopOther}, wantPreFilter: skip},
		{name: "pod in another namespace, claim of the same name in use in default",
			pod:      pod("p").Namespace("other").PVC("claim-with-rwop-1").Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).PVC("claim-with-rwop-1").Obj()},
			pvcs:     []*v1.PersistentVolumeClaim{rwop1, rwopOther}, wantPreFilter: skip},
		{name: "pod in another namespace, its claim in use there",
			pod:        pod("p").Namespace("other").PVC("claim-with-rwop-1").Obj(),
			existing:   []*v1.Pod{pod("e").Namespace("other").NodeName(node2).PVC("claim-with-rwop-1").Obj()},
			pvcs:       []*v1.PersistentVolumeClaim{rwop1, rwopOther},
			wantFilter: map[string]*framework.Status{node1: rwopConflict, node2: rwopConflict}},
		{name: "ReadWriteOnce claim in use is not this plugin's concern", pod: pod("p").PVC("claim-with-rwo").Obj(),
			existing: []*v1.Pod{pod("e").NodeName(node1).PVC("claim-with-rwo").Obj()},
			pvcs:     []*v1.PersistentVolumeClaim{rwo}, wantPreFilter: skip},
		{name: "claim with ReadWriteOncePod among other modes, in use", pod: pod("p").PVC("claim-mixed").Obj(),
			existing:   []*v1.Pod{pod("e").NodeName(node2).PVC("claim-mixed").Obj()},
			pvcs:       []*v1.PersistentVolumeClaim{mixed},
			wantFilter: map[string]*framework.Status{node1: rwopConflict, node2: rwopConflict}},
		{name: "claim not in use but an inline disk: PreFilter runs, Filter passes",
			pod:  pod("p").PVC("claim-with-rwop-1").Volume(gcePD("foo", false)).Obj(),
			pvcs: []*v1.PersistentVolumeClaim{rwop1}},
		{name: "disk conflict is reported before the claim in use",
			pod: pod("p").PVC("claim-with-rwop-1").Volume(gcePD("foo", false)).Obj(),
			existing: []*v1.Pod{pod("disk").NodeName(node1).Volume(gcePD("foo", false)).Obj(),
				pod("claim").NodeName(node2).PVC("claim-with-rwop-1").Obj()},
			pvcs:       []*v1.PersistentVolumeClaim{rwop1},
			wantFilter: map[string]*framework.Status{node1: diskConflict, node2: rwopConflict}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			env := newTestEnv(t, tt.existing, tt.pvcs...)
			state := framework.NewCycleState()
			_, got := env.pl.PreFilter(ctx, state, tt.pod, nil)
			if diff := cmp.Diff(tt.wantPreFilter, got); diff != "" {
				t.Errorf("PreFilter (-want +got):\n%s", diff)
			}
			if !got.IsSuccess() {
				return
			}
			for _, node := range []string{node1, node2} {
				got := env.pl.Filter(ctx, state, tt.pod, env.nodeInfo(t, node))
				if diff := cmp.Diff(tt.wantFilter[node], got); diff != "" {
					t.Errorf("Filter on %s (-want +got):\n%s", node, diff)
				}
			}
		})
	}
}

// failingLister is a claim lister whose every read fails with err.
type failingLister struct{ err error }

func (l failingLister) List(labels.Selector) ([]*v1.PersistentVolumeClaim, error) { return nil, l.err }
func (l failingLister) PersistentVolumeClaims(string) listersv1.PersistentVolumeClaimNamespaceLister {
	return l
}
func (l failingLister) Get(string) (*v1.PersistentVolumeClaim, error) { return nil, l.err }

// TestPreFilterListerError checks that a lister failure other than
// NotFound is an Error, not a rejection.
func TestPreFilterListerError(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	boom := errors.New("boom")
	pl := &VolumeRestrictions{pvcLister: failingLister{err: boom}, sharedLister: cache.NewEmptySnapshot()}
	_, got := pl.PreFilter(ctx, framework.NewCycleState(), pod("p").PVC("claim").Obj(), nil)
	if got.Code() != framework.Error || !errors.Is(got.AsError(), boom) {
		t.Errorf("PreFilter = %v, want Error wrapping %v", got, boom)
	}
}

// TestWithoutPreFilterState checks that Filter, AddPod and RemovePod fail
// with an Error when PreFilter wrote nothing (it was skipped, or not run).
func TestWithoutPreFilterState(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	env := newTestEnv(t, nil)
	p := pod("p").Obj()
	want := `cannot read "PreFilterVolumeRestrictions" from cycleState`
	ni := env.nodeInfo(t, node1)
	for name, got := range map[string]*framework.Status{
		"Filter":    env.pl.Filter(ctx, framework.NewCycleState(), p, ni),
		"AddPod":    env.pl.AddPod(ctx, framework.NewCycleState(), p, framework.NewPodInfo(p), ni),
		"RemovePod": env.pl.RemovePod(ctx, framework.NewCycleState(), p, framework.NewPodInfo(p), ni),
	} {
		if got.Code() != framework.Error || got.Message() != want {
			t.Errorf("%s = %v, want Error %q", name, got, want)
		}
	}
}

// TestSkip runs the plugin through the framework: when PreFilter returns
// Skip, Filter and the PreFilterExtensions are not called (they would fail
// without the state).
func TestSkip(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	env := newTestEnv(t, []*v1.Pod{pod("e").NodeName(node1).PVC("claim-with-rwop-1").Obj()},
		rwop("claim-with-rwop-1"), rwop("claim-with-rwop-2"))
	tests := []struct {
		name     string
		pod      *v1.Pod
		wantSkip bool
	}{
		{name: "no volumes", pod: pod("p").Obj(), wantSkip: true},
		{name: "ReadWriteOncePod claim not in use", pod: pod("p").PVC("claim-with-rwop-2").Obj(), wantSkip: true},
		{name: "ReadWriteOncePod claim in use", pod: pod("p").PVC("claim-with-rwop-1").Obj()},
		{name: "inline disk", pod: pod("p").Volume(awsEBS("foo", false)).Obj()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := framework.NewCycleState()
			if _, s, _ := env.schedFramework.RunPreFilterPlugins(ctx, state, tt.pod, nil); !s.IsSuccess() {
				t.Fatalf("RunPreFilterPlugins: %v", s)
			}
			if got := state.SkipFilterPlugins.Has(Name); got != tt.wantSkip {
				t.Errorf("Filter skipped = %v, want %v", got, tt.wantSkip)
			}
			if !tt.wantSkip {
				return
			}
			ni := env.nodeInfo(t, node1)
			if s := env.schedFramework.RunFilterPlugins(ctx, state, tt.pod, ni); !s.IsSuccess() {
				t.Errorf("RunFilterPlugins = %v, want Success", s)
			}
			victim := framework.NewPodInfo(ni.Pods[0].Pod)
			if s := env.schedFramework.RunPreFilterExtensionRemovePod(ctx, state, tt.pod, victim, ni); !s.IsSuccess() {
				t.Errorf("RunPreFilterExtensionRemovePod = %v, want Success", s)
			}
		})
	}
}

// TestPreFilterExtensions plays what preemption and nominated pods do with
// AddPod and RemovePod on a clone of the cycle state, then runs Filter on
// node1 as the framework does: removing the claim's user frees the claim,
// adding a user takes it, and the original state is left alone.
func TestPreFilterExtensions(t *testing.T) {
	user1 := pod("user1").NodeName(node1).PVC("claim-1").Obj()
	user2 := pod("user2").NodeName(node2).PVC("claim-2").Obj()
	bystander := pod("bystander").NodeName(node1).PVC("claim-3").Volume(gcePD("other", false)).Obj()
	type op struct {
		add bool
		pod *v1.Pod
	}
	remove := func(p *v1.Pod) op { return op{pod: p} }
	add := func(p *v1.Pod) op { return op{add: true, pod: p} }
	tests := []struct {
		name         string
		pod          *v1.Pod
		existing     []*v1.Pod
		ops          []op
		wantConflict bool // Filter on node1 after ops rejects for the claim
	}{
		{name: "removing the claim's user frees it", pod: pod("p").PVC("claim-1").Obj(),
			existing: []*v1.Pod{user1, bystander}, ops: []op{remove(user1)}},
		{name: "removing a pod that does not use the claim changes nothing", pod: pod("p").PVC("claim-1").Obj(),
			existing: []*v1.Pod{user1, bystander}, ops: []op{remove(bystander)}, wantConflict: true},
		{name: "removing the user and adding it back", pod: pod("p").PVC("claim-1").Obj(),
			existing: []*v1.Pod{user1}, ops: []op{remove(user1), add(user1)}, wantConflict: true},
		{name: "two claims in use, one user removed", pod: pod("p").PVC("claim-1").PVC("claim-2").Obj(),
			existing: []*v1.Pod{user1, user2}, ops: []op{remove(user1)}, wantConflict: true},
		{name: "two claims in use, both users removed", pod: pod("p").PVC("claim-1").PVC("claim-2").Obj(),
			existing: []*v1.Pod{user1, user2}, ops: []op{remove(user1), remove(user2)}},
		{name: "a nominated pod naming a free claim takes it (the inline disk keeps PreFilter from skipping)",
			pod: pod("p").PVC("claim-1").Volume(gcePD("foo", false)).Obj(), ops: []op{add(user1)}, wantConflict: true},
		{name: "a pod naming a claim that is not ReadWriteOncePod changes nothing",
			pod: pod("p").PVC("claim-1").Volume(gcePD("foo", false)).Obj(),
			ops: []op{add(pod("rwx-user").NodeName(node1).PVC("claim-rwx").Obj())},
		},
	}
	pvcs := []*v1.PersistentVolumeClaim{rwop("claim-1"), rwop("claim-2"), rwop("claim-3"),
		st.MakePVC().Name("claim-rwx").AccessModes(v1.ReadWriteMany).Obj()}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			env := newTestEnv(t, tt.existing, pvcs...)
			state := framework.NewCycleState()
			if _, s, _ := env.schedFramework.RunPreFilterPlugins(ctx, state, tt.pod, nil); !s.IsSuccess() {
				t.Fatalf("RunPreFilterPlugins: %v", s)
			}
			before := env.schedFramework.RunFilterPlugins(ctx, state, tt.pod, env.nodeInfo(t, node1))

			clone := state.Clone()
			for _, o := range tt.ops {
				ni := env.nodeInfo(t, o.pod.Spec.NodeName)
				run := env.schedFramework.RunPreFilterExtensionRemovePod
				if o.add {
					run = env.schedFramework.RunPreFilterExtensionAddPod
				}
				if s := run(ctx, clone, tt.pod, framework.NewPodInfo(o.pod), ni); !s.IsSuccess() {
					t.Fatalf("PreFilterExtensions (add %v) of %s: %v", o.add, o.pod.Name, s)
				}
			}
			got := env.schedFramework.RunFilterPlugins(ctx, clone, tt.pod, env.nodeInfo(t, node1))
			var want *framework.Status
			if tt.wantConflict {
				want = framework.NewStatus(framework.Unschedulable, ErrReasonReadWriteOncePodConflict).WithPlugin(Name)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Filter after the extensions (-want +got):\n%s", diff)
			}
			after := env.schedFramework.RunFilterPlugins(ctx, state, tt.pod, env.nodeInfo(t, node1))
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("Filter on the original state changed (-before +after):\n%s", diff)
			}
		})
	}
}

// TestNewNeedsHandle checks that New reports a missing handle instead of
// failing later.
func TestNewNeedsHandle(t *testing.T) {
	if _, err := New(context.Background(), nil, nil); err == nil {
		t.Error("New(nil handle) succeeded, want an error")
	}
}
