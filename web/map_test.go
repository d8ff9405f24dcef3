// Browser tests of the cluster map: nodes drawn by zone, a binding
// appearing, a pod chosen colouring the map by its last attempt, a
// nominated placeholder; and a 5,000-node cluster opening within 2 s.

package web_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/scenario"
)

// clusterDoc is the part of /api/cluster the tests read.
type clusterDoc struct {
	Nodes   int  `json:"nodes"`
	Summary bool `json:"summary"`
}

func TestClusterMap(t *testing.T) {
	h := newHarness(t, "web-map", features.Gates{})
	ns := h.env.Namespace
	ctx := context.Background()
	inZone := func(n *v1.Node, zone string) *v1.Node { n.Labels[v1.LabelTopologyZone] = zone; return n }
	a, small := inZone(h.node("a", "2"), "zone-a"), inZone(h.node("small", "1"), "zone-b")
	tainted := inZone(h.node("tainted", "4"), "zone-a")
	tainted.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "x", Effect: v1.TaintEffectNoSchedule}}
	cordoned := inZone(h.node("cordoned", "4"), "zone-b")
	cordoned.Spec.Unschedulable = true
	if err := h.env.CreateNodes(ctx, a, small, tainted, cordoned); err != nil {
		t.Fatal(err)
	}
	poll(t, "the four nodes in the view's cluster", stepTimeout, func() error {
		var doc clusterDoc
		if err := h.get(ctx, "/api/cluster", &doc); err != nil {
			return err
		}
		if doc.Nodes < 4 {
			return fmt.Errorf("%d nodes", doc.Nodes)
		}
		return nil
	})

	b := newBrowser(t)
	b.run(t, "open the page", chromedp.Navigate(h.url+"/"), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`)))
	tileIn := func(zone, node string) string {
		return fmt.Sprintf(`section.zone[data-zone-name=%q] article.node[data-node=%q]`, zone, node)
	}
	b.waitDOM(t, "a in zone-a", tileIn("zone-a", a.Name))
	b.waitDOM(t, "small in zone-b", tileIn("zone-b", small.Name))
	b.waitText(t, "the tainted node's badge", tileIn("zone-a", tainted.Name)+" .badge.taint", "dedicated:NoSchedule")
	b.waitText(t, "the cordoned node's badge", tileIn("zone-b", cordoned.Name)+" .badge.cordon", "cordoned")

	// A pod that fits only on a: its binding appears on a's tile.
	if err := h.env.CreatePods(ctx, h.pod("p1", "1500m")); err != nil {
		t.Fatal(err)
	}
	mark := tileIn("zone-a", a.Name) + fmt.Sprintf(` button.mark[data-pod="%s/p1"]`, ns)
	b.waitDOM(t, "p1 on a's tile", mark)

	// Choosing it colours the map by its attempt.
	b.run(t, "choose p1 on the map", chromedp.Click(chromedp.CSS(mark)))
	b.waitText(t, "small refused, with plugin and reason", tileIn("zone-b", small.Name)+" .verdict.refused",
		"NodeResourcesFit: Insufficient cpu")
	b.waitText(t, "the tainted node refused", tileIn("zone-a", tainted.Name)+" .verdict.refused", "TaintToleration")
	b.waitText(t, "the cordoned node refused", tileIn("zone-b", cordoned.Name)+" .verdict.refused", "NodeUnschedulable")
	b.waitText(t, "a chosen", tileIn("zone-a", a.Name)+".v-chosen .verdict", "★ chosen")
	b.waitText(t, "the legend", "#cluster-result", "Coloured by "+ns+"/p1")

	// A higher-priority pod preempts p1 (kept by a finalizer while it
	// terminates): its placeholder waits on a.
	for name, value := range map[string]int32{ns + "-high": 1000} {
		if err := h.env.CreatePriorityClass(ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = h.client.SchedulingV1().PriorityClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	patch := func(finalizers string) {
		t.Helper()
		if _, err := h.client.CoreV1().Pods(ns).Patch(context.Background(), "p1", types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":`+finalizers+`}}`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("patching p1's finalizers: %v", err)
		}
	}
	patch(`["web-test/keep"]`)
	t.Cleanup(func() { patch("null") })
	high := h.pod("high", "2")
	high.Spec.PriorityClassName = ns + "-high"
	if err := h.env.CreatePods(ctx, high); err != nil {
		t.Fatal(err)
	}
	b.waitDOM(t, "high's placeholder on a", tileIn("zone-a", a.Name)+fmt.Sprintf(` button.mark.nominated[data-pod="%s/high"]`, ns))
	b.waitText(t, "the placeholder says so", tileIn("zone-a", a.Name)+" button.mark.nominated", "nominated "+ns+"/high")

	// By keyboard: Escape closes the detail and gives the focus back to the
	// mark; a node's name opens its panel with Enter.
	b.run(t, "close the detail", chromedp.KeyEvent(kb.Escape))
	b.waitJS(t, "the focus back on p1's mark", fmt.Sprintf(`document.activeElement?.matches(%q) === true`, mark))
	b.run(t, "open a's panel by keyboard", chromedp.Focus(chromedp.CSS(tileIn("zone-a", a.Name)+" button.node-open")),
		chromedp.KeyEvent(kb.Enter))
	b.waitText(t, "a's panel", "#cluster-node h3", "Node "+a.Name)
	b.waitJS(t, "the panel's close button focused", `document.activeElement?.matches("#cluster-node .node-close") === true`)
	b.run(t, "close it", chromedp.KeyEvent(kb.Enter))
	b.waitJS(t, "the panel gone, the focus back on a's name", fmt.Sprintf(
		`document.getElementById("cluster-node").hidden && document.activeElement?.matches(%q) === true`,
		tileIn("zone-a", a.Name)+" button.node-open"))
	b.run(t, "show the map", chromedp.ScrollIntoView(chromedp.CSS("#h-cluster")))
	b.screenshot(t, "web-map.png")

	// Grouped by another label, picked in the form above the map: the
	// test's nodes all carry web-test=<namespace>.
	b.run(t, "group by web-test", chromedp.SendKeys(chromedp.CSS("#zone-label"), "web-test"),
		chromedp.Submit(chromedp.CSS("#zone-label")))
	poll(t, "the page reloaded with ?zoneLabel=web-test", stepTimeout, func() error {
		ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
		defer cancel()
		ready, err := chromedp.Run(ctx, chromedp.Evaluate[bool](
			`location.search === "?zoneLabel=web-test" && document.body.dataset.ready === "1"`))
		if err != nil || !ready {
			return fmt.Errorf("not yet (%v)", err)
		}
		return nil
	})
	b.waitText(t, "the map grouped by web-test", "#cluster-hint", "by web-test")
	b.waitDOM(t, "a in the group of its label's value", tileIn(ns, a.Name))
}

