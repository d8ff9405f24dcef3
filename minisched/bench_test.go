// Benchmarks of one scheduling cycle: the search and ranking alone, and the
// whole cycle with the default profile (chapter 15).

package minisched_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/minisched/metrics"
	"github.com/minisched/minisched/plugins"
	"github.com/minisched/minisched/plugins/dynamicresources/dramanager"
	"github.com/minisched/minisched/queue"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/web"
)

// BenchmarkSchedulingCycle measures one pod's search for feasible nodes
// (PreFilter, Filter) and their ranking (PreScore, Score) over 1000 nodes
// with 10 pods each, all of which fit, with the default plugins
// NodeUnschedulable, NodeName and NodeResourcesFit (and the QueueSort and
// Bind plugins a profile needs).
func BenchmarkSchedulingCycle(b *testing.B) {
	const numNodes, podsPerNode = 1000, 10
	var nodes []*v1.Node
	var pods []*v1.Pod
	for i := range numNodes {
		name := fmt.Sprintf("node-%d", i)
		nodes = append(nodes, st.MakeNode().Name(name).
			Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "32", v1.ResourceMemory: "128Gi"}).Obj())
		for j := range podsPerNode {
			pods = append(pods, st.MakePod().Name(fmt.Sprintf("p-%d-%d", i, j)).UID(fmt.Sprintf("u-%d-%d", i, j)).
				NodeName(name).Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi"}).Obj())
		}
	}
	snapshot := cache.NewSnapshot(pods, nodes)
	profile := &configv1.KubeSchedulerProfile{SchedulerName: ptr.To("bench"), Plugins: &configv1.Plugins{
		MultiPoint: configv1.PluginSet{Enabled: []configv1.Plugin{
			{Name: "PrioritySort"}, {Name: "NodeUnschedulable"}, {Name: "NodeName"}, {Name: "NodeResourcesFit"},
			{Name: "DefaultBinder"},
		}},
	}}
	schedFramework, err := framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(), profile,
		framework.WithSnapshotSharedLister(snapshot))
	if err != nil {
		b.Fatal(err)
	}
	// 100%: every node is searched, as in a cluster of fewer than 100 nodes.
	s := minisched.NewBenchScheduler(cache.New(0), nil, snapshot, schedFramework, nil, 100, nil)
	pod := st.MakePod().Name("incoming").UID("incoming").
		Req(map[v1.ResourceName]string{v1.ResourceCPU: "2", v1.ResourceMemory: "2Gi"}).Obj()
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if feasible, err := s.FilterAndScore(ctx, schedFramework, pod); err != nil || feasible != numNodes {
			b.Fatalf("feasible %d, err %v", feasible, err)
		}
	}
}

// benchProfileName is the schedulerName of BenchmarkScheduleOne's profile.
const benchProfileName = "default-scheduler"

// The shape of BenchmarkScheduleOne's clusters.
const (
	benchPodsPerNode = 10
	benchZones       = 5
	// benchGroups is how many "app" label values the pods are spread over;
	// the pods on one node belong to different groups.
	benchGroups = 50
)

// benchCluster returns numNodes nodes in benchZones zones (a mix of
// instance types and images) and benchPodsPerNode pods on each, labelled
// app=g<k> for one of benchGroups groups. The first pod on each node has
// required anti-affinity to its own group on its node, so InterPodAffinity
// has existing pods' terms to check against every incoming pod.
func benchCluster(numNodes int) ([]*v1.Node, []*v1.Pod) {
	var nodes []*v1.Node
	var pods []*v1.Pod
	for i := range numNodes {
		name := fmt.Sprintf("node-%05d", i)
		nodes = append(nodes, st.MakeNode().Name(name).
			Label(v1.LabelHostname, name).
			Zone(fmt.Sprintf("zone-%d", i%benchZones)).
			Label(v1.LabelInstanceTypeStable, []string{"small", "large"}[i%2]).
			Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64", v1.ResourceMemory: "256Gi", v1.ResourcePods: "110"}).
			Images(500_000_000, fmt.Sprintf("registry.example/app:%d", i%7)).
			Obj())
		for j := range benchPodsPerNode {
			group := fmt.Sprintf("g%d", (i*7+j)%benchGroups)
			p := st.MakePod().Namespace("default").Name(fmt.Sprintf("p-%05d-%d", i, j)).
				UID(fmt.Sprintf("u-%05d-%d", i, j)).NodeName(name).Label("app", group).
				Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "2Gi"})
			if j == 0 {
				p = p.PodAntiAffinity(&v1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{groupTerm(group, v1.LabelHostname)},
				})
			}
			pods = append(pods, p.Obj())
		}
	}
	return nodes, pods
}

