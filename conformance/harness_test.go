//go:build conformance

package conformance

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	dto "github.com/prometheus/client_model/go"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/examples/extender/server"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/testenv"
)

// Engine is one of the two schedulers under comparison.
type Engine string

const (
	Minisched     Engine = "minisched"
	KubeScheduler Engine = "kube-scheduler"
)

// Compare says how strictly two outcomes must agree.
type Compare int

const (
	// ComparePods: every pod on the same node, or pending with the same message.
	ComparePods Compare = iota
	// CompareCounts: the same numbers of pods per node (whichever nodes)
	// and the same pending messages, for cases whose ties are broken at
	// random between equivalent nodes.
	CompareCounts
)

// Step changes the cluster.
type Step func(ctx context.Context, c *Cluster) error

// Case is one comparison.
type Case struct {
	Name string
	// Profiles is the YAML of the configuration's profiles list (indented
	// as a top-level key's value); empty means the default profile.
	Profiles string
	// Extenders is the YAML of the configuration's extenders list, in which
	// extenderURL stands for the URL of a fresh example extender
	// (examples/extender/server) bound to the case's apiserver. The same
	// extender serves both schedulers.
	Extenders string
	// Backlog runs before the scheduler starts; Steps after it is running.
	Backlog, Steps []Step
	Compare        Compare
	// Storage starts kube-controller-manager's storage controllers (the PV
	// binder, PV/PVC protection, ephemeral volumes) beside the apiserver.
	Storage bool
	// Provisioner, if set, runs the example provisioner for class
	// localClass with these capacities per node name.
	Provisioner map[string]string
	// DRA starts kube-controller-manager's resourceclaim controller, which
	// creates the claims of pods' ResourceClaimTemplates and releases
	// claims whose pods are gone.
	DRA bool
	// FeatureGates are passed to both schedulers as --feature-gates (the
	// apiserver serves the workload API whatever they say).
	FeatureGates string
	// RacyPodGroupConditions leaves the PodGroups' conditions out of the
	// comparison, for a case where kube-scheduler itself writes one or
	// another from run to run (it reads back its own last write through
	// an informer that may not have seen it yet).
	RacyPodGroupConditions bool
}

// extenderURL is replaced by the example extender's URL in Case.Extenders.
const extenderURL = "EXTENDER_URL"

// Cluster is a fresh apiserver plus helpers for steps.
type Cluster struct {
	*scenario.Env
	env *testenv.Environment
}

