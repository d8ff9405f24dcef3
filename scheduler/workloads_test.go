package scheduler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/stretchr/testify/require"

	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/testenv"
)

// TestWorkloadAPIMissing: with GenericWorkload on, against an apiserver
// that does not serve PodGroups, minisched says which kube-apiserver flags
// are missing (kube-scheduler schedules nothing and says nothing) and still
// schedules a pod that is in no group. Against one that serves them, it
// says nothing of the kind, and its PodGroup informer syncs.
func TestWorkloadAPIMissing(t *testing.T) {
	tests := []struct {
		name   string
		served bool
	}{
		{name: "served", served: true},
		{name: "not served"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := testEnv.Config
			if !tt.served {
				env, err := testenv.StartEnvironmentWith(testenv.Options{WithoutWorkloads: true})
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, env.Stop()) })
				rc = env.Config
			}
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
			ctx := klog.NewContext(t.Context(), logger)
			const ns = "workload-api"
			client := kubernetes.NewForConfigOrDie(rc)
			env := runWithGates(ctx, t, rc, ns, features.Gates{GenericWorkload: true})
			if err := env.CreateNodes(ctx, scenario.MakeNode(ns+"-node").Obj()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), ns+"-node", metav1.DeleteOptions{}) })
			if err := env.CreatePods(ctx, scenario.MakePod("alone").Obj()); err != nil {
				t.Fatal(err)
			}
			if _, err := env.WaitForPodBound(ctx, "alone", scenario.DefaultWait); err != nil {
				t.Fatalf("a pod in no group: %v", err)
			}
			said := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
			told := strings.Contains(said, "The apiserver does not serve PodGroups") &&
				strings.Contains(said, scheduler.WorkloadAPIServerFlags)
			if told == tt.served {
				t.Errorf("said the flags are missing: %t, want %t; the log:\n%s", told, !tt.served, said)
			}
		})
	}
}

// runWithGates runs the default profile, named ns, with gates against rc,
// in a new namespace ns, until the test ends.
func runWithGates(ctx context.Context, t *testing.T, rc *rest.Config, ns string, gates features.Gates) *scenario.Env {
	t.Helper()
	client := kubernetes.NewForConfigOrDie(rc)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	cfg, err := scheduler.DecodeConfig([]byte(electionConfig(ns, "unused", false)))
	require.NoError(t, err)
	svc, err := scheduler.New(ctx, cfg, rc, scheduler.WithFeatureGates(gates))
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v, want nil on a clean stop", err)
			}
		case <-time.After(time.Minute):
			t.Errorf("Run did not return within a minute of being stopped")
		}
	})
	return &scenario.Env{Client: client, Namespace: ns, SchedulerName: ns, Attempts: scenario.NewAttemptLog()}
}
