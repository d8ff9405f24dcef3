//go:build conformance

package conformance

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// Profiles used by the cases (YAML for the configuration's profiles list).
const (
	// defaultProfile is kube-scheduler's default profile, DefaultPreemption
	// included: FailedScheduling messages carry its "preemption: ..." part.
	defaultProfile = `- schedulerName: default-scheduler
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
	cpu := func(q string) R { return R{v1.ResourceCPU: q} }
	app := func(v string) map[string]string { return map[string]string{"app": v} }
	return append([]Case{
		// The first chapters' plugins.
		{Name: "core-cordoned", Profiles: coreProfile, Steps: []Step{
			nodes(node("n1").Unschedulable(true), node("n2"), node("n3").Unschedulable(true)), pods(pod("p1"), pod("p2"))}},
		{Name: "core-all-cordoned", Profiles: coreProfile, Steps: []Step{
			nodes(node("n1").Unschedulable(true), node("n2").Unschedulable(true)), pods(pod("p1"))}},
		{Name: "core-tolerated-cordon", Profiles: coreProfile, Steps: []Step{
			nodes(node("big").Unschedulable(true).Capacity(R{"cpu": "8"}), node("small").Unschedulable(true)),
			pods(pod("tolerant").Req(cpu("1")).Toleration(tolerate(v1.TaintNodeUnschedulable, "", v1.TaintEffectNoSchedule)),
				pod("plain"))}},
		{Name: "core-cpu-memory", Profiles: coreProfile, Steps: []Step{
			nodes(node("a").Capacity(R{"cpu": "2", "memory": "1Gi"}), node("b").Capacity(R{"cpu": "1", "memory": "8Gi"})),
			pods(pod("cpu").Req(cpu("1500m"))), waitBound("cpu"),
			pods(pod("mem").Req(R{"memory": "4Gi"})), waitBound("mem"),
			pods(pod("both").Req(R{"cpu": "1500m", "memory": "4Gi"}))}},
		{Name: "core-extended", Profiles: coreProfile, Steps: []Step{
			nodes(node("gpu").Capacity(R{"example.com/gpu": "2"}), node("plain")),
			pods(pod("g1").Req(R{"example.com/gpu": "1"})), waitBound("g1"),
			pods(pod("g2").Req(R{"example.com/gpu": "2"}))}},
		{Name: "core-init-and-sidecar", Profiles: coreProfile, Steps: []Step{
			nodes(node("n").Capacity(R{"cpu": "2"})),
			pods(pod("init-too-big").Req(cpu("1")).InitReq(R{"cpu": "3"}),
				pod("sidecar-too-big").Req(cpu("1500m")).SidecarReq(R{"cpu": "1"}),
				pod("init-fits").Req(cpu("500m")).InitReq(R{"cpu": "2"}))}},
		{Name: "core-pod-count", Profiles: coreProfile, Steps: []Step{
			nodes(node("n").Capacity(R{"pods": "2"})), pods(pod("a")), waitBound("a"), pods(pod("b")), waitBound("b"),
			pods(pod("c"))}},
		{Name: "core-backlog-priority", Profiles: coreProfile, Backlog: []Step{
			priorityClasses(map[string]int32{"high": 1000, "low": 10}),
			nodes(node("n").Capacity(R{"cpu": "2"})),
			pods(pod("low1").Req(cpu("1")).PriorityClassName("low"),
				pod("low2").Req(cpu("1")).PriorityClassName("low"),
				pod("high1").Req(cpu("1")).PriorityClassName("high"),
				pod("high2").Req(cpu("1")).PriorityClassName("high"))}},
		{Name: "core-fill-no-overcommit", Profiles: coreProfile, Compare: CompareCounts, Steps: []Step{
			nodes(node("a"), node("b")),
			pods(pod("p0").Req(cpu("1")), pod("p1").Req(cpu("1")), pod("p2").Req(cpu("1")), pod("p3").Req(cpu("1")),
				pod("p4").Req(cpu("1")), pod("p5").Req(cpu("1")), pod("p6").Req(cpu("1")), pod("p7").Req(cpu("1")),
				pod("p8").Req(cpu("1")), pod("p9").Req(cpu("1")))}},
		{Name: "core-node-appears", Profiles: coreProfile, Steps: []Step{
			nodes(node("full").Capacity(R{"cpu": "1"})), pods(pod("p").Req(cpu("2"))), waitPending("p"), nodes(node("late"))}},
		{Name: "core-uncordon", Profiles: coreProfile, Steps: []Step{
			nodes(node("n").Unschedulable(true)), pods(pod("p")), waitPending("p"), uncordon("n")}},
		{Name: "core-delete-frees", Profiles: coreProfile, Steps: []Step{
			nodes(node("n").Capacity(R{"cpu": "1"})), pods(pod("a").Req(cpu("1"))), waitBound("a"),
			pods(pod("b").Req(cpu("1"))), waitPending("b"), deletePod("a")}},
		{Name: "core-other-schedulers", Profiles: coreProfile, Steps: []Step{
			nodes(node("n")), pods(pod("foreign").SchedulerName("other-scheduler"), pod("mine"))}},

		// TaintToleration.
		{Name: "taint-noschedule", Profiles: defaultProfile, Steps: []Step{
			nodes(node("tainted").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule),
				node("also").Taint("team", "a", v1.TaintEffectNoExecute)),
			pods(pod("plain"), pod("tolerant").Toleration(tolerate("dedicated", "gpu", v1.TaintEffectNoSchedule)))}},
		{Name: "taint-prefer-noschedule", Profiles: defaultProfile, Steps: []Step{
			nodes(node("soft").Taint("spot", "true", v1.TaintEffectPreferNoSchedule), node("clean")),
			pods(pod("p"))}},
		{Name: "taint-only-plugin", Profiles: only("", "TaintToleration"), Steps: []Step{
			nodes(node("a").Taint("x", "1", v1.TaintEffectNoSchedule), node("b").Taint("y", "", v1.TaintEffectNoExecute)),
			pods(pod("p"))}},

		// NodeAffinity.
		{Name: "nodeselector", Profiles: defaultProfile, Steps: []Step{
			nodes(node("ssd").Label("disk", "ssd"), node("hdd").Label("disk", "hdd"), node("none")),
			pods(pod("wants-ssd").NodeSelector("disk", "ssd"), pod("wants-nvme").NodeSelector("disk", "nvme"))}},
		{Name: "required-node-affinity", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1"), node("b").Zone("z2"), node("c").Zone("z3")),
			pods(pod("in").NodeAffinity(requiredNodes(matchExpr(zoneKey, v1.NodeSelectorOpIn, "z2"))),
				pod("notin").NodeAffinity(requiredNodes(matchExpr(zoneKey, v1.NodeSelectorOpNotIn, "z1", "z2"))),
				pod("nowhere").NodeAffinity(requiredNodes(matchExpr(zoneKey, v1.NodeSelectorOpIn, "z9"))))}},
		{Name: "node-affinity-metadata-name", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a"), node("b"), node("c")),
			pods(pod("pinned").NodeAffinity(requiredNodes(matchName("b"))),
				pod("pinned-gone").NodeAffinity(requiredNodes(matchName("zz"))))}},
		{Name: "preferred-node-affinity", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Label("tier", "gold"), node("b").Label("tier", "silver"), node("c")),
			pods(pod("p").NodeAffinity(preferredNodes(prefer(80, matchExpr("tier", v1.NodeSelectorOpIn, "gold")),
				prefer(20, matchExpr("tier", v1.NodeSelectorOpIn, "silver")))))}},
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
			pods(pod("p"), pod("web-only").NodeSelector("pool", "web"))}},

		// NodePorts.
		{Name: "host-port-conflict", Profiles: defaultProfile, Steps: []Step{
			nodes(node("n")), pods(pod("a").HostPort(v1.ProtocolTCP, "", 8080)), waitBound("a"),
			pods(pod("same").HostPort(v1.ProtocolTCP, "", 8080), pod("udp").HostPort(v1.ProtocolUDP, "", 8080),
				pod("other-ip").HostPort(v1.ProtocolTCP, "10.0.0.1", 8080))}},

		// NodeResourcesFit scoring strategies and BalancedAllocation.
		{Name: "least-allocated", Profiles: only("", "NodeResourcesFit"), Steps: []Step{
			nodes(node("small").Capacity(R{"cpu": "2", "memory": "4Gi"}),
				node("big").Capacity(R{"cpu": "16", "memory": "64Gi"})),
			pods(pod("p").Req(R{"cpu": "500m", "memory": "1Gi"}))}},
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
			pods(pod("p").Req(R{"cpu": "500m", "memory": "1Gi"}))}},
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
			pods(pod("p").Req(R{"cpu": "2", "memory": "2Gi"}))}},
		{Name: "balanced-allocation", Profiles: only("", "NodeResourcesFit", "NodeResourcesBalancedAllocation"),
			Steps: []Step{
				nodes(node("cpu-heavy").Capacity(R{"cpu": "8", "memory": "8Gi"}),
					node("even").Capacity(R{"cpu": "4", "memory": "16Gi"})),
				pods(pod("p").Req(R{"cpu": "1", "memory": "4Gi"}))}},
		{Name: "image-locality", Profiles: defaultProfile, Steps: []Step{
			nodes(node("has-image").Images(500*1024*1024, "registry.example/big:1.0"), node("no-image")),
			pods(pod("p").Image("registry.example/big:1.0"))}},

		// PodTopologySpread.
		{Name: "spread-hard-zones", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1").Capacity(R{"cpu": "8"}), node("b").Zone("z2")),
			pods(pod("w0").Label("app", "web").SpreadConstraint(spread(1, zoneKey, v1.DoNotSchedule, app("web")))),
			waitBound("w0"),
			pods(pod("w1").Label("app", "web").SpreadConstraint(spread(1, zoneKey, v1.DoNotSchedule, app("web")))),
			waitBound("w1"),
			pods(pod("w2").Label("app", "web").SpreadConstraint(spread(1, zoneKey, v1.DoNotSchedule, app("web"))))}},
		{Name: "spread-hard-violated", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1").Capacity(R{"cpu": "8"}), node("b").Zone("z2").Capacity(R{"cpu": "1"})),
			pods(pod("x0").Label("app", "x").Req(cpu("1"))), waitBound("x0"),
			pods(pod("x1").Label("app", "x").Req(cpu("1"))), waitBound("x1"),
			pods(pod("x2").Label("app", "x").Req(cpu("1")).SpreadConstraint(spread(1, zoneKey, v1.DoNotSchedule, app("x"))))}},
		{Name: "spread-missing-label", Profiles: defaultProfile, Steps: []Step{
			nodes(node("labelled").Zone("z1"), node("unlabelled")),
			pods(pod("p").Label("app", "m").SpreadConstraint(spread(1, zoneKey, v1.DoNotSchedule, app("m"))))}},
		{Name: "spread-min-domains", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1").Capacity(R{"cpu": "8"}), node("b").Zone("z2")),
			pods(pod("m0").Label("app", "md").
				SpreadConstraint(spread(1, zoneKey, v1.DoNotSchedule, app("md"), minDomains(3)))),
			waitBound("m0"),
			pods(pod("m1").Label("app", "md").
				SpreadConstraint(spread(1, zoneKey, v1.DoNotSchedule, app("md"), minDomains(3))))}},
		{Name: "spread-soft", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1"), node("b").Zone("z1"), node("c").Zone("z2")),
			pods(pod("s0").Label("app", "s").NodeSelector(hostKey, "a")), waitBound("s0"),
			pods(pod("s1").Label("app", "s").NodeSelector(hostKey, "b")), waitBound("s1"),
			pods(pod("s2").Label("app", "s").SpreadConstraint(spread(1, zoneKey, v1.ScheduleAnyway, app("s"))))}},
		{Name: "spread-system-defaults", Profiles: defaultProfile, Compare: CompareCounts, Steps: []Step{
			service("svc", app("svc")),
			nodes(node("a").Zone("z1"), node("b").Zone("z2"), node("c").Zone("z3")),
			pods(pod("d0").Label("app", "svc")), waitBound("d0"),
			pods(pod("d1").Label("app", "svc")), waitBound("d1"),
			pods(pod("d2").Label("app", "svc"))}},
		{Name: "spread-taints-policy-honor", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1"), node("b").Zone("z2").Taint("k", "v", v1.TaintEffectNoSchedule)),
			pods(pod("h0").Label("app", "h").SpreadConstraint(spread(1, zoneKey, v1.DoNotSchedule, app("h"), honorTaints))),
			waitBound("h0"),
			pods(pod("h1").Label("app", "h").SpreadConstraint(spread(1, zoneKey, v1.DoNotSchedule, app("h"), honorTaints)))}},

		// InterPodAffinity.
		{Name: "pod-affinity-required", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1"), node("b").Zone("z2"), node("c").Zone("z2")),
			pods(pod("db").Label("app", "db").NodeSelector(hostKey, "b")), waitBound("db"),
			pods(pod("web").PodAffinity(requiredAffinity(podTerm(zoneKey, app("db")))),
				pod("lost").PodAffinity(requiredAffinity(podTerm(zoneKey, app("nothing")))))}},
		{Name: "pod-affinity-self", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1").Capacity(R{"cpu": "8"}), node("b").Zone("z2")),
			pods(pod("first").Label("app", "self").PodAffinity(requiredAffinity(podTerm(zoneKey, app("self")))))}},
		{Name: "pod-anti-affinity-incoming", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1"), node("b").Zone("z2")),
			pods(pod("x").Label("app", "x").NodeSelector(hostKey, "a")), waitBound("x"),
			pods(pod("y").PodAntiAffinity(requiredAntiAffinity(podTerm(zoneKey, app("x")))),
				pod("z").PodAntiAffinity(requiredAntiAffinity(podTerm(zoneKey, app("x")))).NodeSelector(hostKey, "a"))}},
		{Name: "pod-anti-affinity-existing", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a"), node("b")),
			pods(pod("loner").NodeSelector(hostKey, "a").PodAntiAffinity(requiredAntiAffinity(podTerm(hostKey, app("crowd"))))),
			waitBound("loner"),
			pods(pod("crowd1").Label("app", "crowd"), pod("crowd2").Label("app", "crowd").NodeSelector(hostKey, "a"))}},
		{Name: "pod-affinity-preferred", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1"), node("b").Zone("z2"), node("c").Zone("z3")),
			pods(pod("cache").Label("app", "cache").NodeSelector(hostKey, "c")), waitBound("cache"),
			pods(pod("p").PodAffinity(preferredAffinity(100, podTerm(zoneKey, app("cache")))))}},
		{Name: "pod-anti-affinity-preferred", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a"), node("b")),
			pods(pod("noisy").Label("app", "noisy").NodeSelector(hostKey, "a")), waitBound("noisy"),
			pods(pod("quiet").PodAntiAffinity(preferredAntiAffinity(100, podTerm(hostKey, app("noisy")))))}},
		{Name: "pod-affinity-namespace-selector", Profiles: defaultProfile, Steps: []Step{
			namespace("team-a", map[string]string{"team": "a"}), namespace("team-b", map[string]string{"team": "b"}),
			nodes(node("a").Zone("z1"), node("b").Zone("z2")),
			pods(pod("svc").Label("app", "svc").Namespace("team-b").NodeSelector(hostKey, "b")),
			waitBound("team-b/svc"),
			pods(pod("client").PodAffinity(requiredAffinity(func() v1.PodAffinityTerm {
				t := podTerm(zoneKey, app("svc"))
				t.NamespaceSelector = labelSelector(map[string]string{"team": "b"})
				return t
			}())), pod("same-ns-only").PodAffinity(requiredAffinity(podTerm(zoneKey, app("svc")))))}},

		// SchedulingGates.
		{Name: "scheduling-gates", Profiles: defaultProfile, Steps: []Step{
			nodes(node("n")), pods(pod("gated").SchedulingGates("wait-for-quota"), pod("open")), waitBound("open"),
			patchPod("gated", `{"spec":{"schedulingGates":null}}`)}},

		// Profiles and weights.
		{Name: "two-profiles", Profiles: defaultProfile + `- schedulerName: bin-packer
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
`, Steps: []Step{
			nodes(node("small").Capacity(R{"cpu": "2", "memory": "4Gi"}),
				node("big").Capacity(R{"cpu": "16", "memory": "64Gi"})),
			pods(pod("spreader").Req(R{"cpu": "500m", "memory": "1Gi"}),
				pod("packer").Req(R{"cpu": "500m", "memory": "1Gi"}).SchedulerName("bin-packer"))}},
		{Name: "weights-override", Profiles: `- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: NodeAffinity
        weight: 10
`, Steps: []Step{
			nodes(node("preferred").Label("fast", "yes").Taint("spot", "", v1.TaintEffectPreferNoSchedule), node("clean")),
			pods(pod("p").NodeAffinity(preferredNodes(prefer(100, matchExpr("fast", v1.NodeSelectorOpIn, "yes")))))}},
		{Name: "default-profile-end-to-end", Profiles: defaultProfile, Steps: []Step{
			nodes(node("a").Zone("z1").Capacity(R{"cpu": "2"}),
				node("b").Zone("z2").Taint("gpu", "true", v1.TaintEffectNoSchedule),
				node("c").Zone("z3").Unschedulable(true), node("d").Zone("z1").Label("disk", "ssd")),
			pods(pod("big").Req(cpu("3")), pod("ssd").NodeSelector("disk", "ssd"),
				pod("gpu-job").Toleration(tolerate("gpu", "true", v1.TaintEffectNoSchedule)).
					NodeAffinity(requiredNodes(matchExpr(zoneKey, v1.NodeSelectorOpIn, "z2"))),
				pod("nowhere").NodeSelector("disk", "nvme"))}},
	}, slices.Concat(preemptionCases(), extenderCases(), storageCases(), draCases(), draHeldoutCases(),
		batchingCases(), gangCases())...)
}
