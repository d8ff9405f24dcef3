// This file holds the cache tests' starting points for the shared builders:
// every pod and node the cache keys gets a UID derived from its name; and
// pod groups' members and PodGroup objects.

package cache

import (
	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	st "github.com/minisched/minisched/builders"
)

// makePod starts a pod named name in namespace "default" with UID
// "uid-<name>" (the cache keys pods by UID).
func makePod(name string) *st.PodWrapper {
	return st.MakePod().Name(name).UID("uid-" + name)
}

// makeMember starts a pod like makePod that is a member of the pod group
// called group.
func makeMember(name, group string) *st.PodWrapper { return makePod(name).PodGroup(group) }

// makePodGroup returns a gang PodGroup called name in namespace "default",
// of minCount 2.
func makePodGroup(name string) *schedulingv1beta1.PodGroup {
	return st.MakePodGroup().Name(name).Gang(2).Obj()
}

// makeNode starts a node named name with UID "uid-<name>".
func makeNode(name string) *st.NodeWrapper {
	return st.MakeNode().Name(name).UID("uid-" + name)
}

// requiredPodAffinity is a required pod affinity, per node, to pods labelled
// app=app.
func requiredPodAffinity(app string) *v1.PodAffinity {
	return &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{affinityTerm(app)}}
}

// requiredPodAntiAffinity is a required pod anti-affinity, per node, to pods
// labelled app=app.
func requiredPodAntiAffinity(app string) *v1.PodAntiAffinity {
	return &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{affinityTerm(app)}}
}

func affinityTerm(app string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		TopologyKey:   v1.LabelHostname,
	}
}
