//go:build conformance

package conformance

import (
	"fmt"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/examples/extender/server"
)

// extenderCases run the example extender (examples/extender/server) behind
// both schedulers: a node annotated maintenance fails its filter
// (Unschedulable), one annotated retired fails for good
// (UnschedulableAndUnresolvable), the preference label is its score, it
// binds pods with an annotation saying so, and it refuses preemption on
// nodes annotated no-preemption.
func extenderCases() []Case {
	classes := priorityClasses(map[string]int32{"lowest": 10, "low": 20, "high": 1000})
	cpuNode := func(name, cpu string) *builders.NodeWrapper { return node(name).Capacity(R{"cpu": cpu}) }
	running := func(name, node, cpu string) *builders.PodWrapper {
		return pod(name).NodeName(node).Req(R{"cpu": cpu})
	}
	victim := func(name, node, class, cpu string) *builders.PodWrapper {
		return pod(name).NodeName(node).PriorityClassName(class).Req(R{"cpu": cpu}).TerminationGracePeriod(0)
	}
	// extender is one extenders entry for the example extender with the
	// given verbs ("filterVerb: filter", …) and settings.
	extender := func(lines ...string) string {
		out := "- urlPrefix: " + extenderURL + "\n"
		for _, l := range lines {
			out += "  " + l + "\n"
		}
		return out
	}
	const filter, prioritize, bind, preempt = "filterVerb: filter", "prioritizeVerb: prioritize", "bindVerb: bind",
		"preemptVerb: preempt"
	const cacheCapable = "nodeCacheCapable: true"
	maintenance := func(n *builders.NodeWrapper) *builders.NodeWrapper {
		return n.Annotation(server.MaintenanceAnnotation, "disk replacement")
	}
	// preferred: n1 runs a 2-cpu pod, so the plugins prefer the empty n2 by
	// about 50 points; the extender prefers n1 by 2 (× weight × 10).
	preferred := func(weight int) Case {
		return Case{Name: fmt.Sprintf("extender-prioritize-weight-%d", weight), Profiles: defaultProfile,
			Extenders: extender(prioritize, fmt.Sprintf("weight: %d", weight)),
			Backlog: []Step{nodes(node("n1").Label(server.PreferenceLabel, "2"), node("n2")),
				pods(running("load", "n1", "2"))},
			Steps: []Step{pods(pod("p").Req(R{"cpu": "1"}))}}
	}
	// cached: "big" runs 6 of its 8 cpus, "small" is empty with 4. With
	// nodeCacheCapable the extender answers with names and Score sees the
	// nodes as they are: small wins. Without it, the nodes come back whole
	// and kube-scheduler scores them as bare nodes without their pods: big
	// looks emptier and wins.
	cached := func(name string, settings ...string) Case {
		return Case{Name: name, Profiles: defaultProfile, Extenders: extender(settings...),
			Backlog: []Step{nodes(cpuNode("big", "8"), cpuNode("small", "4")), pods(running("load", "big", "6"))},
			Steps:   []Step{pods(pod("p").Req(R{"cpu": "1"}))}}
	}
	// protected: two full nodes; preempting on n1 would evict the lower
	// victim, but the extender refuses preemption there.
	protected := func(name string, settings ...string) Case {
		return Case{Name: name, Profiles: defaultProfile, Extenders: extender(append(settings, preempt)...),
			Backlog: []Step{classes,
				nodes(cpuNode("n1", "2").Annotation(server.NoPreemptionAnnotation, "true"), cpuNode("n2", "2")),
				pods(victim("v-lowest", "n1", "lowest", "2"), victim("v-low", "n2", "low", "2"))},
			Steps: []Step{pods(pod("p").PriorityClassName("high").Req(R{"cpu": "1"}))}}
	}
	return []Case{
		// Reasons from the extender are counted with the plugins' reasons.
		{Name: "extender-filter-reasons", Profiles: defaultProfile, Extenders: extender(filter),
			Backlog: []Step{nodes(maintenance(node("maint")), node("retired").Annotation(server.RetiredAnnotation, "true"),
				node("cordoned").Unschedulable(true), cpuNode("small", "1"))},
			Steps: []Step{pods(pod("big").Req(R{"cpu": "2"}), pod("fits").Req(R{"cpu": "1"}))}},
		preferred(1),
		preferred(5),
		cached("extender-filter-whole-nodes", filter),
		cached("extender-node-cache-capable", filter, cacheCapable),
		{Name: "extender-bind", Profiles: defaultProfile, Extenders: extender(filter, bind, cacheCapable),
			Backlog: []Step{nodes(maintenance(node("maint")), node("n"))},
			Steps:   []Step{pods(pod("a").Req(R{"cpu": "1"}), pod("b").Req(R{"cpu": "1"}))}},
		// The extender manages example.com/gpu, which the scheduler then
		// ignores (no node lists it): it is asked about the gpu pod only.
		{Name: "extender-managed-resources", Profiles: defaultProfile,
			Extenders: extender(filter, "managedResources:", "- name: example.com/gpu", "  ignoredByScheduler: true"),
			Backlog:   []Step{nodes(maintenance(node("maint")), node("plain"))},
			Steps: []Step{pods(pod("gpu").Req(R{"cpu": "1", "example.com/gpu": "1"})), waitBound("gpu"),
				pods(pod("cpu").Req(R{"cpu": "1"}))}},
		{Name: "extender-unreachable-ignorable", Profiles: defaultProfile,
			Extenders: "- urlPrefix: http://127.0.0.1:1/\n  filterVerb: filter\n  prioritizeVerb: prioritize\n" +
				"  weight: 1\n  bindVerb: bind\n  ignorable: true\n",
			Backlog: []Step{nodes(node("n1"), node("n2")), pods(running("load", "n2", "2"))},
			Steps:   []Step{pods(pod("p").Req(R{"cpu": "1"}))}},
		{Name: "extender-unreachable-required", Profiles: defaultProfile,
			Extenders: "- urlPrefix: http://127.0.0.1:1/\n  filterVerb: filter\n",
			Backlog:   []Step{nodes(node("n1"))},
			Steps:     []Step{pods(pod("p").Req(R{"cpu": "1"}))}},
		protected("extender-preempt-whole-victims"),
		protected("extender-preempt-node-cache-capable", cacheCapable),
	}
}
