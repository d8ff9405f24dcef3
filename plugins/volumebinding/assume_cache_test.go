// Tests for the passive assume cache (kube-scheduler's
// passive_assume_cache_test.go cases): Get and ByIndex over the informer's
// store, Assume only at the stored resourceVersion, informer events dropping
// assumptions, Restore.
package volumebinding

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2/ktesting"
)

// testObj is the object the cache is tested with: metadata only.
type testObj = metav1.ObjectMeta

// testIndex indexes testObjs by their "test" annotation.
const testIndex = "testIndex"

// testInformer is a store plus the one handler a cache registers; its
// methods change the store and then deliver the event, as an informer does.
type testInformer struct {
	t       *testing.T
	indexer cache.Indexer
	handler cache.ResourceEventHandler
}

func (i *testInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	i.handler = h
	return nil, nil
}

func (i *testInformer) GetIndexer() cache.Indexer { return i.indexer }

func (i *testInformer) add(obj *testObj) {
	if err := i.indexer.Add(obj); err != nil {
		i.t.Fatal(err)
	}
	i.handler.OnAdd(obj, false)
}

func (i *testInformer) update(oldObj, obj *testObj) {
	if err := i.indexer.Update(obj); err != nil {
		i.t.Fatal(err)
	}
	i.handler.OnUpdate(oldObj, obj)
}

func (i *testInformer) delete(obj *testObj) {
	if err := i.indexer.Delete(obj); err != nil {
		i.t.Fatal(err)
	}
	i.handler.OnDelete(obj)
}

func newTestCache(t *testing.T) (*testInformer, *passiveAssumeCache[*testObj]) {
	t.Helper()
	logger, _ := ktesting.NewTestContext(t)
	inf := &testInformer{t: t, indexer: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
		testIndex: func(obj any) ([]string, error) { return []string{obj.(*testObj).Annotations["test"]}, nil },
	})}
	c, err := newAssumeCache[*testObj](logger, inf, schema.GroupResource{Resource: "tests"})
	if err != nil {
		t.Fatal(err)
	}
	return inf, c
}

func makeObj(name, version, namespace string) *testObj {
	return &testObj{Name: name, Namespace: namespace, ResourceVersion: version, Annotations: map[string]string{}}
}

// verifyObj checks that Get returns exactly want (the same pointer).
func verifyObj(t *testing.T, c *passiveAssumeCache[*testObj], key string, want *testObj) {
	t.Helper()
	got, err := c.Get(key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if got != want {
		t.Errorf("Get(%q) = %p (version %s), want %p (version %s)", key, got, got.ResourceVersion, want,
			want.ResourceVersion)
	}
}

// verifyList checks that ByIndex returns exactly want (the same pointers).
func verifyList(t *testing.T, c *passiveAssumeCache[*testObj], want map[string]*testObj, indexedValue string) {
	t.Helper()
	got, err := c.ByIndex(testIndex, indexedValue)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("ByIndex returned %d objects, want %d", len(got), len(want))
	}
	for _, obj := range got {
		if want[obj.Name] != obj {
			t.Errorf("ByIndex returned unexpected object %q (%p)", obj.Name, obj)
		}
	}
}

func TestBasicCache(t *testing.T) {
	inf, c := newTestCache(t)
	if obj, err := c.Get("nothere"); err == nil || obj != nil {
		t.Errorf("Get of a missing object = %v, %v; want a NotFound error", obj, err)
	}
	objects := map[string]*testObj{}
	for i := range 10 {
		obj := makeObj(fmt.Sprintf("test-%d", i), "1", "")
		objects[obj.Name] = obj
		inf.add(obj)
	}
	verifyList(t, c, objects, "")

	updated := makeObj("test-3", "1", "")
	inf.update(objects["test-3"], updated)
	objects[updated.Name] = updated
	verifyList(t, c, objects, "")

	deleted := objects["test-7"]
	delete(objects, deleted.Name)
	inf.delete(deleted)
	verifyList(t, c, objects, "")
}

func TestCacheWithIndex(t *testing.T) {
	inf, c := newTestCache(t)
	objects1, objects2 := map[string]*testObj{}, map[string]*testObj{}
	for i := range 10 {
		obj := makeObj(fmt.Sprintf("test-%d", i), "1", "")
		obj.Annotations["test"] = "test1"
		objects1[obj.Name] = obj
		inf.add(obj)
		obj2 := makeObj(fmt.Sprintf("test2-%d", i), "1", "")
		obj2.Annotations["test"] = "test2"
		objects2[obj2.Name] = obj2
		inf.add(obj2)
	}
	verifyList(t, c, objects1, "test1")
	verifyList(t, c, objects2, "test2")

	updated := makeObj("test-3", "2", "")
	updated.Annotations["test"] = "test1"
	inf.update(objects1[updated.Name], updated)
	objects1[updated.Name] = updated
	verifyList(t, c, objects1, "test1")
	verifyList(t, c, objects2, "test2")

	deleted := objects1["test-7"]
	delete(objects1, deleted.Name)
	inf.delete(deleted)
	verifyList(t, c, objects1, "test1")
	verifyList(t, c, objects2, "test2")
}

