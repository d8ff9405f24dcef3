package kubeletranking

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/kubernetes/pkg/kubelet/eviction"
	evictionapi "k8s.io/kubernetes/pkg/kubelet/eviction/api"
	"k8s.io/utils/clock"
)

// TestKubeletEvictionOrder proves the order in which the kubelet evicts
// chapter 18's six pods under memory pressure: A B E F D C.
//
// Nothing here re-implements the ranking. The test builds upstream's own
// eviction manager (eviction.NewManager, Kubernetes v1.37.1) and starts its
// control loop (Manager.Start) against a fake node: a stats provider that
// reports memory.available below the hard threshold memory.available<100Mi
// and each pod's working set, an active-pods list, and a kill function that
// records the pod's name. Each pass of the loop, upstream's synchronize ranks
// the pods still active with rankMemoryPressure (over its request first, then
// lower priority, then larger use above the request) and kills the first, and
// only that one; then it waits for the pod to be cleaned up and looks again.
// So the six kills, in the order the loop makes them, are upstream's ranking.
//
// The fake node holds memory.available low after every kill, where a real
// node would recover: the pressure never lifts, so the loop ranks and evicts
// until no pod is left, and the whole order shows.
//
// The loop waits on two kinds of timer: the injected clock's ticker while a
// killed pod is cleaned up, and a plain time.After between passes, which no
// fake clock reaches. So the manager gets the real clock, as in the kubelet,
// and the test runs inside a synctest bubble: time there is virtual and moves
// only when every goroutine is blocked, which makes the passes deterministic
// and the kubelet's ten-second monitoring period cost nothing.
func TestKubeletEvictionOrder(t *testing.T) {
	// The chapter's table, in the order the pods are created.
	pods := []*v1.Pod{
		makePod("A", 0, nil, nil),                   // BestEffort
		makePod("B", 0, memory("500Mi"), nil),       // Burstable
		makePod("C", 0, memory("500Mi"), nil),       // Burstable
		makePod("D", 0, guaranteed(), guaranteed()), // Guaranteed: requests = limits
		makePod("E", 1000, nil, nil),                // BestEffort
		makePod("F", -10, memory("100Mi"), nil),     // Burstable
	}
	workingSet := map[string]string{
		"A": "200Mi", "B": "600Mi", "C": "300Mi", "D": "900Mi", "E": "50Mi", "F": "50Mi",
	}
	want := []string{"A", "B", "E", "F", "D", "C"}

	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig())))
		node := newFakeNode(pods, workingSet, resource.MustParse("50Mi"))
		config := eviction.Config{
			// The kubelet's default hard threshold for memory: evict at once,
			// no grace period, when less than 100Mi is available.
			Thresholds: []evictionapi.Threshold{{
				Signal:   evictionapi.SignalMemoryAvailable,
				Operator: evictionapi.OpLessThan,
				Value:    evictionapi.ThresholdValue{Quantity: ptrTo(resource.MustParse("100Mi"))},
			}},
			PressureTransitionPeriod: 5 * time.Minute, // the kubelet's default
		}
		manager, _ := eviction.NewManager(node, config, node.kill, noGC{}, noGC{},
			&record.FakeRecorder{}, &v1.ObjectReference{Kind: "Node", Name: "node-1"},
			clock.RealClock{}, false)
		manager.Start(ctx, node, node.activePods, node.cleanedUp, 10*time.Second)

		// Stop the loop before the test ends, and let it exit, so it does not
		// log to a finished test. Once kills is closed the loop sleeps between
		// passes in a select that watches ctx, so it exits at once.
		defer func() {
			cancel()
			synctest.Wait()
		}()

		var got []string
		deadline := time.After(time.Hour) // virtual time: the six passes take six seconds
		for drained := false; !drained; {
			select {
			case name, open := <-node.kills:
				if open {
					got = append(got, name)
				} else {
					drained = true
				}
			case <-deadline:
				t.Fatalf("after an hour the eviction manager had killed %v and still saw active pods; want %v", got, want)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("eviction order = %v, want %v", got, want)
		}
		if !manager.IsUnderMemoryPressure() {
			t.Errorf("IsUnderMemoryPressure() = false after evicting for memory, want true")
		}
	})
}

// fakeNode stands in for the kubelet parts the eviction manager talks to.
// The manager's loop goroutine calls its methods while the test reads kills,
// so the pod state is under mu.
type fakeNode struct {
	// available is the node's memory.available in bytes, held under the
	// threshold.
	available uint64
	// workingSet is each pod's memory working set in bytes, by pod name.
	workingSet map[string]uint64
	// kills receives the name of each pod the manager kills, in order. It has
	// room for every pod, so the kill function never blocks on the test, and
	// it is closed on the pass that finds no pod left to rank.
	kills chan string
	// closeKills closes kills once.
	closeKills sync.Once

	mu sync.Mutex
	// pods are the pods bound to the node, killed or not.
	pods []*v1.Pod
	// killed holds the names of the pods the manager has killed.
	killed map[string]bool
}

