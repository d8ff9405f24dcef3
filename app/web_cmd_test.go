package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/testenv"
)

// webTimeout bounds each wait of the live view's command tests.
const webTimeout = 60 * time.Second

// freeAddress returns a loopback address with a port nobody listens on.
func freeAddress(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	if err := lis.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// getJSON polls url until it answers 200 with JSON that check accepts.
func getJSON(t *testing.T, ctx context.Context, what, url string, check func(doc map[string]any) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, webTimeout, true, func(ctx context.Context) (bool, error) {
		last = func() error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var doc map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
				return err
			}
			return check(doc)
		}()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v (last: %v)", what, err, last)
	}
}

// listed returns the entry of pod in the queue document's list, or nil.
func listed(doc map[string]any, list, pod string) map[string]any {
	entries, _ := doc[list].([]any)
	for _, e := range entries {
		if m, _ := e.(map[string]any); m["pod"] == pod {
			return m
		}
	}
	return nil
}

// TestRunWebAddress is the check of `minisched run --web-address`:
// on a fresh apiserver with a small backlog (one node too small for one of
// the pods), /api/queue lists that pod among the unschedulable pods with
// the plugin that rejected it; once a big node is added, it is bound and
// leaves the queue. (web/'s TestLiveView reads the same in Chromium.)
func TestRunWebAddress(t *testing.T) {
	env, err := testenv.StartEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	dir := t.TempDir()
	kubeconfig, config := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(kubeconfig, env.Kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte("apiVersion: kubescheduler.config.k8s.io/v1\n"+
		"kind: KubeSchedulerConfiguration\nleaderElection: {leaderElect: false}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := freeAddress(t)
	done := make(chan error, 1)
	go func() {
		done <- NewCommand().Run(ctx, []string{"run", "--kubeconfig", kubeconfig, "--config", config,
			"--metrics-bind-address", "0", "--web-address", addr})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})

	client, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	cluster := &scenario.Env{Client: client, Namespace: metav1.NamespaceDefault,
		SchedulerName: scheduler.DefaultSchedulerName}
	cpu := func(q string) map[v1.ResourceName]string { return map[v1.ResourceName]string{v1.ResourceCPU: q} }
	if err := cluster.CreateNodes(ctx, scenario.MakeNode("small").Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU: "1", v1.ResourcePods: "10"}).Obj()); err != nil {
		t.Fatal(err)
	}
	if err := cluster.CreatePods(ctx, scenario.MakePod("a").Req(cpu("200m")).Obj(),
		scenario.MakePod("b").Req(cpu("200m")).Obj(), scenario.MakePod("big").Req(cpu("2")).Obj()); err != nil {
		t.Fatal(err)
	}
	queueURL := "http://" + addr + "/api/queue"
	getJSON(t, ctx, "big among the unschedulable pods, rejected by NodeResourcesFit", queueURL,
		func(doc map[string]any) error {
			e := listed(doc, "unschedulable", "default/big")
			if e == nil || fmt.Sprint(e["plugins"]) != "[NodeResourcesFit]" {
				return fmt.Errorf("unschedulable: %v", doc["unschedulable"])
			}
			return nil
		})
	for _, name := range []string{"a", "b"} {
		if _, err := cluster.WaitForPodBound(ctx, name, webTimeout); err != nil {
			t.Fatal(err)
		}
	}
	if err := cluster.CreateNodes(ctx, scenario.MakeNode("large").Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU: "4", v1.ResourcePods: "10"}).Obj()); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.WaitForPodBound(ctx, "big", webTimeout); err != nil {
		t.Fatal(err)
	}
	getJSON(t, ctx, "big has left the queue", queueURL, func(doc map[string]any) error {
		for _, list := range []string{"activeQ", "backoffQ", "unschedulable", "inFlight"} {
			if listed(doc, list, "default/big") != nil {
				return fmt.Errorf("still in %s", list)
			}
		}
		return nil
	})
}

// TestStartWeb runs `minisched start --web ADDR --scenario ch8-events`, as
// `make start CHAPTER=8 WEB=ADDR` does: nothing runs until a page (here, a
// stream) is open; then the scenario runs, its attempts reach the view's
// timeline, and the view stays up after it.
func TestStartWeb(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addr := freeAddress(t)
	out, outW := io.Pipe()
	c := NewCommand()
	c.stdout = outW
	done := make(chan error, 1)
	go func() {
		done <- c.Run(ctx, []string{"start", "--web", addr, "--scenario", "ch8-events"})
		outW.Close()
	}()
	lines := make(chan string, 100)
	go func() {
		for sc := bufio.NewScanner(out); sc.Scan(); {
			lines <- sc.Text()
		}
		close(lines)
	}()
	t.Cleanup(func() {
		cancel()
		for range lines {
		}
		if err := <-done; err != nil {
			t.Errorf("start: %v", err)
		}
	})
	waitLine := func(want string) {
		t.Helper()
		timeout := time.After(2 * webTimeout)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("start ended before printing %q", want)
				}
				if strings.Contains(l, want) {
					return
				}
			case <-timeout:
				t.Fatalf("start did not print %q", want)
			}
		}
	}
	waitLine("The live view is at http://" + addr + "/")

	// The page's stream: the scenarios start once it is open.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	go func() { _, _ = io.Copy(io.Discard, resp.Body) }()

	waitLine("--- PASS ch8-events")
	waitLine("the live view stays at http://" + addr + "/")
	getJSON(t, ctx, "the scenario's attempts in the timeline", "http://"+addr+"/api/attempts",
		func(doc map[string]any) error {
			var results []string
			entries, _ := doc["attempts"].([]any)
			for _, e := range entries {
				if m, _ := e.(map[string]any); m["pod"] == "ch8-events/waiting" {
					results = append(results, fmt.Sprint(m["result"]))
				}
			}
			if !slices.Equal(results, []string{"Unschedulable", "Scheduled"}) {
				return fmt.Errorf("ch8-events/waiting's attempts: %v", results)
			}
			return nil
		})
}
