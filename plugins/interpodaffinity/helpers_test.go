// Shared fixtures for InterPodAffinity's tests: the plugin built inside a
// real framework over a snapshot and fake namespaces, and builders for
// affinity terms.
package interpodaffinity

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
	"github.com/minisched/minisched/plugins/plugintesting"
)

// Label keys the tests use for domains.
const (
	zone     = v1.LabelTopologyZone
	hostname = v1.LabelHostname
)

// testEnv is the plugin in a framework, with the snapshot it reads.
type testEnv struct {
	pl             *InterPodAffinity
	schedFramework *framework.Framework
	snapshot       *cache.Snapshot
}

// nodeInfos returns the snapshot's NodeInfos, in its order.
func (e *testEnv) nodeInfos(t *testing.T) []*framework.NodeInfo {
	t.Helper()
	nis, err := e.snapshot.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	return nis
}

// nodeInfo returns one node's NodeInfo from the snapshot.
func (e *testEnv) nodeInfo(t *testing.T, name string) *framework.NodeInfo {
	t.Helper()
	ni, err := e.snapshot.NodeInfos().Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return ni
}

// newTestEnv builds the plugin with args through a framework whose snapshot
// holds pods and nodes and whose informers know namespaces.
func newTestEnv(t *testing.T, args *runtime.RawExtension, pods []*v1.Pod, nodes []*v1.Node,
	namespaces ...*v1.Namespace) *testEnv {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	objs := make([]runtime.Object, 0, len(namespaces))
	for _, ns := range namespaces {
		objs = append(objs, ns)
	}
	factory := informers.NewSharedInformerFactory(fake.NewSimpleClientset(objs...), 0)
	snapshot := cache.NewSnapshot(pods, nodes)

	schedFramework, pl, err := plugintesting.NewPluginFramework[*InterPodAffinity](ctx, Name, New, &configv1.Plugins{
		PreFilter: plugintesting.Enable(Name),
		Filter:    plugintesting.Enable(Name),
		PreScore:  plugintesting.Enable(Name),
		Score:     plugintesting.Enable(Name),
	}, args, framework.WithSnapshotSharedLister(snapshot), framework.WithInformerFactory(factory),
		framework.WithParallelism(2))
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	// The plugin asked for the namespace lister in New: start its informer.
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	return &testEnv{pl: pl, schedFramework: schedFramework, snapshot: snapshot}
}

// rawArgs wraps JSON args.
func rawArgs(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

// namespace returns a namespace with labels (k, v pairs).
func namespace(name string, kv ...string) *v1.Namespace {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	for i := 0; i+1 < len(kv); i += 2 {
		ns.Labels[kv[i]] = kv[i+1]
	}
	return ns
}

// term selects pods labelled key=value, in the domain of topologyKey.
func term(topologyKey, key, value string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{key: value}},
		TopologyKey:   topologyKey,
	}
}

// inNamespaces restricts t to namespaces.
func inNamespaces(t v1.PodAffinityTerm, namespaces ...string) v1.PodAffinityTerm {
	t.Namespaces = namespaces
	return t
}

// withNamespaceSelector adds a namespaceSelector matching labels (k, v
// pairs; none means the empty selector, every namespace).
func withNamespaceSelector(t v1.PodAffinityTerm, kv ...string) v1.PodAffinityTerm {
	sel := &metav1.LabelSelector{}
	if len(kv) > 0 {
		sel.MatchLabels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			sel.MatchLabels[kv[i]] = kv[i+1]
		}
	}
	t.NamespaceSelector = sel
	return t
}

// weighted gives t a weight.
func weighted(w int32, t v1.PodAffinityTerm) v1.WeightedPodAffinityTerm {
	return v1.WeightedPodAffinityTerm{Weight: w, PodAffinityTerm: t}
}

// required returns pod affinity with required terms.
func required(terms ...v1.PodAffinityTerm) *v1.PodAffinity {
	return &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}
}

// requiredAnti returns pod anti-affinity with required terms.
func requiredAnti(terms ...v1.PodAffinityTerm) *v1.PodAntiAffinity {
	return &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}
}

// preferred returns pod affinity with preferred terms.
func preferred(terms ...v1.WeightedPodAffinityTerm) *v1.PodAffinity {
	return &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: terms}
}

// preferredAnti returns pod anti-affinity with preferred terms.
func preferredAnti(terms ...v1.WeightedPodAffinityTerm) *v1.PodAntiAffinity {
	return &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: terms}
}

// node returns a node with labels (k, v pairs).
func node(name string, kv ...string) *v1.Node {
	w := st.MakeNode().Name(name)
	for i := 0; i+1 < len(kv); i += 2 {
		w.Label(kv[i], kv[i+1])
	}
	return w.Obj()
}

// pod starts a pod in namespace "default" with the given name and UID.
func pod(name string) *st.PodWrapper {
	return st.MakePod().Name(name).UID(name).Namespace("default")
}
