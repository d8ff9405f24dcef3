//go:build conformance

// This file holds the cases of OpportunisticBatching (KEP-5598): after a
// full cycle ranked the nodes for a pod, the next pod of the same signature
// tries the best node that pod did not take (the hint) and, if it fits, goes
// there without Filter on the other nodes or Score. The default profile never
// batches (PodTopologySpread's system-default constraints make every pod
// unsignable), so the cases run under batchingProfile, upstream's
// scheduler_perf batching configuration.
//
// Everything is created in the backlog: the scheduler finds all the pods
// queued when it starts and pops them one after another, so that pods of
// the same signature are consecutive cycles, well within the 500 ms a
// ranking lives. The order they are popped in is set by priorities
// (queued): pods of equal priority go by the time they were queued, and the
// schedulers' initial lists of pods come in no fixed order (kube-scheduler
// popped p4 before p1). Priorities are no part of a signature. Node sizes
// make every score of every cycle strict (the margins are in the comments),
// so ComparePods applies.
//
// Batching is meant to choose what a full cycle would, and does in most of
// these cases, which therefore hold for a scheduler that never batches.
// batching-stale-normalization, batching-rescore-normalization and
// batching-sign-alike are built where it does not, and TestBatchingMetrics
// counts the hints: they fail unless minisched batches the pods
// kube-scheduler batches.

package conformance

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	dto "github.com/prometheus/client_model/go"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/metrics"
)

// batchingProfile is the default profile with PodTopologySpread given no
// default constraints (test/integration/scheduler_perf/batching/
// scheduler-config-no-topology.yaml): pods without constraints of their own
// can be signed, and batched.
const batchingProfile = `- schedulerName: default-scheduler
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints: []
`

// batchPort is the host port of the one-pod-per-node cases.
const batchPort = 8080

// queued creates the pods, each with a priority below the one before
// (PriorityClasses batch-1, batch-2, ...), so that the queue pops them in
// this order.
func queued(ps ...*builders.PodWrapper) Step {
	classes := map[string]int32{}
	for i, p := range ps {
		name := fmt.Sprintf("batch-%d", i+1)
		classes[name] = int32(1000 - i)
		p.PriorityClassName(name)
	}
	return steps(priorityClasses(classes), pods(ps...))
}

// steps runs several steps as one.
func steps(ss ...Step) Step {
	return func(ctx context.Context, c *Cluster) error {
		for _, s := range ss {
			if err := s(ctx, c); err != nil {
				return err
			}
		}
		return nil
	}
}

// portPod is a pod asking for host port batchPort and for req: one per node.
func portPod(name string, req R) *builders.PodWrapper {
	return pod(name).HostPort(v1.ProtocolTCP, "", batchPort).Req(req)
}

// portNodes are six nodes of 16Gi whose CPUs differ, named so that name
// order is not score order. For a portPod of 1 CPU and 1Gi the scores
// (NodeResourcesFit + BalancedAllocation, with the defaults of 100m and
// 200Mi the host-port container counts for in NodeResourcesFit's score;
// every other plugin scores the nodes alike) are f 167, b 162, d 158,
// e 152, a 145, c 132.
func portNodes() Step {
	cpus := map[string]string{"a": "3", "b": "8", "c": "2", "d": "6", "e": "4", "f": "16"}
	var ns []*builders.NodeWrapper
	for _, n := range slices.Sorted(maps.Keys(cpus)) {
		ns = append(ns, node(n).Capacity(R{"cpu": cpus[n]}))
	}
	return nodes(ns...)
}

// normalizationPod is a pod of normalizationCase: one per node (the host
// port), 1 CPU and 2Gi, preferring tier gold (100) and silver (10).
func normalizationPod(name string) *builders.PodWrapper {
	return portPod(name, R{"cpu": "1", "memory": "2Gi"}).NodeAffinity(preferredNodes(
		prefer(100, matchExpr("tier", v1.NodeSelectorOpIn, "gold")),
		prefer(10, matchExpr("tier", v1.NodeSelectorOpIn, "silver"))))
}

