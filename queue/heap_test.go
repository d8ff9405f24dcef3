// This file tests the keyed heap on its own, with plain integers.

package queue

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// item is a heap element: a key and a value ordered ascending.
type item struct {
	key   string
	value int
}

func newIntHeap() *keyedHeap[item] {
	return newKeyedHeap(func(i item) string { return i.key }, func(a, b item) bool { return a.value < b.value })
}

func TestKeyedHeap(t *testing.T) {
	tests := []struct {
		name string
		ops  func(h *keyedHeap[item])
		// want is the keys in pop order.
		want []string
	}{
		{
			name: "pops in order",
			ops: func(h *keyedHeap[item]) {
				for i, v := range []int{5, 1, 4, 2, 3} {
					h.AddOrUpdate(item{key: "k" + strconv.Itoa(i), value: v})
				}
			},
			want: []string{"k1", "k3", "k4", "k2", "k0"},
		},
		{
			name: "update moves an item up and down",
			ops: func(h *keyedHeap[item]) {
				h.AddOrUpdate(item{"a", 1})
				h.AddOrUpdate(item{"b", 2})
				h.AddOrUpdate(item{"c", 3})
				h.AddOrUpdate(item{"c", 0}) // up
				h.AddOrUpdate(item{"a", 9}) // down
			},
			want: []string{"c", "b", "a"},
		},
		{
			name: "delete from the middle, the top and nowhere",
			ops: func(h *keyedHeap[item]) {
				for i := range 6 {
					h.AddOrUpdate(item{key: "k" + strconv.Itoa(i), value: i})
				}
				h.Delete("k3")
				h.Delete("k0")
				h.Delete("absent")
			},
			want: []string{"k1", "k2", "k4", "k5"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newIntHeap()
			tt.ops(h)
			if got := len(h.List()); got != h.Len() {
				t.Errorf("List has %d items, Len says %d", got, h.Len())
			}
			var got []string
			for h.Len() > 0 {
				top, _ := h.Peek()
				it, _ := h.Pop()
				if top != it {
					t.Errorf("Peek %v, Pop %v", top, it)
				}
				if h.Has(it.key) {
					t.Errorf("%s still indexed after Pop", it.key)
				}
				got = append(got, it.key)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("pop order (-want +got):\n%s", diff)
			}
			if _, ok := h.Pop(); ok {
				t.Error("Pop on an empty heap returned an item")
			}
		})
	}
}

func TestKeyedHeapGetAndFix(t *testing.T) {
	h := newKeyedHeap(func(p *item) string { return p.key }, func(a, b *item) bool { return a.value < b.value })
	a, b := &item{"a", 1}, &item{"b", 2}
	h.AddOrUpdate(a)
	h.AddOrUpdate(b)
	if got, ok := h.Get("b"); !ok || got != b {
		t.Fatalf("Get(b) = %v, %v", got, ok)
	}
	b.value = 0 // changed in place, as the queue does with pod updates
	h.Fix("b")
	if top, _ := h.Peek(); top != b {
		t.Errorf("after Fix, top is %v, want b", top)
	}
	if _, ok := h.Get("absent"); ok {
		t.Error("Get(absent) found something")
	}
}
