// This file tests the snapshot's mutation session (StartMutations, AddPod,
// RemovePod, EndMutations), with which a PodGroupPostFilter plugin asks
// whether its group would fit without some pods: that each change leaves
// the snapshot as the cache would give it had it made the change itself,
// that EndMutations restores the snapshot exactly (down to the NodeInfo
// objects the next UpdateSnapshot refreshes in place), with pods assumed
// before and during the session, and what each refuses.

package cache

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"

	"github.com/minisched/minisched/minisched/framework"
)

// snapshotObjects are the objects a snapshot holds, by identity: what
// EndMutations must give back, not copies of it.
type snapshotObjects struct {
	nodes  map[string]*framework.NodeInfo
	lists  [4][]*framework.NodeInfo
	groups map[string]*podGroupState
}

func objectsOf(s *Snapshot) snapshotObjects {
	o := snapshotObjects{nodes: map[string]*framework.NodeInfo{}, groups: map[string]*podGroupState{}}
	for name, ni := range s.nodeInfoMap {
		o.nodes[name] = ni
	}
	o.lists = [4][]*framework.NodeInfo{slices.Clone(s.nodeInfoList), slices.Clone(s.havePodsWithAffinityNodeInfoList),
		slices.Clone(s.havePodsWithAffinityScoringTermsNodeInfoList),
		slices.Clone(s.havePodsWithRequiredAntiAffinityNodeInfoList)}
	for key, st := range s.podGroupStates {
		o.groups[key] = st
	}
	return o
}

// same reports how o and p differ in identity ("" if they do not).
func (o snapshotObjects) same(p snapshotObjects) string {
	for name, ni := range o.nodes {
		if p.nodes[name] != ni {
			return "node " + name + " is another NodeInfo"
		}
	}
	for i := range o.lists {
		if !slices.Equal(o.lists[i], p.lists[i]) {
			return fmt.Sprintf("list %d holds other NodeInfos", i)
		}
	}
	for key, st := range o.groups {
		if p.groups[key] != st {
			return "pod group " + key + " is another state"
		}
	}
	if len(o.nodes) != len(p.nodes) || len(o.groups) != len(p.groups) {
		return "the number of nodes or groups changed"
	}
	return ""
}

