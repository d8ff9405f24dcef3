//go:build conformance

package conformance

import (
	v1 "k8s.io/api/core/v1"
)

// Profiles used by the cases (YAML for the configuration's profiles list).
const (
	// defaultProfile is kube-scheduler's default profile; DefaultPreemption
	// is off in both schedulers (minisched has no preemption yet), so
	// FailedScheduling messages carry no preemption suffix.
	defaultProfile = `- schedulerName: default-scheduler
  plugins:
    multiPoint:
      disabled:
      - name: DefaultPreemption
`
	// coreProfile is the five plugins of the first chapters.
	coreProfile = `- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: PrioritySort
      - name: NodeUnschedulable
      - name: NodeName
      - name: NodeResourcesFit
      - name: DefaultBinder
      disabled:
      - name: "*"
`
)

// only returns a profile with exactly the named plugins plus PrioritySort
// and DefaultBinder, and extra YAML (pluginConfig) appended.
func only(extra string, names ...string) string {
	s := "- schedulerName: default-scheduler\n  plugins:\n    multiPoint:\n      enabled:\n      - name: PrioritySort\n"
	for _, n := range names {
		s += "      - name: " + n + "\n"
	}
	s += "      - name: DefaultBinder\n      disabled:\n      - name: \"*\"\n" + extra
	return s
}

const (
	zoneKey = v1.LabelTopologyZone
	hostKey = v1.LabelHostname
)

