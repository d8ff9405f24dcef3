package main

// The minisched binary stopped in the middle of a backlog: with SIGTERM it
// must let its bindings finish, give up its Lease and exit 0, and a restart
// schedules what is left; killed (SIGKILL) while it leads replicas, a
// standby must take over once the Lease expires. Either way nothing may be
// lost, bound twice or overcommitted.

import (
	"bytes"
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
	"github.com/minisched/minisched/testenv"
)

// backlogNodes and backlogPodsPerNode shape the backlog: pods of 100m that
// fill every node's 2 CPUs exactly, so a pod counted twice or a binding
// lost but not forgotten leaves some pod without room.
const backlogNodes, backlogPodsPerNode = 10, 20

// processTest runs minisched binaries against an apiserver of its own.
type processTest struct {
	t          *testing.T
	dir        string
	bin        string
	kubeconfig string
	config     string
	client     kubernetes.Interface
	namespace  string
}

// newProcessTest builds the binary, starts an apiserver, and creates the
// backlog's nodes and pods. leaderElection is the configuration's block of
// that name. The scheduler's client makes 20 requests a second: slow
// enough to stop it in the middle of the backlog.
func newProcessTest(t *testing.T, leaderElection string) *processTest {
	if testing.Short() {
		t.Skip("builds the binary and starts an apiserver")
	}
	p := &processTest{t: t, dir: t.TempDir(), namespace: "backlog"}
	p.bin = filepath.Join(p.dir, "minisched")
	build := exec.Command("go", "build", "-o", p.bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run(), "building minisched")

	env, err := testenv.StartEnvironment()
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	p.kubeconfig = filepath.Join(p.dir, "kubeconfig")
	require.NoError(t, os.WriteFile(p.kubeconfig, env.Kubeconfig, 0o600))
	p.config = filepath.Join(p.dir, "config.yaml")
	require.NoError(t, os.WriteFile(p.config, []byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  qps: 20
  burst: 20
leaderElection:
`+leaderElection+`
profiles:
- schedulerName: backlog
`), 0o600))

	ctx := context.Background()
	p.client, err = kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	e := &scenario.Env{Client: p.client, Namespace: p.namespace, SchedulerName: "backlog"}
	_, err = p.client.CoreV1().Namespaces().Create(ctx,
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for i := range backlogNodes {
		require.NoError(t, e.CreateNodes(ctx, scenario.MakeNode(fmt.Sprintf("node-%d", i)).
			Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "2", v1.ResourcePods: "110"}).Obj()))
	}
	for i := range backlogNodes * backlogPodsPerNode {
		require.NoError(t, e.CreatePods(ctx, scenario.MakePod(fmt.Sprintf("p-%03d", i)).
			Req(map[v1.ResourceName]string{v1.ResourceCPU: "100m"}).Obj()))
	}
	return p
}

// start runs `minisched run` with its output in <name>.log.
func (p *processTest) start(name string) *exec.Cmd {
	cmd := exec.Command(p.bin, "run", "--kubeconfig", p.kubeconfig, "--config", p.config,
		"--metrics-bind-address", "0", "-v", "2")
	logFile, err := os.Create(p.logPath(name))
	require.NoError(p.t, err)
	p.t.Cleanup(func() { _ = logFile.Close() })
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(p.t, cmd.Start())
	p.t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd
}

func (p *processTest) logPath(name string) string { return filepath.Join(p.dir, name+".log") }

// terminate sends SIGTERM and expects exit status 0 within the binding
// grace period and a little more.
func (p *processTest) terminate(cmd *exec.Cmd, name string) {
	p.t.Helper()
	require.NoError(p.t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			log, _ := os.ReadFile(p.logPath(name))
			p.t.Fatalf("%s exited with %v after SIGTERM, want 0; its log:\n%s", name, err, log)
		}
		require.NoError(p.t, err)
	case <-time.After(45 * time.Second):
		p.t.Fatalf("%s did not exit within 45 s of SIGTERM", name)
	}
}

// bound counts the backlog's pods bound to a node.
func (p *processTest) bound() (int, error) {
	list, err := p.client.CoreV1().Pods(p.namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, pod := range list.Items {
		if pod.Spec.NodeName != "" {
			n++
		}
	}
	return n, nil
}

// waitBound polls until at least n pods are bound.
func (p *processTest) waitBound(n int, timeout time.Duration) {
	p.t.Helper()
	require.NoError(p.t, wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) { got, err := p.bound(); return got >= n, err }),
		"fewer than %d pods bound within %v", n, timeout)
}

// midBacklog reports how many pods are bound, failing if all are: the
// scheduler was to be stopped before the end.
func (p *processTest) midBacklog(what string) {
	p.t.Helper()
	n, err := p.bound()
	require.NoError(p.t, err)
	if n == backlogNodes*backlogPodsPerNode {
		p.t.Fatalf("the backlog was done before %s; slow the client down", what)
	}
	p.t.Logf("%d of %d pods were bound at %s", n, backlogNodes*backlogPodsPerNode, what)
}

// expectAllBoundNotOvercommitted checks the end state: every pod bound and
// no node's pods asking for more than its 2 CPUs. (The apiserver refuses to
// bind a pod twice; a pod counted twice in a cache shows as one left out.)
func (p *processTest) expectAllBoundNotOvercommitted() {
	p.t.Helper()
	p.waitBound(backlogNodes*backlogPodsPerNode, 2*time.Minute)
	list, err := p.client.CoreV1().Pods(p.namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(p.t, err)
	milli := map[string]int64{}
	for _, pod := range list.Items {
		milli[pod.Spec.NodeName] += pod.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
	}
	for node, m := range milli {
		if m > 2000 {
			p.t.Errorf("node %s: %dm CPU requested by its pods, allocatable 2000m", node, m)
		}
	}
}

func TestGracefulStopAndRestart(t *testing.T) {
	p := newProcessTest(t, `  leaderElect: true
  resourceNamespace: default
  resourceName: graceful`)
	first := p.start("first")
	p.waitBound(30, time.Minute)
	p.terminate(first, "first")
	p.midBacklog("SIGTERM")
	lease, err := p.client.CoordinationV1().Leases("default").Get(context.Background(), "graceful", metav1.GetOptions{})
	require.NoError(t, err)
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("Lease still held by %q after a graceful stop, want it released", *h)
	}
	second := p.start("second")
	p.expectAllBoundNotOvercommitted()
	p.terminate(second, "second")
}

// TestLeaderKilledMidBacklog runs three replicas and kills the leader
// (SIGKILL: no goodbye, the Lease stays held until it expires).
func TestLeaderKilledMidBacklog(t *testing.T) {
	p := newProcessTest(t, `  leaderElect: true
  resourceNamespace: default
  resourceName: replicas
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 500ms`)
	names := []string{"replica-0", "replica-1", "replica-2"}
	cmds := map[string]*exec.Cmd{}
	for _, name := range names {
		cmds[name] = p.start(name)
	}
	leads := func(name string) bool {
		log, _ := os.ReadFile(p.logPath(name))
		return bytes.Contains(log, []byte("Started leading"))
	}
	p.waitBound(30, time.Minute)
	var leader string
	for _, name := range names {
		if leads(name) {
			require.Empty(t, leader, "two replicas started leading")
			leader = name
		}
	}
	require.NotEmpty(t, leader, "pods were bound but no replica logged that it leads")
	require.NoError(t, cmds[leader].Process.Kill())
	_ = cmds[leader].Wait()
	p.midBacklog("the leader's death")

	p.expectAllBoundNotOvercommitted()
	successors := 0
	for _, name := range names {
		if name != leader && leads(name) {
			successors++
		}
	}
	if successors != 1 {
		t.Errorf("%d replicas took over from the killed leader, want 1", successors)
	}
	for _, name := range names {
		if name != leader {
			p.terminate(cmds[name], name)
		}
	}
}
