package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/testenv"
)

// TestCeilingFits checks which workloads the ceiling runs: every backlog
// workload but the storage ones and the churn, never without a backlog.
func TestCeilingFits(t *testing.T) {
	want := map[string]bool{
		"SchedulingBasic-500": true, "SchedulingBasic-5000": true, "SchedulingBasic-15000": true, "PodAntiAffinity": true,
		"TopologySpreading": true, "NodeAffinity": true, "Preemption": false, "SchedulingWithMixedChurn-1000": false,
		"SchedulingCSIPVs-500": false, "SchedulingProvisionedPVs-500": false,
		"SchedulingWithResourceClaimTemplate-500": true, "HostPortConflict": true, "ResourceSaturation": true,
		"HostPortConflict-2000": true, "ResourceSaturation-2000": true,
		"GangScheduling-3PerGroup": true, "GangScheduling-1000PerGroup": true,
		"GangPreemptionBasic-1Gang": false, "GangPreemptionBasic-10Gangs": false,
	}
	for _, w := range workloads(false) {
		t.Run(w.Name, func(t *testing.T) {
			if got := ceilingFits(w, true); got != want[w.Name] {
				t.Errorf("ceilingFits(backlog) = %v, want %v", got, want[w.Name])
			}
			if ceilingFits(w, false) {
				t.Error("ceilingFits without a backlog, want false")
			}
		})
	}
	if len(want) != len(workloads(false)) {
		t.Errorf("%d workloads, the test knows %d", len(workloads(false)), len(want))
	}
}

// TestCeilingPlacement places every measured pod of every workload the
// ceiling runs, at both sizes, where the ceiling would, after the init
// pods (placeInitPods), and checks that a scheduler could have made each
// binding: the node exists and fits the pod's requests, pod count, host
// ports, required node affinity, required anti-affinity on the hostname
// and DoNotSchedule spreading, and a device-claiming pod gets a device of
// the node's slice that no other pod on it has.
func TestCeilingPlacement(t *testing.T) {
	for _, smoke := range []bool{true, false} {
		for _, w := range workloads(smoke) {
			if !ceilingFits(w, true) {
				continue
			}
			t.Run(fmt.Sprintf("%s/smoke=%v", w.Name, smoke), func(t *testing.T) {
				nodes := map[string]*v1.Node{}
				for i := range w.Nodes {
					n := makeNode(w, i)
					nodes[n.Name] = n
				}
				onNode := map[string][]*v1.Pod{}
				devices := map[string]bool{}
				place := func(p *v1.Pod, node string) {
					t.Helper()
					n, ok := nodes[node]
					if !ok {
						t.Fatalf("%s placed on %q, which is not a node", p.Name, node)
					}
					if err := fits(p, n, onNode[node], nodes, onNode); err != nil {
						t.Fatalf("%s does not fit on %s: %v", p.Name, node, err)
					}
					if w.Devices != nil && p.Labels[roleLabel] == roleMeasured {
						d := ceilingDevice(w, podIndex(p.Name))
						var k int
						if _, err := fmt.Sscanf(d, "basic-device-%d", &k); err != nil || k >= w.Devices.PerNode {
							t.Fatalf("%s gets device %q; node %s has basic-device-0 to -%d", p.Name, d, node, w.Devices.PerNode-1)
						}
						if devices[node+"/"+d] {
							t.Fatalf("%s gets %s of %s, which another pod has", p.Name, d, node)
						}
						devices[node+"/"+d] = true
					}
					onNode[node] = append(onNode[node], p)
				}
				for i := range w.InitPods {
					place(w.InitPod(podName("init", i)), fmt.Sprintf("node-%d", i%w.Nodes))
				}
				for i := range w.Pods {
					p := w.Pod(podName("pod", i))
					node := ceilingNode(w, p)
					if node != w.Place(i) {
						t.Fatalf("ceilingNode(%s) = %q, want Place(%d) = %q", p.Name, node, i, w.Place(i))
					}
					place(p, node)
				}
			})
		}
	}
}

