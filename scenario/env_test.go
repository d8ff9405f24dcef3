package scenario

import (
	"testing"
	"time"

	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/web"
)

// TestWaitLimit checks that a story's waits for the scheduler are patient
// exactly when a person steps the scheduler (start --step).
func TestWaitLimit(t *testing.T) {
	stepping := web.New()
	stepping.EnableStepping()
	tests := []struct {
		name string
		view *web.View
		want time.Duration
	}{
		{name: "no live view", want: 5 * time.Second},
		{name: "a live view that does not step", view: web.New(), want: 5 * time.Second},
		{name: "a live view that steps", view: stepping, want: patientWait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runner{View: tt.view}
			env := r.env(Scenario{Name: "s"}, nil, scheduler.DefaultConfig(), nil, "")
			if got := env.WaitLimit(5 * time.Second); got != tt.want {
				t.Errorf("WaitLimit(5s) = %v, want %v", got, tt.want)
			}
		})
	}
}
