package explain_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/explain"
	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/testenv"
)

// profile is minisched's schedulerName here; kube-scheduler runs beside it
// as default-scheduler.
const profile = "minisched"

// startCluster starts etcd and kube-apiserver (testenv.StartEnvironment)
// and returns an admin client, a kubeconfig file and the directory with the
// control plane's binaries, kube-scheduler's included.
func startCluster(t *testing.T) (kubernetes.Interface, string, string) {
	t.Helper()
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	env, err := testenv.StartEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, env.Kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return client, path, assets
}

// startMinisched runs minisched with attempt records on, as profile, with
// the GenericWorkload gate (pod groups).
func startMinisched(ctx context.Context, t *testing.T, kubeconfig string) {
	t.Helper()
	gates := features.Gates{GenericWorkload: true}
	cfg := scheduler.DefaultConfigFor(gates)
	cfg.LeaderElection.LeaderElect = ptr.To(false)
	cfg.Profiles[0].SchedulerName = ptr.To(profile)
	rc, err := scheduler.RestConfigFromKubeconfig(kubeconfig, cfg)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := scheduler.New(ctx, cfg, rc, scheduler.WithAttemptRecords(), scheduler.WithFeatureGates(gates))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("minisched: %v", err)
		}
	})
}

// startKubeScheduler runs the real kube-scheduler as default-scheduler.
func startKubeScheduler(t *testing.T, assets, kubeconfig string) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	err := os.WriteFile(cfg, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"+
		"leaderElection:\n  leaderElect: false\nclientConnection:\n  kubeconfig: "+kubeconfig+"\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "kube-scheduler.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(assets, "kube-scheduler"), "--config", cfg, "--secure-port=0", "-v=2")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting kube-scheduler (make kube-scheduler builds it): %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		_ = log.Close()
	})
}

// explainUntil runs explain on the pod until its output contains every one
// of want (the scheduler and the record writer work in the background),
// comparing with runs of spaces (the tables' padding) as one.
func explainUntil(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, pod string,
	want ...string) string {
	t.Helper()
	var out string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			var b strings.Builder
			if err := explain.Pod(ctx, client, ns, pod, &b, explain.Options{}); err != nil {
				return false, nil
			}
			out = b.String()
			for _, w := range want {
				if !strings.Contains(squeeze(out), w) {
					return false, nil
				}
			}
			return true, nil
		})
	if err != nil {
		t.Fatalf("explain %s/%s never said %q; last output:\n%s", ns, pod, want, out)
	}
	t.Logf("minisched explain %s -n %s:\n%s", pod, ns, out)
	return out
}

// squeeze turns every run of spaces into one.
func squeeze(s string) string {
	for strings.Contains(s, "  ") {
		s = strings.ReplaceAll(s, "  ", " ")
	}
	return s
}

