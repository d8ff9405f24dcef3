// Storage beside a story: kube-controller-manager (with the controllers of
// the Storage part, and those of DRA), the example provisioner
// (Scenario.Provisioner), the waits a story of volumes needs, and the
// cleaning of storage objects between stories.

package scenario

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/minisched/minisched/examples/provisioner"
)

// startControllerManager makes kube-controller-manager run the named
// controllers. If it runs already (an earlier scenario of the run started
// it) with all of them, it is kept; if some are missing, it is restarted
// with the union, which takes a fraction of a second. It needs the
// runner's Environment.
func (r *Runner) startControllerManager(controllers ...string) error {
	missing := slices.DeleteFunc(slices.Clone(controllers), func(c string) bool {
		return slices.Contains(r.controllers, c)
	})
	if r.controllerManager != nil && len(missing) == 0 {
		return nil
	}
	if r.Environment == nil {
		return errors.New("this scenario needs kube-controller-manager, which needs the runner's Environment")
	}
	all := append(slices.Clone(r.controllers), missing...)
	r.stopControllerManager()
	cm, err := r.Environment.StartControllerManager(all...)
	if err != nil {
		return err
	}
	r.controllerManager, r.controllers = cm, all
	return nil
}

// stopControllerManager stops kube-controller-manager if it runs. Stopping
// fails only if it had exited on its own, which the report then says
// (naming its log): the scenarios after that moment ran without it.
func (r *Runner) stopControllerManager() {
	if r.controllerManager == nil {
		return
	}
	if err := r.controllerManager.Stop(); err != nil {
		fmt.Fprintf(r.Out, "kube-controller-manager: %v\n", err)
	}
	r.controllerManager, r.controllers = nil, nil
}

// startProvisioner runs the example provisioner with the given disk sizes
// per node until stop is called (runQuietly); stop returns what its Run
// returned.
func startProvisioner(ctx context.Context, client kubernetes.Interface, disks map[string]string) (
	stop func() error, err error) {
	opts := provisioner.Options{Capacity: map[string]resource.Quantity{}}
	for node, size := range disks {
		q, err := resource.ParseQuantity(size)
		if err != nil {
			return nil, fmt.Errorf("the provisioner's disk on node %s: %w", node, err)
		}
		opts.Capacity[node] = q
	}
	return runQuietly(ctx, "the example provisioner", provisioner.New(client, opts).Run), nil
}

// WaitForClaimBound polls until the PV binder has bound the claim (phase
// Bound) and returns it.
func (e *Env) WaitForClaimBound(ctx context.Context, name string, timeout time.Duration) (
	*v1.PersistentVolumeClaim, error) {
	var pvc *v1.PersistentVolumeClaim
	err := wait.PollUntilContextTimeout(ctx, PollInterval, e.WaitLimit(timeout), true, func(ctx context.Context) (bool, error) {
		var err error
		pvc, err = e.Client.CoreV1().PersistentVolumeClaims(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return pvc.Status.Phase == v1.ClaimBound, nil
	})
	if err != nil {
		phase := "not found"
		if pvc != nil {
			phase = string(pvc.Status.Phase)
		}
		return nil, fmt.Errorf("claim %s was not bound within %v (%s): %w", name, timeout, phase, err)
	}
	return pvc, nil
}

// WaitForStorageCapacity polls until a CSIStorageCapacity object of class
// covers each of the nodes (the provisioner publishes one per node and
// class as it sees them) and returns each node's capacity, as "node=8Gi"
// sorted by node.
func (e *Env) WaitForStorageCapacity(ctx context.Context, class string, nodes ...string) (string, error) {
	return waitForNodes(ctx, "no CSIStorageCapacity of class "+class, nodes,
		func(ctx context.Context) (map[string]string, error) {
			list, err := e.Client.StorageV1().CSIStorageCapacities(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			found := map[string]string{}
			for _, c := range list.Items {
				if c.StorageClassName != class || c.NodeTopology == nil || c.Capacity == nil {
					continue
				}
				found[c.NodeTopology.MatchLabels[v1.LabelHostname]] = c.Capacity.String()
			}
			return found, nil
		})
}

// waitForNodes polls perNode, which tells what each node has (a capacity,
// a number of devices), until it covers every one of nodes, and returns
// theirs as "node=value", sorted by node. On timeout the error starts with
// missing and shows what was found last.
func waitForNodes(ctx context.Context, missing string, nodes []string,
	perNode func(context.Context) (map[string]string, error)) (string, error) {
	var found map[string]string
	err := wait.PollUntilContextTimeout(ctx, PollInterval, DefaultWait, true, func(ctx context.Context) (bool, error) {
		var err error
		if found, err = perNode(ctx); err != nil {
			return false, err
		}
		for _, n := range nodes {
			if _, ok := found[n]; !ok {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("%s for each of %v within %v (found %v): %w", missing, nodes, DefaultWait, found, err)
	}
	parts := make([]string, 0, len(nodes))
	for _, n := range nodes {
		parts = append(parts, n+"="+found[n])
	}
	sort.Strings(parts)
	return strings.Join(parts, ", "), nil
}

// noFinalizers is a merge patch that removes an object's finalizers.
var noFinalizers = []byte(`{"metadata":{"finalizers":null}}`)

// stripFinalizers removes the finalizers of those of items that have any,
// with patch (a typed client's Patch), so that deleting them is immediate.
// An item already gone is no error.
func stripFinalizers[T any, PT interface {
	*T
	metav1.Object
}](ctx context.Context, items []T, patch func(ctx context.Context, name string, pt types.PatchType, data []byte,
	opts metav1.PatchOptions, subresources ...string) (PT, error)) error {
	var errs []error
	for i := range items {
		obj := PT(&items[i])
		if len(obj.GetFinalizers()) > 0 {
			_, err := patch(ctx, obj.GetName(), types.MergePatchType, noFinalizers, metav1.PatchOptions{})
			errs = append(errs, ignoreNotFound(err))
		}
	}
	return errors.Join(errs...)
}

// cleanStorage deletes every claim (in namespaces), volume, StorageClass,
// CSINode, CSIDriver, CSIStorageCapacity and VolumeAttachment. The
// apiserver puts a protection finalizer on every claim and volume, which
// only kube-controller-manager's protection controllers lift, and they may
// not run: the finalizers are removed first, so that deletion is
// immediate.
func cleanStorage(ctx context.Context, client kubernetes.Interface, namespaces []v1.Namespace) error {
	var errs []error
	all := metav1.ListOptions{}
	for _, ns := range namespaces {
		claims := client.CoreV1().PersistentVolumeClaims(ns.Name)
		list, err := claims.List(ctx, all)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, stripFinalizers(ctx, list.Items, claims.Patch),
			claims.DeleteCollection(ctx, metav1.DeleteOptions{}, all),
			client.StorageV1().CSIStorageCapacities(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{}, all))
	}
	volumes, err := client.CoreV1().PersistentVolumes().List(ctx, all)
	errs = append(errs, err)
	if err == nil {
		errs = append(errs, stripFinalizers(ctx, volumes.Items, client.CoreV1().PersistentVolumes().Patch))
	}
	storage := client.StorageV1()
	errs = append(errs,
		client.CoreV1().PersistentVolumes().DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		storage.StorageClasses().DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		storage.CSINodes().DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		storage.CSIDrivers().DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		storage.VolumeAttachments().DeleteCollection(ctx, metav1.DeleteOptions{}, all))
	return errors.Join(errs...)
}

// ignoreNotFound drops the error of an object that went away meanwhile.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
