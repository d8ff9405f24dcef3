// This file helps tests check what a plugin registers with the queue.

package plugintesting

import (
	"context"
	"testing"

	"github.com/minisched/minisched/minisched/framework"
)

// HintedEvents returns the events pl registers, in order, and fails the test
// for any registered without a queueing hint.
func HintedEvents(t testing.TB, pl framework.EnqueueExtensions) []framework.ClusterEvent {
	t.Helper()
	evs, err := pl.EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []framework.ClusterEvent
	for _, e := range evs {
		if e.QueueingHintFn == nil {
			t.Errorf("event %v has no hint", e.Event)
		}
		got = append(got, e.Event)
	}
	return got
}
