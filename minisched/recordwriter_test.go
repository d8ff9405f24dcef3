package minisched

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"

	"github.com/minisched/minisched/minisched/attempt"
)

// TestRecordWriterKeepsThePreemption checks what the writer patches onto a
// pod: the latest record always, and the last preempting one as well, even
// when a later attempt (the one that binds the pod) replaced it in the
// queue before it was written.
func TestRecordWriterKeepsThePreemption(t *testing.T) {
	preempting := &attempt.Record{Version: attempt.Version, Attempt: 1, Result: attempt.Unschedulable, NominatedNode: "n2",
		Victims: []string{"ns/low"}}
	scheduled := &attempt.Record{Version: attempt.Version, Attempt: 2, Result: attempt.Scheduled, Node: "n2"}
	failed := &attempt.Record{Version: attempt.Version, Attempt: 1, Result: attempt.Unschedulable}
	tests := []struct {
		name           string
		records        []*attempt.Record
		wantAttempt    int
		wantPreemption int // 0: no attempt.PreemptionAnnotation
	}{
		{name: "a failure", records: []*attempt.Record{failed}, wantAttempt: 1},
		{name: "a preemption", records: []*attempt.Record{preempting}, wantAttempt: 1, wantPreemption: 1},
		{name: "a preemption, then the bind, both queued", records: []*attempt.Record{preempting, scheduled},
			wantAttempt: 2, wantPreemption: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"}}
			client := fake.NewClientset(pod)
			w := newRecordWriter(client)
			for _, r := range tt.records {
				w.add(pod, r)
			}
			w.queue.ShutDownWithDrain()
			for w.writeNext(ctx) {
			}
			got, err := client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			check := func(key string, want int) {
				t.Helper()
				value, ok := got.Annotations[key]
				if want == 0 {
					if ok {
						t.Errorf("%s is set: %s", key, value)
					}
					return
				}
				rec, err := attempt.Decode(value)
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				if rec.Attempt != want {
					t.Errorf("%s holds attempt %d, want %d", key, rec.Attempt, want)
				}
			}
			check(attempt.Annotation, tt.wantAttempt)
			check(attempt.PreemptionAnnotation, tt.wantPreemption)
		})
	}
}