// normalizationCase is a case of three nodes where the stored ranking's
// normalisation decides: NodeAffinity (weight 2) normalises its raw scores
// by the highest among the nodes ranked. The pods are normalizationPod's
// p1, p2 and p3, or ps. First cycle: gold 150+200, big 168+0, silver
// 120+20: gold. A second full cycle ranks big and silver alone, so
// silver's 10 is now the highest (normalised 100): silver 120+200, big
// 168, silver wins. A batched second pod takes the stored ranking's best
// instead, big (168 against 140), and the third pod silver.
func normalizationCase(name, profile string, ps ...*builders.PodWrapper) Case {
	if ps == nil {
		ps = []*builders.PodWrapper{normalizationPod("p1"), normalizationPod("p2"), normalizationPod("p3")}
	}
	return Case{Name: name, Profiles: profile, Backlog: []Step{
		nodes(node("big").Capacity(R{"cpu": "16", "memory": "64Gi"}),
			node("gold").Label("tier", "gold"),
			node("silver").Label("tier", "silver").Capacity(R{"cpu": "2", "memory": "4Gi"})),
		queued(ps...)}}
}

// unsignableCase has pods that cannot be signed under batchingProfile
// among ones that can, all one per node (the host port) and labelled
// app=web. Plain pods rank the nodes by CPU: a 16 (score 167), b 12
// (165), i 10 (164), c 8 (162), d 6 (158), e 5 (156), f 4 (152), g 3
// (145), h 2 (132), in zones z1 (a b c e i) and z2 (d f g h). Each
// unsignable pod chooses other than the plain ranking's next node, which it
// would take if it were batched, and flushes the ranking, so the plain pod
// after it has a full cycle:
//   - p3 spreads over zones (ScheduleAnyway): z1 holds two web pods, so d
//     (z2) rather than i;
//   - p5 prefers no web pod in its zone: z1 holds three, z2 one (p3), so f
//     rather than c;
//   - p7 has a ResourceClaim for the one GPU, on g.
//
// p2 and p9 follow a plain pod's full cycle and are batched: b, and h, the
// last node of p8's ranking (e, then h: p5's preferred anti-affinity counts
// against z2 for web pods).
func unsignableCase(name string) Case {
	web := map[string]string{"app": "web"}
	small := R{"cpu": "1", "memory": "1Gi"}
	return Case{Name: name, Profiles: batchingProfile, Backlog: []Step{
		nodes(node("a").Zone("z1").Capacity(R{"cpu": "16"}), node("b").Zone("z1").Capacity(R{"cpu": "12"}),
			node("c").Zone("z1").Capacity(R{"cpu": "8"}), node("d").Zone("z2").Capacity(R{"cpu": "6"}),
			node("e").Zone("z1").Capacity(R{"cpu": "5"}), node("f").Zone("z2").Capacity(R{"cpu": "4"}),
			node("g").Zone("z2").Capacity(R{"cpu": "3"}), node("h").Zone("z2").Capacity(R{"cpu": "2"}),
			node("i").Zone("z1").Capacity(R{"cpu": "10"})),
		objects(gpuClass, gpuSlice("g", gpus("gpu", 1, "40Gi")...),
			builders.MakeResourceClaim().Name("gpu").Request(builders.MakeDeviceRequest("gpu", "gpu")).Obj()),
		queued(portPod("p1-plain", small).Label("app", "web"), portPod("p2-plain", small).Label("app", "web"),
			portPod("p3-spread", small).Label("app", "web").
				SpreadConstraint(spread(1, zoneKey, v1.ScheduleAnyway, web)),
			portPod("p4-plain", small).Label("app", "web"),
			portPod("p5-anti", small).Label("app", "web").
				PodAntiAffinity(preferredAntiAffinity(100, podTerm(zoneKey, web))),
			portPod("p6-plain", small).Label("app", "web"),
			portPod("p7-claim", small).Label("app", "web").ResourceClaim("gpu", "gpu").ClaimContainer("gpu"),
			portPod("p8-plain", small).Label("app", "web"), portPod("p9-plain", small).Label("app", "web"))}}
}

