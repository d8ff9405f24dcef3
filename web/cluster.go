// The cluster map's documents: the attached scheduler's nodes and the pods
// on them as its cache believes them (bound and assumed pods, and the
// queue's nominated pods as placeholders), grouped by zone; and, for one
// pod, its last attempt as the map colours it. When a scheduler detaches,
// its last picture is kept and served until another attaches.

package web

import (
	"cmp"
	"hash/fnv"
	"net/http"
	"slices"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/minisched/framework"
)

// Above clusterSummaryNodes nodes, /api/cluster describes each zone by its
// sums only, and the page asks for a zone's nodes (?zone=NAME) when the
// user opens it: a document of every node of a 5,000-node cluster is
// megabytes, and as many tiles would not be readable anyway.
const clusterSummaryNodes = 500

// noZone names the group of the nodes that lack the zone label.
const noZone = "no zone"

// clusterDoc is /api/cluster's document.
type clusterDoc struct {
	// Scheduler says a scheduler is attached; Final, when none is, that
	// this is the last picture of the one that detached (and says whose).
	Scheduler bool   `json:"scheduler"`
	Final     string `json:"final,omitempty"`
	// Generation changes whenever the picture does (a hash, in hex).
	Generation string `json:"generation"`
	ZoneLabel  string `json:"zoneLabel"`
	// Nodes counts all the nodes; Summary says the zones carry their sums
	// only, without their nodes (but for the zone ?zone= asked for).
	Nodes   int       `json:"nodes"`
	Summary bool      `json:"summary"`
	Zones   []zoneDoc `json:"zones"`
}

// zoneDoc is one zone: its sums and, unless the document is a summary,
// its nodes by name.
type zoneDoc struct {
	Name      string    `json:"name"`
	Nodes     int       `json:"nodes"`
	Cordoned  int       `json:"cordoned"`
	Tainted   int       `json:"tainted"`
	Pods      int       `json:"pods"`
	Assumed   int       `json:"assumed"`
	Nominated int       `json:"nominated"`
	Usage     usage     `json:"usage"`
	NodeList  []nodeDoc `json:"nodeList,omitempty"`
}

// usage is requested against allocatable: cpu in millicores, memory in
// bytes, and pods.
type usage struct {
	CPU    amount `json:"cpu"`
	Memory amount `json:"memory"`
	Pods   amount `json:"pods"`
}

// amount is one resource's requested and allocatable quantities.
type amount struct {
	Requested   int64 `json:"requested"`
	Allocatable int64 `json:"allocatable"`
}

// add adds o to u.
func (u *usage) add(o usage) {
	u.CPU.Requested += o.CPU.Requested
	u.CPU.Allocatable += o.CPU.Allocatable
	u.Memory.Requested += o.Memory.Requested
	u.Memory.Allocatable += o.Memory.Allocatable
	u.Pods.Requested += o.Pods.Requested
	u.Pods.Allocatable += o.Pods.Allocatable
}

// nodeDoc is one node: its use, its extended resources, taints and cordon,
// the pods on it and those nominated to it.
type nodeDoc struct {
	Name          string        `json:"name"`
	Unschedulable bool          `json:"unschedulable,omitempty"`
	Taints        []taintDoc    `json:"taints,omitempty"`
	Usage         usage         `json:"usage"`
	Extended      []extendedDoc `json:"extended,omitempty"`
	// Devices are the node's DRA devices by driver: how many its
	// ResourceSlices list, and how many claims hold.
	Devices []extendedDoc `json:"devices,omitempty"`
	// Claims counts the PersistentVolumeClaims its pods use (the cache's
	// count); AttachLimits are the volumes each CSI driver may attach
	// there, as its CSINode says.
	Claims       int           `json:"claims,omitempty"`
	AttachLimits []attachLimit `json:"attachLimits,omitempty"`
	Pods         []podMark     `json:"pods"`
	Nominated    []podMark     `json:"nominated,omitempty"`
}

// attachLimit is how many volumes a CSI driver may attach to the node.
type attachLimit struct {
	Driver string `json:"driver"`
	Count  int32  `json:"count"`
}

// taintDoc is a taint as its badge shows it.
type taintDoc struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// extendedDoc is an extended (scalar) resource the node has allocatable.
type extendedDoc struct {
	Name string `json:"name"`
	amount
}

// podMark is a pod on the map: namespace/name, whether it is only assumed
// (its binding not yet seen by the informers), and its pod group
// (namespace/name) if it names one.
type podMark struct {
	Pod     string `json:"pod"`
	Assumed bool   `json:"assumed,omitempty"`
	Group   string `json:"group,omitempty"`
}

