package testenv

import (
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestKnownControllers holds KnownControllers to the list
// kube-controller-manager's own --help prints.
func TestKnownControllers(t *testing.T) {
	bin, err := binary("KUBE_CONTROLLER_MANAGER", "kube-controller-manager", "kube-controller-manager", AssetsDir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("kube-controller-manager --help: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`All controllers: ([a-z, -]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("kube-controller-manager --help lists no controllers:\n%s", out)
	}
	got := strings.Split(strings.TrimSpace(string(m[1])), ", ")
	want := slices.Clone(KnownControllers)
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("KnownControllers and kube-controller-manager --help differ (-ours +its):\n%s", diff)
	}
}

func TestCheckControllers(t *testing.T) {
	tests := []struct {
		name        string
		controllers []string
		wantErr     string
	}{
		{name: "none"},
		{name: "chapter 18's", controllers: []string{NodeLifecycleController, TaintEvictionController,
			ReplicaSetController, DisruptionController}},
		{name: "unknown", controllers: []string{"replicaset"}, wantErr: `unknown controller "replicaset"`},
		{name: "twice", controllers: []string{DisruptionController, DisruptionController},
			wantErr: `controller "disruption-controller" is named twice`},
		{name: "taint eviction alone", controllers: []string{TaintEvictionController},
			wantErr: "taint-eviction-controller needs node-lifecycle-controller beside it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckControllers(tt.controllers)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckControllers: %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckControllers: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestNodeMonitorFlags(t *testing.T) {
	m := NodeMonitor{Period: time.Second, GracePeriod: 5 * time.Second, StartupGracePeriod: time.Minute}
	want := []string{"--node-monitor-period=1s", "--node-monitor-grace-period=5s",
		"--node-startup-grace-period=1m0s"}
	if diff := cmp.Diff(want, m.Flags()); diff != "" {
		t.Errorf("Flags (-want +got):\n%s", diff)
	}
}
