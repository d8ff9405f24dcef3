package scheduler_test

// Where the clients' configuration comes from: a kubeconfig named by the
// flag or the configuration, else the pod's service account.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minisched/minisched/scheduler"
)

// serviceAccountToken is where a pod finds its service account's token.
const serviceAccountToken = "/var/run/secrets/kubernetes.io/serviceaccount/token"

func TestRestConfigFromKubeconfig(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://from-the-file:6443"}
users:
- name: u
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		flag       string
		configured string
		inCluster  bool
		wantHost   string
		wantErr    string
	}{
		{name: "the flag", flag: kubeconfig, wantHost: "https://from-the-file:6443"},
		{name: "clientConnection.kubeconfig", configured: kubeconfig, wantHost: "https://from-the-file:6443"},
		{name: "the flag wins", flag: kubeconfig, configured: "/nonexistent", wantHost: "https://from-the-file:6443"},
		{name: "a file that does not exist", flag: "/nonexistent/kubeconfig",
			wantErr: `loading kubeconfig "/nonexistent/kubeconfig"`},
		{name: "neither, in a pod: the service account", inCluster: true, wantHost: "https://10.0.0.1:443"},
		{name: "neither, outside a cluster",
			wantErr: "no kubeconfig (--kubeconfig or clientConnection.kubeconfig) and not in a cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host, port := "", ""
			if tt.inCluster {
				host, port = "10.0.0.1", "443"
			}
			t.Setenv("KUBERNETES_SERVICE_HOST", host)
			t.Setenv("KUBERNETES_SERVICE_PORT", port)
			cfg := scheduler.DefaultConfig()
			cfg.ClientConnection.Kubeconfig = tt.configured
			rc, err := scheduler.RestConfigFromKubeconfig(tt.flag, cfg)
			if _, statErr := os.Stat(serviceAccountToken); tt.inCluster && statErr != nil {
				// Outside a pod there is no token to read: the error shows
				// the in-cluster path was taken.
				tt.wantErr = serviceAccountToken
			}
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case rc.Host != tt.wantHost:
				t.Errorf("host = %q, want %q", rc.Host, tt.wantHost)
			}
		})
	}
}
