package minisched

import (
	"context"
	"testing"

	toolscache "k8s.io/client-go/tools/cache"
)

// TestRunStoppedBeforeSync: a stop asked for while the informers are still
// listing is a clean stop, like any other. Run returns nil without
// scheduling; it used to report that the caches did not sync, which made a
// story that ends at once fail on its own scheduler's stop.
func TestRunStoppedBeforeSync(t *testing.T) {
	never := toolscache.InformerSynced(func() bool { return false })
	tests := []struct {
		name   string
		synced []toolscache.InformerSynced
	}{
		{name: "an informer that never syncs", synced: []toolscache.InformerSynced{never}},
		{name: "one synced, one not", synced: []toolscache.InformerSynced{func() bool { return true }, never}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestScheduler()
			s.informersSynced = tt.synced
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			if err := s.Run(ctx); err != nil {
				t.Errorf("Run stopped before its informers synced = %v, want nil", err)
			}
		})
	}
}
