// Helpers the PodTopologySpread tests share: constraints in one line, and
// the plugin built on a snapshot and a fake clientset's informers.
package podtopologyspread

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/defaultbinder"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/plugins/prioritysort"
)

const (
	zoneKey = v1.LabelTopologyZone
	hostKey = v1.LabelHostname
)

// constraintOption tweaks a constraint built by hard or soft.
type constraintOption func(*v1.TopologySpreadConstraint)

// hard is a DoNotSchedule constraint selecting matchLabels.
func hard(maxSkew int32, key string, matchLabels map[string]string,
	opts ...constraintOption) v1.TopologySpreadConstraint {
	return spread(v1.DoNotSchedule, maxSkew, key, matchLabels, opts)
}

// soft is a ScheduleAnyway constraint selecting matchLabels.
func soft(maxSkew int32, key string, matchLabels map[string]string,
	opts ...constraintOption) v1.TopologySpreadConstraint {
	return spread(v1.ScheduleAnyway, maxSkew, key, matchLabels, opts)
}

func spread(when v1.UnsatisfiableConstraintAction, maxSkew int32, key string, matchLabels map[string]string,
	opts []constraintOption) v1.TopologySpreadConstraint {
	c := v1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when}
	if matchLabels != nil {
		c.LabelSelector = &metav1.LabelSelector{MatchLabels: matchLabels}
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func minDomains(n int32) constraintOption {
	return func(c *v1.TopologySpreadConstraint) { c.MinDomains = &n }
}

func affinityPolicy(p v1.NodeInclusionPolicy) constraintOption {
	return func(c *v1.TopologySpreadConstraint) { c.NodeAffinityPolicy = &p }
}

func taintsPolicy(p v1.NodeInclusionPolicy) constraintOption {
	return func(c *v1.TopologySpreadConstraint) { c.NodeTaintsPolicy = &p }
}

func matchLabelKeys(keys ...string) constraintOption {
	return func(c *v1.TopologySpreadConstraint) { c.MatchLabelKeys = keys }
}

// web is the label set most tests select.
var web = map[string]string{"app": "web"}

// zonedNode is a node named name in zone (no zone label if zone is ""), with
// its hostname label.
func zonedNode(name, zone string) *st.NodeWrapper {
	n := st.MakeNode().Name(name).Label(hostKey, name)
	if zone != "" {
		n.Label(zoneKey, zone)
	}
	return n
}

// podsOn returns n pods labelled app=web on node, named after it.
func podsOn(node string, n int) []*v1.Pod {
	var pods []*v1.Pod
	for i := range n {
		name := node + "-" + string(rune('a'+i))
		pods = append(pods, st.MakePod().Name(name).UID(name).Label("app", "web").NodeName(node).Obj())
	}
	return pods
}

// concat joins pod lists.
func concat(lists ...[]*v1.Pod) []*v1.Pod {
	var out []*v1.Pod
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// rawArgs wraps JSON args as pluginConfig holds them.
func rawArgs(s string) *runtime.RawExtension {
	if s == "" {
		return nil
	}
	return &runtime.RawExtension{Raw: []byte(s)}
}

// newHandle builds a framework to serve as the plugin's Handle: its
// snapshot holds pods and nodes, its informers list objs from a fake
// clientset.
func newHandle(t *testing.T, ctx context.Context, pods []*v1.Pod, nodes []*v1.Node,
	objs ...runtime.Object) (framework.Handle, informers.SharedInformerFactory) {
	t.Helper()
	factory := informers.NewSharedInformerFactory(fake.NewSimpleClientset(objs...), 0)
	registry := framework.Registry{prioritysort.Name: prioritysort.New, defaultbinder.Name: defaultbinder.New}
	schedFramework, err := plugintesting.NewFramework(ctx, registry, &configv1.Plugins{
		QueueSort: plugintesting.Enable(prioritysort.Name),
		Bind:      plugintesting.Enable(defaultbinder.Name),
	}, nil,
		framework.WithSnapshotSharedLister(cache.NewSnapshot(pods, nodes)),
		framework.WithInformerFactory(factory),
		framework.WithParallelism(2),
	)
	if err != nil {
		t.Fatal(err)
	}
	return schedFramework, factory
}

// newPlugin builds PodTopologySpread with args (JSON, "" for none) on a
// snapshot of pods and nodes, with objs (Services, controllers) in its
// informers, started and synced.
func newPlugin(t *testing.T, ctx context.Context, args string, pods []*v1.Pod, nodes []*v1.Node,
	objs ...runtime.Object) *PodTopologySpread {
	t.Helper()
	h, factory := newHandle(t, ctx, pods, nodes, objs...)
	pl, err := New(ctx, rawArgs(args), h)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	factory.Start(stop)
	for typ, ok := range factory.WaitForCacheSync(stop) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	return pl.(*PodTopologySpread)
}

// nodeInfos lists the snapshot's NodeInfos, as the scheduler hands them to
// PreFilter.
func nodeInfos(t *testing.T, pl *PodTopologySpread) []*framework.NodeInfo {
	t.Helper()
	nis, err := pl.sharedLister.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	return nis
}

// nodeInfo returns one node's NodeInfo from the snapshot.
func nodeInfo(t *testing.T, pl *PodTopologySpread, name string) *framework.NodeInfo {
	t.Helper()
	ni, err := pl.sharedLister.NodeInfos().Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return ni
}