func binary(t *testing.T, env, name string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		t.Fatalf("%s is not set: run `make conformance`", env)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

// run plays the case against engine and returns the outcome, one line per pod.
func run(t *testing.T, c Case, engine Engine) []string {
	t.Helper()
	out, _ := runAndScrape(t, c, engine, false)
	return out
}

// runAndScrape is run; with scrape, the scheduler also serves its metrics
// on a free port, and they are read once the outcome has settled.
func runAndScrape(t *testing.T, c Case, engine Engine, scrape bool) ([]string, map[string]*dto.MetricFamily) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, err := testenv.StartEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	client, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	cl := &Cluster{
		Env: &scenario.Env{
			Client:        client,
			Namespace:     "default",
			SchedulerName: "default-scheduler",
			Attempts:      scenario.NewAttemptLog(),
		},
		env: env,
	}

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.Kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("apiVersion: kubescheduler.config.k8s.io/v1\n"+
		"kind: KubeSchedulerConfiguration\n"+
		"leaderElection:\n"+
		"  leaderElect: false\n"+
		"clientConnection:\n"+
		"  kubeconfig: %s\n", kubeconfig)
	if c.Profiles != "" {
		cfg += "profiles:\n" + c.Profiles
	}
	if c.Extenders != "" {
		ext := httptest.NewServer(server.New(client, server.ClientNodes{Client: client}))
		defer ext.Close()
		cfg += "extenders:\n" + strings.ReplaceAll(c.Extenders, extenderURL, ext.URL)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	if c.Storage {
		cm, err := env.StartControllerManager(testenv.StorageControllers...)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := cm.Stop(); err != nil {
				t.Error(err)
			}
		}()
	}
	if c.DRA {
		cm, err := env.StartControllerManager(testenv.DRAControllers...)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := cm.Stop(); err != nil {
				t.Error(err)
			}
		}()
	}
	if c.Provisioner != nil {
		stopProvisioner := startProvisioner(ctx, t, cl, c.Provisioner)
		defer stopProvisioner()
	}
	for i, s := range c.Backlog {
		if err := s(ctx, cl); err != nil {
			t.Fatalf("%s: backlog step %d: %v", engine, i, err)
		}
	}
	// Cases run two at a time: no metrics port unless asked for (a free
	// one then).
	minischedPort, kubeSchedulerPort, metricsURL := "0", "0", ""
	if scrape {
		port := freePort(t)
		minischedPort, kubeSchedulerPort = "127.0.0.1:"+port, port
		metricsURL = "http://127.0.0.1:" + port + "/metrics"
		if engine == KubeScheduler {
			metricsURL = "https://127.0.0.1:" + port + "/metrics"
		}
	}
	var cmd *exec.Cmd
	switch engine {
	case Minisched:
		cmd = exec.CommandContext(ctx, binary(t, "MINISCHED", "minisched"), "run", "--config", cfgPath, "-v", "2",
			"--metrics-bind-address", minischedPort)
		if c.FeatureGates != "" {
			cmd.Args = append(cmd.Args, "--feature-gates", c.FeatureGates)
		}
	case KubeScheduler:
		// kube-scheduler serves HTTPS with a self-signed certificate; with
		// no authentication or authorization kubeconfig, anonymous requests
		// reach the always-allowed paths only.
		cmd = exec.CommandContext(ctx, binary(t, "KUBE_SCHEDULER", "kube-scheduler"), "--config", cfgPath,
			"--secure-port="+kubeSchedulerPort, "--bind-address=127.0.0.1",
			"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics", "-v=2")
		if c.FeatureGates != "" {
			cmd.Args = append(cmd.Args, "--feature-gates="+c.FeatureGates)
		}
	}
	logPath := filepath.Join(os.TempDir(), fmt.Sprintf("conformance-%s-%s.log", c.Name, engine))
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	for i, s := range c.Steps {
		if err := s(ctx, cl); err != nil {
			t.Fatalf("%s: step %d: %v (log: %s)", engine, i, err, logPath)
		}
	}
	out, err := settle(ctx, client)
	if err != nil {
		t.Fatalf("%s: %v (log: %s)", engine, err, logPath)
	}
	if !scrape {
		return out, nil
	}
	families, err := scrapeMetrics(ctx, metricsURL)
	if err != nil {
		t.Fatalf("%s: %v (log: %s)", engine, err, logPath)
	}
	return out, families
}

// settle waits until every pod was decided (bound, or PodScheduled=False)
// and nothing changed for a while, and returns the outcome.
func settle(ctx context.Context, client kubernetes.Interface) ([]string, error) {
	const quiet = 2 * time.Second
	var last []string
	lastChange := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true,
		func(ctx context.Context) (bool, error) {
			out, decided, err := outcome(ctx, client)
			if err != nil {
				return false, err
			}
			if strings.Join(out, "\n") != strings.Join(last, "\n") {
				last, lastChange = out, time.Now()
				return false, nil
			}
			return decided && time.Since(lastChange) >= quiet, nil
		})
	if err != nil {
		return last, fmt.Errorf("outcome did not settle: %w\n%s", err, strings.Join(last, "\n"))
	}
	return last, nil
}

