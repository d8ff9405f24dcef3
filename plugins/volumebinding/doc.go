// Package volumebinding is kube-scheduler's VolumeBinding plugin (v1.37,
// StorageCapacityScoring on): it places a pod where its
// PersistentVolumeClaims can be bound or provisioned, and binds them before
// the pod.
//
// A claim of a WaitForFirstConsumer class waits for its first pod: the
// scheduler picks the PV (static binding) or the node to provision on
// (dynamic provisioning) together with the node for the pod, and the PV
// controller completes the binding. Claims of Immediate classes are bound by
// the PV controller alone; the plugin only waits for them.
//
//	PreFilter   the pod's claims exist and are usable; sort them (claims.go)
//	Filter      can the node have them? (find.go, static_binding.go,
//	            provisioning.go with topology_selectors.go, csi_migration.go)
//	Score       how full would the storage be (scorer.go)
//	Reserve     assume the choice in the PV/PVC caches (assume.go,
//	            assume_cache.go), so the next cycle sees it
//	PreBind     write PVs and claims, wait for the PV controller (bind.go)
//
// Reading order: volume_binding.go (the plugin and its extension points),
// args.go, binder.go (the binder and the results it hands on), then the
// files above in the order of the cycle, and enqueue.go (the events that
// requeue a rejected pod).
//
// kube-scheduler's branches for feature gates that are fixed in v1.37 are
// folded: StorageCapacityScoring is on (the shape is always set, Score
// always runs, and scores provisioned volumes by CSIStorageCapacity), and
// VolumeAttributesClass is GA.
package volumebinding
