package testenv

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// pollTimeout bounds each wait for a controller's outcome: the PV binder
// acts on informer events, within a second or two here.
const pollTimeout = 30 * time.Second

// startEnvironment starts an apiserver for one test and stops it after.
func startEnvironment(t *testing.T) *Environment {
	t.Helper()
	env, err := StartEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	return env
}

// TestControllerManagerBindsAndReleases runs the storage controllers and
// follows a static PV and an immediate claim through their life: the PV
// binder binds them, and once the claim is deleted the PVC-protection
// controller lifts its finalizer so that it goes away.
func TestControllerManagerBindsAndReleases(t *testing.T) {
	env := startEnvironment(t)
	start := time.Now()
	kcm, err := env.StartControllerManager(StorageControllers...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-controller-manager ready in %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := kcm.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(env.Config)

	// "manual" names no StorageClass object: such a claim binds at once
	// (Immediate), to any PV of that class that fits.
	class := "manual"
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName:              class,
			PersistentVolumeSource:        v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/tmp/pv-1"}},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
		},
	}
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "claim-1"},
		Spec: v1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources: v1.VolumeResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			},
		},
	}
	if _, err := client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claims := client.CoreV1().PersistentVolumeClaims(pvc.Namespace)
	if _, err := claims.Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var got *v1.PersistentVolumeClaim
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, pollTimeout, true, func(ctx context.Context) (bool, error) {
		got, err = claims.Get(ctx, pvc.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.Spec.VolumeName != "" && got.Annotations["pv.kubernetes.io/bind-completed"] == "yes", nil
	})
	if err != nil {
		t.Fatalf("the claim was not bound (volumeName %q, annotations %v): %v", got.Spec.VolumeName, got.Annotations, err)
	}
	if got.Spec.VolumeName != pv.Name {
		t.Errorf("bound to %q, want %q", got.Spec.VolumeName, pv.Name)
	}

	if err := claims.Delete(ctx, pvc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, pollTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := claims.Get(ctx, pvc.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("the deleted claim did not go away (is its kubernetes.io/pvc-protection finalizer still on?): %v", err)
	}
}

// TestControllerManagerStartFails checks that a controller-manager that
// cannot start is an error, and that the error names a log that says why.
func TestControllerManagerStartFails(t *testing.T) {
	env := startEnvironment(t)
	logPath := regexp.MustCompile(`its log: (\S+);`)
	tests := []struct {
		name        string
		controllers []string
		wantErr     string // in the error
		wantLog     string // in the log the error names; "" for no log
	}{
		{name: "no controller", wantErr: "no controller named"},
		{name: "unknown controller", controllers: []string{"persistentvolume-binder-controller", "no-such-controller"},
			wantErr: "had exited on its own", wantLog: `\"no-such-controller\" is not in the list of known controllers`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kcm, err := env.StartControllerManager(tt.controllers...)
			if err == nil {
				_ = kcm.Stop()
				t.Fatal("started, want an error")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q, want it to contain %q", err, tt.wantErr)
			}
			m := logPath.FindStringSubmatch(err.Error())
			if tt.wantLog == "" {
				if m != nil {
					t.Errorf("error %q names a log, want none", err)
				}
				return
			}
			if m == nil {
				t.Fatalf("error %q names no log file", err)
			}
			t.Cleanup(func() { _ = os.Remove(m[1]) })
			if !strings.HasPrefix(m[1], os.TempDir()) {
				t.Errorf("log %s is not under %s", m[1], os.TempDir())
			}
			log, err := os.ReadFile(m[1])
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(log), tt.wantLog) {
				t.Errorf("log %s does not say %q:\n%s", m[1], tt.wantLog, log)
			}
		})
	}
}

// TestControllerManagerFlagsOverride checks that the flags given to
// StartControllerManagerWithFlags come after testenv's own and so win:
// kube-controller-manager logs the value of every flag at -v=1.
func TestControllerManagerFlagsOverride(t *testing.T) {
	env := startEnvironment(t)
	kcm, err := env.StartControllerManagerWithFlags(
		[]string{"--pvclaimbinder-sync-period=15s", "--kube-api-qps=5000"}, "persistentvolume-binder-controller")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := kcm.Stop(); err != nil {
			t.Error(err)
		}
	})
	log := kcm.proc.logs.String()
	for _, want := range []string{`FLAG: --pvclaimbinder-sync-period="15s"`, `FLAG: --kube-api-qps="5000"`} {
		if !strings.Contains(log, want) {
			t.Errorf("kube-controller-manager's log lacks %s", want)
		}
	}
}

// podClaimNameAnnotation is what the resourceclaim controller puts on a
// claim it generated: the name of the pod's entry in spec.resourceClaims.
const podClaimNameAnnotation = "resource.kubernetes.io/pod-claim-name"

