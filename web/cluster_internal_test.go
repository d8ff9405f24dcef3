// Tests of the cluster map's document, built from a cache and a queue
// directly: what each node, pod and zone says, and the summary form.

package web

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched"
	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/queue"
)

// clusterSource is a Source over a fresh cache and queue (no informers,
// no client): enough for the cluster documents.
func clusterSource(t *testing.T) (*Source, *cache.Cache, *queue.PriorityQueue) {
	t.Helper()
	c := cache.New(0, cache.WithPodGroups())
	q := queue.New(func(a, b framework.QueuedEntity) bool { return a.Key() < b.Key() }, nil)
	return &Source{Scheduler: &minisched.Scheduler{Cache: c, Queue: q, Profiles: map[string]*framework.Framework{
		"p": nil}}}, c, q
}

func node(name, zone string) *builders.NodeWrapper {
	n := builders.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "4",
		v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"})
	if zone != "" {
		n = n.Zone(zone)
	}
	return n
}

func pod(name, uid, nodeName string) *builders.PodWrapper {
	return builders.MakePod().Name(name).Namespace("ns").UID(uid).NodeName(nodeName).
		Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi"})
}

func TestClusterDocument(t *testing.T) {
	logger := klog.Background()
	src, c, q := clusterSource(t)
	c.AddNode(logger, node("a1", "zone-a").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj())
	c.AddNode(logger, node("a2", "zone-a").Unschedulable(true).Obj())
	c.AddNode(logger, node("b1", "zone-b").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "4",
		v1.ResourceMemory: "8Gi", v1.ResourcePods: "10", "example.com/gpu": "2"}).Obj())
	c.AddNode(logger, node("x", "").Obj())
	if err := c.AddPod(logger, pod("bound", "u1", "a1").Obj()); err != nil {
		t.Fatal(err)
	}
	if err := c.AssumePod(logger, pod("binding", "u2", "b1").PodGroup("gang").Obj()); err != nil {
		t.Fatal(err)
	}
	waiting := pod("waiting", "u3", "").Obj()
	q.AddNominatedPod(logger, framework.NewPodInfo(waiting),
		&framework.NominatingInfo{NominatedNodeName: "a2", NominatingMode: framework.ModeOverride})

	v := New()
	detach := v.Attach(*src)
	cpu := func(req, alloc int64) amount { return amount{req, alloc} }
	gi := int64(1 << 30)
	want := clusterDoc{Scheduler: true, ZoneLabel: v1.LabelTopologyZone, Nodes: 4, Zones: []zoneDoc{
		{Name: "zone-a", Nodes: 2, Cordoned: 1, Tainted: 1, Pods: 1, Nominated: 1,
			Usage: usage{cpu(1000, 8000), cpu(gi, 16*gi), cpu(1, 20)}, NodeList: []nodeDoc{
				{Name: "a1", Taints: []taintDoc{{"dedicated", "gpu", "NoSchedule"}},
					Usage: usage{cpu(1000, 4000), cpu(gi, 8*gi), cpu(1, 10)}, Pods: []podMark{{Pod: "ns/bound"}}},
				{Name: "a2", Unschedulable: true, Usage: usage{cpu(0, 4000), cpu(0, 8*gi), cpu(0, 10)},
					Pods: []podMark{}, Nominated: []podMark{{Pod: "ns/waiting"}}},
			}},
		{Name: "zone-b", Nodes: 1, Pods: 1, Assumed: 1, Usage: usage{cpu(1000, 4000), cpu(gi, 8*gi), cpu(1, 10)},
			NodeList: []nodeDoc{{Name: "b1", Usage: usage{cpu(1000, 4000), cpu(gi, 8*gi), cpu(1, 10)},
				Extended: []extendedDoc{{"example.com/gpu", amount{0, 2}}},
				Pods:     []podMark{{Pod: "ns/binding", Assumed: true, Group: "ns/gang"}}}}},
		{Name: noZone, Nodes: 1, Usage: usage{cpu(0, 4000), cpu(0, 8*gi), cpu(0, 10)},
			NodeList: []nodeDoc{{Name: "x", Usage: usage{cpu(0, 4000), cpu(0, 8*gi), cpu(0, 10)}, Pods: []podMark{}}}},
	}}
	ignoreGeneration := func(d clusterDoc) clusterDoc { d.Generation = ""; return d }

	got := v.clusterDocument(clusterQuery{zoneLabel: v1.LabelTopologyZone})
	if diff := cmp.Diff(want, ignoreGeneration(got), cmp.AllowUnexported(extendedDoc{})); diff != "" {
		t.Errorf("document (-want +got):\n%s", diff)
	}
	t.Run("another zone label", func(t *testing.T) {
		got := v.clusterDocument(clusterQuery{zoneLabel: "rack"})
		if len(got.Zones) != 1 || got.Zones[0].Name != noZone || got.Zones[0].Nodes != 4 {
			t.Errorf("zones by rack = %+v, want the four nodes in %q", got.Zones, noZone)
		}
	})
	t.Run("the change key moves with a binding, not otherwise", func(t *testing.T) {
		before := v.cluster.changeKey(src)
		if again := v.cluster.changeKey(src); again != before {
			t.Errorf("key moved with nothing changed: %x, then %x", before, again)
		}
		if err := c.AssumePod(logger, pod("next", "u4", "x").Obj()); err != nil {
			t.Fatal(err)
		}
		if after := v.cluster.changeKey(src); after == before {
			t.Errorf("key did not move with a new assumed pod: %x", after)
		}
	})
	t.Run("frozen after detach", func(t *testing.T) {
		detach()
		got := v.clusterDocument(clusterQuery{zoneLabel: v1.LabelTopologyZone})
		if got.Scheduler || got.Final != "the last scheduler's cluster (profile p), as it stood when it stopped" {
			t.Errorf("after detach: scheduler %v, final %q", got.Scheduler, got.Final)
		}
		if got.Nodes != 4 || got.Zones[2].Pods != 1 {
			t.Errorf("after detach: %d nodes, %d pods without zone; want the last picture (4, 1)", got.Nodes,
				got.Zones[2].Pods)
		}
		other, _, _ := clusterSource(t)
		v.Attach(*other)
		if got := v.clusterDocument(clusterQuery{zoneLabel: v1.LabelTopologyZone}); got.Final != "" || got.Nodes != 0 {
			t.Errorf("with another scheduler attached: final %q, %d nodes; want its own, empty cluster", got.Final, got.Nodes)
		}
	})
}

