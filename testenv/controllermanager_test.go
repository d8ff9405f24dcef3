package testenv

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
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