// TestClusterMap5000Nodes opens the page on a cluster of 5,000 nodes
// without zones (as the benchmarks' are) and fails if the map takes more
// than 2 s from navigation to its 5,000 cells drawn.
func TestClusterMap5000Nodes(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 5,000 nodes")
	}
	const nodes, limit = 5000, 2 * time.Second
	h := newHarness(t, "web-map-5k", features.Gates{})
	ctx := context.Background()
	cfg := *testEnv.Config
	cfg.QPS, cfg.Burst = 2000, 4000
	client, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	env := &scenario.Env{Client: client, Namespace: h.env.Namespace}
	names := make(chan int)
	errs := make(chan error, 32)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range names {
				if err := env.CreateNodes(ctx, h.node(fmt.Sprintf("n%04d", i), "8")); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for i := range nodes {
		names <- i
	}
	close(names)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	poll(t, "the view's cluster has the nodes", 2*time.Minute, func() error {
		var doc clusterDoc
		if err := h.get(ctx, "/api/cluster", &doc); err != nil {
			return err
		}
		if doc.Nodes < nodes || !doc.Summary {
			return fmt.Errorf("%d nodes, summary %v", doc.Nodes, doc.Summary)
		}
		return nil
	})

	b := newBrowser(t)
	start := time.Now()
	b.run(t, "open the page", chromedp.Navigate(h.url+"/"))
	b.run(t, "the map drawn", chromedp.Poll[chromedp.Void](
		fmt.Sprintf(`document.querySelectorAll("#cluster .cell").length >= %d`, nodes),
		chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(stepTimeout)))
	took := time.Since(start)
	t.Logf("%d nodes: the map drawn %v after navigation", nodes, took.Round(time.Millisecond))
	if took > limit {
		t.Errorf("the map took %v to draw %d nodes; want at most %v", took, nodes, limit)
	}
	b.screenshot(t, "web-map-5000.png")
}

