// This file helps tests check what a plugin signs a pod with
// (framework.SignPlugin).

package plugintesting

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
)

// SignCase is one pod and what a plugin must sign it with: Want when the
// plugin signs it (WantStatus nil, Success), or WantStatus when it refuses.
type SignCase struct {
	Name       string
	Pod        *v1.Pod
	Want       []framework.SignFragment
	WantStatus *framework.Status
}

// RunSignCases signs each case's pod with pl, one subtest per case, and
// compares the fragments and the status with the case's.
func RunSignCases(t *testing.T, pl framework.SignPlugin, cases []SignCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			got, status := pl.SignPod(context.Background(), tc.Pod)
			if diff := cmp.Diff(tc.WantStatus, status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.Want, got); diff != "" {
				t.Errorf("fragments (-want +got):\n%s", diff)
			}
		})
	}
}

// SignPair is two pods and whether a plugin must sign them alike.
type SignPair struct {
	Name string
	A, B *v1.Pod
	Same bool
}

// RunSignPairs signs both pods of each pair with pl, one subtest per pair,
// and checks that their fragments encode to the same JSON exactly when the
// pair says they are alike. A pod that pl refuses fails the test.
func RunSignPairs(t *testing.T, pl framework.SignPlugin, pairs []SignPair) {
	t.Helper()
	for _, p := range pairs {
		t.Run(p.Name, func(t *testing.T) {
			a, b := SignJSON(t, pl, p.A), SignJSON(t, pl, p.B)
			if p.Same && a != b {
				t.Errorf("signatures differ, want them alike:\n%s\n%s", a, b)
			}
			if !p.Same && a == b {
				t.Errorf("signatures are alike, want them to differ: %s", a)
			}
		})
	}
}

// SignJSON returns the JSON of the fragments pl signs pod with, in order,
// failing the test unless pl signs the pod (Success) and the fragments
// encode.
func SignJSON(t testing.TB, pl framework.SignPlugin, pod *v1.Pod) string {
	t.Helper()
	fragments, status := pl.SignPod(context.Background(), pod)
	if !status.IsSuccess() {
		t.Fatalf("SignPod: %v", status)
	}
	out, err := json.Marshal(fragments)
	if err != nil {
		t.Fatalf("encoding fragments: %v", err)
	}
	return string(out)
}

// VolumesSignCases are the cases of the four volume plugins, which all sign
// the pod's volumes with framework.VolumesSigner.
func VolumesSignCases() []SignCase {
	return []SignCase{
		{
			Name: "no volumes",
			Pod:  st.MakePod().Name("p").Obj(),
			Want: volumesFragment(),
		},
		{
			Name: "configMap and secret volumes are left out",
			Pod: st.MakePod().Name("p").Volume(configMapVolume("cfg", "p-config")).
				Volume(secretVolume("token", "p-token")).Obj(),
			Want: volumesFragment(),
		},
		{
			Name: "every other volume's source, sorted",
			Pod: st.MakePod().Name("p").PVC("data").Volume(configMapVolume("cfg", "p-config")).
				Volume(v1.Volume{Name: "logs", VolumeSource: v1.VolumeSource{
					HostPath: &v1.HostPathVolumeSource{Path: "/var/log"}}}).
				EphemeralVolume("scratch", "fast", "1Gi").Obj(),
			Want: volumesFragment(
				`{"ephemeral":{"volumeClaimTemplate":{"metadata":{},"spec":{"accessModes":["ReadWriteOnce"],`+
					`"resources":{"requests":{"storage":"1Gi"}},"storageClassName":"fast"}}}}`,
				`{"hostPath":{"path":"/var/log"}}`,
				`{"persistentVolumeClaim":{"claimName":"data"}}`,
			),
		},
	}
}

