package scenario

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"
)

// testEnv is one apiserver shared by every scenario test.
var testEnv *Environment

func TestMain(m *testing.M) {
	os.Exit(RunWithEnvironment(m.Run, &testEnv, nil))
}

// TestScenarios runs every scenario as a test: each chapter's story is also
// its check.
func TestScenarios(t *testing.T) {
	for _, s := range All() {
		t.Run(s.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var out bytes.Buffer
			r := &Runner{RestConfig: testEnv.Config, Out: &out, Environment: testEnv}
			err := r.Run(ctx, s)
			t.Log("\n" + out.String())
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	tests := []struct {
		name    string
		names   []string
		want    int
		wantErr bool
	}{
		{name: "all by default", names: nil, want: len(All())},
		{name: "one by name", names: []string{"ch6-assume"}, want: 1},
		{name: "unknown lists the known ones", names: []string{"nope"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(tt.names)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Select(%v) error = %v, wantErr %v", tt.names, err, tt.wantErr)
			}
			if err != nil && !bytes.Contains([]byte(err.Error()), []byte("ch1-random")) {
				t.Errorf("error %q does not list the known scenarios", err)
			}
			if len(got) != tt.want {
				t.Errorf("got %d scenarios, want %d", len(got), tt.want)
			}
		})
	}
}