func newFakeNode(pods []*v1.Pod, workingSet map[string]string, available resource.Quantity) *fakeNode {
	n := &fakeNode{
		available:  uint64(available.Value()),
		workingSet: map[string]uint64{},
		kills:      make(chan string, len(pods)),
		pods:       pods,
		killed:     map[string]bool{},
	}
	for name, s := range workingSet {
		q := resource.MustParse(s)
		n.workingSet[name] = uint64(q.Value())
	}
	return n
}

// activePods is the manager's eviction.ActivePodsFunc: the pods not killed
// yet. The manager ranks exactly these on each pass. On the first pass that
// finds none, every kill has been sent, so it closes kills: the manager
// has nothing more to evict, and afterwards sleeps between passes in a select
// that watches its context.
func (n *fakeNode) activePods() []*v1.Pod {
	active := n.alive()
	if len(active) == 0 {
		n.closeKills.Do(func() { close(n.kills) })
	}
	return active
}

// alive returns the pods not killed yet.
func (n *fakeNode) alive() []*v1.Pod {
	n.mu.Lock()
	defer n.mu.Unlock()
	var active []*v1.Pod
	for _, p := range n.pods {
		if !n.killed[p.Name] {
			active = append(active, p)
		}
	}
	return active
}

// kill is the manager's eviction.KillPodFunc. The kubelet's blocks until the
// pod's containers are stopped; here the pod is gone at once.
func (n *fakeNode) kill(pod *v1.Pod, _ bool, _ *int64, _ func(*v1.PodStatus)) error {
	n.mu.Lock()
	n.killed[pod.Name] = true
	n.mu.Unlock()
	n.kills <- pod.Name
	return nil
}

// cleanedUp is the manager's eviction.PodCleanedUpFunc. After a kill the
// manager polls it (every second) before its next pass.
func (n *fakeNode) cleanedUp(pod *v1.Pod) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.killed[pod.Name]
}

// Get is the stats.SummaryProvider method the manager calls on each pass. It
// reports the node's memory and every pod's working set, stamped now: the
// manager acts on a threshold only when its observation is newer than the
// last pass's, as fresh stats from cAdvisor would be.
func (n *fakeNode) Get(context.Context, bool) (*statsapi.Summary, error) {
	now := metav1.Now()
	nodeWorkingSet := uint64(0)
	var podStats []statsapi.PodStats
	for _, p := range n.alive() {
		ws := n.workingSet[p.Name]
		nodeWorkingSet += ws
		podStats = append(podStats, statsapi.PodStats{
			PodRef: statsapi.PodReference{Name: p.Name, Namespace: p.Namespace, UID: string(p.UID)},
			Memory: &statsapi.MemoryStats{Time: now, WorkingSetBytes: &ws},
		})
	}
	available := n.available
	return &statsapi.Summary{
		Node: statsapi.NodeStats{
			NodeName: "node-1",
			Memory:   &statsapi.MemoryStats{Time: now, AvailableBytes: &available, WorkingSetBytes: &nodeWorkingSet},
		},
		Pods: podStats,
	}, nil
}

// GetCPUAndMemoryStats completes stats.SummaryProvider; the eviction manager
// does not call it.
func (n *fakeNode) GetCPUAndMemoryStats(ctx context.Context) (*statsapi.Summary, error) {
	return n.Get(ctx, false)
}

// HasDedicatedImageFs and HasDedicatedContainerFs make fakeNode the
// manager's eviction.DiskInfoProvider: one filesystem, which only matters for
// the disk signals.
func (n *fakeNode) HasDedicatedImageFs(context.Context) (bool, error)     { return false, nil }
func (n *fakeNode) HasDedicatedContainerFs(context.Context) (bool, error) { return false, nil }

// noGC is the manager's eviction.ImageGC and eviction.ContainerGC. Deleting
// images and dead containers frees disk, not memory, so under memory pressure
// the manager never calls them.
type noGC struct{}

func (noGC) DeleteUnusedImages(context.Context) error        { return nil }
func (noGC) DeleteAllUnusedContainers(context.Context) error { return nil }

// makePod returns a one-container pod with the given priority, requests and
// limits. The UID is the name: the manager finds a pod's stats by UID.
func makePod(name string, priority int32, requests, limits v1.ResourceList) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec: v1.PodSpec{
			Priority: &priority,
			Containers: []v1.Container{{
				Name:      "main",
				Resources: v1.ResourceRequirements{Requests: requests, Limits: limits},
			}},
		},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
}

// memory is a resource list with a memory quantity only.
func memory(q string) v1.ResourceList {
	return v1.ResourceList{v1.ResourceMemory: resource.MustParse(q)}
}

// guaranteed is D's requests and limits: equal, for cpu and memory both.
func guaranteed() v1.ResourceList {
	return v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("500m"),
		v1.ResourceMemory: resource.MustParse("1Gi"),
	}
}

func ptrTo[T any](v T) *T { return &v }
