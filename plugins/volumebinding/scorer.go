// This file is VolumeBinding's scoring: how full the storage the pod's
// volumes would use on a node is, per storage class, turned into a score by
// the configured shape. With the default shape a node scores 100 minus the
// utilization, so the plugin spreads storage to emptier nodes.

package volumebinding

import (
	"math"

	v1 "k8s.io/api/core/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/helper"
)

// classResourceMap is, per storage class, what the pod would take and from
// how much.
type classResourceMap map[string]*storageResource

// volumeCapacityScorer turns a node's classResourceMap into its score.
type volumeCapacityScorer func(classResourceMap) int64

// classResources groups a node's podVolumes by storage class:
//
//   - with static bindings, those alone: per PV class, the claims' requests
//     against the chosen PVs' capacities, both summed;
//   - otherwise the provisionings whose capacity is tracked: per claim
//     class, the requests summed, against the CSIStorageCapacity's capacity
//     (one pool: two 50Gi claims of a 100Gi pool are 100% of it, not 50%).
func classResources(vols *podVolumes) classResourceMap {
	classes := classResourceMap{}
	get := func(class string) *storageResource {
		if classes[class] == nil {
			classes[class] = &storageResource{}
		}
		return classes[class]
	}
	if len(vols.StaticBindings) != 0 {
		for _, binding := range vols.StaticBindings {
			r, res := get(binding.StorageClassName()), binding.StorageResource()
			r.Requested += res.Requested
			r.Capacity += res.Capacity
		}
		return classes
	}
	for _, p := range vols.DynamicProvisions {
		if p.NodeCapacity == nil {
			continue
		}
		r := get(ptr.Deref(p.PVC.Spec.StorageClassName, ""))
		// kube-scheduler dereferences capacity here and would crash on a
		// CSIStorageCapacity that sets only maximumVolumeSize; it counts as
		// no capacity (fully used) instead.
		if c := p.NodeCapacity.Capacity; c != nil {
			r.Capacity = c.Value()
		} else {
			r.Capacity = 0
		}
		requested := p.PVC.Spec.Resources.Requests[v1.ResourceStorage]
		r.Requested += requested.Value()
	}
	return classes
}

// buildScorerFunction returns the scorer for shape: each class scores the
// shape at its utilization (requested × 100 / capacity, integer division;
// 100 when there is no capacity or the request exceeds it), and the node
// scores the classes' mean, rounded; no classes score 0. Shape scores are
// 0-10 in the configuration and 0-100 here.
func buildScorerFunction(shape []configv1.UtilizationShapePoint) volumeCapacityScorer {
	points := make(helper.FunctionShape, 0, len(shape))
	for _, p := range shape {
		points = append(points, helper.FunctionShapePoint{
			Utilization: int64(p.Utilization),
			Score:       int64(p.Score) * (framework.MaxNodeScore / maxCustomPriorityScore),
		})
	}
	f := helper.BuildBrokenLinearFunction(points)
	classScore := func(requested, capacity int64) int64 {
		if capacity == 0 || requested > capacity {
			return f(maxUtilization)
		}
		return f(requested * maxUtilization / capacity)
	}
	return func(classes classResourceMap) int64 {
		if len(classes) == 0 {
			return 0
		}
		var sum int64
		for _, r := range classes {
			sum += classScore(r.Requested, r.Capacity)
		}
		return int64(math.Round(float64(sum) / float64(len(classes))))
	}
}
