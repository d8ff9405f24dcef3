// This file is pod signatures for OpportunisticBatching (batch.go): the
// fragment type, the keys (kube-scheduler's names, so a reader can grep
// upstream for them) and the signers that several plugins share. Each
// plugin's SignPod is beside its Filter; the framework joins the fragments
// (Framework.SignPod, in batch.go).

package framework

import (
	"encoding/json"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// SignFragment is one part of a pod's signature: what one plugin reads of
// the pod, under a key naming that part. Value is encoded as JSON, so it must
// encode the same way for pods that are alike (sorted lists, not maps of
// slices in random order).
type SignFragment struct {
	Key   string
	Value any
}

// PodSignature is a pod's signature: the JSON of every fragment by key, with
// spec.schedulerName. nil means the pod cannot be signed and is never
// batched. Two signatures are compared byte for byte.
type PodSignature []byte

// The fragment keys, as kube-scheduler names them (k8s.io/kube-scheduler's
// framework/signers.go). Plugins that read the same part of the pod use the
// same key, and the fragment is kept once.
const (
	ImageNamesSignerName    = "v1.Pod.Spec.CanonicalImageNames()"
	LabelsSignerName        = "v1.Pod.Labels"
	NodeNameSignerName      = "v1.Pod.Spec.NodeName"
	NodeAffinitySignerName  = "v1.Pod.Spec.Affinity.NodeAffinity"
	NodeSelectorSignerName  = "v1.Pod.Spec.Affinity.NodeSelector"
	HostPortsSignerName     = "v1.Pod.Spec.HostPorts()"
	ResourcesSignerName     = "v1.Pod.Spec.ContainerRequestsAndOverheads()"
	SchedulerNameSignerName = "v1.Pod.Spec.SchedulerName"
	TolerationsSignerName   = "v1.Pod.Spec.Tolerations"
	VolumesSignerName       = "v1.Pod.Spec.Volumes.NonSyntheticSources()"
	FeaturesSignerName      = "v1.Pod.Spec.RequiredFeatures()"
)

// HostPortsSigner is the sorted set of host ports the pod's containers and
// init containers ask for (NodePorts).
func HostPortsSigner(pod *v1.Pod) []int32 {
	ports := sets.New[int32]()
	for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			for _, p := range c.Ports {
				if p.HostPort != 0 {
					ports.Insert(p.HostPort)
				}
			}
		}
	}
	return sets.List(ports)
}

// TolerationsSigner is the pod's tolerations sorted by key, then value
// (TaintToleration, NodeUnschedulable).
func TolerationsSigner(pod *v1.Pod) []v1.Toleration {
	tolerations := slices.Clone(pod.Spec.Tolerations)
	if tolerations == nil {
		tolerations = []v1.Toleration{}
	}
	sort.SliceStable(tolerations, func(i, j int) bool {
		a, b := tolerations[i], tolerations[j]
		return a.Key < b.Key || (a.Key == b.Key && a.Value < b.Value)
	})
	return tolerations
}

// nodeAffinitySignature is NodeAffinitySigner's value: each term as JSON,
// with every list inside it sorted, and the terms sorted, so that the order
// a pod's author wrote them in does not matter.
type nodeAffinitySignature struct {
	Required  []string
	Preferred []string
}

// NodeAffinitySigner canonicalises spec.affinity.nodeAffinity (nil when the
// pod has none): NodeAffinity's Filter and Score read nothing else of it.
func NodeAffinitySigner(pod *v1.Pod) (any, error) {
	if pod.Spec.Affinity == nil || pod.Spec.Affinity.NodeAffinity == nil {
		return nil, nil
	}
	na := pod.Spec.Affinity.NodeAffinity
	sig := nodeAffinitySignature{Required: []string{}, Preferred: []string{}}
	if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
		for i := range req.NodeSelectorTerms {
			term, err := termSignature(&req.NodeSelectorTerms[i])
			if err != nil {
				return nil, err
			}
			sig.Required = append(sig.Required, term)
		}
	}
	for _, pref := range na.PreferredDuringSchedulingIgnoredDuringExecution {
		term, err := termSignature(&pref.Preference)
		if err != nil {
			return nil, err
		}
		weighted, err := json.Marshal(struct {
			Weight     int32
			Preference string
		}{pref.Weight, term})
		if err != nil {
			return nil, err
		}
		sig.Preferred = append(sig.Preferred, string(weighted))
	}
	slices.Sort(sig.Required)
	slices.Sort(sig.Preferred)
	return sig, nil
}

// termSignature is one node selector term as JSON, its requirements (and
// each requirement's values) sorted.
func termSignature(term *v1.NodeSelectorTerm) (string, error) {
	exprs, err := requirementsSignature(term.MatchExpressions)
	if err != nil {
		return "", err
	}
	fields, err := requirementsSignature(term.MatchFields)
	if err != nil {
		return "", err
	}
	out, err := json.Marshal(struct{ MatchExpressions, MatchFields []string }{exprs, fields})
	return string(out), err
}

func requirementsSignature(reqs []v1.NodeSelectorRequirement) ([]string, error) {
	out := make([]string, len(reqs))
	for i := range reqs {
		r := reqs[i].DeepCopy()
		slices.Sort(r.Values)
		b, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		out[i] = string(b)
	}
	slices.Sort(out)
	return out, nil
}

// VolumesSigner is the pod's volume sources as sorted JSON, leaving out
// ConfigMap and Secret volumes: no volume plugin reads them, and they are
// usually named after the pod, which would make every pod unlike the next
// (the four volume plugins).
func VolumesSigner(pod *v1.Pod) []string {
	out := []string{}
	for _, vol := range pod.Spec.Volumes {
		if vol.ConfigMap != nil || vol.Secret != nil {
			continue
		}
		b, err := json.Marshal(vol.VolumeSource)
		if err != nil {
			return nil
		}
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}