func TestAssume(t *testing.T) {
	tests := []struct {
		name         string
		old, new     *testObj
		wantAssumed  bool
		wantErrorMsg string
	}{
		{name: "success-same-version", old: makeObj("pvc1", "5", "ns1"), new: makeObj("pvc1", "5", "ns1"),
			wantAssumed: true},
		{name: "fail-new-higher-version", old: makeObj("pvc1", "5", "ns1"), new: makeObj("pvc1", "6", "ns1"),
			wantErrorMsg: `"ns1/pvc1" is out of sync (stored: 5, assume: 6)`},
		{name: "fail-old-not-found", old: makeObj("pvc2", "5", "ns1"), new: makeObj("pvc1", "5", "ns1"),
			wantErrorMsg: `tests "ns1/pvc1" not found`},
		{name: "fail-new-lower-version", old: makeObj("pvc1", "5", "ns1"), new: makeObj("pvc1", "4", "ns1"),
			wantErrorMsg: `"ns1/pvc1" is out of sync (stored: 5, assume: 4)`},
		{name: "fail-new-bad-version", old: makeObj("pvc1", "5", "ns1"), new: makeObj("pvc1", "a", "ns1"),
			wantErrorMsg: `"ns1/pvc1" is out of sync (stored: 5, assume: a)`},
		{name: "fail-old-bad-version", old: makeObj("pvc1", "a", "ns1"), new: makeObj("pvc1", "5", "ns1"),
			wantErrorMsg: `"ns1/pvc1" is out of sync (stored: a, assume: 5)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inf, c := newTestCache(t)
			inf.add(tt.old)
			verifyObj(t, c, keyOf(tt.old), tt.old)

			err := c.Assume(tt.new)
			if got := errString(err); got != tt.wantErrorMsg {
				t.Errorf("Assume error = %q, want %q", got, tt.wantErrorMsg)
			}
			want := tt.old
			if tt.wantAssumed {
				want = tt.new
			}
			verifyObj(t, c, keyOf(tt.old), want)
		})
	}
}

func TestRestore(t *testing.T) {
	inf, c := newTestCache(t)
	oldObj, newObj := makeObj("pvc1", "5", "ns1"), makeObj("pvc1", "5", "ns1")

	// Restoring what was never assumed, or does not exist, does nothing.
	c.Restore(&testObj{})
	inf.add(oldObj)
	verifyObj(t, c, keyOf(oldObj), oldObj)
	c.Restore(oldObj)
	verifyObj(t, c, keyOf(oldObj), oldObj)

	if err := c.Assume(newObj); err != nil {
		t.Fatal(err)
	}
	verifyObj(t, c, keyOf(oldObj), newObj)
	c.Restore(newObj)
	verifyObj(t, c, keyOf(oldObj), oldObj)
	// Twice is harmless (Unreserve is idempotent).
	c.Restore(newObj)
	verifyObj(t, c, keyOf(oldObj), oldObj)
}

func TestConcurrentAssume(t *testing.T) {
	inf, c := newTestCache(t)
	obj1, obj1Update := makeObj("pvc1", "5", "ns1"), makeObj("pvc1", "5", "ns1")
	inf.add(obj1)
	if err := c.Assume(obj1Update); err != nil {
		t.Fatal(err)
	}
	verifyObj(t, c, keyOf(obj1Update), obj1Update)

	// Updated elsewhere, assumed again by a later cycle.
	obj2, obj2Update := makeObj("pvc1", "7", "ns1"), makeObj("pvc1", "7", "ns1")
	inf.add(obj2)
	if err := c.Assume(obj2Update); err != nil {
		t.Fatal(err)
	}
	// The first cycle's restore must not undo the second's assumption.
	c.Restore(obj1Update)
	verifyObj(t, c, keyOf(obj2Update), obj2Update)
}

func TestAssumeSurvivesResync(t *testing.T) {
	inf, c := newTestCache(t)
	obj := makeObj("test-pvc0", "1", "test-ns")
	inf.add(obj)
	assumed := obj.DeepCopy()
	assumed.Annotations[volume.AnnSelectedNode] = "test-node"
	if err := c.Assume(assumed); err != nil {
		t.Fatal(err)
	}
	verifyObj(t, c, keyOf(obj), assumed)

	// A resync delivers the same version: the assumption stands.
	inf.add(obj)
	verifyObj(t, c, keyOf(obj), assumed)
}

func TestInformerEventDropsAssumption(t *testing.T) {
	inf, c := newTestCache(t)
	obj := makeObj("pvc", "1", "ns")
	inf.add(obj)
	assumed := obj.DeepCopy()
	assumed.Annotations[volume.AnnSelectedNode] = "node"
	if err := c.Assume(assumed); err != nil {
		t.Fatal(err)
	}
	// The apiserver's next version (whatever it says) replaces it ...
	next := makeObj("pvc", "2", "ns")
	inf.update(obj, next)
	verifyObj(t, c, keyOf(obj), next)
	// ... and assuming the same again must start from that version.
	if err := c.Assume(assumed); err == nil {
		t.Error("Assume of a stale version succeeded")
	}
	// A deletion drops an assumption too.
	again := next.DeepCopy()
	if err := c.Assume(again); err != nil {
		t.Fatal(err)
	}
	inf.delete(next)
	if _, err := c.Get(keyOf(next)); err == nil {
		t.Error("Get after delete succeeded")
	}
	if len(c.assumed) != 0 {
		t.Errorf("assumed after delete: %v", c.assumed)
	}
}

func TestDelayedInformerEvent(t *testing.T) {
	inf, c := newTestCache(t)
	obj1, obj2 := makeObj("test-pvc0", "1", "test-ns"), makeObj("test-pvc0", "2", "test-ns")
	// The store already has version 2; its events come late.
	if err := inf.indexer.Add(obj2); err != nil {
		t.Fatal(err)
	}
	assumed := obj2.DeepCopy()
	assumed.Annotations[volume.AnnSelectedNode] = "test-node"
	if err := c.Assume(assumed); err != nil {
		t.Fatal(err)
	}
	inf.handler.OnAdd(obj1, false)
	inf.handler.OnDelete(obj1)
	inf.handler.OnAdd(obj2, false)
	verifyObj(t, c, keyOf(assumed), assumed)
}
