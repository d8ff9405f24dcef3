package main

// The storage workloads' side of a run: the StorageClass, a CSINode per
// node, a claim per pod (and, for static volumes, a PV per claim), and what
// finishes the binding that the scheduler's VolumeBinding PreBind starts:
// kube-controller-manager's PV binder and, for provisioned volumes, the
// example provisioner.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/examples/provisioner"
	"github.com/minisched/minisched/testenv"
)

// Storage says how a workload's claims get their volumes. Every measured
// pod mounts one claim of its own, named after the pod.
type Storage struct {
	// Class is the StorageClass every claim names; it is created first.
	Class *storagev1.StorageClass
	// Driver is the CSI driver of the volumes, listed in every node's
	// CSINode with AttachLimit, which NodeVolumeLimits enforces.
	Driver      string
	AttachLimit int32
	// StaticPV, if set, makes the PV created beside the named claim, for
	// VolumeBinding to find and bind; nil means the claims are
	// provisioned, by the example provisioner, whose pretend disks hold
	// DiskSize on every node.
	StaticPV func(claim string) *v1.PersistentVolume
	DiskSize resource.Quantity
}

// claimSize is what every claim asks for (pvc.yaml's 1Gi).
const claimSize = "1Gi"

// podClaim is the claim of the pod called name, of class.
func podClaim(name, class string) *v1.PersistentVolumeClaim {
	return builders.MakePVC().Name(name).Namespace(namespace).Class(class).Req(claimSize).Obj()
}

// controllerManagerFlags override testenv's: a client as fast as the
// schedulers' (kube-controller-manager's default of 20 requests a second,
// burst 30, lets the PV binder bind at most about seven claims a second,
// three writes each, and its WaitForFirstConsumer events share that
// budget: the smoke run measured 6.5 and 9.5 pods a second with it), and
// upstream's PV binder resync of 15s instead of testenv's 1s (each resync
// examines every pending claim against every volume of its class and
// reports an event per claim; with a thousand of each the controller took
// a third of a core, of the machine's two). Binding needs no resync:
// the scheduler's write of a PV's claimRef, or the provisioner's new PV,
// puts the claim in the binder's queue.
var controllerManagerFlags = []string{"--kube-api-qps=5000", "--kube-api-burst=5000", "--pvclaimbinder-sync-period=15s"}

// startStorage creates the class and starts what binds claims: the PV
// binder in kube-controller-manager and, for provisioned volumes, the
// provisioner in this process. The returned function stops them.
func startStorage(ctx context.Context, env *testenv.Environment, client kubernetes.Interface, s *Storage) (func() error, error) {
	if _, err := client.StorageV1().StorageClasses().Create(ctx, s.Class, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating storage class %s: %w", s.Class.Name, err)
	}
	kcm, err := env.StartControllerManagerWithFlags(controllerManagerFlags, testenv.StorageControllers...)
	if err != nil {
		return nil, err
	}
	if s.StaticPV != nil {
		return kcm.Stop, nil
	}
	// Its log lines would drown the progress lines.
	ctx, cancel := context.WithCancel(klog.NewContext(ctx, logr.Discard()))
	done := make(chan error, 1)
	p := provisioner.New(client, provisioner.Options{DefaultCapacity: s.DiskSize})
	go func() { done <- p.Run(ctx) }()
	return func() error {
		cancel()
		err := <-done
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		return errors.Join(err, kcm.Stop())
	}, nil
}

// createCSINode creates node's CSINode, which lists s's driver with its
// attach limit.
func createCSINode(ctx context.Context, client kubernetes.Interface, s *Storage, node string) error {
	n := builders.MakeCSINode(node, map[string]int32{s.Driver: s.AttachLimit})
	if _, err := client.StorageV1().CSINodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating CSINode %s: %w", node, err)
	}
	return nil
}

// createClaims creates the claim of each of the n pods podName names,
// and its PV if the volumes are static, in parallel.
func createClaims(ctx context.Context, client kubernetes.Interface, s *Storage, n int, prefix string) error {
	return parallel(ctx, n, func(ctx context.Context, i int) error {
		c := podClaim(podName(prefix, i), s.Class.Name)
		if _, err := client.CoreV1().PersistentVolumeClaims(namespace).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating claim %s: %w", c.Name, err)
		}
		if s.StaticPV == nil {
			return nil
		}
		pv := s.StaticPV(c.Name)
		if _, err := client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating PV %s: %w", pv.Name, err)
		}
		return nil
	})
}

// storageWait bounds waitForStorage.
const storageWait = 2 * time.Minute

// waitForStorage waits until the volumes can be had: every static PV
// Available (the PV binder's first write to each: VolumeBinding takes no
// other), or the provisioner's CSIStorageCapacity published for every node
// (until then VolumeBinding finds no room on a node). A scheduler started
// earlier would time their start.
func waitForStorage(ctx context.Context, client kubernetes.Interface, s *Storage, nodes, pods int) error {
	what, want := "PVs available", pods
	count := func(ctx context.Context) (int, error) {
		list, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		n := 0
		for _, pv := range list.Items {
			if pv.Status.Phase == v1.VolumeAvailable {
				n++
			}
		}
		return n, nil
	}
	if s.StaticPV == nil {
		what, want = "nodes' capacity published", nodes
		count = func(ctx context.Context) (int, error) {
			list, err := client.StorageV1().CSIStorageCapacities(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
			if err != nil {
				return 0, err
			}
			return len(list.Items), nil
		}
	}
	var have int
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, storageWait, true, func(ctx context.Context) (bool, error) {
		var err error
		have, err = count(ctx)
		return have >= want, err
	})
	if err != nil {
		return fmt.Errorf("%d of %d %s: %w", have, want, what, err)
	}
	return nil
}
