package scenario

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWriteSummary(t *testing.T) {
	results := []Result{
		{Name: "ch1-random", Chapter: 1, Duration: 1100 * time.Millisecond},
		{Name: "ch10-preemption-basic", Chapter: 10, Err: errors.New("pod p pending"), Duration: 12 * time.Second},
	}
	tests := []struct {
		name   string
		colour bool
		want   string
	}{
		{name: "plain", want: `scenario               chapter  result  time
ch1-random             1        PASS    1.1s
ch10-preemption-basic  10       FAIL    12.0s
2 scenarios: 1 passed, 1 failed (13s)
`},
		{name: "in colour", colour: true, want: "scenario               chapter  result  time\n" +
			"ch1-random             1        \x1b[32mPASS\x1b[0m    1.1s\n" +
			"ch10-preemption-basic  10       \x1b[31mFAIL\x1b[0m    12.0s\n" +
			"2 scenarios: 1 passed, 1 failed (13s)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			writeSummary(&b, results, tt.colour)
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProgress(t *testing.T) {
	s := Scenario{Name: "ch3-nodenumber", Chapter: 3, Description: "a Score plugin "}
	tests := []struct {
		i, n int
		want string
	}{
		{1, 1, "=== [1/1] ch3-nodenumber (chapter 3): a Score plugin"},
		{3, 27, "=== [ 3/27] ch3-nodenumber (chapter 3): a Score plugin"},
		{27, 27, "=== [27/27] ch3-nodenumber (chapter 3): a Score plugin"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := progress(tt.i, tt.n, s); got != tt.want {
				t.Errorf("progress(%d, %d) = %q, want %q", tt.i, tt.n, got, tt.want)
			}
		})
	}
}
