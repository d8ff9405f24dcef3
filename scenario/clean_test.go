package scenario

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestStripFinalizers checks that only objects with finalizers are patched,
// that the patch leaves none, and that an object deleted meanwhile is no
// error.
func TestStripFinalizers(t *testing.T) {
	claim := func(name string, finalizers ...string) v1.PersistentVolumeClaim {
		return v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Finalizers: finalizers}}
	}
	tests := []struct {
		name        string
		stored      []v1.PersistentVolumeClaim // what the apiserver holds
		listed      []v1.PersistentVolumeClaim // what the caller listed
		wantPatched []string
	}{
		{
			name:        "only those with finalizers",
			stored:      []v1.PersistentVolumeClaim{claim("a", "kubernetes.io/pvc-protection"), claim("b")},
			listed:      []v1.PersistentVolumeClaim{claim("a", "kubernetes.io/pvc-protection"), claim("b")},
			wantPatched: []string{"a"},
		},
		{
			name:        "deleted meanwhile",
			listed:      []v1.PersistentVolumeClaim{claim("gone", "kubernetes.io/pvc-protection")},
			wantPatched: []string{"gone"},
		},
		{name: "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			for i := range tt.stored {
				objs = append(objs, &tt.stored[i])
			}
			client := fake.NewClientset(objs...)
			claims := client.CoreV1().PersistentVolumeClaims("ns")
			if err := stripFinalizers(context.Background(), tt.listed, claims.Patch); err != nil {
				t.Fatal(err)
			}
			var patched []string
			for _, a := range client.Actions() {
				if p, ok := a.(clienttesting.PatchAction); ok {
					patched = append(patched, p.GetName())
				}
			}
			if diff := cmp.Diff(tt.wantPatched, patched); diff != "" {
				t.Errorf("patched (-want +got):\n%s", diff)
			}
			list, err := claims.List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range list.Items {
				if len(c.Finalizers) > 0 {
					t.Errorf("claim %s still has finalizers %v", c.Name, c.Finalizers)
				}
			}
		})
	}
}
