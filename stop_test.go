package main

// The minisched binary stopped with SIGTERM in the middle of a backlog, and
// started again: the first must let its bindings finish, give up its lease
// and exit 0; the second must schedule what is left. Nothing may be lost,
// bound twice or overcommitted.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/stretchr/testify/require"

	"github.com/minisched/minisched/scenario"
)

func TestGracefulStopAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts an apiserver")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "minisched")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run(), "building minisched")

	env, err := scenario.StartEnvironment()
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, env.Kubeconfig, 0o600))
	// A slow client (20 requests a second) keeps the backlog going long
	// enough to stop the scheduler in the middle of it.
	config := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  qps: 20
  burst: 20
leaderElection:
  leaderElect: true
  resourceNamespace: default
  resourceName: graceful
profiles:
- schedulerName: graceful
`), 0o600))

	ctx := context.Background()
	client, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	e := &scenario.Env{Client: client, Namespace: "graceful", SchedulerName: "graceful"}
	_, err = client.CoreV1().Namespaces().Create(ctx,
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.Namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	const nodes, podsPerNode = 10, 20
	for i := range nodes {
		require.NoError(t, e.CreateNodes(ctx, scenario.MakeNode(fmt.Sprintf("graceful-%d", i)).
			Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "2", v1.ResourcePods: "110"}).Obj()))
	}
	// 100m each: the pods fill every node's 2 CPUs exactly.
	for i := range nodes * podsPerNode {
		require.NoError(t, e.CreatePods(ctx, scenario.MakePod(fmt.Sprintf("p-%03d", i)).
			Req(map[v1.ResourceName]string{v1.ResourceCPU: "100m"}).Obj()))
	}
	bound := func() (int, error) {
		list, err := client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		n := 0
		for _, p := range list.Items {
			if p.Spec.NodeName != "" {
				n++
			}
		}
		return n, nil
	}
	start := func(name string) *exec.Cmd {
		cmd := exec.Command(bin, "run", "--kubeconfig", kubeconfig, "--config", config,
			"--metrics-bind-address", "0", "-v", "2")
		logFile, err := os.Create(filepath.Join(dir, name+".log"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = logFile.Close() })
		cmd.Stdout, cmd.Stderr = logFile, logFile
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return cmd
	}
	// stop sends SIGTERM and expects exit status 0 within the binding grace
	// period and a little more.
	stop := func(cmd *exec.Cmd, name string) {
		t.Helper()
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				log, _ := os.ReadFile(filepath.Join(dir, name+".log"))
				t.Fatalf("%s exited with %v after SIGTERM, want 0; its log:\n%s", name, err, log)
			}
			require.NoError(t, err)
		case <-time.After(45 * time.Second):
			t.Fatalf("%s did not exit within 45 s of SIGTERM", name)
		}
	}

	first := start("first")
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) { n, err := bound(); return n >= 30, err }))
	stop(first, "first")
	after, err := bound()
	require.NoError(t, err)
	if after == nodes*podsPerNode {
		t.Fatalf("the backlog was done before SIGTERM; slow the client down")
	}
	t.Logf("%d of %d pods were bound when the first scheduler stopped", after, nodes*podsPerNode)
	lease, err := client.CoordinationV1().Leases("default").Get(ctx, "graceful", metav1.GetOptions{})
	require.NoError(t, err)
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("lease still held by %q after a graceful stop, want it released", *h)
	}

	second := start("second")
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true,
		func(context.Context) (bool, error) { n, err := bound(); return n == nodes*podsPerNode, err }),
		"the restarted scheduler did not bind the rest")
	stop(second, "second")

	list, err := client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	milli := map[string]int64{}
	for _, p := range list.Items {
		milli[p.Spec.NodeName] += p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
	}
	for node, m := range milli {
		if m > 2000 {
			t.Errorf("node %s: %dm CPU requested by its pods, allocatable 2000m", node, m)
		}
	}
}