func cases() []Case {
	cpu := func(q string) podOpt { return req(R{v1.ResourceCPU: q}) }
	app := func(v string) map[string]string { return map[string]string{"app": v} }
	return []Case{
		// The first chapters' plugins.
		{Name: "core-cordoned", Profiles: coreProfile, Steps: []Step{
			nodes(node("n1").Unschedulable(true), node("n2"), node("n3").Unschedulable(true)), pods(pod("p1"), pod("p2"))}},
		{Name: "core-all-cordoned", Profiles: coreProfile, Steps: []Step{
			nodes(node("n1").Unschedulable(true), node("n2").Unschedulable(true)), pods(pod("p1"))}},
		{Name: "core-tolerated-cordon", Profiles: coreProfile, Steps: []Step{
			nodes(node("big").Unschedulable(true).Capacity(R{"cpu": "8"}), node("small").Unschedulable(true)),
			pods(pod("tolerant", cpu("1"), tolerate(v1.TaintNodeUnschedulable, "", v1.TaintEffectNoSchedule)), pod("plain"))}},
		{Name: "core-cpu-memory", Profiles: coreProfile, Steps: []Step{
			nodes(node("a").Capacity(R{"cpu": "2", "memory": "1Gi"}), node("b").Capacity(R{"cpu": "1", "memory": "8Gi"})),
			pods(pod("cpu", cpu("1500m"))), waitBound("cpu"), pods(pod("mem", req(R{"memory": "4Gi"}))), waitBound("mem"),
			pods(pod("both", req(R{"cpu": "1500m", "memory": "4Gi"})))}},
		{Name: "core-extended", Profiles: coreProfile, Steps: []Step{
			nodes(node("gpu").Capacity(R{"example.com/gpu": "2"}), node("plain")),
			pods(pod("g1", req(R{"example.com/gpu": "1"}))), waitBound("g1"),
			pods(pod("g2", req(R{"example.com/gpu": "2"})))}},
		{Name: "core-init-and-sidecar", Profiles: coreProfile, Steps: []Step{
			nodes(node("n").Capacity(R{"cpu": "2"})),
			pods(pod("init-too-big", cpu("1"), initContainer(R{"cpu": "3"}, false)),
				pod("sidecar-too-big", cpu("1500m"), initContainer(R{"cpu": "1"}, true)),
				pod("init-fits", cpu("500m"), initContainer(R{"cpu": "2"}, false)))}},
		{Name: "core-pod-count", Profiles: coreProfile, Steps: []Step{
			nodes(node("n").Capacity(R{"pods": "2"})), pods(pod("a")), waitBound("a"), pods(pod("b")), waitBound("b"),
			pods(pod("c"))}},
		{Name: "core-backlog-priority", Profiles: coreProfile, Backlog: []Step{
			priorityClasses(map[string]int32{"high": 1000, "low": 10}),
			nodes(node("n").Capacity(R{"cpu": "2"})),
			pods(pod("low1", cpu("1"), priorityClass("low")), pod("low2", cpu("1"), priorityClass("low")),
				pod("high1", cpu("1"), priorityClass("high")), pod("high2", cpu("1"), priorityClass("high")))}},
		{Name: "core-fill-no-overcommit", Profiles: coreProfile, Compare: CompareCounts, Steps: []Step{
			nodes(node("a"), node("b")),
			pods(pod("p0", cpu("1")), pod("p1", cpu("1")), pod("p2", cpu("1")), pod("p3", cpu("1")), pod("p4", cpu("1")),
				pod("p5", cpu("1")), pod("p6", cpu("1")), pod("p7", cpu("1")), pod("p8", cpu("1")), pod("p9", cpu("1")))}},
		{Name: "core-node-appears", Profiles: coreProfile, Steps: []Step{
			nodes(node("full").Capacity(R{"cpu": "1"})), pods(pod("p", cpu("2"))), waitPending("p"), nodes(node("late"))}},
		{Name: "core-uncordon", Profiles: coreProfile, Steps: []Step{
			nodes(node("n").Unschedulable(true)), pods(pod("p")), waitPending("p"), uncordon("n")}},
		{Name: "core-delete-frees", Profiles: coreProfile, Steps: []Step{
			nodes(node("n").Capacity(R{"cpu": "1"})), pods(pod("a", cpu("1"))), waitBound("a"),
			pods(pod("b", cpu("1"))), waitPending("b"), deletePod("a")}},
		{Name: "core-other-schedulers", Profiles: coreProfile, Steps: []Step{
			nodes(node("n")), pods(pod("foreign", schedulerName("other-scheduler")), pod("mine"))}},

		// TaintToleration.
		{Name: "taint-noschedule", Profiles: defaultProfile, Steps: []Step{
			nodes(node("tainted").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule),
				node("also").Taint("team", "a", v1.TaintEffectNoExecute)),
			pods(pod("plain"), pod("tolerant", tolerate("dedicated", "gpu", v1.TaintEffectNoSchedule)))}},
		{Name: "taint-prefer-noschedule", Profiles: defaultProfile, Steps: []Step{
			nodes(node("soft").Taint("spot", "true", v1.TaintEffectPreferNoSchedule), node("clean")),
			pods(pod("p"))}},
		{Name: "taint-only-plugin", Profiles: only("", "TaintToleration"), Steps: []Step{
			nodes(node("a").Taint("x", "1", v1.TaintEffectNoSchedule), node("b").Taint("y", "", v1.TaintEffectNoExecute)),
			pods(pod("p"))}},

		// NodeAffinity.
		{Name: "nodeselector", Profiles: defaultProfile, Steps: []Step{
			nodes(node("ssd").Label("disk", "ssd"), node("hdd").Label("disk", "hdd"), node("none")),
			pods(pod("wants-ssd", nodeSelector("disk", "ssd")), pod("wants-nvme", nodeSelector("disk", "nvme")))}},
		{Name: "required-node-affinity", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1"), node("b").Zone("z2"), node("c").Zone("z3")),
			pods(pod("in", requiredNode(matchExpr(zoneKey, v1.NodeSelectorOpIn, "z2"))),
				pod("notin", requiredNode(matchExpr(zoneKey, v1.NodeSelectorOpNotIn, "z1", "z2"))),
				pod("nowhere", requiredNode(matchExpr(zoneKey, v1.NodeSelectorOpIn, "z9"))))}},
		{Name: "node-affinity-metadata-name", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a"), node("b"), node("c")),
			pods(pod("pinned", requiredNode(matchName("b"))), pod("pinned-gone", requiredNode(matchName("zz"))))}},
		{Name: "preferred-node-affinity", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Label("tier", "gold"), node("b").Label("tier", "silver"), node("c")),
			pods(pod("p", preferredNode(80, matchExpr("tier", v1.NodeSelectorOpIn, "gold")),
				preferredNode(20, matchExpr("tier", v1.NodeSelectorOpIn, "silver"))))}},
		{Name: "node-affinity-added-affinity", Profiles: only(`  pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - key: pool
              operator: In
              values: [batch]
`, "NodeAffinity"), Steps: []Step{
			nodes(node("batch").Label("pool", "batch"), node("web").Label("pool", "web")),
			pods(pod("p"), pod("web-only", nodeSelector("pool", "web")))}},

		// NodePorts.
		{Name: "host-port-conflict", Profiles: defaultProfile, Steps: []Step{
			nodes(node("n")), pods(pod("a", hostPort(8080, v1.ProtocolTCP, ""))), waitBound("a"),
			pods(pod("same", hostPort(8080, v1.ProtocolTCP, "")), pod("udp", hostPort(8080, v1.ProtocolUDP, "")),
				pod("other-ip", hostPort(8080, v1.ProtocolTCP, "10.0.0.1")))}},

		// NodeResourcesFit scoring strategies and BalancedAllocation.
		{Name: "least-allocated", Profiles: only("", "NodeResourcesFit"), Steps: []Step{
			nodes(node("small").Capacity(R{"cpu": "2", "memory": "4Gi"}),
				node("big").Capacity(R{"cpu": "16", "memory": "64Gi"})),
			pods(pod("p", req(R{"cpu": "500m", "memory": "1Gi"})))}},
		{Name: "most-allocated", Profiles: only(`  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 1
        - name: memory
          weight: 1
`, "NodeResourcesFit"), Steps: []Step{
			nodes(node("small").Capacity(R{"cpu": "2", "memory": "4Gi"}),
				node("big").Capacity(R{"cpu": "16", "memory": "64Gi"})),
			pods(pod("p", req(R{"cpu": "500m", "memory": "1Gi"})))}},
		{Name: "requested-to-capacity-ratio", Profiles: only(`  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: RequestedToCapacityRatio
        resources:
        - name: cpu
          weight: 3
        - name: memory
          weight: 1
        requestedToCapacityRatio:
          shape:
          - utilization: 0
            score: 0
          - utilization: 100
            score: 10
`, "NodeResourcesFit"), Steps: []Step{
			nodes(node("a").Capacity(R{"cpu": "4", "memory": "8Gi"}), node("b").Capacity(R{"cpu": "8", "memory": "4Gi"})),
			pods(pod("p", req(R{"cpu": "2", "memory": "2Gi"})))}},
		{Name: "balanced-allocation", Profiles: only("", "NodeResourcesFit", "NodeResourcesBalancedAllocation"),
			Steps: []Step{
				nodes(node("cpu-heavy").Capacity(R{"cpu": "8", "memory": "8Gi"}),
					node("even").Capacity(R{"cpu": "4", "memory": "16Gi"})),
				pods(pod("p", req(R{"cpu": "1", "memory": "4Gi"})))}},
		{Name: "image-locality", Profiles: defaultProfile, Steps: []Step{
			nodes(node("has-image").Images(500*1024*1024, "registry.example/big:1.0"), node("no-image")),
			pods(pod("p", image("registry.example/big:1.0")))}},

		// PodTopologySpread.
		{Name: "spread-hard-zones", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1").Capacity(R{"cpu": "8"}), node("b").Zone("z2")),
			pods(pod("w0", podLabel("app", "web"), spread(1, zoneKey, v1.DoNotSchedule, app("web")))), waitBound("w0"),
			pods(pod("w1", podLabel("app", "web"), spread(1, zoneKey, v1.DoNotSchedule, app("web")))), waitBound("w1"),
			pods(pod("w2", podLabel("app", "web"), spread(1, zoneKey, v1.DoNotSchedule, app("web"))))}},
		{Name: "spread-hard-violated", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1").Capacity(R{"cpu": "8"}), node("b").Zone("z2").Capacity(R{"cpu": "1"})),
			pods(pod("x0", podLabel("app", "x"), cpu("1"))), waitBound("x0"),
			pods(pod("x1", podLabel("app", "x"), cpu("1"))), waitBound("x1"),
			pods(pod("x2", podLabel("app", "x"), cpu("1"), spread(1, zoneKey, v1.DoNotSchedule, app("x"))))}},
		{Name: "spread-missing-label", Profiles: defaultProfile, Steps: []Step{
			nodes(node("labelled").Zone("z1"), node("unlabelled")),
			pods(pod("p", podLabel("app", "m"), spread(1, zoneKey, v1.DoNotSchedule, app("m"))))}},
		{Name: "spread-min-domains", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1").Capacity(R{"cpu": "8"}), node("b").Zone("z2")),
			pods(pod("m0", podLabel("app", "md"),
				spread(1, zoneKey, v1.DoNotSchedule, app("md"),
					func(c *v1.TopologySpreadConstraint) { three := int32(3); c.MinDomains = &three }))), waitBound("m0"),
			pods(pod("m1", podLabel("app", "md"),
				spread(1, zoneKey, v1.DoNotSchedule, app("md"),
					func(c *v1.TopologySpreadConstraint) { three := int32(3); c.MinDomains = &three })))}},
		{Name: "spread-soft", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1"), node("b").Zone("z1"), node("c").Zone("z2")),
			pods(pod("s0", podLabel("app", "s"), nodeSelector(hostKey, "a"))), waitBound("s0"),
			pods(pod("s1", podLabel("app", "s"), nodeSelector(hostKey, "b"))), waitBound("s1"),
			pods(pod("s2", podLabel("app", "s"), spread(1, zoneKey, v1.ScheduleAnyway, app("s"))))}},
		{Name: "spread-system-defaults", Profiles: defaultProfile, Compare: CompareCounts, Steps: []Step{
			service("svc", app("svc")),
			nodes(node("a").Zone("z1"), node("b").Zone("z2"), node("c").Zone("z3")),
			pods(pod("d0", podLabel("app", "svc"))), waitBound("d0"),
			pods(pod("d1", podLabel("app", "svc"))), waitBound("d1"),
			pods(pod("d2", podLabel("app", "svc")))}},
		{Name: "spread-taints-policy-honor", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1"), node("b").Zone("z2").Taint("k", "v", v1.TaintEffectNoSchedule)),
			pods(pod("h0", podLabel("app", "h"),
				spread(1, zoneKey, v1.DoNotSchedule, app("h"), func(c *v1.TopologySpreadConstraint) {
					honor := v1.NodeInclusionPolicyHonor
					c.NodeTaintsPolicy = &honor
				}))), waitBound("h0"),
			pods(pod("h1", podLabel("app", "h"),
				spread(1, zoneKey, v1.DoNotSchedule, app("h"), func(c *v1.TopologySpreadConstraint) {
					honor := v1.NodeInclusionPolicyHonor
					c.NodeTaintsPolicy = &honor
				})))}},

		// InterPodAffinity.
		{Name: "pod-affinity-required", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1"), node("b").Zone("z2"), node("c").Zone("z2")),
			pods(pod("db", podLabel("app", "db"), nodeSelector(hostKey, "b"))), waitBound("db"),
			pods(pod("web", requiredPodAffinity(podTerm(zoneKey, app("db")))),
				pod("lost", requiredPodAffinity(podTerm(zoneKey, app("nothing")))))}},
		{Name: "pod-affinity-self", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1").Capacity(R{"cpu": "8"}), node("b").Zone("z2")),
			pods(pod("first", podLabel("app", "self"), requiredPodAffinity(podTerm(zoneKey, app("self")))))}},
		{Name: "pod-anti-affinity-incoming", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1"), node("b").Zone("z2")),
			pods(pod("x", podLabel("app", "x"), nodeSelector(hostKey, "a"))), waitBound("x"),
			pods(pod("y", requiredPodAntiAffinity(podTerm(zoneKey, app("x")))),
				pod("z", requiredPodAntiAffinity(podTerm(zoneKey, app("x"))), nodeSelector(hostKey, "a")))}},
		{Name: "pod-anti-affinity-existing", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a"), node("b")),
			pods(pod("loner", nodeSelector(hostKey, "a"),
				requiredPodAntiAffinity(podTerm(hostKey, app("crowd"))))), waitBound("loner"),
			pods(pod("crowd1", podLabel("app", "crowd")), pod("crowd2", podLabel("app", "crowd"), nodeSelector(hostKey, "a")))}},
		{Name: "pod-affinity-preferred", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1"), node("b").Zone("z2"), node("c").Zone("z3")),
			pods(pod("cache", podLabel("app", "cache"), nodeSelector(hostKey, "c"))), waitBound("cache"),
			pods(pod("p", preferredPodAffinity(100, podTerm(zoneKey, app("cache")))))}},
		{Name: "pod-anti-affinity-preferred", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a"), node("b")),
			pods(pod("noisy", podLabel("app", "noisy"), nodeSelector(hostKey, "a"))), waitBound("noisy"),
			pods(pod("quiet", preferredPodAntiAffinity(100, podTerm(hostKey, app("noisy")))))}},
		{Name: "pod-affinity-namespace-selector", Profiles: defaultProfile, Steps: []Step{
			namespace("team-a", map[string]string{"team": "a"}), namespace("team-b", map[string]string{"team": "b"}),
			nodes(node("a").Zone("z1"), node("b").Zone("z2")),
			pods(pod("svc", podLabel("app", "svc"), inNamespace("team-b"), nodeSelector(hostKey, "b"))), waitBound("team-b/svc"),
			pods(pod("client", requiredPodAffinity(func() v1.PodAffinityTerm {
				t := podTerm(zoneKey, app("svc"))
				t.NamespaceSelector = labelSelector(map[string]string{"team": "b"})
				return t
			}())), pod("same-ns-only", requiredPodAffinity(podTerm(zoneKey, app("svc")))))}},

		// SchedulingGates.
		{Name: "scheduling-gates", Profiles: defaultProfile, Steps: []Step{
			nodes(node("n")), pods(pod("gated", gates("wait-for-quota")), pod("open")), waitBound("open"),
			patchPod("gated", `{"spec":{"schedulingGates":null}}`)}},

		// Profiles and weights.
		{Name: "two-profiles", Profiles: defaultProfile + `- schedulerName: bin-packer
  plugins:
    multiPoint:
      disabled:
      - name: DefaultPreemption
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
`, Steps: []Step{
			nodes(node("small").Capacity(R{"cpu": "2", "memory": "4Gi"}),
				node("big").Capacity(R{"cpu": "16", "memory": "64Gi"})),
			pods(pod("spreader", req(R{"cpu": "500m", "memory": "1Gi"})),
				pod("packer", req(R{"cpu": "500m", "memory": "1Gi"}), schedulerName("bin-packer")))}},
		{Name: "weights-override", Profiles: `- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: NodeAffinity
        weight: 10
      disabled:
      - name: DefaultPreemption
`, Steps: []Step{
			nodes(node("preferred").Label("fast", "yes").Taint("spot", "", v1.TaintEffectPreferNoSchedule), node("clean")),
			pods(pod("p", preferredNode(100, matchExpr("fast", v1.NodeSelectorOpIn, "yes"))))}},
		{Name: "default-profile-end-to-end", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1").Capacity(R{"cpu": "2"}),
				node("b").Zone("z2").Taint("gpu", "true", v1.TaintEffectNoSchedule),
				node("c").Zone("z3").Unschedulable(true), node("d").Zone("z1").Label("disk", "ssd")),
			pods(pod("big", cpu("3")), pod("ssd", nodeSelector("disk", "ssd")),
				pod("gpu-job", tolerate("gpu", "true", v1.TaintEffectNoSchedule),
					requiredNode(matchExpr(zoneKey, v1.NodeSelectorOpIn, "z2"))),
				pod("nowhere", nodeSelector("disk", "nvme")))}},
	}
}
