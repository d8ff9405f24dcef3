// This file tests the snapshot's placement: that it restricts the
// scheduler's view (NumNodesInPlacement, ListNodesInPlacement,
// GetNodeInPlacement) and not the plugins' (List, Get, NumNodes), what
// AssumePlacement refuses, and that ForgetPlacement and UpdateSnapshot
// lift it.

package cache

import (
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
)

// nodeNames lists the names of nis.
func nodeNames(nis []*framework.NodeInfo) []string {
	var out []string
	for _, ni := range nis {
		out = append(out, ni.Node().Name)
	}
	return out
}

func TestSnapshotPlacement(t *testing.T) {
	nodes := []*v1.Node{st.MakeNode().Name("a1").Obj(), st.MakeNode().Name("a2").Obj(), st.MakeNode().Name("b1").Obj()}
	// placement picks the named nodes of s, as a PlacementGenerate plugin
	// divides the snapshot's own NodeInfos.
	placement := func(s *Snapshot, names ...string) *framework.Placement {
		p := &framework.Placement{Name: "rack"}
		for _, n := range names {
			ni, err := s.Get(n)
			if err != nil {
				t.Fatal(err)
			}
			p.Nodes = append(p.Nodes, ni)
		}
		return p
	}
	tests := []struct {
		name string
		// place returns what to assume in s (nil: none).
		place func(s *Snapshot) *framework.Placement
		// wantErr is AssumePlacement's error ("": none).
		wantErr string
		// wantNodes are the nodes the scheduler may search; wantKept says
		// a placement is kept (GetPlacement).
		wantNodes []string
		wantKept  bool
	}{
		{name: "no placement: every node", place: func(*Snapshot) *framework.Placement { return nil },
			wantNodes: []string{"a1", "a2", "b1"}},
		{name: "a rack's nodes", place: func(s *Snapshot) *framework.Placement { return placement(s, "a1", "a2") },
			wantNodes: []string{"a1", "a2"}, wantKept: true},
		{name: "every node is no restriction", place: func(s *Snapshot) *framework.Placement {
			return placement(s, "b1", "a1", "a2")
		}, wantNodes: []string{"a1", "a2", "b1"}},
		{name: "a node the snapshot does not have", place: func(*Snapshot) *framework.Placement {
			ni := framework.NewNodeInfo()
			ni.SetNode(st.MakeNode().Name("elsewhere").Obj())
			return &framework.Placement{Nodes: []*framework.NodeInfo{ni}}
		}, wantErr: "node elsewhere in placement is not present in snapshot", wantNodes: []string{"a1", "a2", "b1"}},
		{name: "a copy of the snapshot's node", place: func(s *Snapshot) *framework.Placement {
			ni, _ := s.Get("a1")
			return &framework.Placement{Nodes: []*framework.NodeInfo{ni.Snapshot()}}
		}, wantErr: "node a1 in placement is not the same instance as in the snapshot", wantNodes: []string{"a1", "a2", "b1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSnapshot(nil, nodes)
			// A placement assumed before is replaced, even by a refused one.
			if err := s.AssumePlacement(placement(s, "b1")); err != nil {
				t.Fatal(err)
			}
			err := s.AssumePlacement(tt.place(s))
			if got := errText(err); got != tt.wantErr {
				t.Fatalf("AssumePlacement() error = %q, want %q", got, tt.wantErr)
			}
			if kept := s.GetPlacement() != nil; kept != tt.wantKept {
				t.Errorf("placement kept: %t, want %t", kept, tt.wantKept)
			}
			inPlacement, _ := s.ListNodesInPlacement()
			if diff := cmp.Diff(tt.wantNodes, nodeNames(inPlacement)); diff != "" {
				t.Errorf("ListNodesInPlacement (-want +got):\n%s", diff)
			}
			if got := s.NumNodesInPlacement(); got != len(tt.wantNodes) {
				t.Errorf("NumNodesInPlacement() = %d, want %d", got, len(tt.wantNodes))
			}
			for _, n := range []string{"a1", "b1"} {
				_, err := s.GetNodeInPlacement(n)
				if found, want := err == nil, slices.Contains(tt.wantNodes, n); found != want {
					t.Errorf("GetNodeInPlacement(%s): found %t, want %t (%v)", n, found, want, err)
				}
			}
			// The plugins' view is the whole snapshot.
			all, _ := s.List()
			if diff := cmp.Diff([]string{"a1", "a2", "b1"}, nodeNames(all)); diff != "" || s.NumNodes() != 3 {
				t.Errorf("List (-want +got):\n%s; NumNodes() = %d", diff, s.NumNodes())
			}
			if _, err := s.Get("b1"); err != nil {
				t.Errorf("Get(b1): %v", err)
			}
			s.ForgetPlacement()
			if got := s.NumNodesInPlacement(); s.GetPlacement() != nil || got != 3 {
				t.Errorf("after ForgetPlacement: placement %v, %d nodes in it, want none and 3", s.GetPlacement(), got)
			}
		})
	}
}

// TestUpdateSnapshotForgetsPlacement: a placement a cycle left behind is
// lifted by the next UpdateSnapshot, whose NodeInfos it may no longer hold.
func TestUpdateSnapshotForgetsPlacement(t *testing.T) {
	logger := logr.Discard()
	c := New(0)
	for _, n := range []string{"a1", "a2", "b1"} {
		c.AddNode(logger, st.MakeNode().Name(n).Obj())
	}
	s := NewEmptySnapshot()
	if err := c.UpdateSnapshot(logger, s); err != nil {
		t.Fatal(err)
	}
	a1, _ := s.Get("a1")
	if err := s.AssumePlacement(&framework.Placement{Name: "a", Nodes: []*framework.NodeInfo{a1}}); err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateSnapshot(logger, s); err != nil {
		t.Fatal(err)
	}
	if s.GetPlacement() != nil || s.NumNodesInPlacement() != 3 {
		t.Errorf("after UpdateSnapshot: placement %v with %d nodes, want none", s.GetPlacement(), s.NumNodesInPlacement())
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
