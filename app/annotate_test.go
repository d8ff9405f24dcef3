// Tests for the annotate subcommand's command line: what it requires and
// how it names what is wrong. Its controller is tested in package annotator.
package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAnnotateFlags(t *testing.T) {
	policy := "../plugins/dynamic/testdata/crane-policy.yaml"
	kubeconfig := filepath.Join(t.TempDir(), "missing-kubeconfig")
	badPolicy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(badPolicy, []byte("apiVersion: v1\nkind: DynamicSchedulerPolicy\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "no policy", args: []string{"--prometheus", "http://localhost:9090"}, wantErr: "--policy is required"},
		{name: "no prometheus", args: []string{"--policy", policy}, wantErr: "--prometheus is required"},
		{name: "missing policy file", args: []string{"--policy", "nope.yaml", "--prometheus", "http://p:9090"},
			wantErr: "--policy: reading the DynamicSchedulerPolicy: open nope.yaml"},
		{name: "bad policy", args: []string{"--policy", badPolicy, "--prometheus", "http://p:9090"},
			wantErr: "policy.yaml: apiVersion: Unsupported value: \"v1\""},
		{name: "bad prometheus address", args: []string{"--policy", policy, "--prometheus", "://x"},
			wantErr: "--prometheus: prometheus address \"://x\""},
		{name: "missing kubeconfig", args: []string{"--policy", policy, "--prometheus", "http://p:9090",
			"--kubeconfig", kubeconfig}, wantErr: "--kubeconfig: "},
		{name: "unknown flag", args: []string{"--policy-config-path", policy}, wantErr: "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := NewCommand().Run(context.Background(), append([]string{"annotate"}, tt.args...))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