// clusterPicture is what a document is built from: the view's own copy of
// the cache's snapshot, the assumed pods and the nominations, as read at
// one moment. key changes whenever any of them does.
type clusterPicture struct {
	snap      *cache.Snapshot
	assumed   map[types.UID]bool
	nominated map[string][]podMark
	// devices are, by node and driver, the DRA devices of the node's
	// ResourceSlices and how many of them claims hold (nil without DRA).
	devices map[string]map[string]*amount
	// csiNodes are the nodes' CSINodes, by node (nil: none known).
	csiNodes map[string]*storagev1.CSINode
	key      uint64
}

// clusterView keeps the view's snapshot of the attached scheduler's cache
// and, once it detaches, its last picture.
type clusterView struct {
	mu sync.Mutex
	// src is the scheduler snap was taken from.
	src  *Source
	snap *cache.Snapshot
	// last is the newest picture taken; final, once src detached, says
	// whose it was (and last is then frozen).
	last  *clusterPicture
	final string
}

// refresh brings the view's snapshot up to date with src's cache and
// returns the picture, or the frozen one (src nil; nil if there is none).
// The scheduler's cache is read-locked only for the incremental
// UpdateSnapshot (the nodes that changed since the last call) and the list
// of assumed pods; documents are built from the view's copy, under the
// view's lock only. The caller holds c.mu.
func (c *clusterView) refresh(src *Source) (*clusterPicture, string) {
	if src == nil {
		if c.final == "" {
			return nil, ""
		}
		return c.last, c.final
	}
	if c.src != src {
		c.src, c.snap, c.last, c.final = src, cache.NewEmptySnapshot(), nil, ""
	}
	if err := src.Scheduler.Cache.UpdateSnapshot(klog.Background(), c.snap); err != nil {
		klog.Background().V(2).Info("The live view's snapshot was rebuilt", "err", err)
	}
	p := &clusterPicture{snap: c.snap, assumed: map[types.UID]bool{}, nominated: map[string][]podMark{}}
	h := fnv.New64a()
	var assumed uint64
	for _, pod := range src.Scheduler.Cache.AssumedPods() {
		p.assumed[pod.UID] = true
		assumed ^= hash(string(pod.UID) + "\x00" + pod.Spec.NodeName) // in any order
	}
	for _, n := range src.Scheduler.Queue.Nominations() {
		p.nominated[n.Node] = append(p.nominated[n.Node], mark(n.Pod, false))
		h.Write([]byte(podKey(n.Pod) + "\x00" + n.Node + "\x00"))
	}
	p.devices = devicesByNode(src)
	if src.CSINodes != nil {
		if list, err := src.CSINodes.List(labels.Everything()); err == nil {
			p.csiNodes = make(map[string]*storagev1.CSINode, len(list))
			for _, cn := range list {
				p.csiNodes[cn.Name] = cn
			}
		}
	}
	p.key = hash(strconv.FormatInt(c.snap.Generation(), 10)) ^ assumed ^ h.Sum64()
	c.last = p
	return p, ""
}

// devicesByNode counts, per node and driver, the devices of the
// ResourceSlices that name the node (a slice for a set of nodes, or for
// all, belongs to none of them) and those that allocated or pending claims
// hold: the DRA state DynamicResources reads. Without a plugin that uses
// it (DRA InUse), nothing: the view does not start its informers.
func devicesByNode(src *Source) map[string]map[string]*amount {
	dra := src.Scheduler.DRA()
	if !dra.InUse() {
		return nil
	}
	slices, err := dra.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		return nil
	}
	held, err := dra.ResourceClaims().ListAllAllocatedDevices()
	if err != nil {
		return nil
	}
	out := map[string]map[string]*amount{}
	for _, s := range slices {
		if s.Spec.NodeName == nil || *s.Spec.NodeName == "" {
			continue
		}
		node := *s.Spec.NodeName
		if out[node] == nil {
			out[node] = map[string]*amount{}
		}
		a := out[node][s.Spec.Driver]
		if a == nil {
			a = &amount{}
			out[node][s.Spec.Driver] = a
		}
		for _, d := range s.Spec.Devices {
			a.Allocatable++
			if held.Has(structured.MakeDeviceID(s.Spec.Driver, s.Spec.Pool.Name, d.Name)) {
				a.Requested++
			}
		}
	}
	return out
}

// changeKey returns the key of src's picture (see refresh): it changes
// whenever the document would. It is cheap: no document is built.
func (c *clusterView) changeKey(src *Source) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, _ := c.refresh(src); p != nil {
		return p.key
	}
	return 0
}

