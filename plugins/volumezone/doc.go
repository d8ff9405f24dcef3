// Package volumezone is kube-scheduler's VolumeZone plugin: it keeps a pod
// whose PersistentVolumeClaims are bound to zonal PersistentVolumes off the
// nodes of other zones and regions. A volume states where it lives with the
// zone and region labels (topology.kubernetes.io/zone and /region, or their
// failure-domain.beta.kubernetes.io forerunners), a multi-zone volume as
// "zone-a__zone-b"; a node carrying any of those labels must match each label
// the pod's volumes carry.
//
// volume_zone.go is the plugin (PreFilter collects the volumes' topology,
// Filter matches it against each node); enqueue.go says which events can
// change its verdict.
package volumezone