// fits is a scheduler's Filter reduced to what the workloads use: whether
// p fits on n beside the pods there, with everywhere's pods for spreading.
func fits(p *v1.Pod, n *v1.Node, there []*v1.Pod, nodes map[string]*v1.Node, everywhere map[string][]*v1.Pod) error {
	if len(there)+1 > int(n.Status.Allocatable.Pods().Value()) {
		return fmt.Errorf("%d pods already", len(there))
	}
	for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		used := resource.Quantity{}
		for _, q := range append(there, p) {
			for _, c := range q.Spec.Containers {
				used.Add(c.Resources.Requests[r])
			}
		}
		if alloc := n.Status.Allocatable[r]; used.Cmp(alloc) > 0 {
			return fmt.Errorf("%s: %s requested of %s", r, used.String(), alloc.String())
		}
	}
	ports := map[int32]bool{}
	for _, q := range there {
		for _, c := range q.Spec.Containers {
			for _, port := range c.Ports {
				if port.HostPort != 0 {
					ports[port.HostPort] = true
				}
			}
		}
	}
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.HostPort != 0 && ports[port.HostPort] {
				return fmt.Errorf("host port %d taken", port.HostPort)
			}
		}
	}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(n); err != nil || !ok {
		return fmt.Errorf("required node affinity: %v, %v", ok, err)
	}
	// Required anti-affinity, both ways, on the hostname only.
	repels := func(a, b *v1.Pod) bool {
		if a.Spec.Affinity == nil || a.Spec.Affinity.PodAntiAffinity == nil {
			return false
		}
		for _, term := range a.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
			if err != nil || term.TopologyKey != v1.LabelHostname || sel.Matches(labels.Set(b.Labels)) {
				return true
			}
		}
		return false
	}
	for _, q := range there {
		if repels(p, q) || repels(q, p) {
			return fmt.Errorf("anti-affinity with %s", q.Name)
		}
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != v1.DoNotSchedule {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return err
		}
		count := map[string]int{}
		for _, m := range nodes {
			if d, ok := m.Labels[c.TopologyKey]; ok {
				count[d] += 0
				for _, q := range everywhere[m.Name] {
					if sel.Matches(labels.Set(q.Labels)) {
						count[d]++
					}
				}
			}
		}
		least := -1
		for _, k := range count {
			if least < 0 || k < least {
				least = k
			}
		}
		if skew := count[n.Labels[c.TopologyKey]] + 1 - least; skew > int(c.MaxSkew) {
			return fmt.Errorf("skew %d on %s over %d", skew, c.TopologyKey, c.MaxSkew)
		}
	}
	return nil
}

