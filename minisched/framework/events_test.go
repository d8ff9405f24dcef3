package framework

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minisched/minisched/minisched/attempt"
)

func TestPodUpdateActionsIgnoreTheAttemptRecord(t *testing.T) {
	pod := func(annotations map[string]string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: annotations}}
	}
	tests := []struct {
		name     string
		old, new *v1.Pod
		want     ActionType
	}{
		{name: "the record written: no event", old: pod(nil),
			new: pod(map[string]string{attempt.Annotation: `{"v":1}`}), want: 0},
		{name: "the record rewritten: no event", old: pod(map[string]string{attempt.Annotation: `{"v":1}`}),
			new: pod(map[string]string{attempt.Annotation: `{"v":1,"attempt":2}`}), want: 0},
		{name: "both records written at once: no event", old: pod(nil),
			new: pod(map[string]string{attempt.Annotation: `{"v":1}`, attempt.PreemptionAnnotation: `{"v":1}`}), want: 0},
		{name: "another annotation beside it: an update", old: pod(map[string]string{attempt.Annotation: "a"}),
			new: pod(map[string]string{attempt.Annotation: "b", "team": "x"}), want: UpdatePodOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodUpdateActions(tt.old, tt.new); got != tt.want {
				t.Errorf("PodUpdateActions = %v, want %v", got, tt.want)
			}
		})
	}
}
