// This file tests the node order: zones interleaved, stable, and followed by
// the cache's snapshots.

package cache

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// zoned returns a node in region r, zone z ("" for none).
func zoned(name, zone string) *v1.Node {
	b := makeNode(name)
	if zone != "" {
		b.Region("r").Zone(zone)
	}
	return b.Obj()
}

func TestNodeTreeOrder(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*v1.Node
		// then runs after the nodes were added.
		then func(t *testing.T, logger klog.Logger, tree *nodeTree)
		want []string
	}{
		{
			name:  "one zone keeps insertion order",
			nodes: []*v1.Node{zoned("n1", "a"), zoned("n2", "a"), zoned("n3", "a")},
			want:  []string{"n1", "n2", "n3"},
		},
		{
			name: "zones interleave, in the order first seen",
			nodes: []*v1.Node{zoned("a1", "a"), zoned("a2", "a"), zoned("b1", "b"), zoned("c1", "c"), zoned("b2", "b"),
				zoned("a3", "a")},
			want: []string{"a1", "b1", "c1", "a2", "b2", "a3"},
		},
		{
			name:  "nodes without zone labels form a zone of their own",
			nodes: []*v1.Node{zoned("x1", ""), zoned("a1", "a"), zoned("x2", ""), zoned("a2", "a")},
			want:  []string{"x1", "a1", "x2", "a2"},
		},
		{
			name: "the same zone name in two regions is two zones",
			nodes: []*v1.Node{makeNode("r1a").Region("r1").Zone("a").Obj(), makeNode("r1a2").Region("r1").Zone("a").Obj(),
				makeNode("r2a").Region("r2").Zone("a").Obj()},
			want: []string{"r1a", "r2a", "r1a2"},
		},
		{
			name:  "removing a node keeps the others in order",
			nodes: []*v1.Node{zoned("a1", "a"), zoned("a2", "a"), zoned("a3", "a"), zoned("b1", "b")},
			then: func(t *testing.T, logger klog.Logger, tree *nodeTree) {
				if err := tree.removeNode(logger, "a2"); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"a1", "b1", "a3"},
		},
		{
			name:  "an emptied zone goes to the back when it returns",
			nodes: []*v1.Node{zoned("a1", "a"), zoned("b1", "b"), zoned("c1", "c")},
			then: func(t *testing.T, logger klog.Logger, tree *nodeTree) {
				if err := tree.removeNode(logger, "a1"); err != nil {
					t.Fatal(err)
				}
				tree.addNode(logger, zoned("a1", "a"))
			},
			want: []string{"b1", "c1", "a1"},
		},
		{
			name:  "a node that changes zone moves to the end of the new zone",
			nodes: []*v1.Node{zoned("a1", "a"), zoned("a2", "a"), zoned("b1", "b")},
			then: func(t *testing.T, logger klog.Logger, tree *nodeTree) {
				if !tree.updateNode(logger, zoned("a1", "b")) {
					t.Error("updateNode did not report the move")
				}
				if tree.updateNode(logger, zoned("a2", "a")) {
					t.Error("updateNode reported a move without a zone change")
				}
			},
			want: []string{"a2", "b1", "a1"},
		},
		{
			name:  "adding a node twice changes nothing",
			nodes: []*v1.Node{zoned("a1", "a"), zoned("b1", "b")},
			then: func(t *testing.T, logger klog.Logger, tree *nodeTree) {
				if tree.addNode(logger, zoned("a1", "b")) {
					t.Error("addNode added a node it already had")
				}
				if err := tree.removeNode(logger, "zz"); err == nil {
					t.Error("removing an unknown node did not fail")
				}
			},
			want: []string{"a1", "b1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			tree := newNodeTree(logger, tt.nodes)
			if tt.then != nil {
				tt.then(t, logger, tree)
			}
			got := tree.list()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("list() (-want +got):\n%s", diff)
			}
			if again := tree.list(); !cmp.Equal(got, again) {
				t.Errorf("list() is not stable: %v, then %v", got, again)
			}
			if tree.numNodes() != len(tt.want) {
				t.Errorf("numNodes() = %d, want %d", tree.numNodes(), len(tt.want))
			}
		})
	}
}

// TestSnapshotNodeOrder checks that the snapshot lists nodes in tree order,
// keeps that order while only pods change, and follows the tree when a node
// is removed and re-added or changes zone between two updates.
func TestSnapshotNodeOrder(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	c := New(0)
	s := NewEmptySnapshot()
	order := func() []string {
		t.Helper()
		if err := c.UpdateSnapshot(logger, s); err != nil {
			t.Fatal(err)
		}
		list, _ := s.List()
		return names(list)
	}
	check := func(step string, want []string) {
		t.Helper()
		if diff := cmp.Diff(want, order()); diff != "" {
			t.Errorf("%s: snapshot order (-want +got):\n%s", step, diff)
		}
	}

	for _, n := range []*v1.Node{zoned("a1", "a"), zoned("a2", "a"), zoned("b1", "b"), zoned("b2", "b"),
		zoned("c1", "c")} {
		c.AddNode(logger, n)
	}
	check("initial", []string{"a1", "b1", "c1", "a2", "b2"})

	runOps(t, c, logger, []podOp{addOp(makePod("p").NodeName("b2").Obj())})
	check("a pod change keeps the order", []string{"a1", "b1", "c1", "a2", "b2"})

	if err := c.RemoveNode(logger, zoned("a1", "a")); err != nil {
		t.Fatal(err)
	}
	c.AddNode(logger, zoned("a1", "a"))
	check("a1 removed and re-added between updates", []string{"a2", "b1", "c1", "a1", "b2"})

	c.UpdateNode(logger, zoned("b1", "b"), zoned("b1", "c"))
	check("b1 moved to zone c", []string{"a2", "b2", "c1", "a1", "b1"})
}
