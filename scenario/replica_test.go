package scenario

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestReplicaWaitForBound: a replica records a pod after its bind call
// returns, a moment after the apiserver shows the pod bound; a story that
// checks who bound it must wait for the record, not read it at once (ch14
// failed that way on CI: "replica-a did not bind pod2").
func TestReplicaWaitForBound(t *testing.T) {
	tests := []struct {
		name string
		// before are recorded before the wait, later once it has begun.
		before, later []string
		pods          []string
		// wantMissing, if set, is the error's list of pods not bound.
		wantMissing string
	}{
		{name: "recorded already", before: []string{"pod0", "pod1"}, pods: []string{"pod0", "pod1"}},
		{name: "recorded while waiting", before: []string{"pod0"}, later: []string{"pod1", "pod2"},
			pods: []string{"pod0", "pod1", "pod2"}},
		{name: "never recorded", before: []string{"pod0"}, pods: []string{"pod0", "pod1", "pod2"},
			wantMissing: "replica-a did not bind pod1, pod2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Replica{Name: "replica-a"}
			for _, p := range tt.before {
				r.record(p)
			}
			// The missing case gives up at the test's deadline, well
			// before DefaultWait.
			ctx, cancel := context.WithTimeout(t.Context(), 10*PollInterval)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- r.WaitForBound(ctx, tt.pods) }()
			for _, p := range tt.later {
				r.record(p)
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatal("WaitForBound did not return within a minute")
			}
			switch {
			case tt.wantMissing == "" && err != nil:
				t.Errorf("WaitForBound = %v, want nil", err)
			case tt.wantMissing != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantMissing)):
				t.Errorf("WaitForBound = %v, want an error starting %q", err, tt.wantMissing)
			}
		})
	}
}
