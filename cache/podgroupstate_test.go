// This file tests the pod groups' states: how the cache's pod transitions
// and its pod-group methods move a group's pods between unscheduled,
// assumed and assigned, when a state appears and goes, its generations, the
// listers, and which states UpdateSnapshot copies.

package cache

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/minisched/minisched/minisched/framework"
)

func addMemberOp(p *v1.Pod) podOp {
	return podOp{desc: "add member " + p.Name,
		do: func(c *Cache, _ klog.Logger) error { c.AddPodGroupMember(p); return nil }}
}

func updateMemberOp(oldPod, newPod *v1.Pod) podOp {
	return podOp{desc: "update member " + oldPod.Name,
		do: func(c *Cache, _ klog.Logger) error { c.UpdatePodGroupMember(oldPod, newPod); return nil }}
}

func removeMemberOp(p *v1.Pod) podOp {
	return podOp{desc: "remove member " + p.Name,
		do: func(c *Cache, _ klog.Logger) error { c.RemovePodGroupMember(p); return nil }}
}

func addPodGroupOp(pg *schedulingv1beta1.PodGroup) podOp {
	return podOp{desc: "add PodGroup " + pg.Name,
		do: func(c *Cache, _ klog.Logger) error { c.AddPodGroup(pg); return nil }}
}

func updatePodGroupOp(oldPG, newPG *schedulingv1beta1.PodGroup) podOp {
	return podOp{desc: "update PodGroup " + oldPG.Name,
		do: func(c *Cache, _ klog.Logger) error { c.UpdatePodGroup(oldPG, newPG); return nil }}
}

func removePodGroupOp(pg *schedulingv1beta1.PodGroup) podOp {
	return podOp{desc: "remove PodGroup " + pg.Name,
		do: func(c *Cache, _ klog.Logger) error { c.RemovePodGroup(pg); return nil }}
}

// expireOp runs the expiry loop's work an hour from now.
var expireOp = podOp{desc: "expire", do: func(c *Cache, l klog.Logger) error {
	c.cleanupAssumedPods(l, c.clock.Now().Add(time.Hour))
	return nil
}}

// withRV returns a copy of pod with resource version rv: a newer object of
// the same pod.
func withRV(pod *v1.Pod, rv string) *v1.Pod {
	out := pod.DeepCopy()
	out.ResourceVersion = rv
	return out
}

// onNode returns a copy of pod bound or assumed on node.
func onNode(pod *v1.Pod, node string) *v1.Pod {
	out := pod.DeepCopy()
	out.Spec.NodeName = node
	return out
}

// group is a groupSummary with the given pods and no PodGroup; its
// arguments are pod labels (objectLabel).
func group(unscheduled []string, assumed map[string]string, assigned []string) groupSummary {
	g := groupSummary{Unscheduled: unscheduled, Assumed: assumed, Assigned: assigned}
	if g.Unscheduled == nil {
		g.Unscheduled = []string{}
	}
	if g.Assumed == nil {
		g.Assumed = map[string]string{}
	}
	if g.Assigned == nil {
		g.Assigned = []string{}
	}
	return g
}

// cachedPodGroups summarizes the cache's pod-group states as its lister
// hands them out, and checks the lister knows exactly those.
func cachedPodGroups(t *testing.T, c *Cache) map[string]groupSummary {
	t.Helper()
	c.mu.RLock()
	want := summarizePodGroups(t, c.podGroups)
	c.mu.RUnlock()
	got := map[string]groupSummary{}
	for key := range want {
		ns, name, _ := strings.Cut(key, "/")
		st, err := c.PodGroupStates().Get(ns, name)
		if err != nil {
			t.Fatalf("PodGroupStates().Get(%q, %q): %v", ns, name, err)
		}
		got[key] = summarizePodGroupState(t, st)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the lister's states differ from the cache's (-want +got):\n%s", diff)
	}
	return got
}