// TestCeilingOnAPIServer runs the ceiling against an envtest apiserver on
// two smoke-sized backlogs: plain pods, and pods with a resource claim
// each (made here, in place of the resourceclaim controller). It checks
// that every pod is bound where Place says, with kube-scheduler's
// Scheduled event, and every claim allocated and reserved as
// DynamicResources' PreBind leaves it.
func TestCeilingOnAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an apiserver")
	}
	if _, err := testenv.AssetsDir(); err != nil {
		t.Skipf("no envtest binaries: %v", err)
	}
	byName := map[string]Workload{}
	for _, w := range workloads(true) {
		byName[w.Name] = w
	}
	for _, name := range []string{"HostPortConflict", "SchedulingWithResourceClaimTemplate-500"} {
		t.Run(name, func(t *testing.T) {
			w := byName[name]
			env, err := testenv.StartEnvironment()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Stop() })
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cfg := rest.CopyConfig(env.Config)
			cfg.QPS, cfg.Burst = 1000, 1000
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := prepareNamespace(ctx, client, w); err != nil {
				t.Fatal(err)
			}
			if err := createNodes(ctx, client, w); err != nil {
				t.Fatal(err)
			}
			if err := createPods(ctx, client, w.Pods, "pod", w.Pod); err != nil {
				t.Fatal(err)
			}
			if w.Devices != nil {
				makeClaims(ctx, t, client, w)
			}

			done := make(chan error, 1)
			runCtx, stop := context.WithCancel(ctx)
			go func() { done <- runCeiling(runCtx, env.Config, w, 4, t.Logf) }()
			defer func() {
				stop()
				if err := <-done; err != nil {
					t.Errorf("runCeiling: %v", err)
				}
			}()

			var pods *v1.PodList
			err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				if pods, err = client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{}); err != nil {
					return false, err
				}
				for _, p := range pods.Items {
					if p.Spec.NodeName == "" {
						return false, nil
					}
				}
				return len(pods.Items) == w.Pods, nil
			})
			if err != nil {
				t.Fatalf("waiting for the pods to be bound: %v", err)
			}
			for _, p := range pods.Items {
				if want := w.Place(podIndex(p.Name)); p.Spec.NodeName != want {
					t.Errorf("%s bound to %s, want %s", p.Name, p.Spec.NodeName, want)
				}
			}

			// Events are written after the binding, asynchronously.
			var evs *eventsv1.EventList
			err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				evs, err = client.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
				return err == nil && len(evs.Items) >= w.Pods, err
			})
			if err != nil {
				t.Fatalf("waiting for the events: %v", err)
			}
			seen := map[string]bool{}
			for _, e := range evs.Items {
				note := fmt.Sprintf("Successfully assigned %s/%s to %s", namespace, e.Regarding.Name, w.Place(podIndex(e.Regarding.Name)))
				if e.Reason != "Scheduled" || e.Action != "Binding" || e.Type != v1.EventTypeNormal || e.Note != note ||
					e.Regarding.Kind != "Pod" || e.Regarding.UID == "" || e.ReportingController != "default-scheduler" {
					t.Errorf("event %s: %s %s %s %q about %s %s (uid %q) by %s; want Normal Scheduled Binding %q about the pod by default-scheduler",
						e.Name, e.Type, e.Reason, e.Action, e.Note, e.Regarding.Kind, e.Regarding.Name, e.Regarding.UID, e.ReportingController, note)
				}
				seen[e.Regarding.Name] = true
			}
			if len(seen) != w.Pods {
				t.Errorf("events about %d pods, want %d", len(seen), w.Pods)
			}

			if w.Devices == nil {
				return
			}
			claims, err := client.ResourceV1().ResourceClaims(namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(claims.Items) != w.Pods {
				t.Fatalf("%d claims, want %d", len(claims.Items), w.Pods)
			}
			for _, c := range claims.Items {
				pod := strings.TrimSuffix(c.Name, "-"+podClaimName)
				i := podIndex(pod)
				node := w.Place(i)
				a := c.Status.Allocation
				if len(c.Finalizers) != 1 || c.Finalizers[0] != resourceapi.Finalizer {
					t.Errorf("claim %s: finalizers %v, want %s", c.Name, c.Finalizers, resourceapi.Finalizer)
				}
				if a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Pool != "resourceslice-"+node ||
					a.Devices.Results[0].Device != ceilingDevice(w, i) || a.NodeSelector == nil {
					t.Errorf("claim %s: allocation %+v, want %s of resourceslice-%s and a node selector", c.Name, a, ceilingDevice(w, i), node)
				}
				if r := c.Status.ReservedFor; len(r) != 1 || r[0].Name != pod || r[0].Resource != "pods" || r[0].UID == "" {
					t.Errorf("claim %s: reservedFor %+v, want pod %s", c.Name, r, pod)
				}
			}
		})
	}
}

// makeClaims does the resourceclaim controller's part for w's pods: a
// claim per pod, made from the template's spec, named in the pod's status.
func makeClaims(ctx context.Context, t *testing.T, client kubernetes.Interface, w Workload) {
	t.Helper()
	for i := range w.Pods {
		name := podName("pod", i)
		claim := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-" + podClaimName, Namespace: namespace},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name: "req-0", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: deviceClass},
			}}}},
		}
		if _, err := client.ResourceV1().ResourceClaims(namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: podClaimName, ResourceClaimName: ptr.To(claim.Name)}}
		if _, err := client.CoreV1().Pods(namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
