// This file is PreBind's part of the binder: write the assumed PVs and
// claims to the apiserver, then wait for the PV controller (and, for
// provisioning, an external provisioner) to finish binding, watching the
// informer's copies for the outcome.

package volumebinding

import (
	"context"
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// BindPodVolumes writes vols (as AssumePodVolumes left them) for the pod,
// whose spec.nodeName is the chosen node, and waits until every claim is
// bound: a check every pollInterval, the first after one interval, for at
// most bindTimeout (so a timeout of 0 fails at once with "context deadline
// exceeded"). A failed write is returned as it is; a failed or timed-out
// wait as "binding volumes: <why>".
func (b *volumeBinder) BindPodVolumes(ctx context.Context, pod *v1.Pod, vols *podVolumes) error {
	logger := klog.FromContext(ctx)
	logger.V(4).Info("BindPodVolumes", "pod", klog.KObj(pod), "node", klog.KRef("", pod.Spec.NodeName))
	bindings := vols.StaticBindings
	claimsToProvision := convertDynamicProvisionsToPVCs(vols.DynamicProvisions)
	if err := b.bindAPIUpdate(ctx, pod, bindings, claimsToProvision); err != nil {
		return err
	}
	err := pollUntil(ctx, b.clock, b.pollInterval, b.bindTimeout, func() (bool, error) {
		return b.checkBindings(logger, pod, bindings, claimsToProvision)
	})
	if err != nil {
		return fmt.Errorf("binding volumes: %w", err)
	}
	return nil
}

// pollUntil is wait.PollUntilContextTimeout(ctx, interval, timeout, false,
// condition) on clk: condition runs after each interval (never before the
// first) until it returns true or an error, which is returned. The context's
// error is returned if it ends first, context.DeadlineExceeded once timeout
// has passed (at once for a timeout of 0); a tick that arrives with either
// does not run condition.
func pollUntil(ctx context.Context, clk clock.WithTicker, interval, timeout time.Duration,
	condition func() (bool, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if timeout <= 0 {
		return context.DeadlineExceeded
	}
	deadline := clk.NewTimer(timeout)
	defer deadline.Stop()
	ticker := clk.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C():
			return context.DeadlineExceeded
		case <-ticker.C():
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C():
			return context.DeadlineExceeded
		default:
		}
		if ok, err := condition(); err != nil || ok {
			return err
		}
	}
}

// bindAPIUpdate PUTs each binding's PV (its claimRef), then each claim to
// provision (its selected-node annotation), and keeps the apiserver's
// answers in bindings and claimsToProvision for checkBindings. These are
// full updates: an object changed since the informer's copy fails with a
// Conflict. The PV controller does the rest; nothing is rolled back in the
// apiserver on failure, but the assumptions not yet written are restored.
func (b *volumeBinder) bindAPIUpdate(ctx context.Context, pod *v1.Pod, bindings []*bindingInfo,
	claimsToProvision []*v1.PersistentVolumeClaim) error {
	logger := klog.FromContext(ctx)
	if bindings == nil {
		return fmt.Errorf("failed to get cached bindings for pod %q", getPodName(pod))
	}
	if claimsToProvision == nil {
		return fmt.Errorf("failed to get cached claims to provision for pod %q", getPodName(pod))
	}
	written, provisioned := 0, 0
	defer func() {
		b.revertAssumedPVs(bindings[written:])
		b.revertAssumedPVCs(claimsToProvision[provisioned:])
	}()

	for _, binding := range bindings {
		logger.V(5).Info("Updating PersistentVolume: binding to claim", "pod", klog.KObj(pod),
			"PV", klog.KObj(binding.pv), "PVC", klog.KObj(binding.pvc))
		newPV, err := b.kubeClient.CoreV1().PersistentVolumes().Update(ctx, binding.pv, metav1.UpdateOptions{})
		if err != nil {
			logger.V(4).Info("Updating PersistentVolume: binding to claim failed", "pod", klog.KObj(pod),
				"PV", klog.KObj(binding.pv), "PVC", klog.KObj(binding.pvc), "err", err)
			return err
		}
		logger.V(4).Info("Updated PersistentVolume with claim. Waiting for binding to complete", "pod", klog.KObj(pod),
			"PV", klog.KObj(binding.pv), "PVC", klog.KObj(binding.pvc))
		binding.pv = newPV
		written++
	}
	for i, claim := range claimsToProvision {
		logger.V(5).Info("Updating claims objects to trigger volume provisioning", "pod", klog.KObj(pod),
			"PVC", klog.KObj(claim))
		newClaim, err := b.kubeClient.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, claim,
			metav1.UpdateOptions{})
		if err != nil {
			logger.V(4).Info("Updating PersistentVolumeClaim: binding to volume failed", "PVC", klog.KObj(claim),
				"err", err)
			return err
		}
		claimsToProvision[i] = newClaim
		provisioned++
	}
	return nil
}