func TestPodGroupStateTransitions(t *testing.T) {
	p1 := makeMember("p1", "g").Obj()
	p2 := makeMember("p2", "g").Obj()
	other := makeMember("p3", "g").Namespace("other").Obj()
	plain := makePod("plain").Obj()
	p1a, p2a := onNode(p1, "a"), onNode(p2, "a")
	pg, pg2 := makePodGroup("g"), makePodGroup("g")
	pg2.ResourceVersion = "2"
	withPodGroup := func(g groupSummary, label string) groupSummary { g.PodGroup = label; return g }

	tests := []struct {
		name string
		// withoutPodGroups builds the cache without WithPodGroups.
		withoutPodGroups bool
		ops              []podOp
		want             map[string]groupSummary
	}{
		{
			name: "unscheduled members are added, one state per namespace",
			ops:  []podOp{addMemberOp(p1), addMemberOp(p2), addMemberOp(other)},
			want: map[string]groupSummary{
				"default/g": group([]string{"p1", "p2"}, nil, nil),
				"other/g":   group([]string{"p3"}, nil, nil),
			},
		},
		{
			name: "a pod that names no group is not tracked",
			ops:  []podOp{addMemberOp(plain), assumeOp(onNode(plain, "a")), addOp(onNode(plain, "a"))},
			want: map[string]groupSummary{},
		},
		{
			name:             "without WithPodGroups nothing is tracked",
			withoutPodGroups: true,
			ops:              []podOp{addPodGroupOp(pg), addMemberOp(p1), assumeOp(p1a), addMemberOp(p2), addOp(p2a)},
			want:             map[string]groupSummary{},
		},
		{
			name: "AssumePod makes a member assumed, and FinishBinding leaves it so",
			ops:  []podOp{addMemberOp(p1), addMemberOp(p2), assumeOp(p1a), finishOp(p1a)},
			want: map[string]groupSummary{"default/g": group([]string{"p2"}, map[string]string{"p1": "a"}, nil)},
		},
		{
			name: "ForgetPod makes it unscheduled again",
			ops:  []podOp{addMemberOp(p1), assumeOp(p1a), forgetOp(p1a)},
			want: map[string]groupSummary{"default/g": group([]string{"p1"}, nil, nil)},
		},
		{
			name: "expiry makes it unscheduled again",
			ops:  []podOp{addMemberOp(p1), assumeOp(p1a), finishOp(p1a), expireOp},
			want: map[string]groupSummary{"default/g": group([]string{"p1"}, nil, nil)},
		},
		{
			name: "AddPod confirms an assumed member: assigned",
			ops:  []podOp{addMemberOp(p1), assumeOp(p1a), addOp(withRV(onNode(p1, "b"), "2"))},
			want: map[string]groupSummary{"default/g": group(nil, nil, []string{"p1@2"})},
		},
		{
			name: "AddPod of a member bound by someone else: assigned",
			ops:  []podOp{addMemberOp(p1), addOp(p1a)},
			want: map[string]groupSummary{"default/g": group(nil, nil, []string{"p1"})},
		},
		{
			name: "the binding's unscheduled Delete after the Add leaves the member assigned",
			ops:  []podOp{addMemberOp(p1), assumeOp(p1a), addOp(p1a), removeMemberOp(p1)},
			want: map[string]groupSummary{"default/g": group(nil, nil, []string{"p1"})},
		},
		{
			name: "the binding's unscheduled Delete before the Add: dropped, then assigned",
			ops:  []podOp{addMemberOp(p1), assumeOp(p1a), removeMemberOp(p1), addOp(p1a)},
			want: map[string]groupSummary{"default/g": group(nil, nil, []string{"p1"})},
		},
		{
			name: "an assumed member deleted leaves its group, and ForgetPod then changes nothing",
			ops:  []podOp{addMemberOp(p1), addMemberOp(p2), assumeOp(p1a), removeMemberOp(p1), forgetOp(p1a)},
			want: map[string]groupSummary{"default/g": group([]string{"p2"}, nil, nil)},
		},
		{
			name: "UpdatePodGroupMember replaces an unscheduled member's object",
			ops:  []podOp{addMemberOp(p1), updateMemberOp(p1, withRV(p1, "2"))},
			want: map[string]groupSummary{"default/g": group([]string{"p1@2"}, nil, nil)},
		},
		{
			name: "UpdatePodGroupMember of an unknown pod adds it",
			ops:  []podOp{updateMemberOp(p1, withRV(p1, "2"))},
			want: map[string]groupSummary{"default/g": group([]string{"p1@2"}, nil, nil)},
		},
		{
			name: "an assumed member's update keeps it assumed; forgotten, it has the new object",
			ops: []podOp{addMemberOp(p1), assumeOp(p1a), updateMemberOp(p1, withRV(p1, "2")), addMemberOp(p2),
				assumeOp(p2a), forgetOp(p1a)},
			want: map[string]groupSummary{"default/g": group([]string{"p1@2"}, map[string]string{"p2": "a"}, nil)},
		},
		{
			name: "UpdatePod replaces a bound member's object",
			ops:  []podOp{addOp(p1a), updateOp(p1a, withRV(p1a, "2"))},
			want: map[string]groupSummary{"default/g": group(nil, nil, []string{"p1@2"})},
		},
		{
			name: "AssumePod of a member the group did not know adds it assumed",
			ops:  []podOp{assumeOp(p1a)},
			want: map[string]groupSummary{"default/g": group(nil, map[string]string{"p1": "a"}, nil)},
		},
		{
			name: "RemovePod of the last member drops the state",
			ops:  []podOp{addMemberOp(p1), assumeOp(p1a), addOp(p1a), removeOp(p1a)},
			want: map[string]groupSummary{},
		},
		{
			name: "RemovePod of an assumed member drops it",
			ops:  []podOp{addMemberOp(p1), addMemberOp(p2), assumeOp(p1a), removeOp(p1a)},
			want: map[string]groupSummary{"default/g": group([]string{"p2"}, nil, nil)},
		},
		{
			name: "RemovePodGroupMember of the last member drops the state",
			ops:  []podOp{addMemberOp(p1), removeMemberOp(p1)},
			want: map[string]groupSummary{},
		},
		{
			name: "a PodGroup without pods has a state",
			ops:  []podOp{addPodGroupOp(pg)},
			want: map[string]groupSummary{"default/g": withPodGroup(group(nil, nil, nil), "g")},
		},
		{
			name: "UpdatePodGroup replaces the object",
			ops:  []podOp{addPodGroupOp(pg), addMemberOp(p1), updatePodGroupOp(pg, pg2)},
			want: map[string]groupSummary{"default/g": withPodGroup(group([]string{"p1"}, nil, nil), "g@2")},
		},
		{
			name: "RemovePodGroup drops a state without pods",
			ops:  []podOp{addPodGroupOp(pg), addMemberOp(p1), removeMemberOp(p1), removePodGroupOp(pg)},
			want: map[string]groupSummary{},
		},
		{
			name: "the state outlives its PodGroup while a pod names it",
			ops:  []podOp{addMemberOp(p1), addPodGroupOp(pg), removePodGroupOp(pg)},
			want: map[string]groupSummary{"default/g": group([]string{"p1"}, nil, nil)},
		},
		{
			name: "RemovePodGroup of an unknown group changes nothing",
			ops:  []podOp{removePodGroupOp(pg)},
			want: map[string]groupSummary{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			opts := []Option{WithPodGroups()}
			if tt.withoutPodGroups {
				opts = nil
			}
			c := New(time.Second, opts...)
			c.AddNode(logger, makeNode("a").Obj())
			c.AddNode(logger, makeNode("b").Obj())
			runOps(t, c, logger, tt.ops)
			if diff := cmp.Diff(tt.want, cachedPodGroups(t, c)); diff != "" {
				t.Errorf("pod groups (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodGroupGenerations follows one group's generation through a
// sequence of operations: every change takes a generation no state had,
// other operations keep it, and a group deleted and created again starts
// above everything seen before.
func TestPodGroupGenerations(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	p1 := makeMember("p1", "g").Obj()
	p1a := onNode(p1, "a")
	p2a := onNode(makeMember("p2", "h").Obj(), "a")
	pg := makePodGroup("g")
	steps := []struct {
		op podOp
		// change: the state changed (it may also be created or dropped);
		// gone: there is no state after op.
		change, gone bool
	}{
		{op: addMemberOp(p1), change: true},
		{op: addMemberOp(makePod("plain").Obj())},
		{op: assumeOp(p1a), change: true},
		{op: finishOp(p1a)},
		{op: assumeOp(p2a)}, // another group's
		{op: forgetOp(p1a), change: true},
		{op: addPodGroupOp(pg), change: true},
		{op: updateMemberOp(p1, withRV(p1, "2")), change: true},
		{op: removeMemberOp(p1), change: true},
		{op: removePodGroupOp(pg), change: true, gone: true},
		{op: forgetOp(p2a), gone: true}, // another group's, while g has no state
		{op: addPodGroupOp(pg), change: true},
	}
	c := New(0, WithPodGroups())
	c.AddNode(logger, makeNode("a").Obj())
	var last, highest int64
	for i, step := range steps {
		t.Run(fmt.Sprintf("%d %s", i, step.op.desc), func(t *testing.T) {
			runOps(t, c, logger, []podOp{step.op})
			st, ok := c.podGroups["default/g"]
			switch {
			case step.gone:
				if ok {
					t.Fatalf("the state is still there, generation %d", st.generation)
				}
				last = 0
				return
			case !ok:
				t.Fatal("the state is gone")
			case step.change && st.generation <= highest:
				t.Errorf("generation %d after a change, want above %d", st.generation, highest)
			case !step.change && st.generation != last:
				t.Errorf("generation %d, want %d unchanged", st.generation, last)
			}
			last, highest = st.generation, max(highest, st.generation)
		})
	}
}

func TestPodGroupListers(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	build := func(opts ...Option) *Cache {
		c := New(0, opts...)
		c.AddPodGroup(makePodGroup("g"))
		c.AddPodGroupMember(makeMember("p1", "h").Obj())
		return c
	}
	withGroups, without := build(WithPodGroups()), build()
	snapshot := NewEmptySnapshot()
	if err := withGroups.UpdateSnapshot(logger, snapshot); err != nil {
		t.Fatal(err)
	}

	const (
		notFound  = "pod group state not found for pod group default/%s"
		noPGFound = "pod group object not found for pod group default/%s"
	)
	tests := []struct {
		name    string
		manager framework.PodGroupManager
		group   string
		// wantPodGroup is the name Get returns ("" for an error); the
		// errors are formats of the group's name.
		wantPodGroup string
		wantPGErr    string
		wantStateErr string
		// wantAllPods is the state's AllPodsCount, when Get finds it.
		wantAllPods int
	}{
		{name: "cache: a group with its PodGroup", manager: withGroups, group: "g", wantPodGroup: "g"},
		{name: "cache: a group with pods only", manager: withGroups, group: "h", wantPGErr: noPGFound, wantAllPods: 1},
		{name: "cache: an unknown group", manager: withGroups, group: "x", wantPGErr: notFound, wantStateErr: notFound},
		{name: "cache without WithPodGroups", manager: without, group: "g", wantPGErr: notFound, wantStateErr: notFound},
		{name: "snapshot: a group with its PodGroup", manager: snapshot, group: "g", wantPodGroup: "g"},
		{name: "snapshot: a group with pods only", manager: snapshot, group: "h", wantPGErr: noPGFound, wantAllPods: 1},
		{name: "snapshot: an unknown group", manager: snapshot, group: "x", wantPGErr: notFound, wantStateErr: notFound},
		{name: "NewSnapshot knows no group", manager: NewSnapshot(nil, nil), group: "g", wantPGErr: notFound,
			wantStateErr: notFound},
	}
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	format := func(f, group string) string {
		if f == "" {
			return ""
		}
		return fmt.Sprintf(f, group)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pg, err := tt.manager.PodGroups().Get("default", tt.group)
			if diff := cmp.Diff(format(tt.wantPGErr, tt.group), errText(err)); diff != "" {
				t.Errorf("PodGroups().Get error (-want +got):\n%s", diff)
			}
			var got string
			if pg != nil {
				got = pg.Name
			}
			if got != tt.wantPodGroup {
				t.Errorf("PodGroups().Get = %q, want %q", got, tt.wantPodGroup)
			}
			st, err := tt.manager.PodGroupStates().Get("default", tt.group)
			if diff := cmp.Diff(format(tt.wantStateErr, tt.group), errText(err)); diff != "" {
				t.Errorf("PodGroupStates().Get error (-want +got):\n%s", diff)
			}
			if err == nil && st.AllPodsCount() != tt.wantAllPods {
				t.Errorf("AllPodsCount() = %d, want %d", st.AllPodsCount(), tt.wantAllPods)
			}
			if err != nil && st != nil {
				t.Errorf("PodGroupStates().Get returned a state with its error: %v", st)
			}
		})
	}
}

// TestCachePodGroupStateIsLive checks that a state the cache's lister
// returned reads the cache as it is now, as kube-scheduler's does, that
// counting a group's pods copies nothing (GangScheduling's PreEnqueue
// counts them for every member of a group on every requeue: a copy per
// count made a gang of 1000 cost 10^9 map writes to enqueue), and that
// reading states while the cache changes is race-free (run with -race).
func TestCachePodGroupStateIsLive(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	c := New(0, WithPodGroups())
	c.AddNode(logger, makeNode("a").Obj())
	p1 := makeMember("p1", "g").Obj()
	c.AddPodGroupMember(p1)
	st, err := c.PodGroupStates().Get("default", "g")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AssumePod(logger, onNode(p1, "a")); err != nil {
		t.Fatal(err)
	}
	c.AddPodGroupMember(makeMember("p2", "g").Obj())
	if got, want := summarizePodGroupState(t, st), summarizePodGroupState(t, c.podGroups["default/g"]); !cmp.Equal(got, want) {
		t.Errorf("the state handed out does not read the cache (-got +want):\n%s", cmp.Diff(got, want))
	}
	for i := range 1000 {
		c.AddPodGroupMember(makeMember(fmt.Sprintf("m%d", i), "g").Obj())
	}
	if allocs := testing.AllocsPerRun(100, func() {
		st, _ := c.PodGroupStates().Get("default", "g")
		_ = st.AllPodsCount() + st.ScheduledPodsCount()
	}); allocs > 2 {
		// The group's key and the interface value; nothing per pod.
		t.Errorf("getting a group of 1002 pods and counting them allocated %v times, want at most 2", allocs)
	}

	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				pod := makeMember(fmt.Sprintf("w%d-%d", w, i), "g").Obj()
				c.AddPodGroupMember(pod)
				if st, err := c.PodGroupStates().Get("default", "g"); err == nil {
					_ = st.ScheduledPods()
					_ = st.UnscheduledPods()
				}
				c.RemovePodGroupMember(pod)
			}
		})
	}
	wg.Wait()
}

