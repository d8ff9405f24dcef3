package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestRunMixedChurn checks the churn's rhythm, as upstream's recreate mode
// with number 1 has it: every tick, each kind of object is created if none
// exists and the one that exists deleted otherwise; the run ends with its
// context, without an error.
func TestRunMixedChurn(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"a tick creates one of each", []string{"create a-0", "create b-0"}},
		{"the next deletes them", []string{"create a-0", "create b-0", "delete a-0", "delete b-0"}},
		{"and the next creates new ones",
			[]string{"create a-0", "create b-0", "delete a-0", "delete b-0", "create a-2", "create b-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			var calls []string
			// record notes a call, and ends the run once the calls wanted
			// were made.
			record := func(call string) {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, call)
				if len(calls) == len(tc.want) {
					cancel()
				}
			}
			object := func(kind string) churnObject {
				return churnObject{kind: kind,
					make: func(_ context.Context, seq int) (string, error) {
						name := fmt.Sprintf("%s-%d", kind, seq)
						record("create " + name)
						return name, nil
					},
					remove: func(_ context.Context, name string) error {
						record("delete " + name)
						return nil
					}}
			}
			if err := runMixedChurn(ctx, []churnObject{object("a"), object("b")}, time.Millisecond); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(calls, tc.want) {
				t.Errorf("calls = %v, want %v", calls, tc.want)
			}
		})
	}
}
