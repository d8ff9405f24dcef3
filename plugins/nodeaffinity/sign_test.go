// Tests for NodeAffinity's SignPod.
package nodeaffinity

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// termSig is one signed node selector term, decoded: each requirement as
// the JSON the signer wrote for it.
type termSig struct {
	MatchExpressions []string
	MatchFields      []string
}

// prefSig is one signed preferred term, decoded.
type prefSig struct {
	Weight     int32
	Preference termSig
}

// affinitySig is the node affinity fragment, decoded from the nested JSON
// the signer writes (each term, and each preferred term, is a JSON string).
type affinitySig struct {
	Required  []termSig
	Preferred []prefSig
}

// decodeAffinity decodes the node affinity fragment's value; nil for a pod
// without node affinity.
func decodeAffinity(t *testing.T, value any) *affinitySig {
	t.Helper()
	raw, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	var outer *struct{ Required, Preferred []string }
	if err := json.Unmarshal(raw, &outer); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	if outer == nil {
		return nil
	}
	sig := &affinitySig{Required: []termSig{}, Preferred: []prefSig{}}
	for _, s := range outer.Required {
		var term termSig
		if err := json.Unmarshal([]byte(s), &term); err != nil {
			t.Fatalf("decoding term %s: %v", s, err)
		}
		sig.Required = append(sig.Required, term)
	}
	for _, s := range outer.Preferred {
		var p struct {
			Weight     int32
			Preference string
		}
		if err := json.Unmarshal([]byte(s), &p); err != nil {
			t.Fatalf("decoding preferred term %s: %v", s, err)
		}
		var term termSig
		if err := json.Unmarshal([]byte(p.Preference), &term); err != nil {
			t.Fatalf("decoding preference %s: %v", p.Preference, err)
		}
		sig.Preferred = append(sig.Preferred, prefSig{Weight: p.Weight, Preference: term})
	}
	return sig
}