func TestUpdateSnapshotCopiesChangedPodGroups(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	tests := []struct {
		name   string
		change func(c *Cache)
		// wantCopied are the groups whose state the snapshot copies anew;
		// the others it keeps (or drops, if the cache has them no more).
		wantCopied []string
	}{
		{name: "nothing changed", change: func(*Cache) {}},
		{
			name:       "a member added",
			change:     func(c *Cache) { c.AddPodGroupMember(makeMember("a2", "a").Obj()) },
			wantCopied: []string{"default/a"},
		},
		{
			name:       "a PodGroup added",
			change:     func(c *Cache) { c.AddPodGroup(makePodGroup("b")) },
			wantCopied: []string{"default/b"},
		},
		{
			name:   "a group gone",
			change: func(c *Cache) { c.RemovePodGroup(makePodGroup("c")) },
		},
		{
			name: "a group gone and back",
			change: func(c *Cache) {
				c.RemovePodGroup(makePodGroup("c"))
				c.AddPodGroup(makePodGroup("c"))
			},
			wantCopied: []string{"default/c"},
		},
		{
			name:       "a new group",
			change:     func(c *Cache) { c.AddPodGroupMember(makeMember("d1", "d").Obj()) },
			wantCopied: []string{"default/d"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(0, WithPodGroups())
			c.AddPodGroupMember(makeMember("a1", "a").Obj())
			c.AddPodGroupMember(makeMember("b1", "b").Obj())
			c.AddPodGroup(makePodGroup("c"))
			s := NewEmptySnapshot()
			if err := c.UpdateSnapshot(logger, s); err != nil {
				t.Fatal(err)
			}
			before := map[string]*podGroupState{}
			for key, st := range s.podGroupStates {
				before[key] = st
			}

			tt.change(c)
			if err := c.UpdateSnapshot(logger, s); err != nil {
				t.Fatal(err)
			}
			var copied []string
			for key, st := range s.podGroupStates {
				if before[key] != st {
					copied = append(copied, key)
				}
			}
			if diff := cmp.Diff(tt.wantCopied, copied); diff != "" {
				t.Errorf("states copied (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(cachedPodGroups(t, c), summarizePodGroups(t, s.podGroupStates)); diff != "" {
				t.Errorf("snapshot's pod groups differ from the cache's (-want +got):\n%s", diff)
			}
		})
	}
}