// outcome lists "ns/pod -> node" or "ns/pod -> pending: <message>", sorted,
// with "(terminating, DisruptionTarget=...)" for a victim still being
// deleted, "[nominated: node]" for a pod with status.nominatedNodeName and
// "[bound by example-extender]" for a pod the example extender bound;
// decided is false while some pod of ours has neither a node nor a
// message. Preempted victims without a grace period are simply gone. The
// claims and volumes (storageOutcome), the ResourceClaims (draOutcome) and
// the PodGroups' conditions (podGroupOutcome) follow the pods.
func outcome(ctx context.Context, client kubernetes.Interface) ([]string, bool, error) {
	list, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, false, err
	}
	decided := true
	var out []string
	for i := range list.Items {
		p := &list.Items[i]
		line := p.Namespace + "/" + p.Name + " -> "
		switch {
		case p.Spec.NodeName != "" && p.DeletionTimestamp != nil:
			// A preempted victim that has a grace period: no kubelet ends it.
			line += p.Spec.NodeName + " (terminating" + disruption(p) + ")"
		case p.Spec.NodeName != "":
			line += p.Spec.NodeName
		case scheduledFalse(p) != nil:
			line += "pending: " + scheduledFalse(p).Reason + ": " + scheduledFalse(p).Message
		default:
			line += "pending (not tried)"
			// Gated pods, pods for other schedulers and pods a case
			// expects PreEnqueue to hold are never tried.
			if len(p.Spec.SchedulingGates) == 0 && !strings.HasPrefix(p.Spec.SchedulerName, "other") &&
				p.Labels[heldLabel] == "" {
				decided = false
			}
		}
		if nnn := p.Status.NominatedNodeName; nnn != "" {
			line += " [nominated: " + nnn + "]"
		}
		if by := p.Annotations[server.BoundByAnnotation]; by != "" {
			line += " [bound by " + by + "]"
		}
		out = append(out, line)
	}
	sort.Strings(out)
	storage, err := storageOutcome(ctx, client)
	if err != nil {
		return nil, false, err
	}
	claims, err := draOutcome(ctx, client)
	if err != nil {
		return nil, false, err
	}
	groups, err := podGroupOutcome(ctx, client)
	if err != nil {
		return nil, false, err
	}
	return slices.Concat(out, storage, claims, groups), decided, nil
}

// disruption describes a pod's DisruptionTarget condition, if it has one.
func disruption(p *v1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget {
			return fmt.Sprintf(", DisruptionTarget=%s %s: %s", c.Status, c.Reason, c.Message)
		}
	}
	return ""
}

func scheduledFalse(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason != "SchedulingGated" {
			return c
		}
	}
	return nil
}

// counts turns an outcome into per-node counts plus the pending lines
// without pod names, for CompareCounts; the lines of other objects stay
// as they are.
func counts(out []string) []string {
	perNode := map[string]int{}
	var res []string
	for _, l := range out {
		_, rhs, isPod := strings.Cut(l, " -> ")
		if !isPod {
			// A claim's, a volume's or a PodGroup's line is compared whole.
			res = append(res, l)
			continue
		}
		if strings.HasPrefix(rhs, "pending") {
			res = append(res, rhs)
		} else {
			perNode[rhs]++
		}
	}
	// Node names are left out: a tie broken the other way is the same
	// outcome with the nodes swapped.
	for _, c := range perNode {
		res = append(res, fmt.Sprintf("a node with %d pods", c))
	}
	sort.Strings(res)
	return res
}

// withoutPodGroups is an outcome without its PodGroups' lines.
func withoutPodGroups(out []string) []string {
	return slices.DeleteFunc(slices.Clone(out), func(l string) bool { return strings.HasPrefix(l, "podgroup ") })
}

// TestConformance runs every case (those named in $CASES, comma-separated,
// if set) under both engines and compares. ENGINE=kube-scheduler (or
// minisched) runs one engine only and logs its outcome, to see what a new
// case does upstream before the other side can pass it.
func TestConformance(t *testing.T) {
	only := os.Getenv("CASES")
	engine := Engine(os.Getenv("ENGINE"))
	for _, c := range cases() {
		if only != "" && !strings.Contains(","+only+",", ","+c.Name+",") {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			if engine != "" {
				t.Logf("%s:\n%s", engine, strings.Join(run(t, c, engine), "\n"))
				return
			}
			ours := run(t, c, Minisched)
			theirs := run(t, c, KubeScheduler)
			a, b := ours, theirs
			if c.RacyPodGroupConditions {
				a, b = withoutPodGroups(a), withoutPodGroups(b)
			}
			if c.Compare == CompareCounts {
				a, b = counts(a), counts(b)
			}
			if strings.Join(a, "\n") != strings.Join(b, "\n") {
				t.Errorf("outcomes differ\n--- minisched:\n%s\n--- kube-scheduler:\n%s",
					strings.Join(ours, "\n"), strings.Join(theirs, "\n"))
				return
			}
			t.Logf("agree:\n%s", strings.Join(ours, "\n"))
		})
	}
}

