// Package plugins holds the plugins minisched ships, one package each below
// this one, and NewInTreeRegistry (registry.go), the one place that names
// them all. `go doc ./plugins/<package>` tells each plugin's story.
//
// The in-tree plugins, in the registry's order: the package, then the name a
// configuration gives it, which is kube-scheduler's unless said otherwise, and
// what it does.
//   - schedulinggates: SchedulingGates keeps a pod with spec.schedulingGates
//     out of activeQ until every gate is removed.
//   - prioritysort: PrioritySort orders activeQ by priority, oldest first
//     among equals.
//   - nodename: NodeName fits a pod that names a node (spec.nodeName) to that
//     node only.
//   - nodeunschedulable: NodeUnschedulable keeps pods off cordoned nodes
//     unless they tolerate the unschedulable taint.
//   - tainttoleration: TaintToleration keeps pods off nodes with NoSchedule
//     and NoExecute taints they do not tolerate, and prefers nodes with fewer
//     untolerated PreferNoSchedule taints.
//   - nodeaffinity: NodeAffinity keeps pods on the nodes their nodeSelector
//     and required node affinity allow, and prefers those of their preferred
//     terms.
//   - nodeports: NodePorts rejects a node where a host port the pod asks for
//     is taken.
//   - noderesources: NodeResourcesFit checks that a node has room for the
//     pod's requests and scores the room left or used (and, for a pod
//     group, the room its placement would use); and
//     NodeResourcesBalancedAllocation prefers nodes whose resources stay
//     evenly used.
//   - volumerestrictions: VolumeRestrictions keeps two pods off a volume that
//     only one of them may use.
//   - nodevolumelimits: NodeVolumeLimits (upstream's CSILimits type) keeps a
//     pod off a node that cannot attach more volumes of a CSI driver.
//   - volumebinding: VolumeBinding places a pod where its
//     PersistentVolumeClaims can be bound or provisioned, and binds them
//     before the pod.
//   - volumezone: VolumeZone keeps a pod whose volumes are zonal off the
//     nodes of other zones and regions.
//   - podtopologyspread: PodTopologySpread spreads pods over topology domains
//     (zones, nodes, any node label).
//   - interpodaffinity: InterPodAffinity enforces pod affinity and
//     anti-affinity, and prefers nodes by the preferred terms.
//   - dynamicresources: DynamicResources allocates devices to a pod's
//     ResourceClaims; its dramanager holds the state of allocation that the
//     profiles share.
//   - defaultpreemption: DefaultPreemption, when a pod fits nowhere, evicts
//     lower-priority pods from a node to make room and nominates the pod there.
//   - imagelocality: ImageLocality prefers nodes that already hold the pod's
//     container images.
//   - nodedeclaredfeatures: NodeDeclaredFeatures keeps pods off nodes whose
//     kubelet does not declare the features they need.
//   - defaultbinder: DefaultBinder binds the pod by creating its Binding
//     subresource.
//   - gangscheduling: GangScheduling (GenericWorkload, chapter 19) lets the
//     pods of a gang PodGroup go to binding at least minCount at once, or
//     not at all: it holds them back until minCount exist, tells the
//     pod-group cycle whether minCount can still be placed, and holds placed
//     members at Permit until minCount are placed.
//   - topologyaware: TopologyPlacementGenerator
//     (TopologyAwareWorkloadScheduling, chapter 19) proposes one placement
//     per domain of a PodGroup's topology key, for the pod-group cycle to
//     try the whole group in.
//   - podgrouppodscount: PodGroupPodsCount (TopologyAwareWorkloadScheduling)
//     prefers the placement that holds more of the group's pods.
//   - nodenumber: NodeNumber, not kube-scheduler's but the custom plugin of
//     mini-kube-scheduler, prefers nodes whose name ends in the pod's digit
//     and holds the pod at Permit for that many seconds.
//   - statefulsetordinal: StatefulSetOrdinal, not kube-scheduler's, places
//     pod <name>-N of a StatefulSet on the node whose ordinal label says N.
//   - dynamic: Dynamic, crane-scheduler's load-aware plugin, keeps pods off
//     nodes whose real usage is too high and prefers the least used.
//
// Beside them:
//   - helper: what more than one plugin needs, as upstream's plugins/helper.
//   - plugintesting: runs plugins in tests as the scheduler does; imported by
//     tests only.
package plugins
