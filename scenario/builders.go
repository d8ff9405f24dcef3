// The nodes, pods and claims stories are made of, built with the shared
// builders and the defaults a cluster without kubelets needs.

package scenario

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/minisched/minisched/builders"
)

// MakeNode starts a node as the scenarios create it, with the shared
// builders: Ready, labelled with its hostname, with 4 cpu, 16Gi memory,
// 100Gi ephemeral storage and room for 110 pods.
func MakeNode(name string) *builders.NodeWrapper {
	n := builders.MakeNode().Name(name).Label(v1.LabelHostname, name).Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU: "4", v1.ResourceMemory: "16Gi", v1.ResourceEphemeralStorage: "100Gi", v1.ResourcePods: "110",
	})
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	return n
}

// MakePod starts a pod as the scenarios create it, with the shared
// builders: named, in no namespace (CreatePods puts it in the scenario's),
// and with terminationGracePeriodSeconds 0, since no kubelet runs to stop
// it. CreatePods also gives it a container if no Req, Image or HostPort
// did.
func MakePod(name string) *builders.PodWrapper {
	return builders.MakePod().Namespace("").Name(name).TerminationGracePeriod(0)
}

// MakePVC starts a claim as the scenarios create it, with the shared
// builders: named, ReadWriteOnce, in no namespace (CreateObjects puts it in
// the scenario's).
func MakePVC(name string) *builders.PVCWrapper {
	return builders.MakePVC().Namespace("").Name(name)
}

// MakePodGroup starts a basic PodGroup as the scenarios create it, with
// the shared builders: named, in no namespace (CreatePodGroups puts it in
// the scenario's). Gang turns it into a gang.
func MakePodGroup(name string) *builders.PodGroupWrapper {
	return builders.MakePodGroup().Namespace("").Name(name)
}

// Nodes makes a node of MakeNode's for each name.
func Nodes(names ...string) []*v1.Node {
	out := make([]*v1.Node, len(names))
	for i, n := range names {
		out[i] = MakeNode(n).Obj()
	}
	return out
}

// Numbered returns prefix followed by each number from from to to:
// Numbered("node", 0, 2) is node0, node1, node2.
func Numbered(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}