// freeze keeps the picture of src, which has detached, as its final one,
// served until another scheduler attaches; current is the scheduler
// attached now, if another already is (its picture is then left alone).
func (c *clusterView) freeze(src, current *Source) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if current != nil {
		return
	}
	c.refresh(src)
	c.final = finalLabel(src)
	c.src, c.snap = nil, nil
}

// finalLabel names a detached scheduler by its profiles.
func finalLabel(src *Source) string {
	names := make([]string, 0, len(src.Scheduler.Profiles))
	for name := range src.Scheduler.Profiles {
		names = append(names, name)
	}
	slices.Sort(names)
	label := "the last scheduler's cluster"
	if len(names) > 0 {
		label += " (profile"
		if len(names) > 1 {
			label += "s"
		}
		for i, n := range names {
			if i > 0 {
				label += ","
			}
			label += " " + n
		}
		label += "), as it stood when it stopped"
	}
	return label
}

// hash is a string's 64-bit FNV-1a.
func hash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// mark is pod as the map shows it.
func mark(pod *v1.Pod, assumed bool) podMark {
	m := podMark{Pod: podKey(pod), Assumed: assumed}
	if g, ok := framework.PodGroupName(pod); ok {
		m.Group = pod.Namespace + "/" + g
	}
	return m
}

// clusterQuery is what a request asks of the document: the label that
// names a node's zone, and the zone whose nodes a summary includes.
type clusterQuery struct {
	zoneLabel string
	zone      string
}

// clusterQueryOf reads ?zoneLabel= and ?zone= from r.
func clusterQueryOf(r *http.Request) clusterQuery {
	q := clusterQuery{zoneLabel: r.URL.Query().Get("zoneLabel"), zone: r.URL.Query().Get("zone")}
	if q.zoneLabel == "" {
		q.zoneLabel = v1.LabelTopologyZone
	}
	return q
}

