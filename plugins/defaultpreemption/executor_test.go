// Tests of the eviction against a real apiserver (envtest), which every
// test of the package shares.

package defaultpreemption

import (
	"context"
	"os"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/defaultbinder"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/plugins/prioritysort"
	"github.com/minisched/minisched/testenv"
)

// apiEnv is the apiserver the package's tests share.
var apiEnv *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithEnvironment(m.Run, &apiEnv, nil))
}

// apiClient returns a client of the shared apiserver and a namespace of the
// test's own.
func apiClient(t *testing.T) (kubernetes.Interface, string) {
	t.Helper()
	client, err := kubernetes.NewForConfig(apiEnv.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := client.CoreV1().Namespaces().Create(context.Background(),
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "preempt-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return client, ns.Name
}

// TestEvict runs the eviction goroutine's body for a preemptor and checks
// what it tells its caller: activate the preemptor exactly when no deletion
// event of the last victim is to come. A last victim that was already gone
// (a second preemption for a victim the first one deleted, whose deletion
// event came while the preemptor was in flight and found it gated:
// kubernetes#141694) must activate it, or it waits for the five-minute
// flush.
func TestEvict(t *testing.T) {
	tests := []struct {
		name string
		// victims in eviction order; gone ones are never created.
		victims      []string
		gone         map[string]bool
		wantActivate bool
	}{
		{name: "the last victim is deleted here: its deletion event wakes the preemptor",
			victims: []string{"v1"}},
		{name: "the last victim was already deleted: no event is to come",
			victims: []string{"v1"}, gone: map[string]bool{"v1": true}, wantActivate: true},
		{name: "an earlier victim was already deleted, the last is deleted here",
			victims: []string{"v1", "v2"}, gone: map[string]bool{"v1": true}},
		{name: "the last victim was already deleted, an earlier one is deleted here",
			victims: []string{"v1", "v2"}, gone: map[string]bool{"v2": true}, wantActivate: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			client, ns := apiClient(t)
			fw, err := plugintesting.NewFramework(ctx,
				framework.Registry{prioritysort.Name: prioritysort.New, defaultbinder.Name: defaultbinder.New},
				&configv1.Plugins{MultiPoint: plugintesting.Enable(prioritysort.Name, defaultbinder.Name)}, nil,
				framework.WithClientSet(client))
			if err != nil {
				t.Fatal(err)
			}
			pl, err := New(ctx, nil, fw)
			if err != nil {
				t.Fatal(err)
			}
			e := pl.(*DefaultPreemption).executor

			preemptor := st.MakePod().Namespace(ns).Name("preemptor").UID("preemptor").Priority(100).Obj()
			var victims []*v1.Pod
			for _, name := range tt.victims {
				v := st.MakePod().Namespace(ns).Name(name).NodeName("node0").Image("pause").Obj()
				if !tt.gone[name] {
					if v, err = client.CoreV1().Pods(ns).Create(ctx, v, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				victims = append(victims, v)
			}

			e.preempting.Insert(preemptor.UID)
			if got := e.evict(ctx, "node0", podPreemptor(preemptor), victims); got != tt.wantActivate {
				t.Errorf("evict says activate = %v, want %v", got, tt.wantActivate)
			}
			if e.preempting.Has(preemptor.UID) || len(e.lastVictim) > 0 {
				t.Errorf("the preemptor is still marked preempting (%v) or waiting on %v",
					e.preempting.Has(preemptor.UID), e.lastVictim)
			}
			for _, v := range victims {
				got, err := client.CoreV1().Pods(ns).Get(ctx, v.Name, metav1.GetOptions{})
				switch {
				case apierrors.IsNotFound(err):
				case err != nil:
					t.Fatal(err)
				case got.DeletionTimestamp == nil:
					t.Errorf("victim %s was not deleted", v.Name)
				}
			}
		})
	}
}
