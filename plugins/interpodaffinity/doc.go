// Package interpodaffinity holds InterPodAffinity, the plugin that enforces
// the pod affinity and anti-affinity of the pod being scheduled and of the
// pods already running (filtering.go), prefers nodes by their preferred
// terms (scoring.go), and says which cluster events may help a pod it
// rejected (enqueue.go), as kube-scheduler's InterPodAffinity does.
//
// Affinity is about places, not nodes: a term's topologyKey names a node
// label, and all nodes sharing that label's value form one topology domain.
// "Pod A has affinity to pods labelled app=db in zone" means A may only run
// in a zone where such a pod already runs.
package interpodaffinity