// TestClusterMapDevices checks that a node's DRA devices, as its
// ResourceSlices list them, are on the map: the driver, how many, and how
// many claims hold (none here); a slice for all nodes belongs to none. So
// is its CSINode's attach limit.
func TestClusterMapDevices(t *testing.T) {
	h := newHarness(t, "web-devices", features.Gates{})
	ns := h.env.Namespace
	ctx := context.Background()
	gpu := h.node("gpu", "4")
	if err := h.env.CreateNodes(ctx, gpu); err != nil {
		t.Fatal(err)
	}
	driver := ns + ".example.com"
	for _, s := range []*resourceapi.ResourceSlice{
		builders.MakeResourceSlice().Name(ns + "-gpu").Driver(driver).Pool(gpu.Name).Node(gpu.Name).
			Device(builders.MakeDevice("gpu-0")).Device(builders.MakeDevice("gpu-1")).Obj(),
		builders.MakeResourceSlice().Name(ns + "-network").Driver(driver).Pool("network").AllNodes().
			Device(builders.MakeDevice("nic-0")).Obj(),
	} {
		if _, err := h.client.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = h.client.ResourceV1().ResourceSlices().Delete(context.Background(), s.Name, metav1.DeleteOptions{})
		})
	}
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: gpu.Name}, Spec: storagev1.CSINodeSpec{
		Drivers: []storagev1.CSINodeDriver{{Name: driver, NodeID: gpu.Name,
			Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](7)}}}}}
	if _, err := h.client.StorageV1().CSINodes().Create(ctx, csiNode, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.client.StorageV1().CSINodes().Delete(context.Background(), csiNode.Name, metav1.DeleteOptions{})
	})
	poll(t, "the node's devices and attach limit on the map", stepTimeout, func() error {
		var doc struct {
			Zones []struct {
				NodeList []struct {
					Name         string `json:"name"`
					AttachLimits []struct {
						Driver string `json:"driver"`
						Count  int32  `json:"count"`
					} `json:"attachLimits"`
					Devices []struct {
						Name        string `json:"name"`
						Requested   int64  `json:"requested"`
						Allocatable int64  `json:"allocatable"`
					} `json:"devices"`
				} `json:"nodeList"`
			} `json:"zones"`
		}
		if err := h.get(ctx, "/api/cluster", &doc); err != nil {
			return err
		}
		for _, z := range doc.Zones {
			for _, n := range z.NodeList {
				if n.Name != gpu.Name {
					continue
				}
				if len(n.Devices) != 1 || n.Devices[0].Name != driver || n.Devices[0].Allocatable != 2 ||
					n.Devices[0].Requested != 0 {
					return fmt.Errorf("devices %+v, want 2 of %s, none held", n.Devices, driver)
				}
				if len(n.AttachLimits) != 1 || n.AttachLimits[0].Driver != driver || n.AttachLimits[0].Count != 7 {
					return fmt.Errorf("attach limits %+v, want 7 for %s", n.AttachLimits, driver)
				}
				return nil
			}
		}
		return fmt.Errorf("node %s not on the map", gpu.Name)
	})
}
