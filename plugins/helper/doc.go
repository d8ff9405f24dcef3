// Package helper holds what more than one plugin needs, as upstream's
// plugins/helper does:
//   - the broken-linear function that NodeResourcesFit's
//     RequestedToCapacityRatio strategy and VolumeBinding's capacity scoring
//     both evaluate at a utilization (shape_score.go);
//   - the claim a pod's volume stands for, and whether a pod uses a claim,
//     which the storage plugins and their queueing hints ask (claims.go);
//   - the nodes of a node event, which every queueing hint on a node's add
//     or update unpacks first (node_event.go).
package helper