func TestSignPod(t *testing.T) {
	both := required(
		fieldTerm(nameIn("n1")),
		labelTerm(expr("zone", v1.NodeSelectorOpIn, "b", "a"), expr("gpu", v1.NodeSelectorOpExists)),
	)
	both.PreferredDuringSchedulingIgnoredDuringExecution = []v1.PreferredSchedulingTerm{
		pref(5, labelTerm(expr("disk", v1.NodeSelectorOpIn, "ssd"))),
		pref(1, labelTerm(expr("arch", v1.NodeSelectorOpIn, "arm64"))),
	}
	tests := []struct {
		name         string
		pod          *v1.Pod
		wantAffinity *affinitySig
		wantSelector map[string]string
	}{
		{
			name: "neither node affinity nor nodeSelector",
			pod:  st.MakePod().Name("p").Obj(),
		},
		{
			name:         "nodeSelector only",
			pod:          st.MakePod().Name("p").NodeSelector("zone", "a").NodeSelector("disk", "ssd").Obj(),
			wantSelector: map[string]string{"zone": "a", "disk": "ssd"},
		},
		{
			name: "required and preferred terms, each list sorted",
			pod:  st.MakePod().Name("p").NodeAffinity(both).NodeSelector("zone", "a").Obj(),
			wantAffinity: &affinitySig{
				Required: []termSig{
					{
						MatchExpressions: []string{
							`{"key":"gpu","operator":"Exists"}`,
							`{"key":"zone","operator":"In","values":["a","b"]}`,
						},
						MatchFields: []string{},
					},
					{
						MatchExpressions: []string{},
						MatchFields:      []string{`{"key":"metadata.name","operator":"In","values":["n1"]}`},
					},
				},
				Preferred: []prefSig{
					{Weight: 1, Preference: termSig{
						MatchExpressions: []string{`{"key":"arch","operator":"In","values":["arm64"]}`},
						MatchFields:      []string{},
					}},
					{Weight: 5, Preference: termSig{
						MatchExpressions: []string{`{"key":"disk","operator":"In","values":["ssd"]}`},
						MatchFields:      []string{},
					}},
				},
			},
			wantSelector: map[string]string{"zone": "a"},
		},
		{
			name: "preferred terms only",
			pod:  st.MakePod().Name("p").NodeAffinity(preferred(pref(3, fieldTerm(nameIn("n2"))))).Obj(),
			wantAffinity: &affinitySig{Required: []termSig{}, Preferred: []prefSig{{Weight: 3, Preference: termSig{
				MatchExpressions: []string{},
				MatchFields:      []string{`{"key":"metadata.name","operator":"In","values":["n2"]}`},
			}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, status := (&NodeAffinity{}).SignPod(context.Background(), tt.pod)
			if !status.IsSuccess() {
				t.Fatalf("SignPod: %v", status)
			}
			var keys []string
			for _, f := range got {
				keys = append(keys, f.Key)
			}
			wantKeys := []string{"v1.Pod.Spec.Affinity.NodeAffinity", "v1.Pod.Spec.Affinity.NodeSelector"}
			if diff := cmp.Diff(wantKeys, keys); diff != "" {
				t.Fatalf("fragment keys (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantAffinity, decodeAffinity(t, got[0].Value)); diff != "" {
				t.Errorf("node affinity fragment (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSelector, got[1].Value); diff != "" {
				t.Errorf("nodeSelector fragment (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSignPodPairs(t *testing.T) {
	zoneAB := labelTerm(expr("zone", v1.NodeSelectorOpIn, "a", "b"), expr("gpu", v1.NodeSelectorOpExists))
	zoneBA := labelTerm(expr("gpu", v1.NodeSelectorOpExists), expr("zone", v1.NodeSelectorOpIn, "b", "a"))
	pinned := fieldTerm(nameIn("n1"))
	plugintesting.RunSignPairs(t, &NodeAffinity{}, []plugintesting.SignPair{
		{
			Name: "terms, requirements and values in another order",
			A:    st.MakePod().Name("a").NodeAffinity(required(zoneAB, pinned)).Obj(),
			B:    st.MakePod().Name("b").NodeAffinity(required(pinned, zoneBA)).Obj(),
			Same: true,
		},
		{
			Name: "preferred terms in another order",
			A: st.MakePod().Name("a").NodeAffinity(preferred(pref(1, zoneAB), pref(2, pinned))).
				Label("app", "web").Obj(),
			B:    st.MakePod().Name("b").NodeAffinity(preferred(pref(2, pinned), pref(1, zoneBA))).Obj(),
			Same: true,
		},
		{
			Name: "same nodeSelector, other tolerations",
			A:    st.MakePod().Name("a").NodeSelector("zone", "a").NodeSelector("disk", "ssd").Obj(),
			B: st.MakePod().Name("b").NodeSelector("disk", "ssd").NodeSelector("zone", "a").
				Toleration(v1.Toleration{Key: "gpu", Operator: v1.TolerationOpExists}).Obj(),
			Same: true,
		},
		{
			Name: "another value",
			A:    st.MakePod().Name("a").NodeAffinity(required(zoneAB)).Obj(),
			B: st.MakePod().Name("a").NodeAffinity(required(
				labelTerm(expr("zone", v1.NodeSelectorOpIn, "a", "c"), expr("gpu", v1.NodeSelectorOpExists)))).Obj(),
		},
		{
			Name: "required term made preferred",
			A:    st.MakePod().Name("a").NodeAffinity(required(pinned)).Obj(),
			B:    st.MakePod().Name("a").NodeAffinity(preferred(pref(1, pinned))).Obj(),
		},
		{
			Name: "another weight",
			A:    st.MakePod().Name("a").NodeAffinity(preferred(pref(1, pinned))).Obj(),
			B:    st.MakePod().Name("a").NodeAffinity(preferred(pref(2, pinned))).Obj(),
		},
		{
			Name: "another nodeSelector",
			A:    st.MakePod().Name("a").NodeSelector("zone", "a").Obj(),
			B:    st.MakePod().Name("a").NodeSelector("zone", "b").Obj(),
		},
		{
			Name: "node affinity and none",
			A:    st.MakePod().Name("a").NodeAffinity(required(pinned)).Obj(),
			B:    st.MakePod().Name("a").Obj(),
		},
	})
}
