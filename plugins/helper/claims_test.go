package helper

import (
	"testing"

	st "github.com/minisched/minisched/builders"
)

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
