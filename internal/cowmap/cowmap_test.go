package cowmap

import (
	"fmt"
	"sync"
	"testing"
)

func TestMap(t *testing.T) {
	tests := []struct {
		name    string
		do      func(*Map[string, int])
		want    map[string]int
		missing string
	}{
		{name: "zero value is empty", do: func(*Map[string, int]) {}, want: map[string]int{}, missing: "a"},
		{name: "store and replace", do: func(m *Map[string, int]) { m.Store("a", 1); m.Store("a", 2); m.Store("b", 3) },
			want: map[string]int{"a": 2, "b": 3}, missing: "c"},
		{name: "delete", do: func(m *Map[string, int]) { m.Store("a", 1); m.Store("b", 2); m.Delete("a"); m.Delete("x") },
			want: map[string]int{"b": 2}, missing: "a"},
		{name: "concurrent writers lose nothing", do: func(m *Map[string, int]) {
			var wg sync.WaitGroup
			for i := range 50 {
				wg.Go(func() {
					m.Store(fmt.Sprint("k", i), i)
					m.Load(fmt.Sprint("k", i))
				})
			}
			wg.Wait()
		}, want: func() map[string]int {
			out := map[string]int{}
			for i := range 50 {
				out[fmt.Sprint("k", i)] = i
			}
			return out
		}(), missing: "k50"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m Map[string, int]
			tt.do(&m)
			got := map[string]int{}
			m.Range(func(k string, v int) bool { got[k] = v; return true })
			if len(got) != len(tt.want) || m.Len() != len(tt.want) {
				t.Fatalf("entries %v (Len %d), want %v", got, m.Len(), tt.want)
			}
			for k, v := range tt.want {
				if g, ok := m.Load(k); !ok || g != v || got[k] != v {
					t.Errorf("Load(%q) = %v, %v; Range saw %v; want %v", k, g, ok, got[k], v)
				}
			}
			if _, ok := m.Load(tt.missing); ok {
				t.Errorf("Load(%q) found an entry", tt.missing)
			}
		})
	}
}

func TestRangeStops(t *testing.T) {
	var m Map[int, int]
	for i := range 5 {
		m.Store(i, i)
	}
	calls := 0
	m.Range(func(int, int) bool { calls++; return false })
	if calls != 1 {
		t.Errorf("Range called f %d times after it returned false, want 1", calls)
	}
}