func TestExplainOnAFreshCluster(t *testing.T) {
	client, kubeconfig, assets := startCluster(t)
	_, ctx := ktesting.NewTestContext(t)
	ns := "shop"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, value := range map[string]int32{"low": 10, "high": 1000} {
		if _, err := client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	node := func(name, cpu string) *builders.NodeWrapper {
		n := builders.MakeNode().Name(name).Label(v1.LabelHostname, name).
			Capacity(map[v1.ResourceName]string{v1.ResourceCPU: cpu, v1.ResourceMemory: "16Gi", v1.ResourcePods: "110"})
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
		return n
	}
	cluster := &scenario.Env{Client: client, Namespace: ns}
	if err := cluster.CreateNodes(ctx, node("n1", "4").Obj(), node("n2", "2").Obj(),
		node("n3", "4").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj()); err != nil {
		t.Fatal(err)
	}
	startMinisched(ctx, t, kubeconfig)
	startKubeScheduler(t, assets, kubeconfig)

	create := func(t *testing.T, p *builders.PodWrapper) {
		t.Helper()
		pod := p.Namespace(ns).Obj()
		if pod.Spec.TerminationGracePeriodSeconds == nil {
			pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		}
		if len(pod.Spec.Containers) == 0 {
			pod.Spec.Containers = []v1.Container{{Name: "c", Image: builders.PauseImage}}
		}
		if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	remove := func(t *testing.T, names ...string) {
		t.Helper()
		for _, name := range names {
			if err := client.CoreV1().Pods(ns).Delete(ctx, name,
				metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
				t.Errorf("deleting %s: %v", name, err)
			}
		}
	}
	cpu := func(q string) map[v1.ResourceName]string { return map[v1.ResourceName]string{v1.ResourceCPU: q} }

	t.Run("pending: each node's reason, per plugin", func(t *testing.T) {
		create(t, builders.MakePod().Name("big").SchedulerName(profile).Req(cpu("5")))
		defer remove(t, "big")
		explainUntil(ctx, t, client, ns, "big",
			"Pod shop/big: Unschedulable",
			"NODE TaintToleration NodeResourcesFit",
			"n1 ✓ Insufficient cpu",
			"n2 ✓ Insufficient cpu",
			"n3 node(s) had untolerated taint(s) –",
			"No node: 0/3 nodes are available")
	})

	t.Run("bound: the scores and the winner", func(t *testing.T) {
		create(t, builders.MakePod().Name("web").SchedulerName(profile).Req(cpu("1")))
		defer remove(t, "web")
		explainUntil(ctx, t, client, ns, "web", "Pod shop/web: Scheduled", "n3 node(s) had untolerated taint(s)",
			"Score (", "NodeResourcesFit×1", "Selected: n")
	})

	t.Run("preempting: the nominated node and the victims", func(t *testing.T) {
		// Low-priority pods fill n1 and n2, bound by hand. With a grace
		// period and no kubelet, a victim stays terminating: the preemptor
		// stays nominated, waiting for it.
		create(t, builders.MakePod().Name("low-1").NodeName("n1").PriorityClassName("low").Req(cpu("3500m")).
			TerminationGracePeriod(30))
		create(t, builders.MakePod().Name("low-2").NodeName("n2").PriorityClassName("low").Req(cpu("1500m")).
			TerminationGracePeriod(30))
		create(t, builders.MakePod().Name("urgent").SchedulerName(profile).PriorityClassName("high").Req(cpu("2")))
		defer remove(t, "urgent")
		out := explainUntil(ctx, t, client, ns, "urgent", "Pod shop/urgent: Unschedulable", "Nominated: n",
			"victims: shop/low-")
		// The nominated node and its victim go together.
		if !strings.Contains(out, "Nominated: n1 (preemption makes room there; victims: shop/low-1)") &&
			!strings.Contains(out, "Nominated: n2 (preemption makes room there; victims: shop/low-2)") {
			t.Errorf("the nominated node and its victims do not match")
		}
		// The victims go (no kubelet finishes their grace period: delete
		// them at once), the preemptor lands, and its explanation still
		// says the preemption made room.
		for _, victim := range []string{"low-1", "low-2"} {
			if err := client.CoreV1().Pods(ns).Delete(ctx, victim,
				metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
				t.Fatal(err)
			}
		}
		explainUntil(ctx, t, client, ns, "urgent", "Pod shop/urgent: Scheduled",
			"Preempted earlier: attempt 1", "was nominated to n", "and evicted shop/low-")
	})

	t.Run("a gang that cannot reach minCount: each member's part in its group's attempt", func(t *testing.T) {
		if _, err := client.SchedulingV1beta1().PodGroups(ns).Create(ctx,
			builders.MakePodGroup().Namespace(ns).Name("gang").Gang(2).Obj(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// One member fits on n1; then no node has 3 CPUs left.
		for _, name := range []string{"gang-0", "gang-1"} {
			create(t, builders.MakePod().Name(name).SchedulerName(profile).PodGroup("gang").Req(cpu("3")))
		}
		defer remove(t, "gang-0", "gang-1")
		for _, name := range []string{"gang-0", "gang-1"} {
			explainUntil(ctx, t, client, ns, name,
				"Pod shop/"+name+": Unschedulable",
				"Pod group shop/gang (gang, minCount 2), group attempt",
				name+" (this pod)",
				"placed on n1 1: the group's",
				"0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. 2: its own",
				"PlacementFeasible at the end: minCount 2: 1 scheduled, 0 remaining → minCount (2) cannot be satisfied: "+
					"1 scheduled, 0 remaining.",
				"The group: Unschedulable: minCount (2) cannot be satisfied: 1 scheduled, 0 remaining",
				"This pod was ")
		}
	})

	t.Run("kube-scheduler's pending pod: its events, and what they cannot tell", func(t *testing.T) {
		create(t, builders.MakePod().Name("kube-big").Req(cpu("5")))
		defer remove(t, "kube-big")
		explainUntil(ctx, t, client, ns, "kube-big",
			"has no "+attempt.Annotation+" annotation",
			"Last FailedScheduling, from default-scheduler",
			"Of 3 nodes:",
			" 2 Insufficient cpu",
			" 1 node(s) had untolerated taint(s)",
			"Cannot be known from events: which node failed which plugin")
	})

	t.Run("kube-scheduler's bound pod: who bound it; its scores are unknown", func(t *testing.T) {
		create(t, builders.MakePod().Name("kube-web").Req(cpu("100m")))
		defer remove(t, "kube-web")
		explainUntil(ctx, t, client, ns, "kube-web", "Bound to n", "by default-scheduler (Successfully assigned shop/kube-web",
			"Cannot be known: the scores")
	})

	t.Run("DynamicResources rejected the pod: what each node's devices say", func(t *testing.T) {
		// minisched's DRA plugin is not written yet: the record is made by
		// hand, the objects are real (validated and defaulted by the
		// apiserver). n1's only GPU is held by another claim; n2 and n3
		// have none.
		rs := client.ResourceV1()
		class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com"},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: `device.driver == "gpu.example.com"`}}}}}
		slice := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "n1-gpus"},
			Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: ptr.To("n1"),
				Pool:    resourceapi.ResourcePool{Name: "n1", ResourceSliceCount: 1},
				Devices: []resourceapi.Device{{Name: "gpu-0"}}}}
		claim := func(name string) *resourceapi.ResourceClaim {
			return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
					Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class.Name}}}}}}
		}
		if _, err := rs.DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := rs.ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := rs.ResourceClaims(ns).Create(ctx, claim("gpu"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		other, err := rs.ResourceClaims(ns).Create(ctx, claim("other"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		other.Status.Allocation = &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
				Request: "gpu", Driver: "gpu.example.com", Pool: "n1", Device: "gpu-0"}}},
			NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{
				{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"n1"}}}}}}}
		if _, err := rs.ResourceClaims(ns).UpdateStatus(ctx, other, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := builders.MakePod().Name("gpu-pod").SchedulerName("nobody")
		pod.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu")}}
		create(t, pod)
		defer remove(t, "gpu-pod")
		rec := &attempt.Record{Version: attempt.Version, Time: time.Now(), Profile: profile, Attempt: 1,
			Result: attempt.Unschedulable, Filters: []string{"DynamicResources"}, NumNodes: 3,
			Message: "0/3 nodes are available: 3 cannot allocate all claims."}
		for _, n := range []string{"n1", "n2", "n3"} {
			rec.Nodes = append(rec.Nodes, attempt.NodeRecord{Name: n, RejectedBy: "DynamicResources",
				Reason: "cannot allocate all claims", Unresolvable: true})
		}
		value, err := rec.Encode(attempt.MaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"annotations": map[string]string{attempt.Annotation: string(value)}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().Pods(ns).Patch(ctx, "gpu-pod", "application/merge-patch+json", patch,
			metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		explainUntil(ctx, t, client, ns, "gpu-pod",
			`Devices, as the cluster is now (DynamicResources said "cannot allocate all claims"):`,
			"claim gpu, request gpu (class gpu.example.com, 1 device):",
			"n1 1 device, 1 matches, 1 allocated to other claims → none free",
			"n2 no devices",
			"n3 no devices")
	})

	t.Run("a record of a version this minisched does not know", func(t *testing.T) {
		create(t, builders.MakePod().Name("future").SchedulerName("nobody"))
		defer remove(t, "future")
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"{\"v\":9}"}}}`, attempt.Annotation)
		if _, err := client.CoreV1().Pods(ns).Patch(ctx, "future", "application/merge-patch+json", []byte(patch),
			metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		err := explain.Pod(ctx, client, ns, "future", &strings.Builder{}, explain.Options{})
		if err == nil || !strings.Contains(err.Error(), "has version 9; this minisched reads version 1 only") {
			t.Errorf("err = %v, want one about the version", err)
		}
	})
}