// clusterDocument describes the attached scheduler's cluster, or the last
// one's after it detached.
func (v *View) clusterDocument(q clusterQuery) clusterDoc {
	src := v.attached()
	c := &v.cluster
	c.mu.Lock()
	defer c.mu.Unlock()
	p, final := c.refresh(src)
	doc := clusterDoc{Scheduler: src != nil, Final: final, ZoneLabel: q.zoneLabel, Zones: []zoneDoc{}}
	if p == nil {
		return doc
	}
	doc.Generation = strconv.FormatUint(p.key, 16)
	infos, _ := p.snap.NodeInfos().List()
	doc.Nodes = len(infos)
	doc.Summary = len(infos) > clusterSummaryNodes
	zones := map[string]*zoneDoc{}
	for _, ni := range infos {
		name := ni.Node().Labels[q.zoneLabel]
		if name == "" {
			name = noZone
		}
		z := zones[name]
		if z == nil {
			z = &zoneDoc{Name: name}
			zones[name] = z
		}
		n := p.nodeDoc(ni)
		z.count(n)
		if !doc.Summary || name == q.zone {
			z.NodeList = append(z.NodeList, n)
		}
	}
	for _, z := range zones {
		slices.SortFunc(z.NodeList, func(a, b nodeDoc) int { return cmp.Compare(a.Name, b.Name) })
		doc.Zones = append(doc.Zones, *z)
	}
	// Zones by name, "no zone" last.
	slices.SortFunc(doc.Zones, func(a, b zoneDoc) int {
		if (a.Name == noZone) != (b.Name == noZone) {
			if a.Name == noZone {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return doc
}

// count adds node n to the zone's sums.
func (z *zoneDoc) count(n nodeDoc) {
	z.Nodes++
	z.Usage.add(n.Usage)
	z.Pods += len(n.Pods)
	z.Nominated += len(n.Nominated)
	for _, m := range n.Pods {
		if m.Assumed {
			z.Assumed++
		}
	}
	if n.Unschedulable {
		z.Cordoned++
	}
	if len(n.Taints) > 0 {
		z.Tainted++
	}
}

// nodeDoc describes one node of the picture.
func (p *clusterPicture) nodeDoc(ni *framework.NodeInfo) nodeDoc {
	node := ni.Node()
	n := nodeDoc{Name: node.Name, Unschedulable: node.Spec.Unschedulable, Pods: make([]podMark, 0, len(ni.Pods)),
		Nominated: p.nominated[node.Name]}
	for _, t := range node.Spec.Taints {
		n.Taints = append(n.Taints, taintDoc{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	n.Usage = usage{
		CPU:    amount{ni.Requested.MilliCPU, ni.Allocatable.MilliCPU},
		Memory: amount{ni.Requested.Memory, ni.Allocatable.Memory},
		Pods:   amount{int64(len(ni.Pods)), ni.Allocatable.AllowedPodNumber},
	}
	for name, alloc := range ni.Allocatable.ScalarResources {
		if alloc > 0 {
			n.Extended = append(n.Extended, extendedDoc{Name: string(name),
				amount: amount{ni.Requested.ScalarResources[name], alloc}})
		}
	}
	slices.SortFunc(n.Extended, func(a, b extendedDoc) int { return cmp.Compare(a.Name, b.Name) })
	for driver, a := range p.devices[node.Name] {
		n.Devices = append(n.Devices, extendedDoc{Name: driver, amount: *a})
	}
	slices.SortFunc(n.Devices, func(a, b extendedDoc) int { return cmp.Compare(a.Name, b.Name) })
	if cn := p.csiNodes[node.Name]; cn != nil {
		for _, d := range cn.Spec.Drivers {
			if d.Allocatable != nil && d.Allocatable.Count != nil {
				n.AttachLimits = append(n.AttachLimits, attachLimit{Driver: d.Name, Count: *d.Allocatable.Count})
			}
		}
	}
	if len(n.AttachLimits) > 0 || len(ni.PVCRefCounts) > 0 {
		n.Claims = len(ni.PVCRefCounts)
	}
	for _, pi := range ni.Pods {
		n.Pods = append(n.Pods, mark(pi.Pod, p.assumed[pi.Pod.UID]))
	}
	slices.SortFunc(n.Pods, func(a, b podMark) int { return cmp.Compare(a.Pod, b.Pod) })
	return n
}

// serveCluster serves /api/cluster.
func (v *View) serveCluster(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, v.clusterDocument(clusterQueryOf(r)))
}

// mapResult is /api/cluster/pods/{namespace}/{name}'s document: the pod's
// last attempt as the map colours it (the shape clusterMap.show takes,
// docs/web.md). Filter maps each rejected node to its plugin and reason,
// Scores each node that passed Filter to its total score (Scored false:
// the attempt scored no node, as when one node was feasible); a node in
// neither was not evaluated. PreFilter, when set, rejected every node.
type mapResult struct {
	Pod          string                     `json:"pod"`
	Attempt      int                        `json:"attempt"`
	Result       string                     `json:"result"`
	Filter       map[string]attempt.Verdict `json:"filter"`
	Scores       map[string]int64           `json:"scores"`
	Scored       bool                       `json:"scored"`
	Chosen       string                     `json:"chosen"`
	Nominated    string                     `json:"nominated"`
	PreFilter    *attempt.Verdict           `json:"preFilter,omitempty"`
	NotEvaluated int                        `json:"notEvaluated"`
	Partial      bool                       `json:"partial"`
}

// resultOf is record r of pod as the map colours it.
func resultOf(pod string, r *attempt.Record) mapResult {
	res := mapResult{Pod: pod, Attempt: r.Attempt, Result: string(r.Result), Filter: map[string]attempt.Verdict{},
		Scores: map[string]int64{}, Scored: len(r.Scorers) > 0, Chosen: r.Node, Nominated: r.NominatedNode,
		PreFilter: r.PreFilter, NotEvaluated: r.NotEvaluated}
	for _, n := range r.Nodes {
		if n.Passed() {
			res.Scores[n.Name] = n.Total
		} else {
			res.Filter[n.Name] = attempt.Verdict{Plugin: n.RejectedBy, Reason: n.Reason}
		}
	}
	return res
}

// serveMapResult serves /api/cluster/pods/{namespace}/{name}: the pod's
// newest record the view kept, else the one its annotation carries.
func (v *View) serveMapResult(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("namespace") + "/" + r.PathValue("name")
	_, records := v.attempts.forPod(key)
	for _, rec := range records { // newest first
		if rec != nil {
			writeJSON(w, http.StatusOK, resultOf(key, rec))
			return
		}
	}
	if src := v.attached(); src != nil {
		pod, err := src.Pods.Pods(r.PathValue("namespace")).Get(r.PathValue("name"))
		if err == nil {
			if value, ok := pod.Annotations[attempt.Annotation]; ok {
				if rec, err := attempt.Decode(value); err == nil {
					writeJSON(w, http.StatusOK, resultOf(key, rec))
					return
				}
			}
		}
	}
	writeError(w, http.StatusNotFound, "no attempt of "+key+" is known")
}
