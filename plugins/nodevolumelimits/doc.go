// Package nodevolumelimits is kube-scheduler's NodeVolumeLimits plugin
// (upstream's CSILimits): it keeps a pod off a node where attaching its
// volumes would exceed how many volumes of a CSI driver the node can hold.
//
// A node's limits are its CSINode's spec.drivers[].allocatable.count, written
// by kubelet when a CSI driver registers. A volume is named by its driver and
// volume handle ("<driver>/<handle>"), and counts once per node however many
// pods use it. The plugin counts, per driver:
//
//   - the volumes of the pod being scheduled: its PersistentVolumeClaims and
//     generic ephemeral volumes (claims named <pod>-<volume>), through the
//     bound PersistentVolume's CSI source, or for a claim not bound yet
//     through its StorageClass's provisioner with a handle of its own; and
//     in-tree volumes (PVs and inline) of the five plugins whose CSI
//     migration is complete, translated to their CSI driver;
//   - the volumes the node's pods already use, counted the same way;
//   - the VolumeAttachments to the node, for volumes no pod there accounts
//     for (a volume still attached after its pod went away).
//
// With VolumeLimitScaling (on in v1.37) it also rejects a node whose CSINode
// lacks a driver the pod needs, when that driver's CSIDriver sets
// preventPodSchedulingIfMissing.
//
// csi.go is the plugin, volumes.go the counting, enqueue.go the events that
// can let a rejected pod fit.
package nodevolumelimits
