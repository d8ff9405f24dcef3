// Tests for DefaultBinder against a fake clientset, run through a real
// framework as the binding cycle would.
package defaultbinder_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/defaultbinder"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/plugins/prioritysort"
)

func TestBind(t *testing.T) {
	pod := st.MakePod().Namespace("ns").Name("p").UID("uid-1").Obj()
	tests := []struct {
		name      string
		injectErr error
		want      *framework.Status
	}{
		{name: "binding created"},
		{
			name:      "apiserver error",
			injectErr: errors.New("binding rejected"),
			want: framework.AsStatus(errors.New(`running Bind plugin "DefaultBinder": binding rejected`)).
				WithPlugin(defaultbinder.Name),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			client := fake.NewClientset(pod)
			var got *v1.Binding
			var gotNamespace string
			client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
				if action.GetSubresource() != "binding" {
					return false, nil, nil
				}
				gotNamespace = action.GetNamespace()
				got = action.(clienttesting.CreateAction).GetObject().(*v1.Binding)
				return true, got, tt.injectErr
			})

			registry := framework.Registry{prioritysort.Name: prioritysort.New, defaultbinder.Name: defaultbinder.New}
			schedFramework, err := plugintesting.NewFramework(ctx, registry, &configv1.Plugins{
				QueueSort: plugintesting.Enable(prioritysort.Name),
				Bind:      plugintesting.Enable(defaultbinder.Name),
			}, nil, framework.WithClientSet(client))
			if err != nil {
				t.Fatal(err)
			}

			status := schedFramework.RunBindPlugins(ctx, framework.NewCycleState(), pod, "node-1")
			if diff := cmp.Diff(tt.want, status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			want := &v1.Binding{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-1"},
				Target:     v1.ObjectReference{Kind: "Node", Name: "node-1"},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("binding (-want +got):\n%s", diff)
			}
			if gotNamespace != "ns" {
				t.Errorf("binding created in namespace %q, want %q", gotNamespace, "ns")
			}
		})
	}
}