// groupTerm selects the pods of group with topology key key.
func groupTerm(group, key string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": group}},
		TopologyKey:   key,
	}
}

// benchIncomingPods returns one incoming pod per group for workload:
// "plain" pods have requests, a label and an image; "affinity" pods also
// have required anti-affinity to their group per node, preferred
// anti-affinity to it per zone, and spread their group over zones
// (DoNotSchedule) and nodes (ScheduleAnyway).
func benchIncomingPods(workload string) []*framework.QueuedPodInfo {
	var out []*framework.QueuedPodInfo
	for g := range benchGroups {
		group := fmt.Sprintf("g%d", g)
		p := st.MakePod().Namespace("default").Name("incoming-"+group).UID("incoming-"+group).
			Label("app", group).Image(fmt.Sprintf("registry.example/app:%d", g%7)).
			Req(map[v1.ResourceName]string{v1.ResourceCPU: "500m", v1.ResourceMemory: "1Gi"})
		if workload == "affinity" {
			selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": group}}
			p = p.PodAntiAffinity(&v1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{groupTerm(group, v1.LabelHostname)},
				PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{
					{Weight: 10, PodAffinityTerm: groupTerm(group, v1.LabelTopologyZone)},
				},
			}).SpreadConstraint(v1.TopologySpreadConstraint{
				MaxSkew: 3, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.DoNotSchedule,
				LabelSelector: selector,
			}).SpreadConstraint(v1.TopologySpreadConstraint{
				MaxSkew: 1, TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.ScheduleAnyway,
				LabelSelector: selector,
			})
		}
		out = append(out, framework.NewQueuedPodInfo(p.Obj(), time.Time{}))
	}
	return out
}

// newBenchScheduler builds a Scheduler with the default profile over a cache
// holding nodes and pods, with no apiserver: the informer factory of a fake
// clientset is never started, so the listers plugins ask for (namespaces,
// Services, controllers) are empty. percentageOfNodesToScore is adaptive,
// as by default.
func newBenchScheduler(b testing.TB, nodes []*v1.Node, pods []*v1.Pod) *minisched.Scheduler {
	return newBenchSchedulerWith(b, nodes, pods, benchOptions{})
}

// benchOptions change newBenchSchedulerWith's scheduler.
type benchOptions struct {
	// batching configures PodTopologySpread as upstream's batching
	// benchmarks do (batchingArgs).
	batching bool
	// metrics gives the framework and the queue a metrics registry, as the
	// scheduler binary has: a sample of the cycles then times each plugin
	// call.
	metrics bool
}

// batchingArgs is upstream's batching configuration of PodTopologySpread
// (scheduler_perf's batching/scheduler-config-no-topology.yaml): no
// default constraints, so that pods without constraints of their own sign.
var batchingArgs = configv1.PluginConfig{Name: "PodTopologySpread", Args: runtime.RawExtension{
	Raw: []byte(`{"kind":"PodTopologySpreadArgs","apiVersion":"kubescheduler.config.k8s.io/v1","defaultingType":"List"}`)}}

