// Tests of the cache debugger: the comparison of the cache with the
// informers, the dump, and the signal that triggers both.

package debugger

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/queue"
)

// newTestDebugger returns a CacheDebugger with listers over informers that
// hold nodes and pods (added to their indexers: no apiserver, no watch), a
// cache holding cachedNodes, cachedPods and assumedPods, and an empty queue
// with one profile, plugintesting.ProfileName, sorted by PrioritySort. The
// queue is returned too, for tests that add pods to it.
func newTestDebugger(t *testing.T, nodes []*v1.Node, pods []*v1.Pod,
	cachedNodes []*v1.Node, cachedPods, assumedPods []*v1.Pod) (*CacheDebugger, *queue.PriorityQueue) {
	t.Helper()
	logger := klog.Background()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	nodeInformer := factory.Core().V1().Nodes()
	podInformer := factory.Core().V1().Pods()
	for _, n := range nodes {
		if err := nodeInformer.Informer().GetIndexer().Add(n); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pods {
		if err := podInformer.Informer().GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	c := cache.New(0)
	for _, n := range cachedNodes {
		c.AddNode(logger, n)
	}
	for _, p := range cachedPods {
		if err := c.AddPod(logger, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range assumedPods {
		if err := c.AssumePod(logger, p); err != nil {
			t.Fatal(err)
		}
	}
	profile, err := plugintesting.NewFramework(context.Background(), plugins.NewInTreeRegistry(), &configv1.Plugins{
		QueueSort: plugintesting.Enable("PrioritySort"),
		Bind:      plugintesting.Enable("DefaultBinder"),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := queue.New(profile.QueueSortFunc(), map[string]queue.Profile{plugintesting.ProfileName: profile})
	return New(nodeInformer.Lister(), podInformer.Lister(), c, q), q
}

func TestCompare(t *testing.T) {
	n1 := st.MakeNode().Name("n1").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "4"}).Obj()
	n2 := st.MakeNode().Name("n2").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "4"}).Obj()
	cpu := func(q string) map[v1.ResourceName]string { return map[v1.ResourceName]string{v1.ResourceCPU: q} }
	pod := func(name, node, req string) *v1.Pod {
		return st.MakePod().Namespace("ns").Name(name).UID(name + "-uid").NodeName(node).Req(cpu(req)).Obj()
	}
	a, b := pod("a", "n1", "1"), pod("b", "n2", "2")
	pending := pod("c", "", "500m")
	millis := func(m int64) framework.Resource { return framework.Resource{MilliCPU: m} }
	place := func(p *v1.Pod, cacheNode, informerNode string) PodPlacement {
		return PodPlacement{Key: "ns/" + p.Name, UID: p.UID, CacheNode: cacheNode, InformerNode: informerNode}
	}

	tests := []struct {
		name         string
		nodes        []*v1.Node
		pods         []*v1.Pod
		cachedNodes  []*v1.Node
		cachedPods   []*v1.Pod
		assumedPods  []*v1.Pod
		want         CacheComparison
		wantEmpty    bool
		wantInString []string
	}{
		{
			name:  "the cache equals the informers",
			nodes: []*v1.Node{n1, n2}, pods: []*v1.Pod{a, b, pending},
			cachedNodes: []*v1.Node{n1, n2}, cachedPods: []*v1.Pod{a, b},
			wantEmpty:    true,
			wantInString: []string{"the cache matches the informers"},
		},
		{
			name:  "a node missing from the cache, another only in it",
			nodes: []*v1.Node{n1, n2}, pods: []*v1.Pod{a},
			cachedNodes: []*v1.Node{n1, st.MakeNode().Name("n3").Obj()}, cachedPods: []*v1.Pod{a},
			want:         CacheComparison{MissingNodes: []string{"n2"}, ExtraNodes: []string{"n3"}},
			wantInString: []string{"nodes missing from the cache: n2", "nodes only in the cache: n3"},
		},
		{
			name:  "a bound pod missing from the cache",
			nodes: []*v1.Node{n1, n2}, pods: []*v1.Pod{a, b},
			cachedNodes: []*v1.Node{n1, n2}, cachedPods: []*v1.Pod{a},
			want: CacheComparison{
				MissingPods:         []PodPlacement{place(b, "", "n2")},
				RequestedMismatches: []RequestedMismatch{{Node: "n2", Cache: millis(0), Informer: millis(2000)}},
			},
			wantInString: []string{`pods missing from the cache: ns/b (uid b-uid, cache: "", informer: "n2")`},
		},
		{
			name:  "a pod the informer no longer has",
			nodes: []*v1.Node{n1, n2}, pods: []*v1.Pod{a},
			cachedNodes: []*v1.Node{n1, n2}, cachedPods: []*v1.Pod{a, b},
			want: CacheComparison{
				ExtraPods:           []PodPlacement{place(b, "n2", "")},
				RequestedMismatches: []RequestedMismatch{{Node: "n2", Cache: millis(2000), Informer: millis(0)}},
			},
			wantInString: []string{"pods only in the cache: ns/b"},
		},
		{
			name:  "a pod on another node than the informer's",
			nodes: []*v1.Node{n1, n2}, pods: []*v1.Pod{a},
			cachedNodes: []*v1.Node{n1, n2}, cachedPods: []*v1.Pod{pod("a", "n2", "1")},
			want: CacheComparison{
				MisplacedPods: []PodPlacement{place(a, "n2", "n1")},
				RequestedMismatches: []RequestedMismatch{
					{Node: "n1", Cache: millis(0), Informer: millis(1000)},
					{Node: "n2", Cache: millis(1000), Informer: millis(0)},
				},
			},
			wantInString: []string{`pods on another node in the cache: ns/a (uid a-uid, cache: "n2", informer: "n1")`},
		},
		{
			name:  "a pod assumed before the informer reports its binding is no difference",
			nodes: []*v1.Node{n1, n2}, pods: []*v1.Pod{a, pending},
			cachedNodes: []*v1.Node{n1, n2}, cachedPods: []*v1.Pod{a}, assumedPods: []*v1.Pod{pod("c", "n2", "500m")},
			want:         CacheComparison{AssumedPods: []PodPlacement{place(pending, "n2", "")}},
			wantEmpty:    true,
			wantInString: []string{"the cache matches the informers", `assumed pods: ns/c (uid c-uid, cache: "n2", informer: "")`},
		},
		{
			name:  "an assumed pod the informer already has bound is counted once",
			nodes: []*v1.Node{n1, n2}, pods: []*v1.Pod{a, pod("c", "n2", "500m")},
			cachedNodes: []*v1.Node{n1, n2}, cachedPods: []*v1.Pod{a}, assumedPods: []*v1.Pod{pod("c", "n2", "500m")},
			want:      CacheComparison{AssumedPods: []PodPlacement{place(pending, "n2", "n2")}},
			wantEmpty: true,
		},
		{
			name: "requests the cache did not follow (a missed resize)",
			// The informer's copy of a asks for 3 cpu; the cache counts 1.
			nodes: []*v1.Node{n1, n2}, pods: []*v1.Pod{pod("a", "n1", "3")},
			cachedNodes: []*v1.Node{n1, n2}, cachedPods: []*v1.Pod{a},
			want: CacheComparison{
				RequestedMismatches: []RequestedMismatch{{Node: "n1", Cache: millis(1000), Informer: millis(3000)}},
			},
			wantInString: []string{"requested resources that differ: n1 (cache: cpu=1000m memory=0 ephemeral-storage=0, " +
				"informer: cpu=3000m memory=0 ephemeral-storage=0)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := newTestDebugger(t, tt.nodes, tt.pods, tt.cachedNodes, tt.cachedPods, tt.assumedPods)
			got, err := d.Comparer.Compare()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("Compare() (-want +got):\n%s", diff)
			}
			if got.IsEmpty() != tt.wantEmpty {
				t.Errorf("IsEmpty() = %v, want %v", got.IsEmpty(), tt.wantEmpty)
			}
			for _, want := range tt.wantInString {
				if !strings.Contains(got.String(), want) {
					t.Errorf("String() = %q, want it to contain %q", got.String(), want)
				}
			}
		})
	}
}

// bufferedLogger logs into memory, for tests that read what was logged.
func bufferedLogger(t *testing.T) (klog.Logger, ktesting.Buffer) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	return logger, logger.GetSink().(ktesting.Underlier).GetBuffer()
}