// VolumesSignPairs are the pairs of the four volume plugins (see
// VolumesSignCases).
func VolumesSignPairs() []SignPair {
	return []SignPair{
		{
			Name: "same claims in another order, under other volume names",
			A:    st.MakePod().Name("a").PVC("data").PVC("logs").Obj(),
			B: st.MakePod().Name("b").Volume(claimVolume("logs-volume", "logs")).
				Volume(claimVolume("data-volume", "data")).Obj(),
			Same: true,
		},
		{
			Name: "configMaps and secrets named after the pod",
			A:    st.MakePod().Name("a").PVC("data").Volume(configMapVolume("cfg", "a-config")).Obj(),
			B: st.MakePod().Name("b").Volume(secretVolume("token", "b-token")).PVC("data").
				Volume(configMapVolume("cfg", "b-config")).Obj(),
			Same: true,
		},
		{
			Name: "same ephemeral volume template in pods of other names",
			A:    st.MakePod().Name("a").EphemeralVolume("scratch", "fast", "1Gi").Obj(),
			B:    st.MakePod().Name("b").EphemeralVolume("scratch", "fast", "1Gi").Obj(),
			Same: true,
		},
		{
			// The claims are the namespace's, which kube-scheduler's
			// fragment leaves out.
			Name: "same claim name in another namespace, as kube-scheduler signs it",
			A:    st.MakePod().Name("a").Namespace("ns1").PVC("data").Obj(),
			B:    st.MakePod().Name("a").Namespace("ns2").PVC("data").Obj(),
			Same: true,
		},
		{
			Name: "another claim",
			A:    st.MakePod().Name("a").PVC("data").Obj(),
			B:    st.MakePod().Name("a").PVC("other").Obj(),
		},
		{
			Name: "a claim and none",
			A:    st.MakePod().Name("a").PVC("data").Obj(),
			B:    st.MakePod().Name("a").Volume(configMapVolume("cfg", "a-config")).Obj(),
		},
		{
			Name: "another ephemeral volume size",
			A:    st.MakePod().Name("a").EphemeralVolume("scratch", "fast", "1Gi").Obj(),
			B:    st.MakePod().Name("a").EphemeralVolume("scratch", "fast", "2Gi").Obj(),
		},
	}
}

// volumesFragment is the volumes fragment holding sources (JSON).
func volumesFragment(sources ...string) []framework.SignFragment {
	if sources == nil {
		sources = []string{}
	}
	return []framework.SignFragment{{Key: "v1.Pod.Spec.Volumes.NonSyntheticSources()", Value: sources}}
}

// claimVolume is a volume named name mounting the claim claimName.
func claimVolume(name, claimName string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}}
}

// configMapVolume is a volume named name mounting the ConfigMap cm.
func configMapVolume(name, cm string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{
		ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cm}}}}
}

// secretVolume is a volume named name mounting the Secret secret.
func secretVolume(name, secret string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: secret}}}
}

// Tolerations TolerationsSignCases and TolerationsSignPairs use.
var (
	tolerateGPU       = v1.Toleration{Key: "gpu", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}
	tolerateDedicated = v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "user1",
		Effect: v1.TaintEffectNoSchedule}
	tolerateCordon = v1.Toleration{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists,
		Effect: v1.TaintEffectNoSchedule}
)

// TolerationsSignCases are the fragments of the plugins that sign a pod's
// tolerations (TaintToleration, NodeUnschedulable): one signer,
// framework.TolerationsSigner, checked through each plugin.
func TolerationsSignCases() []SignCase {
	return []SignCase{
		{
			Name: "no tolerations",
			Pod:  st.MakePod().Name("p").Obj(),
			Want: []framework.SignFragment{{Key: "v1.Pod.Spec.Tolerations", Value: []v1.Toleration{}}},
		},
		{
			Name: "tolerations sorted by key",
			Pod: st.MakePod().Name("p").Toleration(tolerateGPU).Toleration(tolerateCordon).
				Toleration(tolerateDedicated).Obj(),
			Want: []framework.SignFragment{{Key: "v1.Pod.Spec.Tolerations",
				Value: []v1.Toleration{tolerateDedicated, tolerateGPU, tolerateCordon}}},
		},
	}
}

// TolerationsSignPairs are pods those plugins must sign alike, or apart.
func TolerationsSignPairs() []SignPair {
	return []SignPair{
		{
			Name: "same tolerations in another order",
			A:    st.MakePod().Name("a").Toleration(tolerateGPU).Toleration(tolerateCordon).Obj(),
			B:    st.MakePod().Name("b").Toleration(tolerateCordon).Toleration(tolerateGPU).Obj(),
			Same: true,
		},
		{
			Name: "other labels and requests",
			A:    st.MakePod().Name("a").Label("app", "web").Toleration(tolerateGPU).Obj(),
			B: st.MakePod().Name("b").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).
				Toleration(tolerateGPU).Obj(),
			Same: true,
		},
		{
			Name: "one more toleration",
			A:    st.MakePod().Name("a").Toleration(tolerateGPU).Obj(),
			B:    st.MakePod().Name("a").Toleration(tolerateGPU).Toleration(tolerateCordon).Obj(),
		},
		{
			Name: "same key, another value",
			A:    st.MakePod().Name("a").Toleration(tolerateDedicated).Obj(),
			B: st.MakePod().Name("a").Toleration(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual,
				Value: "user2", Effect: v1.TaintEffectNoSchedule}).Obj(),
		},
		{
			Name: "same key and value, another effect",
			A:    st.MakePod().Name("a").Toleration(tolerateDedicated).Obj(),
			B: st.MakePod().Name("a").Toleration(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual,
				Value: "user1", Effect: v1.TaintEffectNoExecute}).Obj(),
		},
	}
}