func batchingCases() []Case {
	// One CPU and 1Gi: the shape of portNodes' scores.
	small := R{"cpu": "1", "memory": "1Gi"}
	return []Case{
		// HostPortConflict: eight pods on portNodes' six. The first pod's
		// full cycle ranks all six; pods 2 to 6 take the next node of that
		// ranking as a hint (the node before them no longer fits), which is
		// what a full cycle would choose: f, b, d, e, a, c. Pods 7 and 8
		// find no free port.
		{Name: "batching-host-port", Profiles: batchingProfile, Backlog: []Step{portNodes(),
			queued(portPod("p1", small), portPod("p2", small), portPod("p3", small), portPod("p4", small),
				portPod("p5", small), portPod("p6", small), portPod("p7", small), portPod("p8", small))}},
		// ResourceSaturation: pods of 3 CPUs and 3Gi on nodes of 4 CPUs, one
		// per node, whose memory makes the scores strict (4Gi 100, 6Gi 105,
		// 8Gi 108, 12Gi 112, 16Gi 113, 24Gi 115). The last two pods of eight
		// find CPU nowhere (nor memory on the 4Gi node), and preemption no
		// victims.
		{Name: "batching-saturation", Profiles: batchingProfile, Backlog: []Step{
			nodes(node("m12").Capacity(R{"memory": "12Gi"}), node("m24").Capacity(R{"memory": "24Gi"}),
				node("m4").Capacity(R{"memory": "4Gi"}), node("m16"), node("m8").Capacity(R{"memory": "8Gi"}),
				node("m6").Capacity(R{"memory": "6Gi"})),
			queued(func() []*builders.PodWrapper {
				var ps []*builders.PodWrapper
				for _, n := range []string{"p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"} {
					ps = append(ps, pod(n).Req(R{"cpu": "3", "memory": "3Gi"}))
				}
				return ps
			}()...)}},
		// Rescoring (1.37): pods of 500m and 1Gi, several per node. The node
		// chosen last still fits the next pod, so the hint path filters and
		// rescores it and ranks it again among the stored nodes, which the
		// last pod did not change: each hint is a full cycle's choice. The
		// greedy order is c b c b a c b c b a c b, each by a margin of 1 to 8.
		{Name: "batching-rescoring", Profiles: batchingProfile, Backlog: []Step{
			nodes(node("a").Capacity(R{"cpu": "2", "memory": "8Gi"}), node("b"),
				node("c").Capacity(R{"cpu": "6", "memory": "10Gi"})),
			queued(func() []*builders.PodWrapper {
				var ps []*builders.PodWrapper
				for _, n := range []string{"p01", "p02", "p03", "p04", "p05", "p06", "p07", "p08", "p09", "p10",
					"p11", "p12"} {
					ps = append(ps, pod(n).Req(R{"cpu": "500m", "memory": "1Gi"}))
				}
				return ps
			}()...)}},
		// Two signatures alternating: CPU-heavy pods (1500m, 512Mi) prefer
		// a and c, memory-heavy ones (250m, 4Gi) b and d. Every pod's
		// signature differs from the one before, so no pod is batched
		// (pod_incompatible); a memory pod that took the CPU pod's ranking
		// would go to c instead of b. Greedy order a b c d a b c d a b, each
		// by 3 or more.
		{Name: "batching-interleaved", Profiles: batchingProfile, Backlog: []Step{
			nodes(node("a").Capacity(R{"cpu": "8", "memory": "8Gi"}), node("b").Capacity(R{"cpu": "3", "memory": "32Gi"}),
				node("c").Capacity(R{"cpu": "6"}), node("d").Capacity(R{"cpu": "3", "memory": "24Gi"})),
			queued(func() []*builders.PodWrapper {
				var ps []*builders.PodWrapper
				for i, n := range []string{"p01", "p02", "p03", "p04", "p05", "p06", "p07", "p08", "p09", "p10"} {
					if i%2 == 0 {
						ps = append(ps, pod(n+"-cpu").Req(R{"cpu": "1500m", "memory": "512Mi"}))
					} else {
						ps = append(ps, pod(n+"-mem").Req(R{"cpu": "250m", "memory": "4Gi"}))
					}
				}
				return ps
			}()...)}},
		unsignableCase("batching-unsignable"),
		// The default profile: PodTopologySpread's system-default
		// constraints leave no pod signable, so nothing is batched, and the
		// pods of normalizationCase go where full cycles send them: gold,
		// silver, big.
		normalizationCase("batching-default-profile", defaultProfile),
		// The same pods batched: the second pod takes the first cycle's
		// ranking, normalised while gold was among the nodes, and goes to
		// big where a full cycle would choose silver; the third to silver.
		// Feasibility holds, optimality does not: kube-scheduler does this
		// on purpose, so must minisched.
		normalizationCase("batching-stale-normalization", batchingProfile),
		// Pods written differently that kube-scheduler signs alike: p2's
		// preferred terms come in the other order, its tolerations too, its
		// requests are split over two containers, and it names its tool
		// image with ":latest" where p1 and p3 leave the tag out. p2 is
		// batched (big), as in batching-stale-normalization; a minisched
		// signing it differently gives it a full cycle (silver).
		normalizationCase("batching-sign-alike", batchingProfile,
			normalizationPod("p1").Image("registry.example/tool").
				Toleration(tolerate("a", "1", v1.TaintEffectNoSchedule)).Toleration(tolerate("b", "", v1.TaintEffectNoSchedule)),
			pod("p2").HostPort(v1.ProtocolTCP, "", batchPort).
				Req(R{"cpu": "500m", "memory": "1Gi"}).Req(R{"cpu": "500m", "memory": "1Gi"}).
				NodeAffinity(preferredNodes(prefer(10, matchExpr("tier", v1.NodeSelectorOpIn, "silver")),
					prefer(100, matchExpr("tier", v1.NodeSelectorOpIn, "gold")))).
				Image("registry.example/tool:latest").
				Toleration(tolerate("b", "", v1.TaintEffectNoSchedule)).Toleration(tolerate("a", "1", v1.TaintEffectNoSchedule)),
			normalizationPod("p3").Image("registry.example/tool").
				Toleration(tolerate("a", "1", v1.TaintEffectNoSchedule)).Toleration(tolerate("b", "", v1.TaintEffectNoSchedule))),
		// Pods kube-scheduler signs apart though they fit and score alike:
		// p2 has a label more (InterPodAffinity signs the labels), or a
		// toleration of a taint no node has (TaintToleration and
		// NodeUnschedulable sign the tolerations). p2 has a full cycle
		// (silver), as under the default profile, and so has p3 (big).
		normalizationCase("batching-sign-labels", batchingProfile, normalizationPod("p1"),
			normalizationPod("p2").Label("team", "x"), normalizationPod("p3")),
		normalizationCase("batching-sign-tolerations", batchingProfile, normalizationPod("p1"),
			normalizationPod("p2").Toleration(tolerate("spot", "", v1.TaintEffectNoSchedule)), normalizationPod("p3")),
		// A profile with an extender signs no pod (kube-scheduler turns
		// signatures off for it): under batchingProfile with the example
		// extender filtering (it passes every node here), the pods of
		// normalizationCase go where full cycles send them, as under the
		// default profile.
		func() Case {
			c := normalizationCase("batching-extender", batchingProfile)
			c.Extenders = "- urlPrefix: " + extenderURL + "\n  filterVerb: filter\n"
			return c
		}(),
		// Normalisation again, with rescoring: six pods of 1 CPU and 1Gi
		// preferring tier gold (100) and silver (10), several per node. gold
		// (2 CPUs) takes p1 and, rescored, p2. p3 finds gold full: it is
		// left out, and the ranking stored when gold was still among the
		// nodes gives silver 20 for NodeAffinity, so big (168) beats silver
		// (20+130); a full cycle would normalise silver's 10 to 100 and
		// choose silver (330). p4's hint path rescores big and normalises
		// again over big and silver alone, from their raw scores: silver
		// (330) for p4 and p5, then big for p6. Full cycles: gold gold
		// silver silver big big.
		{Name: "batching-rescore-normalization", Profiles: batchingProfile, Backlog: []Step{
			nodes(node("big").Capacity(R{"cpu": "16", "memory": "64Gi"}),
				node("gold").Label("tier", "gold").Capacity(R{"cpu": "2"}),
				node("silver").Label("tier", "silver").Capacity(R{"cpu": "2", "memory": "4Gi"})),
			queued(func() []*builders.PodWrapper {
				affinity := preferredNodes(prefer(100, matchExpr("tier", v1.NodeSelectorOpIn, "gold")),
					prefer(10, matchExpr("tier", v1.NodeSelectorOpIn, "silver")))
				var ps []*builders.PodWrapper
				for _, n := range []string{"p1", "p2", "p3", "p4", "p5", "p6"} {
					ps = append(ps, pod(n).Req(R{"cpu": "1", "memory": "1Gi"}).NodeAffinity(affinity))
				}
				return ps
			}()...)}},
	}
}