// TestSnapshotMutations is the mutation session's central property, over
// seeded random clusters with pod groups: with some pods assumed in the
// snapshot before the session, a session removes pods from their nodes,
// adds some back, adds pending pods to nodes, and assumes and forgets a
// pod in between. After each change the snapshot equals a fresh snapshot
// of a second, equal cache that made the same change itself (RemovePod,
// AddPod, AssumePod, ForgetPod). EndMutations gives back the very objects
// the snapshot held, unchanged, and the pods assumed before the session
// are still assumed: forgetting them leaves a snapshot the next
// UpdateSnapshot finds unchanged. The cache never changes.
func TestSnapshotMutations(t *testing.T) {
	for seed := range int64(20) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			logger := logr.Discard()
			c, s, pending := assumeCluster(t, seed)
			shadow, _, _ := assumeCluster(t, seed)
			list, _ := s.List()
			if len(list) == 0 {
				t.Skip("no nodes")
			}
			rng := rand.New(rand.NewSource(seed))
			check := func(what string) {
				t.Helper()
				want := summarizeSnapshot(t, freshSnapshot(t, shadow))
				if diff := diffSnapshots(want, summarizeSnapshot(t, s)); diff != "" {
					t.Fatalf("%s: the snapshot differs from the cache's that did the same (-want +got):\n%s", what, diff)
				}
			}
			// Assumed before the session, in both.
			var preAssumed []*v1.Pod
			for range min(2, len(pending)) {
				pod := onNode(pending[0], pick(rng, list).Node().Name)
				pending = pending[1:]
				if err := s.AssumePod(framework.NewPodInfo(pod)); err != nil {
					t.Fatal(err)
				}
				if err := shadow.AssumePod(logger, pod); err != nil {
					t.Fatal(err)
				}
				preAssumed = append(preAssumed, pod)
			}
			cacheBefore := summarizeCache(t, c)
			before, objects := summarizeSnapshot(t, s), objectsOf(s)

			if err := s.StartMutations(); err != nil {
				t.Fatal(err)
			}
			if err := s.StartMutations(); err == nil || err.Error() != "cannot stack mutations" {
				t.Fatalf("a second StartMutations: got %v, want cannot stack mutations", err)
			}
			// Remove up to five pods the shadow cache has bound.
			var removed []*v1.Pod
			for _, ni := range list {
				for _, pi := range ni.Pods {
					if assumed, _ := shadow.IsAssumedPod(pi.Pod); assumed || len(removed) == 5 || rng.Intn(2) == 0 {
						continue
					}
					removed = append(removed, pi.Pod)
				}
			}
			for _, pod := range removed {
				if err := s.RemovePod(logger, pod, pod.Spec.NodeName); err != nil {
					t.Fatalf("RemovePod(%s): %v", pod.Name, err)
				}
				if err := shadow.RemovePod(logger, pod); err != nil {
					t.Fatal(err)
				}
				check("after RemovePod " + pod.Name)
			}
			// Add back every other one, and the pending pods, each on a
			// node of its own choosing.
			for i, pod := range removed {
				if i%2 == 1 {
					continue
				}
				if err := s.AddPod(framework.NewPodInfo(pod), pod.Spec.NodeName); err != nil {
					t.Fatalf("AddPod(%s): %v", pod.Name, err)
				}
				if err := shadow.AddPod(logger, pod); err != nil {
					t.Fatal(err)
				}
				check("after adding back " + pod.Name)
			}
			var added []*v1.Pod
			for _, pod := range pending[:len(pending)/2] {
				node := pick(rng, list).Node().Name
				if err := s.AddPod(framework.NewPodInfo(pod), node); err != nil {
					t.Fatalf("AddPod(%s, %s): %v", pod.Name, node, err)
				}
				if err := shadow.AddPod(logger, onNode(pod, node)); err != nil {
					t.Fatal(err)
				}
				added = append(added, onNode(pod, node))
				check("after AddPod " + pod.Name + " on " + node)
			}
			// A pod-group cycle within the session: assume, then forget.
			for _, pod := range pending[len(pending)/2:] {
				placed := onNode(pod, pick(rng, list).Node().Name)
				if err := s.AssumePod(framework.NewPodInfo(placed)); err != nil {
					t.Fatalf("AssumePod(%s): %v", pod.Name, err)
				}
				if err := shadow.AssumePod(logger, placed); err != nil {
					t.Fatal(err)
				}
				check("after AssumePod " + pod.Name)
				if err := s.AddPod(framework.NewPodInfo(pod), placed.Spec.NodeName); err == nil {
					t.Fatal("AddPod with a pod assumed in the session: no error")
				}
				if err := s.ForgetPod(logger, placed); err != nil {
					t.Fatalf("ForgetPod(%s): %v", pod.Name, err)
				}
				if err := shadow.ForgetPod(logger, placed); err != nil {
					t.Fatal(err)
				}
				check("after ForgetPod " + pod.Name)
			}
			if len(removed)+len(added) > 0 {
				if diff := diffSnapshots(before, summarizeSnapshot(t, s)); diff == "" {
					t.Fatal("the session changed nothing")
				}
			}

			if err := s.EndMutations(); err != nil {
				t.Fatal(err)
			}
			if diff := diffSnapshots(before, summarizeSnapshot(t, s)); diff != "" {
				t.Errorf("the snapshot is not as it was (-before +after):\n%s", diff)
			}
			if diff := objects.same(objectsOf(s)); diff != "" {
				t.Errorf("EndMutations gave back other objects: %s", diff)
			}
			if diff := cmp.Diff(cacheBefore, summarizeCache(t, c), cmpOpts...); diff != "" {
				t.Errorf("the cache changed (-before +after):\n%s", diff)
			}
			for _, pod := range slices.Backward(preAssumed) {
				if err := s.ForgetPod(logger, pod); err != nil {
					t.Errorf("ForgetPod(%s), assumed before the session: %v", pod.Name, err)
				}
			}
			checkUpdateCopiesNothing(t, c, s, objectsOf(s).groups)
		})
	}
}

func TestSnapshotMutationsRefuse(t *testing.T) {
	p1 := makeMember("p1", "g").Obj()
	bound := makeMember("bound", "g").NodeName("a").Obj()
	tests := []struct {
		name string
		// session starts a mutation session first.
		session bool
		// assumed are pods assumed in the snapshot first: before the
		// session, or in it.
		assumedBefore, assumedIn []*v1.Pod
		do                       func(s *Snapshot) error
		wantErr                  string
	}{
		{name: "AddPod outside a session", do: func(s *Snapshot) error { return s.AddPod(framework.NewPodInfo(p1), "a") },
			wantErr: "AddPod() called outside of mutation session"},
		{name: "RemovePod outside a session", do: func(s *Snapshot) error { return s.RemovePod(logr.Discard(), bound, "a") },
			wantErr: "RemovePod() called outside of mutation session"},
		{name: "EndMutations without a session", do: func(s *Snapshot) error { return s.EndMutations() },
			wantErr: "no mutation session started"},
		{name: "StartMutations in a session", session: true, do: func(s *Snapshot) error { return s.StartMutations() },
			wantErr: "cannot stack mutations"},
		{name: "AddPod to a node not in the snapshot", session: true,
			do:      func(s *Snapshot) error { return s.AddPod(framework.NewPodInfo(p1), "ghost") },
			wantErr: `cannot add pod default/p1 to the snapshot: nodeinfo not found for node name "ghost"`},
		{name: "AddPod of a pod already on the node", session: true,
			do:      func(s *Snapshot) error { return s.AddPod(framework.NewPodInfo(bound), "a") },
			wantErr: "pod default/bound is already on node a in the snapshot"},
		{name: "RemovePod from a node not in the snapshot", session: true,
			do:      func(s *Snapshot) error { return s.RemovePod(logr.Discard(), bound, "ghost") },
			wantErr: `cannot remove pod default/bound from the snapshot: nodeinfo not found for node name "ghost"`},
		{name: "RemovePod of a pod not on the node", session: true,
			do:      func(s *Snapshot) error { return s.RemovePod(logr.Discard(), bound, "b") },
			wantErr: "pod default/bound is not on node b in the snapshot"},
		{name: "RemovePod while a pod is assumed in the session", session: true, assumedIn: []*v1.Pod{onNode(p1, "b")},
			do:      func(s *Snapshot) error { return s.RemovePod(logr.Discard(), bound, "a") },
			wantErr: "RemovePod() called while 1 pods are assumed in the snapshot: forget them first"},
		{name: "ForgetPod of a pod assumed before the session", session: true, assumedBefore: []*v1.Pod{onNode(p1, "b")},
			do:      func(s *Snapshot) error { return s.ForgetPod(logr.Discard(), onNode(p1, "b")) },
			wantErr: "pod default/p1 was not assumed in the snapshot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := refusalSnapshot(t, p1, bound, tt.assumedBefore)
			if tt.session {
				if err := s.StartMutations(); err != nil {
					t.Fatal(err)
				}
			}
			for _, pod := range tt.assumedIn {
				if err := s.AssumePod(framework.NewPodInfo(pod)); err != nil {
					t.Fatal(err)
				}
			}
			before := summarizeSnapshot(t, s)
			err := tt.do(s)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("got error %v, want %q", err, tt.wantErr)
			}
			if diff := diffSnapshots(before, summarizeSnapshot(t, s)); diff != "" {
				t.Errorf("a refusal changed the snapshot (-before +after):\n%s", diff)
			}
		})
	}
}

