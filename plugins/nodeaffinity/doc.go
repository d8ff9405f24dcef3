// Package nodeaffinity is kube-scheduler's NodeAffinity plugin: Filter keeps
// a pod on the nodes its spec.nodeSelector and required node affinity allow
// (and on those a scheduler-enforced addedAffinity allows), PreFilter narrows
// the candidates when the affinity names nodes by metadata.name, and Score
// (score.go) prefers nodes that match the pod's preferred terms.
package nodeaffinity