// batchCounts is a counter family's values by the label label, for the
// default profile.
func batchCounts(families map[string]*dto.MetricFamily, name, label string) map[string]float64 {
	out := map[string]float64{}
	f := families[name]
	if f == nil {
		return out
	}
	for _, m := range f.GetMetric() {
		var profile, value string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "profile":
				profile = l.GetValue()
			case label:
				value = l.GetValue()
			}
		}
		if profile == "default-scheduler" {
			out[value] += m.GetCounter().GetValue()
		}
	}
	return out
}

// formatCounts shows counts by label value, sorted: {hint_used=4 no_hint=1}.
func formatCounts(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+strconv.FormatFloat(m[k], 'f', -1, 64))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// TestBatchingMetrics runs workloads under batchingProfile behind both
// schedulers, compares the placements and scheduler_batch_attempts_total by
// result and scheduler_batch_cache_flushed_total by reason, exactly, and
// checks kube-scheduler's counts against what its rules make of the
// workload:
//   - one-per-node: five identical host-port pods on portNodes' six. The
//     first pod has a full cycle (no_hint; with nothing stored, no flush is
//     counted), pods 2 to 5 the hints its ranking left (hint_used), and
//     nothing is flushed: the research notes' live check (pods 2 to 5
//     hinted).
//   - unsignable: unsignableCase. No hint for p1, p4, p6 and p8 (nothing
//     stored), nor for p3, p5 and p7 (pod_incompatible: no signature); p2
//     and p9 use theirs. p3 and p5, unsigned, store no ranking
//     (pod_not_batchable); p7, on the one node its claim fits, has none to
//     store (empty_list).
//   - skipped: four host-port pods with, after the second, one that no
//     node selects. That one asks with another signature
//     (pod_incompatible, which leaves the ranking stored) and fails, so it
//     stores nothing; the third host-port pod's cycle does not follow the
//     one that stored the ranking (pod_skipped) and is a full one, whose
//     ranking the fourth uses.
//
// The counts depend on timing only through the 500 ms a ranking lives and
// pods popped in between: every pod is queued before the first is popped,
// nothing else is, and a hint is asked for a few milliseconds after the
// full cycle whose ranking it takes. kube-scheduler gave these counts in
// each of three runs on a loaded machine (load average 12 on 2 cores).
// Should a run ever be slow enough to expire a ranking, kube-scheduler's
// flushes say "expired" and the failure says so. ENGINE=kube-scheduler (or
// minisched) runs one side and logs its counts.
func TestBatchingMetrics(t *testing.T) {
	const attempts, flushed = "scheduler_batch_attempts_total", "scheduler_batch_cache_flushed_total"
	small := R{"cpu": "1", "memory": "1Gi"}
	for _, tc := range []struct {
		c                Case
		attempts, reason map[string]float64
	}{
		{c: Case{Name: "batching-metrics-one-per-node", Profiles: batchingProfile, Backlog: []Step{portNodes(),
			queued(portPod("p1", small), portPod("p2", small), portPod("p3", small), portPod("p4", small),
				portPod("p5", small))}},
			attempts: map[string]float64{metrics.BatchAttemptNoHint: 1, metrics.BatchAttemptHintUsed: 4},
			reason:   map[string]float64{}},
		{c: Case{Name: "batching-metrics-skipped", Profiles: batchingProfile, Backlog: []Step{portNodes(),
			queued(portPod("p1", small), portPod("p2", small), pod("p3-nowhere").NodeSelector("disk", "nvme"),
				portPod("p4", small), portPod("p5", small))}},
			attempts: map[string]float64{metrics.BatchAttemptNoHint: 3, metrics.BatchAttemptHintUsed: 2},
			reason:   map[string]float64{metrics.BatchFlushPodIncompatible: 1, metrics.BatchFlushPodSkipped: 1}},
		{c: unsignableCase("batching-metrics-unsignable"),
			attempts: map[string]float64{metrics.BatchAttemptNoHint: 7, metrics.BatchAttemptHintUsed: 2},
			reason: map[string]float64{metrics.BatchFlushPodIncompatible: 3, metrics.BatchFlushPodNotBatchable: 2,
				metrics.BatchFlushEmptyList: 1}},
	} {
		t.Run(tc.c.Name, func(t *testing.T) {
			t.Parallel()
			if engine := Engine(os.Getenv("ENGINE")); engine != "" {
				out, families := runAndScrape(t, tc.c, engine, true)
				a, r := batchCounts(families, attempts, "result"), batchCounts(families, flushed, "reason")
				t.Logf("%s:\n%s\nattempts %s, flushed %s", engine, strings.Join(out, "\n"), formatCounts(a),
					formatCounts(r))
				if engine == KubeScheduler && (!maps.Equal(a, tc.attempts) || !maps.Equal(r, tc.reason)) {
					t.Errorf("the case expects attempts %s, flushed %s", formatCounts(tc.attempts),
						formatCounts(tc.reason))
				}
				return
			}
			oursOut, ours := runAndScrape(t, tc.c, Minisched, true)
			theirsOut, theirs := runAndScrape(t, tc.c, KubeScheduler, true)
			if strings.Join(oursOut, "\n") != strings.Join(theirsOut, "\n") {
				t.Errorf("outcomes differ\n--- minisched:\n%s\n--- kube-scheduler:\n%s",
					strings.Join(oursOut, "\n"), strings.Join(theirsOut, "\n"))
			}
			if got := batchCounts(theirs, flushed, "reason"); got[metrics.BatchFlushExpired] > 0 {
				t.Errorf("kube-scheduler's ranking expired (%s): a ranking was over 500 ms old when a hint was asked of it, "+
					"and the counts depend on timing; run again", formatCounts(got))
			}
			for _, m := range []struct {
				name, label string
				want        map[string]float64
			}{{attempts, "result", tc.attempts}, {flushed, "reason", tc.reason}} {
				a, b := batchCounts(ours, m.name, m.label), batchCounts(theirs, m.name, m.label)
				if !maps.Equal(b, m.want) {
					t.Errorf("%s by %s: kube-scheduler %s, the case expects %s", m.name, m.label, formatCounts(b),
						formatCounts(m.want))
				}
				if !maps.Equal(a, b) {
					t.Errorf("%s by %s: minisched %s, kube-scheduler %s", m.name, m.label, formatCounts(a),
						formatCounts(b))
					continue
				}
				t.Logf("%s by %s: %s in both", m.name, m.label, formatCounts(a))
			}
		})
	}
}