// checkBindings reports whether every written binding and provisioning is
// complete, reading the informer's objects (not the assumed ones: those may
// already be another pod's reservations). It returns an error, ending the
// wait, when the binding cannot complete any more:
//
//   - the node or the pod is gone;
//   - a PV's node affinity no longer accepts the node;
//   - a PV's claimRef was reset (the PV controller unbound it);
//   - a provisioned claim lost its selected-node annotation, or names
//     another node: the provisioner gave up on it.
//
// It returns false to keep waiting while the informer lags behind what was
// written, a provisioned claim's PV is not seen yet, or a claim is not fully
// bound.
func (b *volumeBinder) checkBindings(logger klog.Logger, pod *v1.Pod, bindings []*bindingInfo,
	claimsToProvision []*v1.PersistentVolumeClaim) (bool, error) {
	if bindings == nil {
		return false, fmt.Errorf("failed to get cached bindings for pod %q", getPodName(pod))
	}
	if claimsToProvision == nil {
		return false, fmt.Errorf("failed to get cached claims to provision for pod %q", getPodName(pod))
	}
	node, err := b.nodeLister.Get(pod.Spec.NodeName)
	if err != nil {
		return false, fmt.Errorf("failed to get node %q: %w", pod.Spec.NodeName, err)
	}
	csiNode, err := b.csiNodeLister.Get(node.Name)
	if err != nil {
		logger.V(4).Info("Could not get a CSINode object for the node", "node", klog.KObj(node), "err", err)
		csiNode = nil
	}
	if _, err := b.podLister.Pods(pod.Namespace).Get(pod.Name); err != nil {
		if apierrors.IsNotFound(err) {
			return false, fmt.Errorf("pod does not exist any more: %w", err)
		}
		logger.Error(err, "Failed to get pod from the lister", "pod", klog.KObj(pod))
	}

	for _, binding := range bindings {
		pv, err := b.pvCache.GetAPIObj(binding.pv.Name)
		if err != nil {
			return false, fmt.Errorf("failed to check binding: %w", err)
		}
		pvc, err := b.pvcCache.GetAPIObj(getPVCName(binding.pvc))
		if err != nil {
			return false, fmt.Errorf("failed to check binding: %w", err)
		}
		if older, err := olderThan(pv, binding.pv); err != nil || older {
			return false, err
		}
		if pv, err = b.tryTranslatePVToCSI(logger, pv, csiNode); err != nil {
			return false, fmt.Errorf("failed to translate pv to csi: %w", err)
		}
		if err := volume.CheckNodeAffinity(pv, node.Labels); err != nil {
			return false, fmt.Errorf("pv %q node affinity doesn't match node %q: %w", pv.Name, node.Name, err)
		}
		if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == "" {
			return false, fmt.Errorf("ClaimRef got reset for pv %q", pv.Name)
		}
		if !isPVCFullyBound(pvc) {
			return false, nil
		}
	}

	for _, claim := range claimsToProvision {
		pvc, err := b.pvcCache.GetAPIObj(getPVCName(claim))
		if err != nil {
			return false, fmt.Errorf("failed to check provisioning pvc: %w", err)
		}
		if older, err := olderThan(pvc, claim); err != nil || older {
			return false, err
		}
		if pvc.Annotations == nil {
			return false, fmt.Errorf("selectedNode annotation reset for PVC %q", pvc.Name)
		}
		if pvc.Annotations[volume.AnnSelectedNode] != pod.Spec.NodeName {
			// A provisioner that gives up removes the annotation, so that the
			// scheduler picks a node again.
			return false, fmt.Errorf("provisioning failed for PVC %q", pvc.Name)
		}
		if pvc.Spec.VolumeName != "" {
			pv, err := b.pvCache.GetAPIObj(pvc.Spec.VolumeName)
			if apierrors.IsNotFound(err) {
				// Not seen yet; or deleted, and then the claim will be
				// unbound: look again next time.
				return false, nil
			}
			if err != nil {
				return false, fmt.Errorf("failed to get pv %q from cache: %w", pvc.Spec.VolumeName, err)
			}
			if pv, err = b.tryTranslatePVToCSI(logger, pv, csiNode); err != nil {
				return false, err
			}
			if err := volume.CheckNodeAffinity(pv, node.Labels); err != nil {
				return false, fmt.Errorf("pv %q node affinity doesn't match node %q: %w", pv.Name, node.Name, err)
			}
		}
		if !isPVCFullyBound(pvc) {
			return false, nil
		}
	}
	logger.V(4).Info("All PVCs for pod are bound", "pod", klog.KObj(pod))
	return true, nil
}

// olderThan reports whether the informer's object has a lower
// resourceVersion than the one the apiserver returned to our write: the
// informer has not caught up. Resource versions are compared as numbers, as
// kube-scheduler does (an empty one is 0); one that is not a number is an
// error (kube-scheduler panics).
func olderThan(informerObj, written metav1.Object) (bool, error) {
	have, err := resourceVersion(informerObj)
	if err != nil {
		return false, err
	}
	want, err := resourceVersion(written)
	if err != nil {
		return false, err
	}
	return have < want, nil
}

// resourceVersion parses obj's resourceVersion.
func resourceVersion(obj metav1.Object) (uint64, error) {
	rv := obj.GetResourceVersion()
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("resourceVersion %q of %s is not a number", rv, klog.KObj(obj))
	}
	return n, nil
}