// TestUpdateSnapshotEndsForgottenMutations checks the safety net: a
// session a PodGroupPostFilter left open, with pods removed, added and
// assumed in it, is ended by the next UpdateSnapshot, which then refreshes
// the snapshot as usual, even when the cache changed meanwhile.
func TestUpdateSnapshotEndsForgottenMutations(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	c := New(0, WithPodGroups())
	c.AddNode(logger, makeNode("a").Obj())
	c.AddNode(logger, makeNode("b").Obj())
	bound := makeMember("bound", "g").NodeName("a").PodAntiAffinity(requiredPodAntiAffinity("web")).PVC("data").Obj()
	if err := c.AddPod(logger, bound); err != nil {
		t.Fatal(err)
	}
	p1 := makeMember("p1", "g").Obj()
	c.AddPodGroupMember(p1)
	s := freshSnapshot(t, c)
	if err := s.StartMutations(); err != nil {
		t.Fatal(err)
	}
	if err := s.RemovePod(logger, bound, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddPod(framework.NewPodInfo(makePod("other").Obj()), "b"); err != nil {
		t.Fatal(err)
	}
	if err := s.AssumePod(framework.NewPodInfo(onNode(p1, "a"))); err != nil {
		t.Fatal(err)
	}
	if err := c.AddPod(logger, makePod("new").NodeName("a").Obj()); err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateSnapshot(logger, s); err != nil {
		t.Fatal(err)
	}
	if diff := diffSnapshots(summarizeSnapshot(t, freshSnapshot(t, c)), summarizeSnapshot(t, s)); diff != "" {
		t.Errorf("the snapshot differs from a fresh one (-want +got):\n%s", diff)
	}
	if s.backup != nil || len(s.assumed) != 0 {
		t.Errorf("a session is still open (%t) or %d pods are still assumed", s.backup != nil, len(s.assumed))
	}
	if err := s.StartMutations(); err != nil {
		t.Errorf("a new session: %v", err)
	}
}

// TestSnapshotAddPodPlacesACopy: a pending pod added to a node is placed as
// a copy naming the node, assigned in its group; the caller's object is
// not changed.
func TestSnapshotAddPodPlacesACopy(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	c := New(0, WithPodGroups())
	c.AddNode(logger, makeNode("a").Obj())
	p1 := makeMember("p1", "g").Obj()
	c.AddPodGroupMember(p1)
	s := freshSnapshot(t, c)
	if err := s.StartMutations(); err != nil {
		t.Fatal(err)
	}
	if err := s.AddPod(framework.NewPodInfo(p1), "a"); err != nil {
		t.Fatal(err)
	}
	if p1.Spec.NodeName != "" {
		t.Errorf("AddPod changed the caller's pod: spec.nodeName %q", p1.Spec.NodeName)
	}
	ni, _ := s.Get("a")
	if got := ni.Pods[0].Pod.Spec.NodeName; got != "a" {
		t.Errorf("the placed pod names node %q, want a", got)
	}
	st, err := s.PodGroupStates().Get("default", "g")
	if err != nil {
		t.Fatal(err)
	}
	if got := st.ScheduledPods(); len(got) != 1 || got[0].UID != types.UID("uid-p1") || len(st.AssumedPods()) != 0 {
		t.Errorf("group state: scheduled %v, assumed %v; want p1 assigned", got, st.AssumedPods())
	}
}
