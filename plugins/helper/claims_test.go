// Tests of the claims a pod's volumes stand for.

package helper

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/minisched/minisched/builders"
)

func TestVolumeClaimName(t *testing.T) {
	pod := st.MakePod().Name("web").PVC("data").EphemeralVolume("scratch", "local", "1Gi").
		Volume(v1.Volume{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}}).
		Volume(v1.Volume{Name: "unnamed", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{}}}).Obj()
	tests := []struct {
		name          string
		volume        int
		wantName      string
		wantEphemeral bool
		wantOK        bool
	}{
		{name: "a persistentVolumeClaim volume", volume: 0, wantName: "data", wantOK: true},
		{name: "a generic ephemeral volume", volume: 1, wantName: "web-scratch", wantEphemeral: true, wantOK: true},
		{name: "no claim", volume: 2},
		{name: "a claim without a name", volume: 3, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, isEphemeral, ok := VolumeClaimName(pod, &pod.Spec.Volumes[tt.volume])
			if name != tt.wantName || isEphemeral != tt.wantEphemeral || ok != tt.wantOK {
				t.Errorf("VolumeClaimName = (%q, %v, %v), want (%q, %v, %v)",
					name, isEphemeral, ok, tt.wantName, tt.wantEphemeral, tt.wantOK)
			}
		})
	}
}

func TestPodUsesClaim(t *testing.T) {
	pod := st.MakePod().Name("web").PVC("data").EphemeralVolume("scratch", "local", "1Gi").Obj()
	tests := []struct {
		name      string
		claim     string
		namespace string
		want      bool
	}{
		{name: "named directly", claim: "data", namespace: "default", want: true},
		{name: "a generic ephemeral volume's claim", claim: "web-scratch", namespace: "default", want: true},
		{name: "another claim", claim: "logs", namespace: "default"},
		{name: "the same name in another namespace", claim: "data", namespace: "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claim := st.MakePVC().Name(tt.claim).Namespace(tt.namespace).Obj()
			if got := PodUsesClaim(pod, claim); got != tt.want {
				t.Errorf("PodUsesClaim = %v, want %v", got, tt.want)
			}
		})
	}
}
