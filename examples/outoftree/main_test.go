// TestBinary builds this example with `go build`, runs it against a real
// apiserver (envtest) with a configuration that enables RequireNodeLabel,
// and checks where pods go and what FailedScheduling says.
package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/testenv"
)

const config = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: labelled-nodes
  plugins:
    multiPoint:
      enabled:
      - name: RequireNodeLabel
  pluginConfig:
  - name: RequireNodeLabel
    args:
      label: example.com/pool
`

func TestBinary(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "outoftree")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env, err := testenv.StartEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kubeconfig, cfgPath := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(kubeconfig, env.Kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, "run", "--kubeconfig", kubeconfig, "--config", cfgPath,
		"--metrics-bind-address", "0")
	cmd.Stderr = &testWriter{t: t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	client := kubernetes.NewForConfigOrDie(env.Config)
	for _, n := range []*v1.Node{
		builders.MakeNode().Name("plain").Label(v1.LabelHostname, "plain").Obj(),
		builders.MakeNode().Name("pooled").Label(v1.LabelHostname, "pooled").Label("example.com/pool", "a").Obj(),
	} {
		created, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status = n.Status
		if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name, pod, node, message string
	}{
		{name: "lands on the labelled node", pod: "free", node: "pooled"},
		{name: "waits when its selector allows only the unlabelled node", pod: "pinned", message: "0/2 nodes are available: " +
			"1 node(s) didn't have label example.com/pool, 1 node(s) didn't match Pod's node affinity/selector."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := builders.MakePod().Name(tt.pod).SchedulerName("labelled-nodes").Obj()
			pod.Spec.Containers = []v1.Container{{Name: "c0", Image: builders.PauseImage}}
			if tt.message != "" {
				pod.Spec.NodeSelector = map[string]string{v1.LabelHostname: "plain"}
			}
			if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			var got *v1.Pod
			err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true,
				func(ctx context.Context) (bool, error) {
					got, err = client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
					if err != nil {
						return false, err
					}
					return got.Spec.NodeName != "" || scheduledFalse(got) != "", nil
				})
			if err != nil {
				t.Fatalf("pod was neither bound nor found unschedulable: %v", err)
			}
			if got.Spec.NodeName != tt.node {
				t.Errorf("bound to %q, want %q", got.Spec.NodeName, tt.node)
			}
			if msg := scheduledFalse(got); !strings.HasPrefix(msg, tt.message) || (tt.message == "") != (msg == "") {
				t.Errorf("PodScheduled message %q, want it to start with %q", msg, tt.message)
			}
		})
	}
}

// scheduledFalse is the message of a PodScheduled=False condition, or "".
func scheduledFalse(p *v1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
			return c.Message
		}
	}
	return ""
}

// testWriter sends the scheduler's log to the test's.
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