// newBenchSchedulerWith is newBenchScheduler with opts.
func newBenchSchedulerWith(b testing.TB, nodes []*v1.Node, pods []*v1.Pod, opts benchOptions) *minisched.Scheduler {
	ctx := context.Background()
	logger := klog.Background()
	c := cache.New(0)
	for _, n := range nodes {
		c.AddNode(logger, n)
	}
	for _, p := range pods {
		if err := c.AddPod(logger, p); err != nil {
			b.Fatal(err)
		}
	}
	snapshot := cache.NewEmptySnapshot()
	client := fake.NewClientset()
	profile := &configv1.KubeSchedulerProfile{
		SchedulerName: ptr.To(benchProfileName),
		Plugins:       scheduler.DefaultPlugins(),
	}
	if opts.batching {
		profile.PluginConfig = []configv1.PluginConfig{batchingArgs}
	}
	// The factory is never started: the listers plugins ask for, the DRA
	// state's included, stay empty.
	factory := informers.NewSharedInformerFactory(client, 0)
	draManager := dramanager.New(logger, factory, client)
	b.Cleanup(draManager.Stop)
	frameworkOpts := []framework.Option{framework.WithSnapshotSharedLister(snapshot), framework.WithClientSet(client),
		framework.WithInformerFactory(factory), framework.WithSharedDRAManager(draManager)}
	var queueOpts []queue.Option
	var m *metrics.Metrics
	if opts.metrics {
		m = metrics.New()
		frameworkOpts = append(frameworkOpts, framework.WithMetrics(m))
		queueOpts = append(queueOpts, queue.WithMetrics(m))
	}
	schedFramework, err := framework.NewFramework(ctx, plugins.NewInTreeRegistry(), profile, frameworkOpts...)
	if err != nil {
		b.Fatal(err)
	}
	// The first refresh copies every NodeInfo; later cycles copy only the
	// one node the previous cycle assumed a pod on and forgot. Do it here,
	// not in the first timed iteration.
	if err := c.UpdateSnapshot(logger, snapshot); err != nil {
		b.Fatal(err)
	}
	q := queue.New(schedFramework.QueueSortFunc(), map[string]queue.Profile{benchProfileName: schedFramework}, queueOpts...)
	schedFramework.SetPodNominator(q)
	schedFramework.SetPodActivator(q)
	return minisched.NewBenchScheduler(c, q, snapshot, schedFramework, client, 0, m)
}

// BenchmarkScheduleOne measures the scheduling cycle of one pod with the
// default profile: snapshot refresh, PreFilter, Filter over the nodes
// percentageOfNodesToScore asks for (adaptive: all of 100 nodes, 46% of
// 500, 42% of 1000, 10% of 5000), PreScore, Score, selectHost, then assume,
// Reserve and Permit. Each iteration schedules the next of benchGroups
// fresh pods and then undoes it (Unreserve, ForgetPod), so every iteration
// sees the same cluster: what the undo costs (one NodeInfo copied by the
// next snapshot refresh) is measured with it.
//
// Workloads: "plain" pods have only requests, a label and an image;
// "affinity" pods add required and preferred pod anti-affinity and
// topology spread constraints (see benchIncomingPods). Both run on the same
// clusters, where the first pod on each node has required anti-affinity.
func BenchmarkScheduleOne(b *testing.B) {
	for _, numNodes := range []int{100, 500, 1000, 5000} {
		nodes, pods := benchCluster(numNodes)
		for _, workload := range []string{"plain", "affinity"} {
			b.Run(fmt.Sprintf("nodes=%d/workload=%s", numNodes, workload), func(b *testing.B) {
				scheduleAndUndoLoop(b, newBenchScheduler(b, nodes, pods), workload)
			})
		}
	}
}

// BenchmarkScheduleOneLiveView is BenchmarkScheduleOne's plain workload on
// 500 nodes with the live view off (no Watcher), attached while no page is
// open (a Watcher that is not Watching: what every cycle pays for the
// view), and watched (the scores per plugin are kept for the record).
func BenchmarkScheduleOneLiveView(b *testing.B) {
	nodes, pods := benchCluster(500)
	for _, view := range []string{"off", "idle", "watched"} {
		b.Run("view="+view, func(b *testing.B) {
			s := newBenchScheduler(b, nodes, pods)
			if view != "off" {
				v := web.New()
				s.SetWatcher(v)
				if view == "watched" {
					openStream(b, v)
				}
			}
			scheduleAndUndoLoop(b, s, "plain")
		})
	}
}

