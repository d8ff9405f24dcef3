package provisioner_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/examples/provisioner"
	"github.com/minisched/minisched/testenv"
)

const (
	// pollTimeout bounds each wait for an outcome: the provisioner, the PV
	// binder (1s resync in testenv) and the informers take about a second.
	pollTimeout = 30 * time.Second
	// selectedNode is the annotation the scheduler's VolumeBinding PreBind
	// writes; no scheduler runs here, so the test writes it.
	selectedNode = "volume.kubernetes.io/selected-node"
	class        = "local"
	namespace    = "default"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithEnvironment(m.Run, &env, nil))
}

// TestProvisioner provisions claims on a node with a 10Gi disk, as the
// scheduler and the PV binder would ask, one after the other: one that
// fits is given a PV on that node and bound, and the node's published
// capacity goes down; one that does not fit is sent back to the scheduler;
// deleting the first frees its space.
func TestProvisioner(t *testing.T) {
	kcm, err := env.StartControllerManager(testenv.StorageControllers...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := kcm.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(env.Config)

	// n1's hostname label is not its name, as on clouds where node names
	// are FQDNs: the PV's affinity must use the label.
	nodes := []*v1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{v1.LabelHostname: "host-1"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "n2"}},
	}
	for _, n := range nodes {
		if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.StorageV1().StorageClasses().Create(ctx, provisioner.StorageClass(class), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := provisioner.New(client, provisioner.Options{
		Capacity:        map[string]resource.Quantity{"n1": resource.MustParse("10Gi")},
		DefaultCapacity: resource.MustParse("1Gi"),
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- p.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	t.Run("publishes its driver and every node's capacity", func(t *testing.T) {
		waitFor(t, "each node's capacity", func(ctx context.Context) (bool, error) {
			return capacityIs(ctx, client, "n1", "10Gi") && capacityIs(ctx, client, "n2", "1Gi"), nil
		})
		driver, err := client.StorageV1().CSIDrivers().Get(ctx, provisioner.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !*driver.Spec.StorageCapacity || *driver.Spec.AttachRequired {
			t.Errorf("CSIDriver storageCapacity %v attachRequired %v, want true and false",
				*driver.Spec.StorageCapacity, *driver.Spec.AttachRequired)
		}
	})

	tests := []struct {
		name, claim, request string
		// wantBound: a PV on n1 is made and bound to the claim; otherwise
		// the claim's selected-node annotation is removed.
		wantBound bool
		// wantFree is n1's published capacity afterwards.
		wantFree string
	}{
		{name: "a claim that fits is provisioned on its node and bound", claim: "fits", request: "4Gi",
			wantBound: true, wantFree: "6Gi"},
		{name: "a claim larger than the free space is sent back to the scheduler", claim: "too-big", request: "7Gi",
			wantFree: "6Gi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pvc := createClaim(t, client, tt.claim, tt.request, "n1")
			if tt.wantBound {
				pv := waitBound(t, client, pvc)
				checkVolume(t, pv, pvc, tt.request, hostnames["n1"])
			} else {
				waitFor(t, "the selected-node annotation to go", func(ctx context.Context) (bool, error) {
					got, err := client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, pvc.Name, metav1.GetOptions{})
					if err != nil {
						return false, err
					}
					_, selected := got.Annotations[selectedNode]
					return !selected, nil
				})
				if _, err := client.CoreV1().PersistentVolumes().Get(ctx, "pvc-"+string(pvc.UID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("a PV for the claim: %v, want none", err)
				}
			}
			waitFor(t, "n1's capacity to be "+tt.wantFree, func(ctx context.Context) (bool, error) {
				return capacityIs(ctx, client, "n1", tt.wantFree), nil
			})
		})
	}

	t.Run("deleting a claim deletes its volume and frees its space", func(t *testing.T) {
		pvName := "pvc-" + claimUID(t, client, "fits")
		if err := client.CoreV1().PersistentVolumeClaims(namespace).Delete(ctx, "fits", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the PV to be deleted and n1's capacity to be 10Gi", func(ctx context.Context) (bool, error) {
			_, err := client.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
			return apierrors.IsNotFound(err) && capacityIs(ctx, client, "n1", "10Gi"), nil
		})
	})

	// Whether or not the informer shows the first claim's PV by the time the
	// second is synced (if not, its reservation counts: TestFree), the
	// second does not fit.
	t.Run("of two claims at once that fit only one at a time, one is sent back", func(t *testing.T) {
		first := createClaim(t, client, "first", "6Gi", "n1")
		second := createClaim(t, client, "second", "6Gi", "n1")
		var bound, sentBack []string
		waitFor(t, "one claim bound and one sent back", func(ctx context.Context) (bool, error) {
			bound, sentBack = nil, nil
			for _, pvc := range []*v1.PersistentVolumeClaim{first, second} {
				got, err := client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, pvc.Name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				if got.Spec.VolumeName != "" {
					bound = append(bound, got.Name)
				}
				if _, selected := got.Annotations[selectedNode]; !selected {
					sentBack = append(sentBack, got.Name)
				}
			}
			return len(bound)+len(sentBack) == 2, nil
		})
		if len(bound) != 1 || len(sentBack) != 1 {
			t.Errorf("bound %v and sent back %v, want one each", bound, sentBack)
		}
		waitFor(t, "n1's capacity to be 4Gi", func(ctx context.Context) (bool, error) {
			return capacityIs(ctx, client, "n1", "4Gi"), nil
		})
	})
}

// createClaim creates a claim of the class on node, annotated as the
// scheduler's PreBind annotates it; the PV binder adds the rest.
func createClaim(t *testing.T, client kubernetes.Interface, name, request, node string) *v1.PersistentVolumeClaim {
	t.Helper()
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: map[string]string{selectedNode: node}},
		Spec: v1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(class),
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(request)}},
		},
	}
	created, err := client.CoreV1().PersistentVolumeClaims(namespace).Create(t.Context(), pvc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// waitBound waits until the PV binder bound pvc, and returns its PV.
func waitBound(t *testing.T, client kubernetes.Interface, pvc *v1.PersistentVolumeClaim) *v1.PersistentVolume {
	t.Helper()
	var got *v1.PersistentVolumeClaim
	waitFor(t, "the claim to be bound", func(ctx context.Context) (bool, error) {
		var err error
		got, err = client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, pvc.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.Spec.VolumeName != "" && got.Annotations["pv.kubernetes.io/bind-completed"] == "yes", nil
	})
	pv, err := client.CoreV1().PersistentVolumes().Get(t.Context(), got.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pv
}

// checkVolume checks the PV the provisioner made for pvc.
func checkVolume(t *testing.T, pv *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim, size, hostname string) {
	t.Helper()
	if want := "pvc-" + string(pvc.UID); pv.Name != want {
		t.Errorf("PV %s, want %s", pv.Name, want)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.Namespace != pvc.Namespace || ref.Name != pvc.Name || ref.UID != pvc.UID {
		t.Errorf("claimRef %+v, want %s/%s uid %s", ref, pvc.Namespace, pvc.Name, pvc.UID)
	}
	if by := pv.Annotations["pv.kubernetes.io/provisioned-by"]; by != provisioner.Name {
		t.Errorf("provisioned-by %q, want %q", by, provisioner.Name)
	}
	if got := pv.Spec.Capacity[v1.ResourceStorage]; got.Cmp(resource.MustParse(size)) != 0 {
		t.Errorf("capacity %s, want %s", got.String(), size)
	}
	if pv.Spec.StorageClassName != class || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != provisioner.Name {
		t.Errorf("class %q, csi %+v: want class %q and driver %s", pv.Spec.StorageClassName, pv.Spec.CSI, class, provisioner.Name)
	}
	want := fmt.Sprintf("[{[{%s In [%s]}] []}]", v1.LabelHostname, hostname)
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil ||
		fmt.Sprint(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) != want {
		t.Errorf("node affinity %+v, want required terms %s", pv.Spec.NodeAffinity, want)
	}
}

// hostnames are the nodes' kubernetes.io/hostname: n1's label, and n2's
// name for want of one.
var hostnames = map[string]string{"n1": "host-1", "n2": "n2"}

// capacityIs says whether the node's published capacity for the class is
// size, for the node's hostname.
func capacityIs(ctx context.Context, client kubernetes.Interface, node, size string) bool {
	c, err := client.StorageV1().CSIStorageCapacities(namespace).Get(ctx, class+"-"+node, metav1.GetOptions{})
	return err == nil && c.StorageClassName == class && c.Capacity != nil &&
		c.Capacity.Cmp(resource.MustParse(size)) == 0 && topologyHost(c) == hostnames[node]
}

// topologyHost is the hostname a CSIStorageCapacity's topology selects.
func topologyHost(c *storagev1.CSIStorageCapacity) string {
	if c.NodeTopology == nil {
		return ""
	}
	return c.NodeTopology.MatchLabels[v1.LabelHostname]
}

// claimUID is the uid of the claim name.
func claimUID(t *testing.T, client kubernetes.Interface, name string) string {
	t.Helper()
	pvc, err := client.CoreV1().PersistentVolumeClaims(namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(pvc.UID)
}

// waitFor polls cond until it holds, failing the test after pollTimeout.
func waitFor(t *testing.T, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, pollTimeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