// TestDRAControllers runs DRAControllers and follows the two flows they
// finish: a pod with a ResourceClaimTemplate gets its claim and its
// status.resourceClaimStatuses, and once the pod is deleted the claim,
// allocated and reserved for it as the scheduler leaves it, is released
// and collected; a claim the pod only referenced is released and stays.
func TestDRAControllers(t *testing.T) {
	env := startEnvironment(t)
	start := time.Now()
	kcm, err := env.StartControllerManager(DRAControllers...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-controller-manager with %v ready in %v", DRAControllers, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := kcm.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(env.Config)
	const ns = "default"
	claims := client.ResourceV1().ResourceClaims(ns)

	template := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one-gpu"},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: oneGPU()},
	}
	if _, err := client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, template, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	shared := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}, Spec: oneGPU()}
	if _, err := claims.Create(ctx, shared, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, pod string
		// source is the pod's one claim, named "gpu".
		source v1.PodResourceClaim
		// wantGenerated: the claim is made from the template for the pod,
		// and goes with it; otherwise it is "shared", and stays released.
		wantGenerated bool
	}{
		{name: "a template's claim is made for its pod and goes with it", pod: "pod-a", wantGenerated: true,
			source: v1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: ptr.To(template.Name)}},
		{name: "a claim the pod names is released when the pod goes", pod: "pod-b",
			source: v1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To(shared.Name)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tt.pod},
				Spec: v1.PodSpec{
					Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
						Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "gpu"}}}}},
					ResourceClaims: []v1.PodResourceClaim{tt.source},
				},
			}
			pod, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			claimName := shared.Name
			if tt.wantGenerated {
				claimName = waitForGeneratedClaim(t, client, pod)
			}
			reserve(t, client, ns, claimName, pod)

			if err := client.CoreV1().Pods(ns).Delete(ctx, pod.Name,
				metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
				t.Fatal(err)
			}
			var got *resourceapi.ResourceClaim
			err = poll(ctx, func(ctx context.Context) (bool, error) {
				got, err = claims.Get(ctx, claimName, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					got = nil
					return tt.wantGenerated, nil
				}
				if err != nil {
					return false, err
				}
				return !tt.wantGenerated && len(got.Status.ReservedFor) == 0 && got.Status.Allocation == nil &&
					len(got.Finalizers) == 0, nil
			})
			if err != nil {
				if got == nil {
					t.Fatalf("claim %s is gone, want it kept: %v", claimName, err)
				}
				t.Fatalf("claim %s after its pod went: reservedFor %v, allocated %t, finalizers %v; want it "+
					"released (and collected: %t): %v", claimName, got.Status.ReservedFor, got.Status.Allocation != nil,
					got.Finalizers, tt.wantGenerated, err)
			}
		})
	}
}

// oneGPU is a claim's spec asking for one device of class gpu.example.com,
// with the defaults the apiserver fills in.
// The class need not exist: nothing here allocates.
func oneGPU() resourceapi.ResourceClaimSpec {
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
		Name: "gpu",
		Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.example.com",
			AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
	}}}}
}

// waitForGeneratedClaim waits for the resourceclaim controller to make the
// pod's claim "gpu" from its template and to record it in the pod's
// status, checks how the claim is marked as the pod's, and returns its name.
func waitForGeneratedClaim(t *testing.T, client kubernetes.Interface, pod *v1.Pod) string {
	t.Helper()
	ctx := t.Context()
	var statuses []v1.PodResourceClaimStatus
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		statuses = p.Status.ResourceClaimStatuses
		return len(statuses) == 1 && statuses[0].ResourceClaimName != nil, nil
	})
	if err != nil {
		t.Fatalf("pod %s: status.resourceClaimStatuses %v, want the generated claim of \"gpu\": %v", pod.Name,
			statuses, err)
	}
	name := *statuses[0].ResourceClaimName
	claim, err := client.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type marks struct {
		Annotation, Owner string
		Controller        bool
		Spec              resourceapi.ResourceClaimSpec
	}
	got := marks{Annotation: claim.Annotations[podClaimNameAnnotation], Spec: claim.Spec}
	if ref := metav1.GetControllerOf(claim); ref != nil {
		got.Owner, got.Controller = ref.Kind+"/"+ref.Name, ptr.Deref(ref.Controller, false)
	}
	want := marks{Annotation: "gpu", Owner: "Pod/" + pod.Name, Controller: true, Spec: oneGPU()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("generated claim %s (-want +got):\n%s", name, diff)
	}
	return name
}

// reserve does to the claim what the scheduler does before it binds the
// pod: the delete-protection finalizer, an allocation of one device, and
// the pod in status.reservedFor.
func reserve(t *testing.T, client kubernetes.Interface, ns, name string, pod *v1.Pod) {
	t.Helper()
	ctx := t.Context()
	claims := client.ResourceV1().ResourceClaims(ns)
	claim, err := claims.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim.Finalizers = append(claim.Finalizers, resourceapi.Finalizer)
	if claim, err = claims.Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0"},
		},
	}}
	claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{
		{Resource: "pods", Name: pod.Name, UID: pod.UID},
	}
	if _, err := claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// poll calls cond every 100ms until it is done, fails, or pollTimeout
// passes.
func poll(ctx context.Context, cond wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, pollTimeout, true, cond)
}