// Steps.

// nodes creates the nodes.
func nodes(ns ...*builders.NodeWrapper) Step {
	objs := make([]*v1.Node, len(ns))
	for i, n := range ns {
		objs[i] = n.Obj()
	}
	return func(ctx context.Context, c *Cluster) error { return c.CreateNodes(ctx, objs...) }
}

// pods creates the pods, each in its namespace.
func pods(ps ...*builders.PodWrapper) Step {
	objs := make([]*v1.Pod, len(ps))
	for i, p := range ps {
		objs[i] = p.Obj()
	}
	return func(ctx context.Context, c *Cluster) error {
		for _, p := range objs {
			p := p.DeepCopy()
			ns := p.Namespace
			if ns == "" {
				ns = "default"
			}
			p.Namespace = ""
			c.Namespace = ns
			if err := c.CreatePods(ctx, p); err != nil {
				return err
			}
		}
		c.Namespace = "default"
		return nil
	}
}

// waitBound waits until the named pods ("name" in default, or
// "namespace/name") are bound, so the next step sees them placed.
func waitBound(names ...string) Step {
	return func(ctx context.Context, c *Cluster) error {
		defer func() { c.Namespace = "default" }()
		for _, n := range names {
			c.Namespace = "default"
			if ns, name, ok := strings.Cut(n, "/"); ok {
				c.Namespace, n = ns, name
			}
			if _, err := c.WaitForPodBound(ctx, n, scenario.DefaultWait); err != nil {
				return err
			}
		}
		return nil
	}
}

// waitPending waits until the named pods (in default) were found unschedulable.
func waitPending(names ...string) Step {
	return func(ctx context.Context, c *Cluster) error {
		for _, n := range names {
			if _, err := c.WaitForPodUnschedulable(ctx, n, scenario.DefaultWait); err != nil {
				return err
			}
		}
		return nil
	}
}

func deletePod(name string) Step {
	return func(ctx context.Context, c *Cluster) error { return c.DeletePod(ctx, name) }
}

func uncordon(node string) Step {
	return func(ctx context.Context, c *Cluster) error { return c.SetUnschedulable(ctx, node, false) }
}

func namespace(name string, labels map[string]string) Step {
	return func(ctx context.Context, c *Cluster) error {
		_, err := c.Client.CoreV1().Namespaces().Create(ctx,
			&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
}

func service(name string, selector map[string]string) Step {
	return func(ctx context.Context, c *Cluster) error {
		_, err := c.Client.CoreV1().Services("default").Create(ctx, &v1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       v1.ServiceSpec{Selector: selector, Ports: []v1.ServicePort{{Port: 80}}},
		}, metav1.CreateOptions{})
		return err
	}
}

// patchPod applies a strategic merge patch to a pod in default.
func patchPod(name, patch string) Step {
	return func(ctx context.Context, c *Cluster) error {
		_, err := c.Client.CoreV1().Pods("default").Patch(ctx, name, "application/strategic-merge-patch+json", []byte(patch),
			metav1.PatchOptions{})
		return err
	}
}

// pdb creates a PodDisruptionBudget in default selecting selector (nil: an
// empty selector, which matches nothing for preemption) and sets the status
// the disruption controller would (none runs here): disruptionsAllowed.
func pdb(name string, selector map[string]string, allowed int32) Step {
	return func(ctx context.Context, c *Cluster) error {
		obj := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MinAvailable: &intstr.IntOrString{Type: intstr.Int, IntVal: 1},
				Selector:     &metav1.LabelSelector{MatchLabels: selector},
			},
		}
		created, err := c.Client.PolicyV1().PodDisruptionBudgets("default").Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		created.Status = policyv1.PodDisruptionBudgetStatus{
			ObservedGeneration: created.Generation,
			DisruptionsAllowed: allowed,
			CurrentHealthy:     allowed + 1,
			DesiredHealthy:     1,
			ExpectedPods:       allowed + 1,
		}
		_, err = c.Client.PolicyV1().PodDisruptionBudgets("default").UpdateStatus(ctx, created, metav1.UpdateOptions{})
		return err
	}
}