// BenchmarkScheduleOneClusterMap is BenchmarkScheduleOne's plain workload
// with the live view attached: no page open (page=none), a page's stream
// open (page=stream: the queue, the attempts and, at most once a second,
// the cluster map's document), and the same with a client also reading
// /api/cluster four times a second (page=stream+map4Hz), more often than
// any page does. At 500 nodes the document lists every node; at 5,000 it
// is the zones' summary. The map must not slow the scheduler.
func BenchmarkScheduleOneClusterMap(b *testing.B) {
	for _, numNodes := range []int{500, 5000} {
		nodes, pods := benchCluster(numNodes)
		for _, page := range []string{"none", "stream", "stream+map4Hz"} {
			b.Run(fmt.Sprintf("nodes=%d/page=%s", numNodes, page), func(b *testing.B) {
				s := newBenchScheduler(b, nodes, pods)
				v := web.New()
				s.SetWatcher(v)
				b.Cleanup(v.Attach(web.Source{Scheduler: s}))
				if page != "none" {
					srv := openStream(b, v)
					if page == "stream+map4Hz" {
						readEvery(b, srv.URL+"/api/cluster", 250*time.Millisecond)
					}
				}
				scheduleAndUndoLoop(b, s, "plain")
			})
		}
	}
}

// readEvery reads url every interval until the benchmark ends.
func readEvery(b *testing.B, url string, interval time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	b.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return
			}
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

// scheduleAndUndoLoop is the timed loop of BenchmarkScheduleOne: each
// iteration schedules the next pod of workload with s and undoes it.
func scheduleAndUndoLoop(b *testing.B, s *minisched.Scheduler, workload string) {
	schedFramework := s.Profiles[benchProfileName]
	incoming := benchIncomingPods(workload)
	ctx := klog.NewContext(context.Background(), klog.Background())
	i := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		podInfo := incoming[i%len(incoming)]
		i++
		if status := s.ScheduleAndUndo(ctx, schedFramework, podInfo); !status.IsSuccess() {
			b.Fatalf("pod %s: %v", podInfo.Pod.Name, status.AsError())
		}
	}
}

// openStream opens the view's stream, as a page does, until the benchmark
// ends, and returns once the view is Watching, with the view's server.
func openStream(b *testing.B, v *web.View) *httptest.Server {
	b.Helper()
	srv := httptest.NewServer(v.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	// The stream ends when its client goes; only then can the server close.
	b.Cleanup(func() { cancel(); srv.Close() })
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/stream", nil)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
	}()
	if !v.Watching() {
		b.Fatal("the view does not watch with a stream open")
	}
	return srv
}

// plainNodes returns n nodes of 4 CPUs, the given memory and 110 pods, with
// no label but their hostname.
func plainNodes(n int, memory string) []*v1.Node {
	var nodes []*v1.Node
	for i := range n {
		name := fmt.Sprintf("node-%05d", i)
		nodes = append(nodes, st.MakeNode().Name(name).Label(v1.LabelHostname, name).
			Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "4", v1.ResourceMemory: memory, v1.ResourcePods: "110"}).Obj())
	}
	return nodes
}

// BenchmarkScheduleOneBatching measures the scheduling cycles of upstream's
// batching workload ResourceSaturation: nodes of 4 CPUs and pods of 3, so
// each pod takes a node of its own, one after the other, each assumed where
// it went. With the default profile no pod is signed (PodTopologySpread's
// system default constraints refuse), so every cycle filters and scores its
// share of the nodes; with PodTopologySpread's defaultingType List and no
// default constraints (upstream's batching configuration), every pod after
// the first of a run of alike pods tries the next node of the first one's
// ranking, and only that node, until the ranking is older than 500 ms.
func BenchmarkScheduleOneBatching(b *testing.B) {
	for _, numNodes := range []int{500, 5000} {
		nodes := plainNodes(numNodes, "16Gi")
		for _, config := range []string{"default", "batching"} {
			b.Run(fmt.Sprintf("nodes=%d/config=%s", numNodes, config), func(b *testing.B) {
				ctx := klog.NewContext(context.Background(), klog.Background())
				var s *minisched.Scheduler
				i := 0
				b.ReportAllocs()
				for b.Loop() {
					if i%numNodes == 0 {
						// Every node is taken: start again on an empty cluster.
						b.StopTimer()
						s = newBenchSchedulerWith(b, nodes, nil, benchOptions{batching: config == "batching"})
						b.StartTimer()
					}
					pod := st.MakePod().Namespace("default").Name(fmt.Sprintf("p-%d", i)).UID(fmt.Sprintf("u-%d", i)).
						SchedulerName(benchProfileName).Req(map[v1.ResourceName]string{v1.ResourceCPU: "3"}).Obj()
					i++
					s.Queue.Add(klog.Background(), pod)
					if status := s.ScheduleNext(ctx, s.Profiles[benchProfileName]); !status.IsSuccess() {
						b.Fatalf("pod %s: %v", pod.Name, status.AsError())
					}
				}
			})
		}
	}
}

