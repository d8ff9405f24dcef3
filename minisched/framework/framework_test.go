// This file tests a profile built from its configuration, and holds what the
// runners' tests share: a fake plugin of every extension point, a profile
// made of such plugins, nodes and a pod.

package framework

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
)

// fakePlugin implements every extension point; its behaviour per node or
// pod is set by its fields, and every call is logged.
type fakePlugin struct {
	name string
	log  *callLog

	filterFail map[string]*Status // node → status
	score      map[string]int64   // node → raw score
	normalize  bool               // scale scores so the best is 100
	preScore   *Status
	reserve    *Status
	permit     *Status
	permitWait time.Duration
	bind       *Status
}

type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(s string) { l.mu.Lock(); l.calls = append(l.calls, s); l.mu.Unlock() }
func (l *callLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

func (f *fakePlugin) Name() string { return f.name }
func (f *fakePlugin) Less(a, b QueuedEntity) bool {
	return a.Params().Timestamp.Before(b.Params().Timestamp)
}
func (f *fakePlugin) PreFilter(context.Context, *CycleState, *v1.Pod, []*NodeInfo) (*PreFilterResult, *Status) {
	return nil, nil
}
func (f *fakePlugin) PreFilterExtensions() PreFilterExtensions { return nil }
func (f *fakePlugin) Filter(_ context.Context, _ *CycleState, _ *v1.Pod, ni *NodeInfo) *Status {
	f.log.add("Filter/" + f.name + "/" + ni.Node().Name)
	return f.filterFail[ni.Node().Name]
}
func (f *fakePlugin) PreScore(context.Context, *CycleState, *v1.Pod, []*NodeInfo) *Status {
	return f.preScore
}
func (f *fakePlugin) Score(_ context.Context, _ *CycleState, _ *v1.Pod, ni *NodeInfo) (int64, *Status) {
	return f.score[ni.Node().Name], nil
}
func (f *fakePlugin) ScoreExtensions() ScoreExtensions {
	if f.normalize {
		return f
	}
	return nil
}
func (f *fakePlugin) NormalizeScore(_ context.Context, _ *CycleState, _ *v1.Pod, scores NodeScoreList) *Status {
	var best int64
	for _, s := range scores {
		best = max(best, s.Score)
	}
	for i := range scores {
		if best > 0 {
			scores[i].Score = scores[i].Score * MaxNodeScore / best
		}
	}
	return nil
}
func (f *fakePlugin) Reserve(context.Context, *CycleState, *v1.Pod, string) *Status {
	f.log.add("Reserve/" + f.name)
	return f.reserve
}
func (f *fakePlugin) Unreserve(context.Context, *CycleState, *v1.Pod, string) {
	f.log.add("Unreserve/" + f.name)
}
func (f *fakePlugin) Permit(context.Context, *CycleState, *v1.Pod, string) (*Status, time.Duration) {
	return f.permit, f.permitWait
}
func (f *fakePlugin) Bind(context.Context, *CycleState, *v1.Pod, string) *Status {
	f.log.add("Bind/" + f.name)
	return f.bind
}

// newTestFramework builds a profile whose multiPoint enables the given fake
// plugins in order (weights from weights), plus a fake QueueSort.
func newTestFramework(t *testing.T, plugins []*fakePlugin, weights map[string]int32, opts ...Option) *Framework {
	t.Helper()
	r := Registry{}
	prof := &configv1.KubeSchedulerProfile{SchedulerName: ptr.To("test"), Plugins: &configv1.Plugins{}}
	for _, p := range plugins {
		p := p
		r[p.name] = func(context.Context, *runtime.RawExtension, Handle) (Plugin, error) { return p, nil }
		entry := configv1.Plugin{Name: p.name}
		if w, ok := weights[p.name]; ok {
			entry.Weight = ptr.To(w)
		}
		prof.Plugins.MultiPoint.Enabled = append(prof.Plugins.MultiPoint.Enabled, entry)
	}
	// Exactly one QueueSort: the first plugin only.
	for _, p := range plugins[1:] {
		prof.Plugins.QueueSort.Disabled = append(prof.Plugins.QueueSort.Disabled, configv1.Plugin{Name: p.name})
	}
	f, err := NewFramework(context.Background(), r, prof, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func testNodes(names ...string) []*NodeInfo {
	var out []*NodeInfo
	for _, n := range names {
		ni := NewNodeInfo()
		ni.SetNode(&v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Status:     v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourcePods: resource.MustParse("10")}},
		})
		out = append(out, ni)
	}
	return out
}

var testPod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p"}}

func TestPluginsWithoutEnqueueExtensionsGetEveryEvent(t *testing.T) {
	f := newTestFramework(t, []*fakePlugin{{name: "A", log: &callLog{}}}, nil)
	hints := f.QueueingHints()["A"]
	if len(hints) != 1 || !hints[0].Event.Match(ClusterEvent{Resource: Node, ActionType: UpdateNodeLabel}) {
		t.Errorf("hints = %+v, want a wildcard registration", hints)
	}
}