// messages lists the messages of the log entries in buf.
func messages(buf ktesting.Buffer) []string {
	var out []string
	for _, e := range buf.Data() {
		out = append(out, e.Message)
	}
	return out
}

func TestDumpAll(t *testing.T) {
	n1 := st.MakeNode().Name("n1").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "4", v1.ResourcePods: "10"}).Obj()
	bound := st.MakePod().Namespace("ns").Name("bound").UID("bound-uid").NodeName("n1").
		Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
	d, q := newTestDebugger(t, []*v1.Node{n1}, []*v1.Pod{bound}, []*v1.Node{n1}, []*v1.Pod{bound}, nil)
	logger, buf := bufferedLogger(t)
	q.Add(klog.Background(), st.MakePod().Namespace("ns").Name("waiting").UID("waiting-uid").
		SchedulerName(plugintesting.ProfileName).Obj())

	d.Dumper.DumpAll(logger)
	got := messages(buf)
	want := []string{"Dump of cached NodeInfo", "Cached node", "Dump of scheduling queue"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("logged messages (-want +got):\n%s", diff)
	}
	text := buf.String()
	for _, want := range []string{
		`node="n1"`, "pods=1", `requested="cpu=1000m memory=0 ephemeral-storage=0"`,
		`allocatable="cpu=4000m memory=0 ephemeral-storage=0 pods=10"`,
		`summary="activeQ:1; backoffQ:0; unschedulableEntities:0"`, `activeQ=["ns/waiting"]`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("dump %q does not contain %q", text, want)
		}
	}
	// Whole objects stay out of the log.
	if strings.Contains(text, "bound-uid") || strings.Contains(text, "Spec") {
		t.Errorf("dump %q logs whole objects", text)
	}
}

func TestListenForSignal(t *testing.T) {
	n1 := st.MakeNode().Name("n1").Obj()
	d, _ := newTestDebugger(t, []*v1.Node{n1}, nil, nil, nil, nil)
	logger, buf := bufferedLogger(t)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()

	d.ListenForSignal(ctx)
	if err := syscall.Kill(syscall.Getpid(), compareSignal); err != nil {
		t.Fatal(err)
	}
	// One signal: a comparison (n1 is missing from the cache), then a dump.
	want := []string{"Cache mismatch", "Dump of cached NodeInfo", "Dump of scheduling queue"}
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return slices.Equal(messages(buf), want), nil })
	if err != nil {
		t.Fatalf("logged %q after %v, want %q", messages(buf), compareSignal, want)
	}
	if !strings.Contains(buf.String(), "nodes missing from the cache: n1") {
		t.Errorf("comparison %q does not name the missing node", buf.String())
	}
}
