package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/testenv"
)

// TestExplainCommand runs `minisched explain POD -n NS --kubeconfig F`, the
// command the tutorial shows, as a reader would: against a fresh apiserver
// where minisched runs with attempt records on, on a pod that is pending
// behind a cordoned node and then on the same pod once it is bound.
func TestExplainCommand(t *testing.T) {
	env, err := testenv.StartEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.Kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	cfg := scheduler.DefaultConfig()
	cfg.LeaderElection.LeaderElect = ptr.To(false)
	svc, err := scheduler.New(ctx, cfg, env.Config, scheduler.WithAttemptRecords())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("the scheduler: %v", err)
		}
	})

	client, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	cluster := &scenario.Env{Client: client, Namespace: metav1.NamespaceDefault,
		SchedulerName: scheduler.DefaultSchedulerName}
	if err := cluster.CreateNodes(ctx, scenario.MakeNode("node0").Unschedulable(true).Obj()); err != nil {
		t.Fatal(err)
	}
	pod := scenario.MakePod("web").Obj()
	if err := cluster.CreatePods(ctx, pod); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		name   string
		before func() error
		result string // the record's result, awaited before explain runs
		want   []string
	}{
		{name: "pending", result: `"result":"Unschedulable"`,
			want: []string{"Pod default/web: Unschedulable", "node0  node(s) were unschedulable",
				"0/1 nodes are available: 1 node(s) were unschedulable."}},
		{name: "bound", result: `"result":"Scheduled"`,
			before: func() error { return cluster.SetUnschedulable(ctx, "node0", false) },
			want:   []string{"Pod default/web: Scheduled", "Selected: node0"}},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if step.before != nil {
				if err := step.before(); err != nil {
					t.Fatal(err)
				}
			}
			err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true,
				func(ctx context.Context) (bool, error) {
					p, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
					if err != nil {
						return false, err
					}
					return strings.Contains(p.Annotations[attempt.Annotation], step.result), nil
				})
			if err != nil {
				t.Fatalf("waiting for the attempt record %s: %v", step.result, err)
			}
			out := captureStdout(t, func() error {
				return NewCommand().Run(ctx, []string{"explain", "web", "-n", "default", "--kubeconfig", kubeconfig})
			})
			for _, w := range step.want {
				if !strings.Contains(out, w) {
					t.Errorf("explain's output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// captureStdout runs fn with os.Stdout going to a file, and returns what
// it wrote; fn's error fails the test.
func captureStdout(t *testing.T, fn func() error) string {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = f
	runErr := fn()
	os.Stdout = saved
	if runErr != nil {
		t.Fatal(runErr)
	}
	out, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
