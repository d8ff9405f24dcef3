package explain_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/minisched/minisched/explain"
)

// TestPodEventsErrors checks the error explain gives when it cannot list
// a pod's events: from events.k8s.io, it falls back to core/v1, and only
// when that fails too does it give up, naming the fallback's error.
func TestPodEventsErrors(t *testing.T) {
	tests := []struct {
		name    string
		failing []string // the API groups whose events list fails ("" is core)
		wantErr string   // "" means no error
	}{
		{name: "events.k8s.io works"},
		{name: "events.k8s.io denied: core/v1 is read instead", failing: []string{"events.k8s.io"}},
		{name: "both denied: the error is core/v1's", failing: []string{"events.k8s.io", ""},
			wantErr: "listing the pod's events: core events denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u"}}
			client := fake.NewClientset(pod)
			for _, group := range tt.failing {
				msg := "core events denied"
				if group != "" {
					msg = group + " events denied"
				}
				client.PrependReactor("list", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
					if a.GetResource().Group != group {
						return false, nil, nil
					}
					return true, nil, errors.New(msg)
				})
			}
			var out strings.Builder
			err := explain.Pod(context.Background(), client, "shop", "web", &out, explain.Options{})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Pod: %v", err)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Fatalf("Pod: err = %v, want %q", err, tt.wantErr)
			case tt.wantErr == "" && !strings.Contains(out.String(), "has no minisched.io/last-attempt annotation"):
				t.Errorf("output lacks the events-based account:\n%s", out.String())
			}
		})
	}
}