// TestClusterSummary checks that above clusterSummaryNodes the zones carry
// their sums only, but for the zone asked for.
func TestClusterSummary(t *testing.T) {
	logger := klog.Background()
	tests := []struct {
		name      string
		nodes     int
		zone      string
		summary   bool
		listed    map[string]int
		zoneNodes map[string]int
	}{
		{name: "at the threshold: every node", nodes: clusterSummaryNodes, summary: false,
			listed: map[string]int{"z0": clusterSummaryNodes / 2, "z1": clusterSummaryNodes / 2}},
		{name: "above: sums only", nodes: clusterSummaryNodes + 2, summary: true, listed: map[string]int{"z0": 0, "z1": 0}},
		{name: "above, one zone asked for", nodes: clusterSummaryNodes + 2, zone: "z1", summary: true,
			listed: map[string]int{"z0": 0, "z1": clusterSummaryNodes/2 + 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, c, _ := clusterSource(t)
			for i := range tt.nodes {
				c.AddNode(logger, node(fmt.Sprintf("n%04d", i), fmt.Sprintf("z%d", i%2)).Obj())
			}
			v := New()
			v.Attach(*src)
			got := v.clusterDocument(clusterQuery{zoneLabel: v1.LabelTopologyZone, zone: tt.zone})
			if got.Summary != tt.summary || got.Nodes != tt.nodes {
				t.Errorf("summary %v, nodes %d; want %v, %d", got.Summary, got.Nodes, tt.summary, tt.nodes)
			}
			for _, z := range got.Zones {
				if len(z.NodeList) != tt.listed[z.Name] || z.Nodes != tt.nodes/2 {
					t.Errorf("zone %s: %d nodes listed of %d; want %d listed", z.Name, len(z.NodeList), z.Nodes, tt.listed[z.Name])
				}
			}
		})
	}
}

// TestMapResult checks how a record becomes what clusterMap.show takes,
// and that /api/cluster/pods answers with the newest kept record.
func TestMapResult(t *testing.T) {
	rec := &attempt.Record{Attempt: 2, Result: attempt.Scheduled, Node: "b", NominatedNode: "",
		Scorers: []attempt.Scorer{{Name: "NodeResourcesFit", Weight: 1}},
		Nodes: []attempt.NodeRecord{{Name: "a", RejectedBy: "NodeResourcesFit", Reason: "Insufficient cpu"},
			{Name: "b", Total: 183}, {Name: "c", Total: 90}}, NotEvaluated: 1}
	want := mapResult{Pod: "ns/p", Attempt: 2, Result: string(attempt.Scheduled),
		Filter: map[string]attempt.Verdict{"a": {Plugin: "NodeResourcesFit", Reason: "Insufficient cpu"}},
		Scores: map[string]int64{"b": 183, "c": 90}, Scored: true, Chosen: "b", NotEvaluated: 1}
	if diff := cmp.Diff(want, resultOf("ns/p", rec)); diff != "" {
		t.Errorf("resultOf (-want +got):\n%s", diff)
	}
	v := New()
	v.Observe(minisched.Attempt{Namespace: "ns", Name: "p", Record: rec})
	for _, tt := range []struct {
		path   string
		status int
	}{{"/api/cluster/pods/ns/p", 200}, {"/api/cluster/pods/ns/other", 404}} {
		t.Run(tt.path, func(t *testing.T) {
			w := httptest.NewRecorder()
			v.Handler().ServeHTTP(w, httptest.NewRequest("GET", tt.path, nil))
			if w.Code != tt.status {
				t.Errorf("GET %s: %d, want %d: %s", tt.path, w.Code, tt.status, w.Body)
			}
		})
	}
}