// BenchmarkSchedulingBasic measures what the scheduler process does for a
// pod of `make bench`'s SchedulingBasic workload (scheduler_perf's
// SchedulingBasic: node-default.yaml's nodes, pod-default.yaml's pods) short
// of binding it: the pod is added to the queue (PreEnqueue, signing), popped,
// and scheduled with the default profile, with metrics as the binary
// records them (every extension point, plugin calls in a sample of the
// cycles), and left assumed where it went, so each cycle sees the pods
// before it, as in the bench. The cluster starts again empty every 10000
// pods. Beside the wall time it reports cpu-ns/op, the process's CPU time
// (user and system, every goroutine and the garbage collector's) per pod:
// what the scheduler takes from an apiserver sharing its cores.
func BenchmarkSchedulingBasic(b *testing.B) {
	for _, numNodes := range []int{500, 5000} {
		nodes := plainNodes(numNodes, "32Gi") // node-default.yaml's
		b.Run(fmt.Sprintf("nodes=%d", numNodes), func(b *testing.B) {
			ctx := klog.NewContext(context.Background(), klog.Background())
			var s *minisched.Scheduler
			i := 0
			var cpu time.Duration
			b.ReportAllocs()
			for b.Loop() {
				if i%10000 == 0 {
					b.StopTimer()
					s = newBenchSchedulerWith(b, nodes, nil, benchOptions{metrics: true})
					goruntime.GC() // not the garbage of the setup
					b.StartTimer()
					cpu -= processCPU(b)
				}
				pod := st.MakePod().Namespace("default").Name(fmt.Sprintf("pod-%d", i)).UID(fmt.Sprintf("u-%d", i)).
					SchedulerName(benchProfileName).
					Req(map[v1.ResourceName]string{v1.ResourceCPU: "100m", v1.ResourceMemory: "500Mi"}).Obj()
				i++
				s.Queue.Add(klog.Background(), pod)
				if status := s.ScheduleNext(ctx, s.Profiles[benchProfileName]); !status.IsSuccess() {
					b.Fatalf("pod %s: %v", pod.Name, status.AsError())
				}
				if i%10000 == 0 {
					cpu += processCPU(b)
				}
			}
			if i%10000 != 0 {
				cpu += processCPU(b)
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(i), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time (user and system) the test process has used.
func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// TestBenchSchedulers checks that the benchmarks' schedulers can be built
// and schedule a pod, with either configuration: benchmarks do not run in
// `make test`, and a benchmark that cannot start measures nothing.
func TestBenchSchedulers(t *testing.T) {
	nodes, pods := benchCluster(10)
	for _, batching := range []bool{false, true} {
		t.Run(fmt.Sprintf("batching=%v", batching), func(t *testing.T) {
			s := newBenchSchedulerWith(t, nodes, pods, benchOptions{batching: batching})
			ctx := klog.NewContext(context.Background(), klog.Background())
			for _, podInfo := range benchIncomingPods("plain")[:3] {
				if status := s.ScheduleAndUndo(ctx, s.Profiles[benchProfileName], podInfo); !status.IsSuccess() {
					t.Fatalf("pod %s: %v", podInfo.Pod.Name, status.AsError())
				}
			}
		})
	}
}
