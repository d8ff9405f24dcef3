// Builders for node selector terms shared by this package's tests.
package nodeaffinity

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// expr is a label requirement for matchExpressions.
func expr(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirement {
	return v1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// nameIn is the field requirement metadata.name In names.
func nameIn(names ...string) v1.NodeSelectorRequirement {
	return v1.NodeSelectorRequirement{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: names}
}

// labelTerm is a term of label requirements, ANDed.
func labelTerm(reqs ...v1.NodeSelectorRequirement) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchExpressions: reqs}
}

// fieldTerm is a term of field requirements, ANDed.
func fieldTerm(reqs ...v1.NodeSelectorRequirement) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchFields: reqs}
}

// required is a node affinity whose required selector ORs terms.
func required(terms ...v1.NodeSelectorTerm) *v1.NodeAffinity {
	return &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms}}
}

// preferred is a node affinity with the given preferred terms only.
func preferred(terms ...v1.PreferredSchedulingTerm) *v1.NodeAffinity {
	return &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: terms}
}

// pref is one preferred term of the given weight.
func pref(weight int32, term v1.NodeSelectorTerm) v1.PreferredSchedulingTerm {
	return v1.PreferredSchedulingTerm{Weight: weight, Preference: term}
}

// rawArgs wraps JSON args as a profile's pluginConfig would carry them.
func rawArgs(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
