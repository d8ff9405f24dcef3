package testenv

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// podGroupFinalizer is what the apiserver's PodGroupProtection admission
// puts on every PodGroup.
const podGroupFinalizer = "scheduling.k8s.io/podgroup-protection"

// TestWorkloadAPI: the embedded apiserver serves PodGroups and keeps a
// pod's schedulingGroup; the protection controller lets a deleted PodGroup
// go. Started WithoutWorkloads, it is kube-apiserver's default: no
// PodGroups, and the pod's schedulingGroup dropped on create.
func TestWorkloadAPI(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{name: "served"},
		{name: "without workloads", opts: Options{WithoutWorkloads: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := StartEnvironmentWith(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := env.Stop(); err != nil {
					t.Error(err)
				}
			})
			served := !tt.opts.WithoutWorkloads
			if env.Workloads != served {
				t.Errorf("Workloads = %t, want %t", env.Workloads, served)
			}
			ctx := t.Context()
			client := kubernetes.NewForConfigOrDie(env.Config)
			pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gang"},
				Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
					Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 2}},
					SchedulingConstraints: &schedulingv1beta1.PodGroupSchedulingConstraints{
						Topology: []schedulingv1beta1.TopologyConstraint{{Key: "topology.kubernetes.io/rack"}}}}}
			created, err := client.SchedulingV1beta1().PodGroups("default").Create(ctx, pg, metav1.CreateOptions{})
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "member"},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "pause"}},
					SchedulingGroup: &v1.PodSchedulingGroup{PodGroupName: ptr.To("gang")}}}
			gotPod, podErr := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
			if podErr != nil {
				t.Fatalf("creating the pod: %v", podErr)
			}
			if !served {
				if !apierrors.IsNotFound(err) {
					t.Errorf("creating a PodGroup without the workload API = %v, want NotFound", err)
				}
				if gotPod.Spec.SchedulingGroup != nil {
					t.Errorf("the pod kept schedulingGroup %+v without GenericWorkload", gotPod.Spec.SchedulingGroup)
				}
				return
			}
			if err != nil {
				t.Fatalf("creating a PodGroup: %v", err)
			}
			if created.Spec.SchedulingConstraints == nil {
				t.Errorf("the PodGroup lost its schedulingConstraints (TopologyAwareWorkloadScheduling)")
			}
			if !slices.Contains(created.Finalizers, podGroupFinalizer) {
				t.Errorf("finalizers = %v, want %s", created.Finalizers, podGroupFinalizer)
			}
			if gotPod.Spec.SchedulingGroup == nil || ptr.Deref(gotPod.Spec.SchedulingGroup.PodGroupName, "") != "gang" {
				t.Errorf("the pod's schedulingGroup = %+v, want podGroupName gang", gotPod.Spec.SchedulingGroup)
			}

			// Deleted while no controller runs, it hangs on its finalizer;
			// the protection controller lets it go once its pod is gone.
			kcm, err := env.StartControllerManager(WorkloadControllers...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := kcm.Stop(); err != nil {
					t.Error(err)
				}
			})
			if err := client.CoreV1().Pods("default").Delete(ctx, "member",
				metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
				t.Fatal(err)
			}
			if err := client.SchedulingV1beta1().PodGroups("default").Delete(ctx, "gang", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, pollTimeout, true, func(ctx context.Context) (bool, error) {
				_, err := client.SchedulingV1beta1().PodGroups("default").Get(ctx, "gang", metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			})
			if err != nil {
				t.Errorf("the deleted PodGroup is still there after %v: %v", pollTimeout, err)
			}
		})
	}
}
